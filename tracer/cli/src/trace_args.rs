//! Command-line options of `dcg trace`, shared by the kernel and the user-space (uprobe)
//! tracers: `--func` patterns, what to show, when to stop, and what to trace (a command
//! started by dcg, or a running process).

use std::io::IsTerminal;
use std::path::PathBuf;

use dcg_live::options::{DerefRequest, Engine, OutputRequest, StopAt, Target, TraceOptions};

use crate::ColorChoice;

/// `--engine`.
/// `--irqs`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IrqsArg {
    /// Keep them, marked.
    #[default]
    Show,
    /// Leave them out.
    Hide,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineArg {
    /// Chosen by the kernel's features.
    #[default]
    Auto,
    /// function_graph.
    Fgraph,
    /// BPF kprobe.session.
    Bpf,
    /// User space: the in-process recorder.
    Inproc,
    /// User space: uprobes.
    Uprobe,
}

/// `--bpf-mode`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpfModeArg {
    /// One kprobe.session link.
    Session,
    /// An entry link and a return link.
    EntryReturn,
}

/// Options of `dcg trace`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TraceArgs {
    /// Functions to trace: a glob over function names (`vfs_*`), or `PATH:PATTERN` for the
    /// functions of a user-space executable or shared library (`./prog:parse_*`). Both
    /// kinds together trace both sides in one tree: each thread's kernel calls under the
    /// user call that made them.
    #[arg(long = "func", value_name = "[PATH:]PATTERN", required = true)]
    pub func: Vec<String>,
    /// Show return values, decoded by their types.
    #[arg(long)]
    pub show_retvals: bool,
    /// Show arguments, decoded by their types.
    #[arg(long)]
    pub args: bool,
    /// Show calls only down to this nesting depth (1: top-level calls only; 0: all).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub depth: u32,
    /// Stop after N completed top-level calls (N >= 1); with --filter or --min-duration,
    /// after N trees shown.
    #[arg(long, value_name = "N", value_parser = crate::args::positive_count)]
    pub count: Option<u64>,
    /// Only the trees whose top-level call passes EXPR (repeat: all must hold), as `dcg
    /// report --filter` takes it: parameters by name, member paths (`how->flags & 0x40`,
    /// `c->in.tag == "x"`), `ret`, `duration`, `comm`, `pid`, `tid`, `cpu` (`ret ==
    /// -ENOENT`, `name ~ "*.conf"`); `FUNC: EXPR` keeps the trees where some call of FUNC
    /// passes it. Checked against the functions' signatures before tracing; what it reads
    /// is captured and shown (as --args, --show-retvals, a member as --fields FUNC:PATH;
    /// kernel members need the BPF engine). The saved calls (--output) keep every call.
    #[arg(long = "filter", value_name = "EXPR")]
    pub filter: Vec<String>,
    /// Only the calls at least D long (`10us`, `1.5ms`, `2s`) and the calls leading to
    /// them.
    #[arg(long, value_name = "D", value_parser = crate::args::duration)]
    pub min_duration: Option<u64>,
    /// Kernel: only the tasks named NAME (their `comm`, as `ps` shows it) start trees.
    /// The BPF engine checks it when a task enters a root.
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Kernel: only the tasks in this cgroup v2 (a directory of the cgroup2 mount, or a
    /// path under /sys/fs/cgroup: `system.slice/ssh.service`) start trees, matched by
    /// cgroup id in the BPF program.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Never trace the functions PATTERN names (repeat for more): not attached, hooked or
    /// probed; the calls they make still show, under the nearest traced caller. A glob
    /// over names, or `PATH:PATTERN` for a user-space file's.
    #[arg(long, value_name = "[PATH:]PATTERN")]
    pub notrace: Vec<String>,
    /// Print the stack that led to each top-level call above its tree, outermost first
    /// (`function+offset [module]`, inlined functions expanded from the db); saved calls
    /// keep it innermost first. Kernel: the kernel's unwinder (BPF: bpf_get_stack;
    /// function_graph: a stacktrace probe, with binary records); user space: both engines
    /// (the stack's top copied, unwound by dcg).
    #[arg(long)]
    pub stack: bool,
    /// Show members of the structs a parameter points to at the call's entry, with the
    /// arguments: `[PATH:]FUNC:` then comma-separated paths from a parameter through
    /// `->` and `.` (`./prog:apply:c->port,c->next->name,c->in.a`; without FUNC, every
    /// traced function with such a parameter; for the kernel, every --func root). At
    /// most 3 pointers followed; scalars, enums, pointers and bit-fields. Kernel
    /// functions: 8 members a function at most (`do_sys_openat2:how->flags,how->mode`),
    /// read by the BPF program or, with function_graph, by a probe event. Output
    /// parameters (pointers to non-const scalars) are read again at the return.
    #[arg(long, value_name = "[[PATH:]FUNC:]MEMBERS")]
    pub fields: Vec<String>,
    /// Show pointer arguments to structs and unions with their members, C initializer
    /// style (`c=&conf{port=8080, name="dcg", in={a=7}}`), N levels of pointers deep (1 by
    /// default, at most 3; `=` required: `--deref=2`). Implies --args. Kernel functions:
    /// each pointer parameter in an argument register, at most 8 reads of 480 bytes a
    /// function, copied by the BPF program or, with function_graph, by a probe event. Output parameters (pointers to non-const scalars, in user
    /// space structs too) are read again at the return: `/* ret=1 *out=8087 */`.
    #[arg(
        long,
        value_name = "N",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "1",
        value_parser = clap::value_parser!(u32).range(1..=3)
    )]
    pub deref: Option<u32>,
    /// With user functions (`PATH:PATTERN`): under each traced user call, the kernel
    /// calls its thread makes, every system call as a frame with the calls below it
    /// (BPF engine); `=PATTERN`: only the subtrees of the kernel functions PATTERN
    /// matches (`--kernel=do_sys_openat2`). Kernel patterns in --func do the same.
    #[arg(
        long,
        value_name = "PATTERN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub kernel: Option<String>,
    /// With --kernel: kernel calls shown this many levels deep below a user call (1: the
    /// system calls alone; 0: all), as uftrace's -K.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "kernel")]
    pub kernel_depth: u32,
    /// Bytes --deref reads per argument at most; `…` shows where it cut.
    #[arg(long, value_name = "BYTES", default_value_t = dcg_deref::DEFAULT_CAP,
          value_parser = clap::value_parser!(u32).range(8..=4096))]
    pub deref_bytes: u32,
    /// Stop after SECS seconds (fractions allowed; more than 0, at most a year).
    #[arg(long, value_name = "SECS", value_parser = crate::args::duration_secs)]
    pub duration: Option<f64>,
    /// One JSON object (a saved-calls record) per completed call instead of text.
    #[arg(long)]
    pub json: bool,
    /// Only call paths that contain an error return.
    #[arg(long)]
    pub errors_only: bool,
    /// User space: read returns in -4095..-1 as -errno (`-ENOENT`, `ERR_PTR(-ENOMEM)`) and
    /// count them as errors, as for the kernel, whose functions follow that convention
    /// (always on there). Off by default: user-space code mostly returns -1, -2 as numbers.
    #[arg(long)]
    pub errno: bool,
    /// Also save the calls to FILE (saved-calls JSON lines, for `dcg report`).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the trace (the calls, their JSON or the report) to FILE instead of standard
    /// output, so the traced command's own output stays apart from it. FILE appears when
    /// the trace ends (a regular file is replaced whole; a device or FIFO written in place).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub trace_output: Option<PathBuf>,
    /// Print the call-graph report of the traced calls when the trace ends, instead of
    /// the calls (what `dcg report` prints for a saved trace); `--report html -o FILE`:
    /// the HTML page (any `dcg report --format`).
    #[arg(
        long,
        conflicts_with_all = ["json", "errors_only"],
        num_args = 0..=1,
        default_missing_value = "text",
        value_name = "FORMAT"
    )]
    pub report: Option<crate::args::FormatArg>,
    /// Signature db of the traced code (sigdb file or ELF with `.dcg_sigdb`); default: the
    /// store's db (by build-id), else one built in memory from the binary's DWARF.
    #[arg(long = "db", value_name = "FILE")]
    pub db: Vec<PathBuf>,
    /// Color error values: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_name = "WHEN")]
    pub color: ColorChoice,
    /// How kernel calls are captured: fgraph (function_graph; values from
    /// funcgraph-retval, or probe events where the kernel lacks it), bpf (a BPF
    /// kprobe.session program on every traceable function: every value and C strings), or
    /// auto: bpf when values are asked for and the kernel lacks funcgraph-retval. User
    /// space: inproc (a recorder dcg preloads into the command it starts: compiler hooks
    /// of `-pg` and `-fpatchable-function-entry` builds, else patched entries; every
    /// value, floats included) or uprobe; auto: inproc for a command dcg starts, uprobe
    /// for `-p PID` and static binaries. Tracing both sides: once per side
    /// (`--engine inproc --engine fgraph`), a side not named taking its default (the
    /// kernel's: bpf, function_graph where BPF is unusable).
    #[arg(long, value_enum, default_value = "auto", value_name = "ENGINE")]
    pub engine: Vec<EngineArg>,
    /// Do not show inlined code as frames of the inlined functions. By default, where the
    /// db has inline instances (dwarfscan writes them unless `--no-inline-instances`),
    /// calls made from a function's inlined code are shown under a frame for it (BPF
    /// engine, function_graph with return addresses, user space):
    /// `pidfd_create(…) /* inlined in __x64_sys_pidfd_open */ {`.
    #[arg(long)]
    pub no_inline_frames: bool,
    /// User space (every engine, and the functions the in-process engine leaves to
    /// uprobes): do not trace the processes the command forks, nor the programs they
    /// exec (by default they are traced, as the command is); its threads are traced.
    #[arg(long)]
    pub no_children: bool,
    /// Kernel: calls made in interrupt context (hardirq, softirq, NMI) while a traced
    /// task ran: `show` keeps them in its tree, between `==========> irq` and
    /// `<==========` marks (as function_graph's funcgraph-irqs), with the time they took
    /// said at the calls they interrupted; `hide` leaves them out.
    #[arg(long, value_enum, default_value = "show", value_name = "WHEN")]
    pub irqs: IrqsArg,
    /// Trace a running process (and its threads) instead of starting a command.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID",
        value_parser = crate::args::process_id,
        conflicts_with = "command"
    )]
    pub pid: Option<i32>,
    /// Kernel, function_graph: every value from exit / entry probe events, as on a kernel
    /// without funcgraph-retval and funcgraph-args (tests).
    #[arg(long, hide = true)]
    pub fgraph_probes: bool,
    /// Kernel, function_graph: read the stream as text, never as binary pages (tests).
    #[arg(long, hide = true)]
    pub fgraph_text: bool,
    /// Kernel: records (BPF) or pages (function_graph) waiting undecoded beyond this many
    /// bytes go to a file in the temporary directory (tests; default 64 MiB).
    #[arg(long, hide = true, value_name = "BYTES")]
    pub records_in_memory: Option<usize>,
    /// Kernel, BPF engine: attach by one kprobe.session link or by entry and return links
    /// (tests; default: session where the BPF JIT is on).
    #[arg(long, value_enum, hide = true, value_name = "MODE")]
    pub bpf_mode: Option<BpfModeArg>,
    /// The command to start and trace (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl TraceArgs {
    /// The kernel engines' test switches (hidden options).
    pub fn tuning(&self) -> dcg_ktrace::Tuning {
        dcg_ktrace::Tuning {
            fgraph_probes: self.fgraph_probes,
            fgraph_text: self.fgraph_text,
            records_in_memory: self.records_in_memory,
            bpf_mode: self.bpf_mode.map(|m| match m {
                BpfModeArg::Session => dcg_ktrace::BpfMode::Session,
                BpfModeArg::EntryReturn => dcg_ktrace::BpfMode::EntryReturn,
            }),
        }
    }

    /// The session options; colour decided against where the trace goes.
    /// `offline`: never ask debuginfod (`dcg --offline`). `filters`: `--filter`, parsed.
    pub fn options(self, offline: bool, filters: Vec<dcg_filter::Filter>) -> TraceOptions {
        let terminal = self.trace_output.is_none() && std::io::stdout().is_terminal();
        TraceOptions {
            engine: self.engine.first().map_or(Engine::Auto, |&e| engine(e)),
            other_engines: self.engine.iter().skip(1).map(|&e| engine(e)).collect(),
            func: self.func,
            show_retvals: self.show_retvals,
            args: self.args || self.deref.is_some(),
            depth: self.depth,
            stop: StopAt {
                count: self.count,
                duration: self.duration,
            },
            output: OutputRequest {
                color: self.color.decide(terminal && !self.json),
                json: self.json,
                errors_only: self.errors_only,
                saved_calls: self.output,
                report: self.report.is_some(),
                // Decoding waits for the end unless someone watches the output live.
                shown_at_end: self.report.is_some() || !terminal,
            },
            errno: self.errno,
            db: self.db,
            // `-p` conflicts with a command.
            target: match (self.pid, self.command.is_empty()) {
                (Some(p), _) => Target::Pid(p),
                (None, false) => Target::Command(self.command),
                (None, true) => Target::AllTasks,
            },
            no_inline_frames: self.no_inline_frames,
            no_children: self.no_children,
            offline,
            hide_irqs: self.irqs == IrqsArg::Hide,
            recorder: recorder_path(),
            filters,
            min_duration: self.min_duration,
            notrace: self.notrace,
            comm: self.comm,
            cgroup: self.cgroup,
            stack: self.stack,
            derefs: self
                .fields
                .into_iter()
                .map(DerefRequest::Fields)
                .chain(self.deref.map(|depth| DerefRequest::Members {
                    depth,
                    cap: self.deref_bytes,
                }))
                .collect(),
            kernel: self.kernel,
            kernel_depth: self.kernel_depth,
        }
    }
}

/// Where the in-process recorder library is: `DCG_RECORDER`, else beside the `dcg`
/// executable (as cargo builds both), else in `../lib/dcg/` from it (an installed
/// layout); `None` when it is nowhere.
fn recorder_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DCG_RECORDER") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let name = dcg_utrace::inproc_engine::RECORDER;
    [dir.join(name), dir.join("../lib/dcg").join(name)]
        .into_iter()
        .find(|p| p.is_file())
}

/// The engine `--engine` names.
fn engine(e: EngineArg) -> Engine {
    match e {
        EngineArg::Auto => Engine::Auto,
        EngineArg::Fgraph => Engine::Fgraph,
        EngineArg::Bpf => Engine::Bpf,
        EngineArg::Inproc => Engine::Inproc,
        EngineArg::Uprobe => Engine::Uprobe,
    }
}
