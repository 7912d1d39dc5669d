//! The errors of a kernel trace session.

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
    /// A `--filter` refused before tracing (which one, and why: the binary words it with
    /// a caret under the offending token).
    #[error("--filter: {0}")]
    Filter(dcg_filter::saved::SelectError),
    /// `--notrace` names a function `--func` asks for.
    #[error("--notrace {pattern} excludes {root}, a function --func traces")]
    NotraceRoot {
        /// The root.
        root: String,
        /// The `--notrace` pattern.
        pattern: String,
    },
    /// The kernel refused a `--notrace` pattern (function_graph: `set_ftrace_notrace`).
    #[error("--notrace {0}: {1}")]
    Notrace(String, dcg_live::tracefs::TraceFsError),
    /// The kernel refused a root's `stacktrace` probe (`--stack`, function_graph).
    #[error("--stack: the stacktrace probe on {0}: {1}")]
    StackProbe(String, dcg_live::tracefs::TraceFsError),
    /// `--comm` or `--cgroup` with the function_graph engine, which cannot select tasks so.
    #[error(
        "--comm and --cgroup need the BPF engine (function_graph cannot select tasks by \
         name or cgroup): leave out --engine fgraph"
    )]
    TaskFilterNeedsBpf,
    /// `--stack` with the function_graph engine where it reads text (its values need
    /// probe events, or the binary pages are unusable): the stacks are taken in binary.
    #[error(
        "--stack with the function_graph engine needs its binary records, and {0}: \
         use --engine bpf"
    )]
    StackNeedsBinary(&'static str),
    /// The function_graph engine as the kernel side of a session tracing both sides where
    /// it reads text: its lines carry no times to place the kernel calls under the user
    /// calls by.
    #[error(
        "the function_graph engine joins kernel calls to user calls by the times of its \
         binary records, and {0}: use --engine bpf for the kernel side"
    )]
    JointNeedsBinary(&'static str),
    /// `--filter` on a member path (the first named) with the function_graph engine.
    #[error(
        "--filter: {0} is a member: filters on members are decided by the BPF engine only \
         (the function_graph engine shows them with --fields): leave out --engine fgraph"
    )]
    FilterMembersNeedBpf(String),
    /// A `--fields` path refused.
    #[error("--fields: {0}")]
    Fields(String),
    /// A `--comm` the kernel cannot hold.
    #[error("--comm {0:?}: a task name is 1 to 15 bytes")]
    Comm(String),
    /// A `--cgroup` that names no cgroup v2.
    #[error("--cgroup {}: {why}", path.display())]
    Cgroup {
        /// The directory looked at.
        path: std::path::PathBuf,
        /// What is wrong.
        why: String,
    },
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

pub(crate) type Result<T> = std::result::Result<T, KtraceError>;
