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
//! the command) and [`uprobe_engine`]; this root resolves the binaries, selects the
//! functions, plans their probes and chooses the engine.

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

use std::io::Write;

use dcg_live::options::{split_user_func, TraceOptions};
use dcg_live::process;
use dcg_live::tracefs;

pub(crate) use error::Result;
pub use error::UtraceError;
pub use notice::Notice;
use plan::Target;

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

/// Run `dcg trace` for `PATH:PATTERN` functions, notices for the user to `note` as they
/// come.
pub fn run(
    args: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
    note: &mut dyn FnMut(Notice),
) -> Result<Finished> {
    // A stop signal before tracefs is touched ends dcg at once (see tracefs).
    tracefs::install_stop_handlers();
    let mut notes = Vec::new();
    let (targets, specs) = load_targets(args, sources, &mut notes)?;
    let choice = UserEngineChoice::of(args, &targets)?;
    choice.note(args, &targets, &mut notes);
    // The command's own DWARF declares the library functions it calls: prototypes for
    // those no DWARF describes (named without wildcards; the command not a target).
    let command_db = command_db(args, sources, &targets, &specs);
    let prototypes: Vec<&sigdb::Db> = command_db.iter().collect();
    let planned = plan_session(
        args,
        &targets,
        &prototypes,
        &specs,
        choice.engine,
        &mut notes,
    )?;
    let Planned {
        probes,
        inlines,
        hooks,
        failed,
    } = planned;
    for n in notes.drain(..) {
        note(n);
    }
    if !failed.is_empty() {
        for f in failed {
            note(f);
        }
        return Ok(Finished {
            exit: EXIT_NO_MATCH,
            calls: None,
        });
    }
    if probes.is_empty() {
        note(Notice::NothingToProbe);
        return Ok(Finished {
            exit: EXIT_NO_MATCH,
            calls: None,
        });
    }
    if choice.engine == UserEngine::InProcess {
        return inproc_engine::trace(&targets, &probes, &inlines, hooks, args, out, note);
    }
    uprobe_engine::run(&targets, &probes, &inlines, args, out, note)
}

/// Each `--func` pattern with the index of its target.
type Specs = Vec<(usize, String)>;

/// The files `--func` names, one target per distinct file, and each pattern with the
/// index of its target.
fn load_targets(
    args: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    notes: &mut Vec<Notice>,
) -> Result<(Vec<Target>, Specs)> {
    // Targets, one per distinct file.
    let mut targets: Vec<Target> = Vec::new();
    let mut specs: Vec<(usize, String)> = Vec::new();
    for f in &args.func {
        let Some((path, pattern)) = split_user_func(f) else {
            return Err(UtraceError::Spec(f.clone()));
        };
        let resolved = plan::resolve_binary(path, args.target.pid()).or_else(|e| {
            match args.target.command().first() {
                // `dcg trace --func prog:main -- prog`: the command's own file.
                Some(cmd) if cmd == path => process::command_path(cmd).map_err(Into::into),
                // `--func libc.so.6:strlen -- prog`: a library the command loads.
                Some(cmd) => process::command_path(cmd)
                    .ok()
                    .and_then(|exe| plan::library_of_command(&exe, path))
                    .ok_or(e),
                None => Err(e),
            }
        })?;
        let resolved = resolved.canonicalize().unwrap_or(resolved);
        let idx = match targets.iter().position(|t| t.path == resolved) {
            Some(i) => i,
            None => {
                targets.push(plan::load_target(
                    path, &resolved, &args.db, sources, notes,
                )?);
                targets.len() - 1
            }
        };
        specs.push((idx, pattern.to_string()));
    }
    Ok((targets, specs))
}

/// How user-space calls are captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserEngine {
    /// The in-process recorder, preloaded into the command dcg starts.
    InProcess,
    /// Uprobes.
    Uprobes,
}

/// Why that user-space engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserEngineReason {
    /// `--engine inproc` or `--engine uprobe`.
    Asked,
    /// A command dcg starts, the recorder at hand: in process, the cheaper way.
    Default,
    /// The session cannot run in process (why): uprobes do.
    InProcessUnavailable(String),
}

/// The user-space engine chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEngineChoice {
    /// In process or uprobes.
    pub engine: UserEngine,
    /// The rule that chose it.
    pub reason: UserEngineReason,
}

impl UserEngineChoice {
    /// The engine for `args` and its `targets`: in process for a command dcg starts,
    /// else uprobes; an error when `--engine inproc` cannot be.
    pub fn of(args: &TraceOptions, targets: &[Target]) -> Result<UserEngineChoice> {
        use dcg_live::options::Engine;
        let (engine, reason) = match (args.engine, inproc_engine::unavailable(args, targets)) {
            (Engine::Uprobe, _) => (UserEngine::Uprobes, UserEngineReason::Asked),
            (Engine::Inproc, Some(why)) => {
                return Err(UtraceError::Io(std::io::Error::other(format!(
                    "--engine inproc: {why}"
                ))))
            }
            (Engine::Inproc, None) => (UserEngine::InProcess, UserEngineReason::Asked),
            (_, Some(why)) => (
                UserEngine::Uprobes,
                UserEngineReason::InProcessUnavailable(why),
            ),
            (_, None) => (UserEngine::InProcess, UserEngineReason::Default),
        };
        Ok(UserEngineChoice { engine, reason })
    }

    /// What the user is told of the choice: why not in process, or what in process
    /// cannot see.
    fn note(&self, args: &TraceOptions, targets: &[Target], notes: &mut Vec<Notice>) {
        if let UserEngineReason::InProcessUnavailable(why) = &self.reason {
            notes.push(Notice::EngineUprobes(why.clone()));
        }
        if self.engine == UserEngine::InProcess {
            notes.push(Notice::EngineInProcess {
                command: args.target.command().first().cloned(),
            });
            notes.extend(inproc_engine::unseen_constructors(args, targets));
        }
    }
}

/// The command's own db, for the prototypes of the library functions it calls: when a
/// pattern names a function exactly and the command is not a target.
fn command_db(
    args: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    targets: &[Target],
    specs: &[(usize, String)],
) -> Option<sigdb::Db> {
    args.target
        .command()
        .first()
        .filter(|_| specs.iter().any(|(_, p)| !p.contains(['*', '?'])))
        .and_then(|c| plan::resolve_binary(c, None).ok())
        .filter(|c| !targets.iter().any(|t| &t.path == c))
        .and_then(|c| {
            let given = c.display().to_string();
            // Never debuginfod for it: the prototypes are a bonus.
            let local = dcg_dbresolve::DbSources {
                net: None,
                ..sources.clone()
            };
            plan::load_target(&given, &c, &[], &local, &mut Vec::new()).ok()
        })
        .map(|t| t.db)
}

/// What planning gave: each selected function's probe, the inlined copies' sites, how
/// the recorder hooks each probe (in process; `None`: left to uprobes), and the patterns
/// that selected nothing (why).
struct Planned<'a> {
    probes: Vec<plan::Probe<'a>>,
    inlines: Vec<plan::InlineSite<'a>>,
    hooks: Vec<Option<Vec<dcg_inproc::plan::PlanFunc>>>,
    failed: Vec<Notice>,
}

/// Select the functions of each pattern and plan their probes, the inlined copies and,
/// in process, the recorder's hooks.
fn plan_session<'a>(
    args: &TraceOptions,
    targets: &'a [Target],
    prototypes: &[&'a sigdb::Db],
    specs: &[(usize, String)],
    engine: UserEngine,
    notes: &mut Vec<Notice>,
) -> Result<Planned<'a>> {
    let in_process = engine == UserEngine::InProcess;
    let reads = if in_process {
        plan::Reads::IN_PROCESS
    } else {
        plan::Reads::UPROBES
    };
    // Inlined copies are shown as frames: calls made from their code under them.
    let frames = !args.no_inline_frames;
    let mut selected = Vec::new();
    let mut copies = Vec::new();
    let mut failed = Vec::new();
    for (t, pattern) in specs {
        match plan::select(targets, prototypes, *t, pattern, frames, notes) {
            Ok(s) => {
                selected.extend(s.funcs);
                copies.extend(s.copies);
            }
            Err(msg) => failed.push(msg),
        }
    }
    let mut probes = plan::plan_probes(
        targets,
        &selected,
        args.args,
        args.show_retvals,
        frames,
        reads,
        notes,
    );
    let inlines = if frames {
        plan::plan_inlines(targets, &copies, &mut probes, args.args, !in_process, notes)
    } else {
        Vec::new()
    };
    // In process: how each function is hooked; those the recorder cannot hook are
    // traced with uprobes, planned for what uprobes read.
    let hooks = if in_process {
        let hooks = hooks::recorder_plan(targets, prototypes, &mut probes, notes)?;
        if hooks.iter().any(Option::is_none) {
            let by_uprobes = plan::plan_probes(
                targets,
                &selected,
                args.args,
                args.show_retvals,
                frames,
                plan::Reads::UPROBES,
                &mut Vec::new(),
            );
            for (i, h) in hooks.iter().enumerate() {
                if h.is_none() {
                    probes[i] = by_uprobes[i].clone();
                }
            }
        }
        hooks
    } else {
        Vec::new()
    };
    if let Some(why) = plan::unreadable_note(&probes) {
        notes.push(why);
    }
    Ok(Planned {
        probes,
        inlines,
        hooks,
        failed,
    })
}
