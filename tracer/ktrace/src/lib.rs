//! Live kernel tracing: `dcg trace --func PATTERN [--show-retvals] [--args] ...`.
//!
//! function_graph in a private instance (`instances/dcg-<pid>`), graph roots multiplexed
//! through the shared top-level `set_graph_function` ([`dcg_live::graphfilter`]), the stream
//! cut to this session's trees ([`stream_filter::TreeFilter`]) and decoded by type
//! ([`dcg_calls::decode::Decoder`]). Kernels without `funcgraph-retval` / `funcgraph-args` get
//! values from exit / entry probe events ([`probes`]) joined to the calls. The design and
//! its limits are described in `tracer/ktrace/KTRACE.md`.

//! Each engine has a module of its own: [`fgraph_engine`] (function_graph) and
//! [`bpf_engine`]; [`plan`] makes the plan both take (the roots, the engine and why, the
//! outputs); this root resolves the dbs, opens the outputs and runs the engine.

pub mod bpf_engine;
mod bpf_feed;
mod bpf_targets;
pub mod callees;
pub mod deref_events;
pub mod derefs;
mod error;
mod features;
pub mod fgraph_engine;
pub mod fields;
pub mod funcs;
pub mod joint;
mod kstack;
mod outcome;
pub mod plan;
pub mod probes;
pub mod rawtree;
mod roots;
pub mod stream_filter;

use std::io::Write;

use std::rc::Rc;

use dcg_calls::outputs::Outputs;
use dcg_calls::selected::TreeSelect;
use dcg_live::options::{Engine, TraceOptions};
use dcg_live::tracefs;

pub use dcg_bpf::Mode as BpfMode;
pub use error::KtraceError;
use error::Result;
pub use features::Features;
use funcs::Available;
pub use outcome::{Notice, Outcome, Progress, Summary};
pub use plan::{EngineChoice, EngineReason, KernelPlan, Tuning};

/// Most probes one session creates.
pub const PROBE_CAP: usize = 500;

/// Progress at the `log` facade's debug level (`DCG_KTRACE_DEBUG=1` has the dcg binary
/// show it, each line with the seconds since dcg started).
pub(crate) fn debug(msg: std::fmt::Arguments<'_>) {
    log::debug!("{msg}");
}

/// Run `dcg trace` on the kernel: plan the session, open its outputs and run the engine
/// the plan chose; notices go to `notify` as they happen, the trace to `out`.
pub fn run(
    opts: &TraceOptions,
    tuning: Tuning,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
    notify: &mut dyn FnMut(Notice),
) -> Result<Outcome> {
    // A stop signal before tracefs is touched ends dcg at once (see tracefs).
    tracefs::install_stop_handlers();
    if let Some(f) = opts
        .func
        .iter()
        .find(|f| dcg_live::options::split_user_func(f).is_some())
    {
        return Err(KtraceError::Mixed(f.clone()));
    }
    let set = dcg_dbresolve::resolve(&opts.db, sources)?;
    if let Some(note) = set.fetched() {
        notify(Notice::DbFetched(note.clone()));
    }
    let root = tracefs::mount_point()?;
    // Catch signals before touching tracefs, so an interrupt cannot cut a stale-session
    // removal in half; the loop acts on the stop request once tracing runs.
    tracefs::arm_stop_handlers();
    for r in tracefs::remove_stale(&root) {
        notify(Notice::RemovedStale(r));
    }
    let avail = Available::read(&root).map_err(KtraceError::Available)?;
    let Some(plan) = KernelPlan::make(opts, tuning, &set, root, avail, notify)? else {
        return Ok(Outcome::NothingToTrace);
    };
    if let Some(pid) = plan.session.target.pid() {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(KtraceError::NoProcess(pid));
        }
    }
    let select = plan.select.clone().map(|s| s as Rc<dyn TreeSelect>);
    let outputs = Outputs::open(plan.outputs.clone())?.selecting(select, plan.session.stop.count);
    if plan.engine.engine == Engine::Bpf {
        match bpf_engine::attach(&plan, notify) {
            Ok(attached) => {
                let summary = bpf_engine::run(&plan, attached, outputs, out, notify)?;
                return Ok(Outcome::Traced(Box::new(summary)));
            }
            // Chosen automatically and unusable here (no kprobe.multi, no BTF, locked
            // down): function_graph still draws the tree, with the values it can get.
            Err(KtraceError::BpfUnavailable(e))
                if !matches!(
                    plan.engine.reason,
                    EngineReason::Asked
                        | EngineReason::TaskFilter
                        | EngineReason::Stack
                        | EngineReason::Fields
                ) =>
            {
                notify(Notice::BpfFallback(e.to_string()));
            }
            Err(e) => return Err(e),
        }
    }
    let summary = fgraph_engine::run(&plan, outputs, out, notify)?;
    Ok(Outcome::Traced(Box::new(summary)))
}
