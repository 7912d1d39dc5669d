//! Live user-space tracing with uprobes: `dcg trace --func ./prog:PATTERN -- ./prog`.
//!
//! For each function a pattern selects in an unmodified binary with DWARF, dcg places in
//! its private tracefs instance a uprobe at the entry, fetching the arguments from their
//! DWARF locations (and the text of `char *` arguments), and a uretprobe fetching
//! `$retval`. The event stream is rebuilt into per-thread call trees with durations and
//! printed in the function_graph layout, every value rendered by its type exactly as the
//! kernel tracer does (`ret=-EINVAL`, `true`, enum names, `NULL`, `"string"`).
//!
//! A command is started stopped, so no call is missed; `-p PID` attaches to a running
//! process and its threads and detaches (removing every probe) when dcg stops. Without
//! either, every process running the binary is traced. The probes and the instance are
//! removed on every exit path: normal end, error, SIGINT/SIGTERM, the traced program
//! exiting or crashing.
//! The engines have modules of their own: [`inproc_engine`] (the recorder preloaded into
//! the command) and [`uprobe_engine`]; [`plan`] makes the plan both take (the binaries,
//! the functions selected and their probes, the engine and why, the outputs); this root
//! opens the outputs and runs the engine.

mod entry_args;
mod error;
pub mod hooks;
pub mod inproc_engine;
mod merge;
mod notice;
pub mod plan;
pub mod probe_feed;
mod session;
pub mod symbolize;
mod uprobe_engine;
mod uprobe_events;
mod ustack;

use std::io::Write;

use std::rc::Rc;

use dcg_calls::outputs::Outputs;
use dcg_calls::selected::TreeSelect;
use dcg_live::options::TraceOptions;
use dcg_live::tracefs;

pub(crate) use error::Result;
pub use error::UtraceError;
pub use notice::Notice;
pub use plan::{NotInProcess, UserEngine, UserEngineChoice, UserEngineReason, UserPlan};

/// The kernel half of a session tracing user and kernel functions together (issue 42):
/// dcg's binary makes it from the kernel tracer, the user engine drives it around the
/// command it starts.
pub trait KernelSide {
    /// Trace the kernel functions for process `pid` (and its children), which is stopped
    /// at its `exec` and runs once this returns; or say in one line why not.
    fn attach(&mut self, pid: i32) -> std::result::Result<(), String>;
    /// The command ended: stop tracing and hand over the completed calls recorded (any
    /// order), or say in one line why there are none.
    fn finish(&mut self) -> std::result::Result<Vec<dcg_calls::saved_format::CallRecord>, String>;
}

/// A session's kernel half and the dbs of its functions.
pub struct Joint<'k> {
    /// The kernel's dbs.
    pub dbs: &'k dcg_dbset::DbSet,
    /// The kernel half.
    pub side: &'k mut dyn KernelSide,
}

/// Exit code when a pattern matches nothing.
pub const EXIT_NO_MATCH: u8 = 2;

/// How a session ended.
#[derive(Debug, Default)]
pub struct Finished {
    /// The exit code: the traced command's (128 + signal when it was killed), 2 when a
    /// pattern matches nothing, 1 when dcg could not clean up.
    pub exit: u8,
    /// The calls, when collected for a report (`--report`).
    pub calls: Option<Vec<dcg_calls::saved_format::CallRecord>>,
}

/// Run `dcg trace` for `PATH:PATTERN` functions: plan the session, open its outputs and
/// run the engine the plan chose; notices for the user go to `note` as they come.
pub fn run(
    opts: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
    note: &mut dyn FnMut(Notice),
) -> Result<Finished> {
    run_joint(opts, sources, out, note, None)
}

/// [`run`], with the kernel half of a session tracing both sides (issue 42): the kernel
/// calls the command's threads make are joined into their user trees. The command is
/// traced in process.
pub fn run_joint(
    opts: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
    note: &mut dyn FnMut(Notice),
    joint: Option<Joint<'_>>,
) -> Result<Finished> {
    // A stop signal before tracefs is touched ends dcg at once (see tracefs).
    tracefs::install_stop_handlers();
    let mut notes = Vec::new();
    let (targets, specs) = plan::load_targets(opts, sources, &mut notes)?;
    // The command's own DWARF declares the library functions it calls: prototypes for
    // those no DWARF describes (named without wildcards; the command not a target).
    let command_db = plan::command_db(opts, sources, &targets, &specs);
    let prototypes: Vec<&sigdb::Db> = command_db.iter().collect();
    let planned = UserPlan::make(opts, &targets, &prototypes, &specs, &mut notes)?;
    for n in notes.drain(..) {
        note(n);
    }
    let plan = match planned {
        Ok(plan) => plan,
        Err(why) => {
            for n in why {
                note(n);
            }
            return Ok(Finished {
                exit: EXIT_NO_MATCH,
                calls: None,
            });
        }
    };
    let select = plan.select.clone().map(|s| s as Rc<dyn TreeSelect>);
    let outputs = Outputs::open(plan.outputs.clone())?.selecting(select, plan.session.stop.count);
    match (plan.engine.engine, joint) {
        (UserEngine::InProcess, joint) => inproc_engine::trace(&plan, outputs, out, note, joint),
        (UserEngine::Uprobes, Some(_)) if plan.session.stack => {
            Err(UtraceError::JointStackNeedsInProcess)
        }
        (UserEngine::Uprobes, joint) => uprobe_engine::run(&plan, outputs, out, note, joint),
    }
}
