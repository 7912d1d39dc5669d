//! Live kernel tracing: `dcg trace --func PATTERN [--show-retvals] [--args] ...`.
//!
//! function_graph in a private instance (`instances/dcg-<pid>`), graph roots multiplexed
//! through the shared top-level `set_graph_function` ([`dcg_live::graphfilter`]), the stream
//! cut to this session's trees ([`stream_filter::TreeFilter`]) and decoded by type
//! ([`dcg_calls::decode::Decoder`]). Kernels without `funcgraph-retval` / `funcgraph-args` get
//! values from exit / entry probe events ([`probes`]) joined to the calls. The design and
//! its limits are described in `tracer/ktrace/KTRACE.md`.

//! Each engine has a module of its own: [`fgraph_engine`] (function_graph) and
//! [`bpf_engine`]; this root resolves the dbs and the roots and chooses the engine.

pub mod bpf_engine;
mod bpf_feed;
pub mod callees;
mod error;
mod features;
pub mod fgraph_engine;
pub mod funcs;
mod outcome;
pub mod probes;
pub mod rawtree;
mod roots;
mod session;
pub mod stream_filter;

use std::io::Write;

use dcg_live::options::{Engine, TraceOptions};
use dcg_live::tracefs;

pub use error::KtraceError;
use error::Result;
pub use features::Features;
use funcs::Available;
pub use outcome::{Notice, Outcome, Progress, Summary};
use roots::resolve_roots;

/// Most probes one session creates.
pub const PROBE_CAP: usize = 500;

/// Progress at the `log` facade's debug level (`DCG_KTRACE_DEBUG=1` has the dcg binary
/// show it, each line with the seconds since dcg started).
pub(crate) fn debug(msg: std::fmt::Arguments<'_>) {
    log::debug!("{msg}");
}

/// Run `dcg trace` on the kernel: notices go to `notify` as they happen, the trace to
/// `out`.
pub fn run(
    args: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
    notify: &mut dyn FnMut(Notice),
) -> Result<Outcome> {
    // A stop signal before tracefs is touched ends dcg at once (see tracefs).
    tracefs::install_stop_handlers();
    if let Some(f) = args
        .func
        .iter()
        .find(|f| dcg_live::options::split_user_func(f).is_some())
    {
        return Err(KtraceError::Mixed(f.clone()));
    }
    let set = dcg_dbresolve::resolve(&args.db, sources)?;
    if let Some(note) = set.fetched() {
        notify(Notice::DbFetched(note.to_string()));
    }
    let root = tracefs::mount_point()?;
    // Catch signals before touching tracefs, so an interrupt cannot cut a stale-session
    // removal in half; the loop acts on the stop request once tracing runs.
    tracefs::arm_stop_handlers();
    for r in tracefs::remove_stale(&root) {
        notify(Notice::RemovedStale(r));
    }
    let mut avail = Available::read(&root).map_err(KtraceError::Available)?;
    // Inlined copies are probed by the BPF engine only.
    let with_inlines = args.engine != Engine::Fgraph;
    let resolved = match resolve_roots(&args.func, &avail, &set, with_inlines) {
        Ok(r) => r,
        Err(errors) => {
            for e in errors {
                notify(Notice::NoMatch(e));
            }
            return Ok(Outcome::NothingToTrace);
        }
    };
    if let Some(pid) = args.target.pid() {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(KtraceError::NoProcess(pid));
        }
    }
    let inlined = !resolved.inlines.is_empty();
    if inlined {
        let mut containers: Vec<String> = Vec::new();
        for i in &resolved.inlines {
            if let Some(c) = i.caller() {
                if !containers.iter().any(|x| x == c.symbol()) {
                    containers.push(c.symbol().to_string());
                }
            }
        }
        notify(Notice::Inlined {
            funcs: resolved.inline_funcs.clone(),
            copies: resolved.inlines.len(),
            containers,
            more: resolved.inline_more,
        });
    }
    let roots = resolved.roots;
    let choice = EngineChoice::of(args, inlined, &root);
    if choice.engine == Engine::Bpf {
        match bpf_engine::run(
            args,
            &set,
            (&root, avail.take_sites()),
            roots.clone(),
            &resolved.inlines,
            out,
            notify,
        ) {
            Ok(summary) => return Ok(Outcome::Traced(Box::new(summary))),
            // Chosen automatically and unusable here (no kprobe.multi, no BTF, locked
            // down): function_graph still draws the tree, with the values it can get.
            Err(KtraceError::BpfUnavailable(e)) if choice.reason != EngineReason::Asked => {
                notify(Notice::BpfFallback(e.to_string()));
            }
            Err(e) => return Err(e),
        }
    }
    let summary = fgraph_engine::run(args, &set, &root, &avail, roots, out, notify)?;
    Ok(Outcome::Traced(Box::new(summary)))
}

/// Which rule chose the kernel engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineReason {
    /// `--engine fgraph` or `--engine bpf`.
    Asked,
    /// Inlined copies are traced: only the BPF engine probes them.
    InlinedCopies,
    /// Values are asked for and the kernel lacks `funcgraph-retval`: only the BPF engine
    /// gets them all.
    ValuesWithoutRetval,
    /// function_graph prints every value itself here (or none is asked for), and is the
    /// cheaper way to draw the tree.
    Fgraph,
}

/// The kernel engine chosen, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineChoice {
    /// `Fgraph` or `Bpf`.
    pub engine: Engine,
    /// The rule that chose it.
    pub reason: EngineReason,
}

impl EngineChoice {
    /// The engine for `args` (`inlined`: the patterns name inlined copies), on the kernel
    /// whose tracefs is at `root`. The file test ignores `--fgraph-probes` on purpose.
    pub fn of(args: &TraceOptions, inlined: bool, root: &std::path::Path) -> EngineChoice {
        let values = args.show_retvals || args.args;
        let (engine, reason) = match args.engine {
            Engine::Auto if inlined => (Engine::Bpf, EngineReason::InlinedCopies),
            Engine::Auto if values && !root.join("options/funcgraph-retval").exists() => {
                (Engine::Bpf, EngineReason::ValuesWithoutRetval)
            }
            Engine::Auto => (Engine::Fgraph, EngineReason::Fgraph),
            e => (e, EngineReason::Asked),
        };
        EngineChoice { engine, reason }
    }
}
