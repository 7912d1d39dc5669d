//! The kernel trace plan, made once before anything is traced: the dbs, the traceable
//! functions, the roots and inlined copies `--func` selects (each pattern matched once,
//! [`crate::roots`]), the engine chosen with its reason, the outputs asked for, the
//! engine-independent session plan and the engines' test switches. Both engines take it
//! whole; neither reads the options.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use dcg_calls::outputs::OutputSpec;
use dcg_dbset::glob::glob_match;
use dcg_dbset::DbSet;
use dcg_filter::saved::TreeFilter;
use dcg_filter::Signature;
use dcg_live::options::{Engine, TraceOptions};
use dcg_live::plan::SessionPlan;

use crate::error::{KtraceError, Result};
use crate::funcs::Available;
use crate::outcome::Notice;
use crate::roots::resolve_roots;

/// Switches of the kernel engines that tests set (hidden options of `dcg trace`, read by
/// the binary); the defaults are what a user gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tuning {
    /// function_graph engine: take every value from exit / entry probe events, as on a
    /// kernel without `funcgraph-retval` and `funcgraph-args` (`--fgraph-probes`).
    pub fgraph_probes: bool,
    /// function_graph engine: read the stream as text even where binary pages would do
    /// (`--fgraph-text`).
    pub fgraph_text: bool,
    /// BPF engine: records waiting undecoded beyond this many bytes go to a file
    /// (`--records-in-memory`; `None`: the engine's bound).
    pub records_in_memory: Option<usize>,
    /// BPF engine: how the programs are attached (`--bpf-mode`; `None`: as the kernel's
    /// BPF JIT allows).
    pub bpf_mode: Option<dcg_bpf::Mode>,
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
    /// `--comm` or `--cgroup`: only the BPF program selects tasks so.
    TaskFilter,
    /// `--stack`: the BPF program takes the kernel stack at a root's entry, one helper
    /// call (function_graph adds a function probe and its records).
    Stack,
    /// `--fields` or `--deref`: only the BPF program reads members at a call's entry.
    Fields,
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
    /// The engine `asked` for with `values` shown, `tasks` selected, `stack`s taken and
    /// `fields` read (`inlined`: the patterns name inlined copies), on the kernel whose
    /// tracefs is at `root`. The file test ignores `--fgraph-probes` on purpose.
    pub fn of(
        asked: Engine,
        (values, tasks, stack, fields): (bool, bool, bool, bool),
        inlined: bool,
        root: &Path,
    ) -> EngineChoice {
        let (engine, reason) = match asked {
            Engine::Auto if tasks => (Engine::Bpf, EngineReason::TaskFilter),
            Engine::Auto if stack => (Engine::Bpf, EngineReason::Stack),
            Engine::Auto if fields => (Engine::Bpf, EngineReason::Fields),
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

/// A kernel session, planned.
pub struct KernelPlan<'db> {
    /// The dbs values are decoded with.
    pub dbs: &'db DbSet,
    /// Where tracefs is mounted.
    pub tracefs: PathBuf,
    /// The traceable functions (and their addresses, where the kernel lists them).
    pub avail: Available,
    /// The functions whose calls start a tree (the containers of the inlined copies
    /// included).
    pub roots: Vec<String>,
    /// The inlined copies asked for (probed by the BPF engine).
    pub inlines: Vec<sigdb::Instance<'db>>,
    /// The engine, and why.
    pub engine: EngineChoice,
    /// What every engine reads: target, stop, values, depth, inline frames.
    pub session: SessionPlan,
    /// The outputs asked for (opened by [`crate::run`] before an engine starts).
    pub outputs: OutputSpec,
    /// `--filter` and `--min-duration`, bound to the roots' (and `FUNC:`'s) signatures:
    /// the trees shown.
    pub select: Option<Rc<TreeFilter>>,
    /// `--fields`: the members the BPF program reads at functions' entries.
    pub fields: crate::fields::KernelFields<'db>,
    /// `--deref`: the structs the BPF program reads at functions' entries.
    pub derefs: crate::derefs::KernelDerefs<'db>,
    /// `--notrace` globs: functions never attached (no root among them).
    pub notrace: Vec<String>,
    /// `--comm`, `--cgroup`: the tasks that start trees (BPF engine).
    pub tasks: TaskFilter,
    /// Test switches.
    pub tuning: Tuning,
}

impl<'db> KernelPlan<'db> {
    /// Plan a session of `opts` over `dbs` on the kernel whose tracefs is at `tracefs`:
    /// `None` when no pattern matches a traceable function (each told to `notify`, with
    /// why).
    pub fn make(
        opts: &TraceOptions,
        tuning: Tuning,
        dbs: &'db DbSet,
        tracefs: PathBuf,
        avail: Available,
        notify: &mut dyn FnMut(Notice),
    ) -> Result<Option<KernelPlan<'db>>> {
        // Inlined copies are probed by the BPF engine only.
        let with_inlines = opts.engine != Engine::Fgraph;
        let resolved = match resolve_roots(&opts.func, &avail, dbs, with_inlines) {
            Ok(r) => r,
            Err(errors) => {
                for e in errors {
                    notify(Notice::NoMatch(e));
                }
                return Ok(None);
            }
        };
        if let Some((root, pattern)) = resolved.roots.iter().find_map(|r| {
            let p = opts.notrace.iter().find(|p| glob_match(p, r))?;
            Some((r.clone(), p.clone()))
        }) {
            return Err(KtraceError::NotraceRoot { root, pattern });
        }
        let select = select(opts, dbs, &resolved.roots)?;
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
        let mut session = SessionPlan::of(opts);
        // What the filters read is captured (and shown), as --args, --show-retvals and
        // --fields.
        let filter_member = select.as_ref().and_then(|s| {
            session.read_for(s);
            s.members().into_iter().next().map(|(_, path)| path)
        });
        let tasks = TaskFilter::of(opts)?;
        let traceable = |name: &str| avail.contains(name);
        let fields =
            crate::fields::KernelFields::plan(&session.derefs, dbs, &resolved.roots, &traceable)?;
        let derefs = crate::derefs::KernelDerefs::plan(
            &session.derefs,
            dbs,
            avail
                .sites()
                .unwrap_or_default()
                .iter()
                .map(|s| s.name.as_str()),
        );
        // The members are shown with the arguments.
        session.values.args |= !fields.is_empty() || !derefs.is_empty();
        let engine = EngineChoice::of(
            opts.engine,
            (
                session.values.any(),
                tasks.any(),
                session.stack,
                !fields.is_empty() || !derefs.is_empty(),
            ),
            inlined,
            &tracefs,
        );
        if engine.engine == Engine::Fgraph && tasks.any() {
            return Err(KtraceError::TaskFilterNeedsBpf);
        }
        if let Some(path) = filter_member.filter(|_| engine.engine == Engine::Fgraph) {
            return Err(KtraceError::FilterMembersNeedBpf(path));
        }
        Ok(Some(KernelPlan {
            dbs,
            tracefs,
            avail,
            roots: resolved.roots,
            inlines: resolved.inlines,
            engine,
            outputs: outputs(opts),
            session,
            tuning,
            select,
            notrace: opts.notrace.clone(),
            tasks,
            fields,
            derefs,
        }))
    }
}

impl KernelPlan<'_> {
    /// Start reading the running kernel's flag tables (`dcg-kflags`: what its trace events
    /// print by name, `gfp_t` as `GFP_KERNEL`) from tracefs in a thread, when values are
    /// shown: a couple of thousand format files, seconds on an emulated CPU, read while
    /// the engine sets up.
    pub fn flag_tables(&self) -> FlagTablesRead {
        if !self.session.values.any() {
            return FlagTablesRead(None);
        }
        let events = self.tracefs.join("events");
        FlagTablesRead(Some(std::thread::spawn(move || {
            dcg_kflags::FlagTables::read_events(&events)
        })))
    }
}

/// The flag tables being read ([`KernelPlan::flag_tables`]).
pub struct FlagTablesRead(
    Option<std::thread::JoinHandle<std::result::Result<dcg_kflags::FlagTables, dcg_kflags::Error>>>,
);

impl FlagTablesRead {
    /// The tables; `None` when values are not shown or the events cannot be read (values
    /// stay numbers).
    pub fn join(self) -> Option<Rc<dcg_kflags::FlagTables>> {
        match self.0?.join() {
            Ok(Ok(t)) => Some(Rc::new(t)),
            Ok(Err(e)) => {
                crate::debug(format_args!("no flag tables: {e}"));
                None
            }
            Err(p) => std::panic::resume_unwind(p),
        }
    }
}

/// `--filter` and `--min-duration` bound to the signatures of `roots` (and of each
/// `FUNC:` the db has), or refused; `None` when neither is asked for.
fn select(opts: &TraceOptions, dbs: &DbSet, roots: &[String]) -> Result<Option<Rc<TreeFilter>>> {
    if opts.filters.is_empty() && opts.min_duration.is_none() {
        return Ok(None);
    }
    let sigs: Vec<(String, Signature)> = roots
        .iter()
        .filter_map(|r| Some((r.clone(), Signature::of(&dbs.find(r, None)?, &opts.filters))))
        .collect();
    let find = |name: &str| {
        let f = dbs.find(name, None)?;
        Some((name.to_string(), Signature::of(&f, &opts.filters)))
    };
    TreeFilter::bound(
        opts.filters.clone(),
        opts.min_duration,
        &sigs,
        &find,
        "not in the kernel's db",
    )
    .map(|f| Some(Rc::new(f)))
    .map_err(KtraceError::Filter)
}

/// The session's outputs, as the command line asked for them (the saved-calls file named
/// after the `--func` patterns).
fn outputs(opts: &TraceOptions) -> OutputSpec {
    OutputSpec {
        json: opts.output.json,
        errors_only: opts.output.errors_only,
        color: opts.output.color,
        cpu_width: 1,
        report: opts.output.report,
        saved: opts.output.saved_calls.clone(),
        source: format!("dcg trace --func {}", opts.func.join(" --func ")),
        hide_interrupts: opts.hide_irqs,
        ..OutputSpec::default()
    }
}

/// `--comm` and `--cgroup`: which tasks start trees, checked by the BPF program when a root
/// is entered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// The task name (at most 15 bytes, as the kernel keeps it).
    pub comm: Option<String>,
    /// The cgroup v2's id (the inode number of its directory).
    pub cgroup: Option<u64>,
}

impl TaskFilter {
    /// From the options: the name checked, the cgroup found.
    pub fn of(opts: &TraceOptions) -> Result<TaskFilter> {
        if let Some(c) = &opts.comm {
            if c.is_empty() || c.len() > 15 {
                return Err(KtraceError::Comm(c.clone()));
            }
        }
        let cgroup = match &opts.cgroup {
            Some(p) => Some(cgroup_id(p)?),
            None => None,
        };
        Ok(TaskFilter {
            comm: opts.comm.clone(),
            cgroup,
        })
    }

    /// Whether it selects tasks at all.
    pub fn any(&self) -> bool {
        self.comm.is_some() || self.cgroup.is_some()
    }
}

/// The cgroup mount dcg looks under for a relative `--cgroup`.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// The id of the cgroup v2 at `path` (relative paths under [`CGROUP_ROOT`]): the inode
/// number of its directory, which the kernel's `bpf_get_current_cgroup_id` returns.
fn cgroup_id(path: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        Path::new(CGROUP_ROOT).join(path)
    };
    let bad = |why: String| KtraceError::Cgroup {
        path: full.clone(),
        why,
    };
    let meta = std::fs::metadata(&full).map_err(|e| bad(e.to_string()))?;
    if !meta.is_dir() {
        return Err(bad("not a directory".into()));
    }
    let fs = nix::sys::statfs::statfs(&full).map_err(|e| bad(e.to_string()))?;
    if fs.filesystem_type() != nix::sys::statfs::CGROUP2_SUPER_MAGIC {
        return Err(bad("not in a cgroup v2 hierarchy".into()));
    }
    Ok(meta.ino())
}
