//! What a live trace session is asked to do, shared by the kernel and the user-space
//! tracers. The command line fills it in; the libraries never parse arguments.

use std::path::{Path, PathBuf};

/// Options of one `dcg trace` session.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// The kernel capture engine.
    pub engine: Engine,
    /// Function patterns: a glob over names (`vfs_*`), or `PATH:PATTERN` for user space.
    pub func: Vec<String>,
    /// Show return values.
    pub show_retvals: bool,
    /// Show arguments.
    pub args: bool,
    /// Show calls only down to this nesting depth (0: all).
    pub depth: u32,
    /// When the session stops, besides the command ending and a stop signal.
    pub stop: StopAt,
    /// What the trace is written as, and where.
    pub output: OutputRequest,
    /// User space: read values by the kernel's -errno convention (the kernel always is).
    pub errno: bool,
    /// Signature dbs given explicitly.
    pub db: Vec<PathBuf>,
    /// What is traced: a command dcg starts, a running process, or every task.
    pub target: Target,
    /// Calls made from inlined code are not placed under frames for it (the BPF engine
    /// and the uprobe tracer show inlined code as frames of the inlined functions where
    /// the db has inline instances).
    pub no_inline_frames: bool,
    /// User space, in process: processes the command forks (and what they exec) are not
    /// traced.
    pub no_children: bool,
    /// Never ask debuginfod servers (`DEBUGINFOD_URLS`) for a db.
    pub offline: bool,
    /// Kernel: leave out calls made in interrupt context (hardirq, softirq, NMI) inside
    /// a task's tree (`--irqs hide`; by default they show, marked).
    pub hide_irqs: bool,
    /// User space, in process: the recorder library to preload (the `dcg` binary finds it:
    /// `DCG_RECORDER`, else beside itself); `None`: there is none, so no session runs in
    /// process.
    pub recorder: Option<PathBuf>,
    /// `--filter`: the trees kept are those whose top-level call (or, with `FUNC:`, some
    /// call of FUNC in it) passes every one; parsed by the binary, bound by the plan.
    pub filters: Vec<dcg_filter::Filter>,
    /// `--min-duration`, in ns: only the calls at least that long and their callers.
    pub min_duration: Option<u64>,
    /// Kernel (BPF engine): only the tasks with this name start trees (`--comm`).
    pub comm: Option<String>,
    /// Kernel (BPF engine): only the tasks in this cgroup v2 start trees (`--cgroup`: a
    /// directory under the cgroup2 mount, or a path relative to `/sys/fs/cgroup`).
    pub cgroup: Option<PathBuf>,
    /// `--notrace`: functions never attached or hooked (their callees still shown, under
    /// the nearest traced caller): a glob over names, or `PATH:PATTERN` in user space.
    pub notrace: Vec<String>,
    /// `--stack`: each top-level call carries the stack that led to it.
    pub stack: bool,
    /// Requests to follow pointers and show what they point to (`--fields`).
    pub derefs: Vec<DerefRequest>,
    /// `--kernel[=PATTERN]`: under the user calls, the kernel calls their threads make
    /// (`Some("")`: every system call; else the subtrees of PATTERN's functions).
    pub kernel: Option<String>,
    /// `--kernel-depth`: kernel calls shown this many levels deep below a user call (0:
    /// all).
    pub kernel_depth: u32,
    /// The `--engine`s named after the first (`engine`): a session tracing both sides
    /// takes one per side.
    pub other_engines: Vec<Engine>,
}

/// The traceable entry of every x86-64 system call (`__x64_sys_openat`): what `--kernel`
/// puts under the user calls.
pub const SYSCALL_ENTRIES: &str = "__x64_sys_*";

/// What a session traces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Target {
    /// The command to start and trace (its argv, never empty).
    Command(Vec<String>),
    /// This running process (and its threads).
    Pid(i32),
    /// Every task (kernel functions, no command and no `-p`).
    #[default]
    AllTasks,
}

impl Target {
    /// The command's argv (empty unless a command is started).
    pub fn command(&self) -> &[String] {
        match self {
            Target::Command(argv) => argv,
            _ => &[],
        }
    }

    /// The running process traced, if one is.
    pub fn pid(&self) -> Option<i32> {
        match self {
            Target::Pid(p) => Some(*p),
            _ => None,
        }
    }
}

/// When a session stops, besides the command ending and a stop signal.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StopAt {
    /// Stop after this many completed top-level calls.
    pub count: Option<u64>,
    /// Stop after this many seconds.
    pub duration: Option<f64>,
}

impl StopAt {
    /// When `--duration` ends a session that starts at `start`.
    pub fn deadline(&self, start: std::time::Instant) -> Option<std::time::Instant> {
        self.duration
            .map(|s| start + std::time::Duration::from_secs_f64(s.max(0.0)))
    }
}

/// What the trace is written as, and where: the request the session's outputs are built
/// from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputRequest {
    /// Saved-calls JSON lines instead of text.
    pub json: bool,
    /// Only call paths that contain an error return.
    pub errors_only: bool,
    /// Color error values (decided by the caller against the real output).
    pub color: bool,
    /// Also save the calls to this file.
    pub saved_calls: Option<PathBuf>,
    /// Collect the calls for a call-graph report instead of printing them.
    pub report: bool,
    /// Nobody watches the trace as it runs (the output is not a terminal, or a report is
    /// printed at the end): a source keeps its raw records while the traced command runs
    /// and decodes them afterwards, leaving the CPU to it, whatever the outputs are.
    pub shown_at_end: bool,
}

/// A request to dereference a pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DerefRequest {
    /// `--fields [[PATH:]FUNC:]MEMBER-PATH,...`, as given: members read at the entry and
    /// shown with the arguments (`c->next->port`).
    Fields(String),
    /// `--deref[=N]` (`--deref-bytes CAP`): every pointer argument to a struct or union
    /// shown with its members, `depth` levels of pointers followed, at most `cap` bytes
    /// read per argument.
    Members {
        /// Levels of pointers followed (1: the argument's own struct).
        depth: u32,
        /// Bytes read per argument at most.
        cap: u32,
    },
}

/// How kernel calls are captured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Engine {
    /// BPF where values are wanted and the kernel lacks `funcgraph-retval`, else
    /// function_graph.
    #[default]
    Auto,
    /// function_graph in a private instance (values from funcgraph-retval or probes).
    Fgraph,
    /// BPF kprobe.session on every traceable function (every value, any 6.10+ kernel).
    Bpf,
    /// User space: the in-process recorder preloaded into the command dcg starts.
    Inproc,
    /// User space: uprobes.
    Uprobe,
}

impl Engine {
    /// Whether it traces user-space functions (`inproc`, `uprobe`); `auto` serves both.
    pub fn is_user(self) -> bool {
        matches!(self, Engine::Inproc | Engine::Uprobe)
    }

    /// Whether it traces kernel functions (`fgraph`, `bpf`).
    pub fn is_kernel(self) -> bool {
        matches!(self, Engine::Fgraph | Engine::Bpf)
    }
}

impl TraceOptions {
    /// Whether every `--func` names user-space code (`PATH:PATTERN`): those go to the
    /// uprobe tracer.
    pub fn is_user_space(&self) -> bool {
        !self.func.is_empty() && self.func.iter().all(|f| split_user_func(f).is_some())
    }

    /// Whether the patterns name user-space and kernel functions both (a session tracing
    /// both sides, issue 42).
    pub fn is_joint(&self) -> bool {
        let user = self
            .func
            .iter()
            .filter(|f| split_user_func(f).is_some())
            .count();
        user > 0 && (user < self.func.len() || self.kernel.is_some())
    }

    /// The kernel functions whose subtrees a session tracing both sides records: the
    /// kernel patterns, and `--kernel`'s (every system call's entry when it names none).
    pub fn kernel_patterns(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .func
            .iter()
            .filter(|f| split_user_func(f).is_none())
            .cloned()
            .collect();
        match self.kernel.as_deref() {
            Some("") => v.push(SYSCALL_ENTRIES.to_string()),
            Some(p) => v.push(p.to_string()),
            None => {}
        }
        v
    }
}

/// Split a `PATH:PATTERN` function spec into the path and the pattern, or `None` for a
/// kernel pattern. A spec is a user-space one when the text before a `:` contains a `/`,
/// names an existing file, or looks like a shared library (`libc.so.6:malloc`).
pub fn split_user_func(spec: &str) -> Option<(&str, &str)> {
    // Try every `:` from the left: the first prefix that is a path wins, so paths with
    // a `:` in them still work when the file exists.
    let mut fallback = None;
    for (i, _) in spec.match_indices(':') {
        let (path, pattern) = (&spec[..i], &spec[i + 1..]);
        if path.is_empty() || pattern.is_empty() {
            continue;
        }
        if Path::new(path).is_file() {
            return Some((path, pattern));
        }
        if fallback.is_none() && (path.contains('/') || path.contains(".so")) {
            fallback = Some((path, pattern));
        }
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_specs() {
        assert_eq!(split_user_func("./prog:main"), Some(("./prog", "main")));
        assert_eq!(
            split_user_func("/usr/lib/x86_64-linux-gnu/libc.so.6:mall*"),
            Some(("/usr/lib/x86_64-linux-gnu/libc.so.6", "mall*"))
        );
        assert_eq!(
            split_user_func("libz.so.1:inflate"),
            Some(("libz.so.1", "inflate"))
        );
        assert_eq!(split_user_func("vfs_read"), None);
        assert_eq!(split_user_func("do_sys_*"), None);
        assert_eq!(split_user_func("./prog:"), None);
        let a = TraceOptions {
            func: vec!["./a:x".into(), "b/c:y".into()],
            ..TraceOptions::default()
        };
        assert!(a.is_user_space());
        let k = TraceOptions {
            func: vec!["./a:x".into(), "vfs_read".into()],
            ..TraceOptions::default()
        };
        assert!(!k.is_user_space());
    }
}
