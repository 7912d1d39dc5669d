//! Live kernel tracing: `dcg trace --func PATTERN [--show-retvals] [--args] ...`.
//!
//! function_graph in a private instance (`instances/dcg-<pid>`), graph roots multiplexed
//! through the shared top-level `set_graph_function` ([`dcg_live::graphfilter`]), the stream
//! cut to this session's trees ([`tree::TreeFilter`]) and decoded by type
//! ([`dcg_calls::decode::Decoder`]). Kernels without `funcgraph-retval` / `funcgraph-args` get
//! values from exit / entry probe events ([`probes`]) joined to the calls. The design and
//! its limits are described in `tracer/KTRACE.md`.

pub mod bpf;
pub mod callees;
pub mod funcs;
pub mod probes;
pub mod rawtree;
pub mod tree;

use std::io::Write;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use dcg_calls::decode::{Decoder, Options};
use dcg_calls::outputs::OutputSpec;
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::DbSet;
use dcg_live::graphfilter::{Registration, Registry};
use dcg_live::options::{Engine, TraceOptions};
use dcg_live::process::Child;
use dcg_live::tracefs::{self, Session};

use funcs::Available;
use probes::Probes;
use tree::{Feedback, TreeFilter};

/// Most probes one session creates.
pub const PROBE_CAP: usize = 500;
/// Levels of static callee discovery below the roots when `--depth` is not given.
const STATIC_DEPTH: u32 = 2;
/// Most functions given lazy probes per read of the pipe.
const LAZY_PER_ROUND: usize = 8;
/// At most this many bytes of binary pages wait undecoded.
const DEFER_MAX: usize = 256 << 20;
/// Longest the session keeps recording after the command exited (children it forked may
/// still run); what was recorded is then read whole.
const DRAIN_MAX: Duration = Duration::from_secs(3);

/// Progress at the `log` facade's debug level (`DCG_KTRACE_DEBUG=1` has the dcg binary
/// show it, each line with the seconds since dcg started).
pub(crate) fn debug(msg: std::fmt::Arguments<'_>) {
    log::debug!("{msg}");
}

/// What the kernel's tracefs offers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    /// `options/funcgraph-retval`.
    pub retval: bool,
    /// `options/funcgraph-retaddr`.
    pub retaddr: bool,
    /// `options/funcgraph-args`.
    pub args: bool,
    /// fprobes run on the function-graph tracer (Linux 6.14 on) rather than on rethook.
    pub fprobe_on_fgraph: bool,
}

impl Features {
    /// Detect from the instance's option files.
    /// `DCG_KTRACE_PROBES=1` pretends the kernel lacks `funcgraph-retval` and
    /// `funcgraph-args`, to exercise the probe path on any kernel (tests).
    pub fn detect(s: &Session) -> Features {
        if std::env::var_os("DCG_KTRACE_PROBES").is_some_and(|v| v == "1") {
            return Features::default();
        }
        Features {
            retval: s.has("options/funcgraph-retval"),
            retaddr: s.has("options/funcgraph-retaddr"),
            args: s.has("options/funcgraph-args"),
            fprobe_on_fgraph: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .is_ok_and(|r| release_at_least(&r, (6, 14))),
        }
    }
}

/// Whether a kernel release string (`7.2.13+deb14-cloud-amd64`) is at least `want`.
fn release_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= want
}

/// Errors of a kernel trace session.
#[derive(Debug, thiserror::Error)]
pub enum KtraceError {
    /// A `--func PATH:PATTERN` among kernel patterns.
    #[error("{0}: user-space and kernel functions cannot be traced in one session")]
    Mixed(String),
    /// No db.
    #[error(transparent)]
    Db(#[from] dcg_dbresolve::DbError),
    /// tracefs refused something.
    #[error(transparent)]
    TraceFs(#[from] dcg_live::tracefs::TraceFsError),
    /// The graph filter could not be registered.
    #[error("registering graph functions: {0}")]
    Register(dcg_live::graphfilter::GraphFilterError),
    /// The graph filter could not be given back.
    #[error("restoring set_graph_function: {0}")]
    Unregister(dcg_live::graphfilter::GraphFilterError),
    /// available_filter_functions could not be read.
    #[error("reading available_filter_functions: {0}")]
    Available(std::io::Error),
    /// `-p PID` names no process.
    #[error("no process {0}")]
    NoProcess(i32),
    /// The command could not be started.
    #[error(transparent)]
    Process(#[from] dcg_live::process::ProcessError),
    /// Reading the stream or writing the output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing an output file failed (the message names it).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
    /// Setting up or closing the outputs failed.
    #[error(transparent)]
    Pipeline(#[from] dcg_calls::pipeline::PipelineError),
    /// The BPF engine could not capture.
    #[error(transparent)]
    Bpf(#[from] dcg_bpf::BpfError),
    /// The BPF engine could not be loaded or attached (nothing was traced yet).
    #[error("{0}")]
    BpfUnavailable(dcg_bpf::BpfError),
    /// `--engine fgraph` would need fprobe exit events next to function_graph on a kernel
    /// where that makes the kernel log a WARNING.
    #[error(
        "--engine fgraph cannot read return values on this kernel: it has no \
         funcgraph-retval, and fprobe exit events next to function_graph make it log a \
         WARNING (fprobe_return, Linux 6.14 on, seen on Debian 7.2); the BPF engine (the \
         default) reads them"
    )]
    ExitProbesWarn,
}

type Result<T> = std::result::Result<T, KtraceError>;

/// What the session has to tell the user as it goes (the command line prints these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The running kernel's db came from debuginfod (where from, where kept).
    DbFetched(String),
    /// A session killed earlier left this behind; it was removed.
    RemovedStale(String),
    /// A pattern matched no traceable function, and why.
    NoMatch(String),
    /// A root got no exit probe, so its value will be missing.
    NoExitProbe {
        /// The function.
        func: String,
        /// Why.
        why: String,
    },
    /// `set_graph_function` refused these roots (they will not be traced).
    GraphRejected(Vec<String>),
    /// The automatic engine choice fell back to function_graph: BPF could not be used.
    BpfFallback(String),
    /// A pattern names inlined code: the functions holding the copies are traced, each
    /// copy shown as a frame of its own.
    Inlined {
        /// The inlined functions.
        funcs: Vec<String>,
        /// Copies probed.
        copies: usize,
        /// The functions holding them.
        containers: Vec<String>,
        /// Copies left out (over the limit).
        more: usize,
    },
    /// An inlined copy's probe could not be placed (its frame still opens at the first
    /// call made from it, without arguments).
    InlineProbeFailed {
        /// The inlined function.
        func: String,
        /// Where its copy is.
        container: String,
        /// The kernel's error.
        why: String,
    },
    /// Tracing has started.
    Tracing {
        /// Root functions.
        functions: usize,
        /// What is traced (`command pid 12`, `pid 7`, `all tasks`).
        target: String,
        /// Probe events created.
        probes: usize,
    },
}

/// How a session ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Why it stopped (`signal 2`, `command exited`, `3 calls`, `duration reached`).
    pub stop_reason: String,
    /// Top-level calls completed.
    pub completed: u64,
    /// Probe events created.
    pub probes: usize,
    /// Events the stream reported lost (and whether some counts were unknown).
    pub lost_in_stream: u64,
    /// Some lost-event notices gave no count.
    pub lost_unknown: bool,
    /// Events overwritten in the per-CPU buffers.
    pub overrun: u64,
    /// BPF engine: runs of the program the kernel skipped because one already ran on that
    /// CPU (a traced function hit inside an interrupt that arrived during a record); they
    /// may be any task's, so they are reported apart from lost records.
    pub bpf_missed: u64,
    /// BPF engine: calls of the traced tasks lost, by the function whose entry or return
    /// was being recorded when the kernel skipped the program on that CPU (what an
    /// interrupt arriving then ran), most first. Their trees say so (`/* N calls lost */`,
    /// `"lost"` in saved calls).
    pub lost_calls: Vec<(String, u64)>,
    /// BPF engine: trees (top-level calls) that lost calls.
    pub lossy_trees: u64,
    /// BPF engine: the program could not find the kernel's count of its skipped runs,
    /// so losses are not attributed ([`Summary::bpf_missed`] is all there is).
    pub losses_unattributed: bool,
    /// Events dropped by the per-CPU buffers.
    pub dropped: u64,
    /// Non-void calls that closed without a value (no exit probe, or it came too late), by
    /// function, most first; empty when the kernel prints values itself.
    pub valueless: Vec<(String, u64)>,
    /// Functions that got no probe for the probe limit.
    pub probes_capped: u64,
    /// Probes that could not be created, with the error.
    pub probes_failed: Vec<(String, String)>,
    /// Calls of functions the db does not know (the decoder's summary line).
    pub undecoded: Option<String>,
    /// What could not be restored on cleanup.
    pub cleanup_failures: Vec<String>,
    /// The calls, when collected for a report (`--report`).
    pub calls: Option<Vec<dcg_calls::saved_format::CallRecord>>,
}

/// A session's result.
#[derive(Debug)]
pub enum Outcome {
    /// No pattern matched a traceable function (the notices said why).
    NothingToTrace,
    /// Traced; how it ended.
    Traced(Box<Summary>),
}

/// What `--func` asks for: the traceable functions, and inlined copies of functions
/// (their containers are among the roots).
struct Resolved<'a> {
    roots: Vec<String>,
    inlines: Vec<sigdb::Instance<'a>>,
    /// Inlined functions asked for, and copies over the limit.
    inline_funcs: Vec<String>,
    inline_more: usize,
}

/// Expand `--func` patterns against the traceable functions and the db's inlined copies
/// (`with_inlines`); explain every pattern that matches nothing.
fn resolve_roots<'a>(
    patterns: &[String],
    avail: &Available,
    set: &'a DbSet,
    with_inlines: bool,
) -> std::result::Result<Resolved<'a>, Vec<String>> {
    let mut r = Resolved {
        roots: Vec::new(),
        inlines: Vec::new(),
        inline_funcs: Vec::new(),
        inline_more: 0,
    };
    let mut errors = Vec::new();
    for p in patterns {
        let m = avail.matching(p);
        let (copies, more) = if with_inlines {
            funcs::inline_copies(p, set, avail)
        } else {
            (Vec::new(), 0)
        };
        if m.is_empty() && copies.is_empty() {
            let mut why = funcs::explain(p, set, avail);
            if !with_inlines && !funcs::inline_copies(p, set, avail).0.is_empty() {
                why.push_str("; the BPF engine traces its inlined copies (--engine bpf)");
            }
            errors.push(why);
        }
        for f in m {
            if !r.roots.contains(&f) {
                r.roots.push(f);
            }
        }
        r.inline_more += more;
        for i in copies {
            let (Some(callee), Some(caller)) = (i.callee(), i.caller()) else {
                continue;
            };
            let c = caller.symbol().to_string();
            if !r.roots.contains(&c) {
                r.roots.push(c);
            }
            let f = callee.name().to_string();
            if !r.inline_funcs.contains(&f) {
                r.inline_funcs.push(f);
            }
            if !r.inlines.contains(&i) {
                r.inlines.push(i);
            }
        }
    }
    if errors.is_empty() {
        Ok(r)
    } else {
        Err(errors)
    }
}

fn opt(sess: &mut Session, name: &str, on: bool) -> Result<()> {
    Ok(sess.set_option(name, on)?)
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
    if let Some(pid) = args.pid {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(KtraceError::NoProcess(pid));
        }
    }
    // Automatic choice: function_graph prints every value itself where it has
    // funcgraph-retval (and is the cheaper way to draw the tree); elsewhere only the BPF
    // engine gets them all. The file test ignores DCG_KTRACE_PROBES on purpose.
    let values = args.show_retvals || args.args;
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
    let engine = match args.engine {
        Engine::Auto if inlined => Engine::Bpf,
        Engine::Auto if values && !root.join("options/funcgraph-retval").exists() => Engine::Bpf,
        Engine::Auto => Engine::Fgraph,
        e => e,
    };
    if engine == Engine::Bpf {
        match bpf::run(
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
            Err(KtraceError::BpfUnavailable(e)) if args.engine == Engine::Auto => {
                notify(Notice::BpfFallback(e.to_string()));
            }
            Err(e) => return Err(e),
        }
    }
    let mut s = Setup::new(args, &set, &root, &avail, roots)?;
    s.probe(notify)?;
    s.start(notify)?;
    let mut summary = s.trace(out, notify)?;
    s.close(&mut summary)?;
    Ok(Outcome::Traced(Box::new(summary)))
}

/// A session being set up and run.
struct Setup<'s> {
    args: &'s TraceOptions,
    set: &'s DbSet,
    root: &'s std::path::Path,
    avail: &'s Available,
    roots: Vec<String>,
    // Declared before the session so that it is dropped after it: the instance goes
    // first, then the graph functions are given back.
    registration: Option<Registration>,
    sess: Session,
    child: Option<Child>,
    filter: TreeFilter,
    probes: Probes,
    want_exit: bool,
    want_entry: bool,
    /// Callees this many levels below a root get probes (static discovery and lazily).
    lazy_depth: u32,
    pipe: Option<tracefs::TracePipe>,
    /// The binary source, when the session needs no probe events.
    raw: Option<rawtree::RawSource>,
    /// `/proc/kallsyms`, read and parsed once (names of functions in binary records, of
    /// pointers; the kernel text the probes' callees are found in).
    kallsyms: Kallsyms,
}

impl<'s> Setup<'s> {
    /// The instance: output columns, values the kernel can print itself, pid filter.
    fn new(
        args: &'s TraceOptions,
        set: &'s DbSet,
        root: &'s std::path::Path,
        avail: &'s Available,
        roots: Vec<String>,
    ) -> Result<Setup<'s>> {
        let mut sess = Session::create(root)?;
        let feat = Features::detect(&sess);
        if args.show_retvals && !feat.retval && feat.fprobe_on_fgraph {
            return Err(KtraceError::ExitProbesWarn);
        }
        let child = if args.command.is_empty() {
            None
        } else {
            Some(Child::spawn_stopped(&args.command)?)
        };
        let target = child.as_ref().map(|c| c.pid()).or(args.pid);
        opt(&mut sess, "funcgraph-proc", true)?;
        opt(&mut sess, "funcgraph-tail", false)?;
        let kernel_retvals = args.show_retvals && feat.retval;
        opt(&mut sess, "funcgraph-retval", kernel_retvals)?;
        opt(
            &mut sess,
            "funcgraph-retaddr",
            kernel_retvals && feat.retaddr,
        )?;
        let kernel_args = args.args && feat.args;
        opt(&mut sess, "funcgraph-args", kernel_args)?;
        // Binary reading (no probe events: see `start`) copies pages out faster than the
        // text is formatted, but a 4 MiB buffer per CPU is still only ~140 ms of a busy
        // traced loop under TCG: give it 16 MiB.
        let probes_needed = (args.show_retvals && !feat.retval) || (args.args && !feat.args);
        let raw = !probes_needed && std::env::var_os("DCG_FGRAPH_TEXT").is_none();
        // Interrupts in the traced tasks' trees (`--irqs show`): the kernel records the
        // hardirqs' calls with funcgraph-irqs (softirqs always), each record with the
        // context it ran in, read from the binary records. The text (probe events'
        // sessions) has no context per line: hardirqs are left out there, as before.
        opt(&mut sess, "funcgraph-irqs", raw && !args.hide_irqs)?;
        let _ = sess.write("buffer_size_kb", if raw { "16384" } else { "4096" });
        if let Some(pid) = target {
            sess.write("set_ftrace_pid", &pid.to_string())?;
            opt(&mut sess, "function-fork", true)?;
            if sess.has("set_event_pid") {
                sess.write("set_event_pid", &pid.to_string())?;
                opt(&mut sess, "event-fork", true)?;
            }
        }
        // Never dcg itself (reading the pipe would trace itself).
        let me = std::process::id().to_string();
        if sess.has("set_ftrace_notrace_pid") {
            let _ = sess.write("set_ftrace_notrace_pid", &me);
        }
        if sess.has("set_event_notrace_pid") {
            let _ = sess.write("set_event_notrace_pid", &me);
        }
        debug(format_args!("instance set up, features {feat:?}"));
        let filter = TreeFilter::new(roots.iter().cloned(), args.depth);
        let lazy_depth = match args.depth {
            0 => STATIC_DEPTH,
            d => (d - 1).min(STATIC_DEPTH + 1),
        };
        Ok(Setup {
            args,
            set,
            root,
            avail,
            roots,
            registration: None,
            sess,
            child,
            filter,
            probes: Probes::new(PROBE_CAP),
            want_exit: args.show_retvals && !feat.retval,
            want_entry: args.args && !feat.args,
            lazy_depth,
            pipe: None,
            raw: None,
            kallsyms: Kallsyms::parse(
                &std::fs::read_to_string("/proc/kallsyms").unwrap_or_default(),
            ),
        })
    }

    /// Probe events for the values the kernel does not print: the roots and their callees
    /// found in the kernel text.
    fn probe(&mut self, notify: &mut dyn FnMut(Notice)) -> Result<()> {
        if !(self.want_exit || self.want_entry) {
            return Ok(());
        }
        let (set, avail) = (self.set, self.avail);
        let mut funcs: Vec<String> = self.roots.clone();
        if self.lazy_depth > 0 {
            if let Some(kt) = callees::KernelText::new(&self.kallsyms) {
                // Void callees only matter for their arguments.
                let want_entry = self.want_entry;
                let keep =
                    |n: &str| avail.contains(n) && (want_entry || !funcs::returns_void(set, n));
                funcs.extend(kt.closure(&self.roots, self.lazy_depth, PROBE_CAP, &keep));
            }
        }
        debug(format_args!("{} functions to probe", funcs.len()));
        for f in &funcs {
            self.add_probes(f);
        }
        for r in &self.roots {
            if self.want_exit && !self.probes.has_exit(r) && !funcs::returns_void(set, r) {
                let why = self
                    .probes
                    .failed
                    .iter()
                    .find(|(f, _)| f == r)
                    .map_or("unknown reason".to_string(), |(_, e)| e.clone());
                notify(Notice::NoExitProbe {
                    func: r.clone(),
                    why,
                });
            }
        }
        Ok(())
    }

    /// Exit and entry probes for `f` as wanted; whether any was created.
    fn add_probes(&mut self, f: &str) -> bool {
        let before = self.probes.len();
        if self.want_exit {
            if let Some(ev) = self
                .probes
                .add_exit(&mut self.sess, self.set, self.avail, f)
            {
                self.filter.add_event(&ev);
            }
        }
        if self.want_entry {
            if let Some(ev) = self
                .probes
                .add_entry(&mut self.sess, self.set, self.avail, f)
            {
                self.filter.add_event(&ev);
            }
        }
        self.probes.len() > before
    }

    /// Register the roots in the graph filter, switch to function_graph.
    fn start(&mut self, notify: &mut dyn FnMut(Notice)) -> Result<()> {
        let registration = Registry::system(self.root)
            .register(std::process::id(), &self.roots)
            .map_err(KtraceError::Register)?;
        if !registration.rejected.is_empty() {
            notify(Notice::GraphRejected(registration.rejected.clone()));
        }
        self.registration = Some(registration);
        debug(format_args!(
            "{} probes; graph functions registered",
            self.probes.len()
        ));
        self.sess.write("current_tracer", "function_graph")?;
        debug(format_args!("function_graph on"));
        self.sess.write("tracing_on", "1")?;
        // Binary pages where no probe events are needed (probe events are decoded from
        // their text); the text pipe otherwise, or when the binary layout is unusable.
        if !(self.want_exit || self.want_entry) && std::env::var_os("DCG_FGRAPH_TEXT").is_none() {
            let mut filter =
                rawtree::RawTreeFilter::new(self.roots.iter().cloned(), self.args.depth);
            filter.hide_irqs(self.args.hide_irqs);
            match rawtree::RawSource::open(&self.sess, self.root, &self.kallsyms, filter) {
                Ok(raw) => {
                    debug(format_args!("reading trace_pipe_raw"));
                    self.raw = Some(raw);
                    return Ok(());
                }
                Err(e) => {
                    debug(format_args!("trace_pipe_raw unusable ({e}): reading text"));
                    opt(&mut self.sess, "funcgraph-irqs", false)?;
                }
            }
        }
        self.pipe = Some(self.sess.open_pipe()?);
        Ok(())
    }

    /// The trace loop: read the pipe, keep this session's trees, decode them to `out`,
    /// add lazy probes for callees seen; until a stop condition.
    fn trace(&mut self, out: &mut dyn Write, notify: &mut dyn FnMut(Notice)) -> Result<Summary> {
        let args = self.args;
        let opts = Options {
            json: args.json,
            errors_only: args.errors_only,
            color: args.color,
            hide_probe_events: true,
            collapse_empty: true,
            inline_frames: !args.no_inline_frames,
        };
        let spec = OutputSpec {
            json: args.json,
            errors_only: args.errors_only,
            color: args.color,
            cpu_width: 1,
            report: args.report,
            saved: args.output.clone(),
            source: format!("dcg trace --func {}", args.func.join(" --func ")),
            ..OutputSpec::default()
        };
        // Pointers that land on a kernel symbol are named (`idmap=&nop_mnt_idmap`).
        let pointer_names = self.kallsyms.symbol_map();
        let mut dec = Decoder::with_outputs(self.set, opts, &spec)?;
        dec.set_pointer_names(&pointer_names);
        dec.mark_contexts();
        let target = match (&self.child, args.pid) {
            (Some(c), _) => format!("command pid {}", c.pid()),
            (None, Some(p)) => format!("pid {p}"),
            (None, None) => "all tasks".to_string(),
        };
        notify(Notice::Tracing {
            functions: self.roots.len(),
            target,
            probes: self.probes.len(),
        });
        if let Some(c) = self.child.as_mut() {
            c.resume()?;
        }
        let mut summary = Summary::default();
        let start = Instant::now();
        let deadline = args
            .duration
            .map(|s| start + Duration::from_secs_f64(s.max(0.0)));
        let mut lines = Vec::new();
        let mut drain_until: Option<Instant> = None;
        let mut drain_end: Option<Instant> = None;
        let mut pipe = self.pipe.take();
        let mut raw = self.raw.take();
        let stop_reason = loop {
            if let Some(sig) = tracefs::stop_requested() {
                break format!("signal {sig}");
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break "duration reached".into();
            }
            if drain_until.is_none() {
                // The command ended, or the process given with -p is gone: what is left
                // in the buffers is read, then the session stops.
                let ended = match (self.child.as_mut(), args.pid) {
                    (Some(c), _) => c.poll().is_some(),
                    (None, Some(p)) => !dcg_live::process::is_alive(p),
                    (None, None) => false,
                };
                if ended {
                    drain_until = Some(Instant::now() + Duration::from_millis(700));
                    drain_end = Some(Instant::now() + DRAIN_MAX);
                }
            }
            if drain_end.is_some_and(|d| Instant::now() >= d) {
                break "command exited".into();
            }
            lines.clear();
            let mut fb = Feedback::default();
            let mut done = false;
            // No poll: a waiting reader makes the ring buffer raise an irq_work per event,
            // which function_graph records inside the traced calls.
            // Nothing shown before the end and nothing to count: while the command
            // runs, pages are only copied out (decoding them competes with the traced
            // load for the CPU), and decoded once it ends or too many wait.
            if let Some(raw) = raw.as_mut() {
                if args.shown_at_end
                    && args.count.is_none()
                    && drain_until.is_none()
                    && raw.pending() < DEFER_MAX
                {
                    // A short pause whatever was read: the per-CPU buffers hold far
                    // more than one, and spinning on partly filled pages takes the CPU
                    // from the traced load.
                    if raw.drain()? < rawtree::PAGES_PER_ROUND {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    continue;
                }
            }
            let got = if let Some(raw) = raw.as_mut() {
                let left = args.count.map(|n| n.saturating_sub(summary.completed));
                let r = raw.read(&mut dec, out, left)?;
                fb.completed = r.completed;
                fb.lost = r.lost;
                done = left.is_some_and(|n| r.completed >= n);
                r.pages
            } else if let Some(pipe) = pipe.as_mut() {
                pipe.read_available(&mut lines)?;
                if !lines.is_empty() {
                    debug(format_args!("{} lines, first: {}", lines.len(), lines[0]));
                }
                for l in &lines {
                    self.filter.feed(l, &mut dec, &mut fb)?;
                    if let Some(n) = args.count {
                        if summary.completed + fb.completed >= n {
                            done = true;
                            break;
                        }
                    }
                }
                lines.len()
            } else {
                0
            };
            if got == 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            if let Some(d) = drain_until {
                if got == 0 && Instant::now() >= d {
                    break "command exited".into();
                }
                if got > 0 {
                    drain_until = Some(Instant::now() + Duration::from_millis(400));
                }
            }
            dec.flush_out(out)?;
            summary.completed += fb.completed;
            out.flush()?;
            for n in fb.lost {
                match n {
                    Some(n) => summary.lost_in_stream += n,
                    None => summary.lost_unknown = true,
                }
            }
            self.lazy_probes(fb.seen);
            if done {
                break format!("{} calls", summary.completed);
            }
        };
        debug(format_args!("loop ended: {stop_reason}"));
        let _ = self.sess.write("tracing_on", "0");
        // What was recorded before tracing stopped is read whole (a time limit here
        // silently lost the last calls of a long capture), unless the count is reached.
        while args.count.is_none_or(|n| summary.completed < n) {
            let mut fb = Feedback::default();
            let got = if let Some(raw) = raw.as_mut() {
                let left = args.count.map(|n| n.saturating_sub(summary.completed));
                let r = raw.read(&mut dec, out, left)?;
                fb.completed = r.completed;
                fb.lost = r.lost;
                r.pages
            } else if let Some(pipe) = pipe.as_mut() {
                lines.clear();
                pipe.read_available(&mut lines)?;
                for l in &lines {
                    self.filter.feed(l, &mut dec, &mut fb)?;
                    if args
                        .count
                        .is_some_and(|n| summary.completed + fb.completed >= n)
                    {
                        break;
                    }
                }
                lines.len()
            } else {
                0
            };
            summary.completed += fb.completed;
            for n in fb.lost {
                match n {
                    Some(n) => summary.lost_in_stream += n,
                    None => summary.lost_unknown = true,
                }
            }
            dec.flush_out(out)?;
            if got == 0 {
                break;
            }
        }
        dec.finish(out)?;
        out.flush()?;
        if let Some(c) = self.child.as_mut() {
            c.terminate(Signal::SIGTERM);
        }
        drop(pipe);
        drop(raw);
        (summary.overrun, summary.dropped) = self.sess.buffer_stats();
        if self.want_exit {
            summary.valueless = dec
                .valueless()
                .into_iter()
                .filter(|(f, _)| !funcs::returns_void(self.set, f))
                .collect();
        }
        summary.stop_reason = stop_reason;
        summary.probes = self.probes.len();
        summary.probes_capped = self.probes.capped;
        summary.probes_failed = self.probes.failed.clone();
        summary.undecoded = dec.summary();
        summary.calls = dec.close()?;
        Ok(summary)
    }

    /// Lazy probes for callees seen in the stream, as deep as static discovery goes, a few
    /// per round: each registration takes ~0.1 s under TCG, and the pipe must keep being
    /// read.
    fn lazy_probes(&mut self, seen: Vec<(String, u32)>) {
        if !(self.want_exit || self.want_entry) {
            return;
        }
        let mut budget = LAZY_PER_ROUND;
        for (f, rel) in seen {
            if rel > self.lazy_depth || budget == 0 {
                continue;
            }
            if self.add_probes(&f) {
                budget -= 1;
            }
        }
    }

    /// Cleanup: the instance and the probes, then the graph functions.
    fn close(&mut self, summary: &mut Summary) -> Result<()> {
        debug(format_args!("closing the session"));
        summary.cleanup_failures = self.sess.close();
        debug(format_args!("session closed"));
        if let Some(mut r) = self.registration.take() {
            r.unregister().map_err(KtraceError::Unregister)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn release_order() {
        assert!(super::release_at_least("7.2.13+deb14-cloud-amd64", (6, 14)));
        assert!(super::release_at_least("6.14.0", (6, 14)));
        assert!(!super::release_at_least(
            "6.12.117+deb12-cloud-amd64\n",
            (6, 14)
        ));
        assert!(!super::release_at_least("", (6, 14)));
    }
}
