//! The errors of a user-space trace session.

/// Errors of a user-space trace session.
#[derive(Debug, thiserror::Error)]
pub enum UtraceError {
    /// `--stack` in a session tracing both sides whose user side takes uprobes.
    #[error(
        "--stack: user and kernel functions traced together with uprobes on the user side \
         give no stacks (the in-process engine does)"
    )]
    JointStackNeedsInProcess,
    /// A `--func` that is not `PATH:PATTERN`.
    #[error("--func {0}: not of the form PATH:PATTERN")]
    Spec(String),
    /// A binary that cannot be found or read.
    #[error("{path}: {what}")]
    Binary {
        /// The path given or resolved.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// No db for a binary.
    #[error(transparent)]
    Db(#[from] dcg_dbresolve::DbError),
    /// The command could not be started, or `-p` names no process.
    #[error(transparent)]
    Process(#[from] dcg_live::process::ProcessError),
    /// `--engine inproc` where the session cannot run in process.
    #[error("--engine inproc: {0}")]
    InProcessAsked(crate::plan::NotInProcess),
    /// A `--filter` refused before tracing (which one, and why: the binary words it with
    /// a caret under the offending token).
    #[error("--filter: {0}")]
    Filter(dcg_filter::saved::SelectError),
    /// A `--fields` path refused before tracing.
    #[error("--fields: {0}")]
    Fields(String),
    /// `-p PID` names no running process.
    #[error("process {0}: no such process")]
    NoProcess(i32),
    /// The kernel has no uprobe events.
    #[error(
        "this kernel has no uprobe events ({0} is missing: a kernel built without \
         CONFIG_UPROBE_EVENTS); trace a command with --engine inproc instead"
    )]
    NoUprobes(String),
    /// Not root: tracefs or its uprobe_events file is not this user's.
    #[error("uprobes need root (CAP_SYS_ADMIN and tracefs access): run as root ({0})")]
    NeedsRoot(String),
    /// A probe could not be created.
    #[error("probing {what}: {error}")]
    Probe {
        /// Which function (and whether its return).
        what: String,
        /// tracefs's refusal.
        error: dcg_live::tracefs::TraceFsError,
    },
    /// tracefs refused something.
    #[error(transparent)]
    TraceFs(#[from] dcg_live::tracefs::TraceFsError),
    /// Reading the stream or writing the output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing an output file failed (the message names it).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
    /// Setting up or closing the outputs failed.
    #[error(transparent)]
    Pipeline(#[from] dcg_calls::pipeline::PipelineError),
}

pub(crate) type Result<T> = std::result::Result<T, UtraceError>;
