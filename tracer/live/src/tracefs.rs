//! tracefs: a private ftrace instance per dcg session, the probes it creates, and their
//! removal on every exit path.
//!
//! Each session works in `instances/dcg-<pid>` (own buffer, tracer and filters) and puts
//! its dynamic events in the group `dcg_<pid>`, so concurrent sessions and other ftrace
//! users are not disturbed. [`Session`] removes both when dropped; [`remove_stale`]
//! removes what a killed session (SIGKILL) left behind.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

pub use crate::pipes::{RawPipes, TracePipe};

/// Errors talking to tracefs.
#[derive(Debug, thiserror::Error)]
pub enum TraceFsError {
    /// tracefs is not available.
    #[error("tracefs is not mounted and could not be mounted at {path}: {reason}")]
    NotAvailable {
        /// Where it was tried.
        path: PathBuf,
        /// Why it failed.
        reason: String,
    },
    /// tracefs is there, but this user may not read it (mode 0700 for root: the usual
    /// case when dcg does not run as root).
    #[error(
        "tracefs at {} is not accessible to this user ({reason}): tracing needs root \
         (CAP_SYS_ADMIN and tracefs access): run as root",
        path.display()
    )]
    NoAccess {
        /// The tracefs directory or file.
        path: PathBuf,
        /// The OS error (`Permission denied`).
        reason: String,
    },
    /// tracefs is not mounted, and this user may not mount it.
    #[error(
        "tracefs is not mounted at {} and only root may mount it: tracing needs root \
         (CAP_SYS_ADMIN and tracefs access): run as root",
        path.display()
    )]
    NotRoot {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A tracefs file operation failed.
    #[error("tracefs {}: {what}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done (`writing "do_sys_openat2"`).
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The kernel lacks a feature.
    #[error("{0}")]
    Unsupported(String),
}

pub(crate) type Result<T> = std::result::Result<T, TraceFsError>;

/// Where tracefs is mounted: `/sys/kernel/tracing`, or the old debugfs path; mounts it
/// when needed (root only).
pub fn mount_point() -> Result<PathBuf> {
    let primary = PathBuf::from("/sys/kernel/tracing");
    let mut denied = None;
    for p in [primary.clone(), PathBuf::from("/sys/kernel/debug/tracing")] {
        match fs::metadata(p.join("trace")) {
            Ok(_) => return Ok(p),
            // A tracefs (or debugfs) this user may not enter: mounted, mode 0700.
            Err(e) if e.kind() == ErrorKind::PermissionDenied => {
                denied.get_or_insert((p, e));
            }
            Err(_) => {}
        }
    }
    if let Some((path, e)) = denied {
        return Err(TraceFsError::NoAccess {
            path,
            reason: e.to_string(),
        });
    }
    if !nix::unistd::geteuid().is_root() {
        return Err(TraceFsError::NotRoot { path: primary });
    }
    nix::mount::mount(
        Some("nodev"),
        &primary,
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| TraceFsError::NotAvailable {
        path: primary.clone(),
        reason: e.desc().to_string(),
    })?;
    if primary.join("trace").exists() {
        Ok(primary)
    } else {
        Err(TraceFsError::NotAvailable {
            path: primary,
            reason: "mounted, but it has no trace file".into(),
        })
    }
}

pub(crate) fn io_err(
    path: &Path,
    what: impl Into<String>,
) -> impl FnOnce(std::io::Error) -> TraceFsError + '_ {
    let what = what.into();
    move |source| TraceFsError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

/// Write `content` to a tracefs file (truncating), naming the file in errors.
pub fn write(path: &Path, content: &str) -> Result<()> {
    fs::write(path, content).map_err(io_err(path, format!("writing {content:?}")))
}

/// Append `content` to a tracefs file (for `*_events` and `set_*` lists).
pub fn append(path: &Path, content: &str) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(io_err(path, "opening for append"))?;
    f.write_all(content.as_bytes())
        .map_err(io_err(path, format!("appending {content:?}")))
}

/// Whether tracefs file `path` exists: `Ok(false)` when it does not (the kernel lacks
/// the feature), [`TraceFsError::NoAccess`] when this user may not look, or may not
/// write it (`*_events` files are root's, mode 0600 or 0640).
pub fn writable(path: &Path) -> Result<bool> {
    let denied = |e: std::io::Error| TraceFsError::NoAccess {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    match fs::metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(denied(e)),
    }
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK)
        .map_err(|e| denied(std::io::Error::from(e)))?;
    Ok(true)
}

/// Read a tracefs file.
pub fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(io_err(path, "reading"))
}

/// The signal that asked dcg to stop (0: none yet).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);
static HANDLERS_SET: AtomicBool = AtomicBool::new(false);
/// Bit N: signal N was ignored when dcg started, before its handlers (what a command it
/// starts inherits).
static INHERITED_IGNORED: AtomicU64 = AtomicU64::new(0);
/// Whether tracing state may exist: from then on a stop signal asks for a clean stop;
/// before, it ends dcg at once, as the signal's default action would.
static ARMED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: nix::libc::c_int) {
    if !ARMED.load(Ordering::SeqCst) {
        // SAFETY: signal(2) and raise(3) are async-signal-safe. The signal is blocked
        // while its handler runs, so the re-raised one is delivered, with the default
        // action, as soon as this returns.
        unsafe {
            nix::libc::signal(sig, nix::libc::SIG_DFL);
            nix::libc::raise(sig);
        }
        return;
    }
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Catch SIGINT, SIGTERM, SIGHUP and SIGPIPE, first thing in a trace command. Until
/// [`arm_stop_handlers`] they end dcg at once, as their default action would (nothing
/// needs cleaning up yet); this also holds when the shell started dcg in the background
/// with SIGINT ignored, where a SIGINT before the handlers would otherwise be lost and the
/// trace run on. A SIGHUP ignored at start (`nohup`) stays ignored.
pub fn install_stop_handlers() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    if HANDLERS_SET.swap(true, Ordering::SeqCst) {
        return;
    }
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for s in CAUGHT {
        // SAFETY: the handler only stores to atomics or re-raises the signal with its
        // default action, all async-signal-safe.
        if let Ok(old) = unsafe { sigaction(s, &action) } {
            // SIGPIPE's is the Rust runtime's (ignored), not the shell's.
            if s != Signal::SIGPIPE && old.handler() == SigHandler::SigIgn {
                INHERITED_IGNORED.fetch_or(1 << s as i32, Ordering::SeqCst);
            }
            if s == Signal::SIGHUP && old.handler() == SigHandler::SigIgn {
                // SAFETY: restoring the inherited disposition.
                let _ = unsafe { sigaction(s, &old) };
            }
        }
    }
}

/// The signals dcg catches.
const CAUGHT: [nix::sys::signal::Signal; 4] = [
    nix::sys::signal::Signal::SIGINT,
    nix::sys::signal::Signal::SIGTERM,
    nix::sys::signal::Signal::SIGHUP,
    nix::sys::signal::Signal::SIGPIPE,
];

/// The dispositions a command dcg starts must get for the signals dcg catches, as the
/// shell gave them to dcg: `(signal, ignored)`, else the default action. (SIGPIPE: the
/// default, as a shell gives it; the Rust runtime ignores it before dcg can look.)
pub fn inherited_dispositions() -> [(i32, bool); 4] {
    let set = HANDLERS_SET.load(Ordering::SeqCst);
    let ignored = INHERITED_IGNORED.load(Ordering::SeqCst);
    CAUGHT.map(|s| {
        let n = s as i32;
        let ign = if set {
            ignored & (1 << n) != 0
        } else if s == nix::sys::signal::Signal::SIGPIPE {
            false
        } else {
            // No handler yet: the disposition now is the inherited one.
            // SAFETY: plain data, for which all zeroes is a valid value.
            let mut old: nix::libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: a query (no new action) into a local.
            let r = unsafe { nix::libc::sigaction(n, std::ptr::null(), &mut old) };
            r == 0 && old.sa_sigaction == nix::libc::SIG_IGN
        };
        (n, ign)
    })
}

/// From now on a stop signal asks the trace loop to stop and clean up (call this before
/// the first change to tracefs). Installs the handlers if that was not done yet.
pub fn arm_stop_handlers() {
    install_stop_handlers();
    ARMED.store(true, Ordering::SeqCst);
}

/// The signal number that asked to stop, if any.
pub fn stop_requested() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Ask the trace loop to stop (as a signal would).
pub fn request_stop(sig: i32) {
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
}

/// Which `*_events` file a dynamic event is created in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventFile {
    /// `dynamic_events` (fprobe `f:` events, and any kind on newer kernels).
    Dynamic,
    /// `kprobe_events` (`p:`/`r:`).
    Kprobe,
    /// `uprobe_events` (`p:`/`r:` on user binaries).
    Uprobe,
}

impl EventFile {
    fn name(self) -> &'static str {
        match self {
            EventFile::Dynamic => "dynamic_events",
            EventFile::Kprobe => "kprobe_events",
            EventFile::Uprobe => "uprobe_events",
        }
    }
}

/// A dcg session's tracefs state: its instance and its dynamic events.
#[derive(Debug)]
pub struct Session {
    root: PathBuf,
    instance: PathBuf,
    name: String,
    group: String,
    events: Vec<(EventFile, String)>,
    /// Options this session changed and their values before: written back at close. On
    /// kernels whose tracer options are shared by every instance (6.12's function_graph
    /// flags), the instance's option file is the kernel-wide setting.
    restore: Vec<(String, String)>,
    closed: bool,
}

impl Session {
    /// Create `instances/dcg-<pid>` (removing a leftover of the same name first).
    pub fn create(root: &Path) -> Result<Session> {
        let pid = std::process::id();
        let name = format!("dcg-{pid}");
        let instance = root.join("instances").join(&name);
        if instance.exists() {
            let _ = fs::remove_dir(&instance);
        }
        fs::create_dir(&instance).map_err(io_err(&instance, "creating the instance"))?;
        Ok(Session {
            root: root.to_path_buf(),
            instance,
            name,
            group: format!("dcg_{pid}"),
            events: Vec::new(),
            restore: Vec::new(),
            closed: false,
        })
    }

    /// tracefs root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.instance
    }

    /// Instance name (`dcg-<pid>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The event group for this session's probes (`dcg_<pid>`).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// A file of the instance.
    pub fn file(&self, rel: &str) -> PathBuf {
        self.instance.join(rel)
    }

    /// Write a file of the instance.
    pub fn write(&self, rel: &str, content: &str) -> Result<()> {
        write(&self.file(rel), content)
    }

    /// Set `options/NAME` of the instance when it has it, remembering the value it had so
    /// that [`Session::close`] writes it back.
    pub fn set_option(&mut self, name: &str, on: bool) -> Result<()> {
        let rel = format!("options/{name}");
        let path = self.file(&rel);
        if !path.exists() {
            return Ok(());
        }
        let want = if on { "1" } else { "0" };
        let before = read(&path)?.trim().to_string();
        if before != want && !self.restore.iter().any(|(r, _)| *r == rel) {
            self.restore.push((rel, before));
        }
        write(&path, want)
    }

    /// Whether the instance has this file (feature detection: `options/funcgraph-retval`).
    pub fn has(&self, rel: &str) -> bool {
        self.file(rel).exists()
    }

    /// Events the instance's per-CPU ring buffers lost: (overwritten, dropped), summed
    /// over the CPUs (`per_cpu/cpuN/stats`).
    pub fn buffer_stats(&self) -> (u64, u64) {
        let (mut overrun, mut dropped) = (0, 0);
        let Ok(rd) = std::fs::read_dir(self.file("per_cpu")) else {
            return (0, 0);
        };
        for e in rd.flatten() {
            let Ok(text) = std::fs::read_to_string(e.path().join("stats")) else {
                continue;
            };
            for line in text.lines() {
                let Some((k, v)) = line.split_once(':') else {
                    continue;
                };
                let v: u64 = v.trim().parse().unwrap_or(0);
                match k.trim() {
                    "overrun" => overrun += v,
                    "dropped events" => dropped += v,
                    _ => {}
                }
            }
        }
        (overrun, dropped)
    }

    /// Create a dynamic event `def` (e.g. `p:dcg_123/check /bin/t:0x1190 x=%di:s32`)
    /// named `event` in this session's group; it is removed when the session ends.
    pub fn add_event(&mut self, file: EventFile, event: &str, def: &str) -> Result<()> {
        let path = self.root.join(file.name());
        append(&path, &format!("{def}\n"))?;
        self.events.push((file, event.to_string()));
        Ok(())
    }

    /// Enable one of this session's events in the instance only.
    pub fn enable_event(&self, event: &str) -> Result<()> {
        self.write(&format!("events/{}/{event}/enable", self.group), "1")
    }

    /// Open the instance's `trace_pipe` for streaming.
    pub fn open_pipe(&self) -> Result<TracePipe> {
        TracePipe::open(self.file("trace_pipe"))
    }

    /// Open every CPU's `per_cpu/cpuN/trace_pipe_raw` of the instance (binary ring-buffer
    /// pages; see [`RawPipes`]).
    pub fn open_raw_pipes(&self) -> Result<RawPipes> {
        RawPipes::open(&self.file("per_cpu"))
    }

    /// Remove the instance and every event this session created. Idempotent; also run
    /// on drop. Returns what could not be removed.
    pub fn close(&mut self) -> Vec<String> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        let mut failed = Vec::new();
        let _ = write(&self.file("tracing_on"), "0");
        for (rel, before) in self.restore.drain(..).rev() {
            if let Err(e) = write(&self.instance.join(&rel), &before) {
                failed.push(e.to_string());
            }
        }
        // Events must be disabled everywhere before removal; removing the instance does
        // that for the instance's enable files.
        remove_instance_dir(&self.instance, &mut failed);
        for (file, event) in self.events.drain(..).rev() {
            let path = self.root.join(file.name());
            if let Err(e) = append(&path, &format!("-:{}/{event}\n", self.group)) {
                failed.push(e.to_string());
            }
        }
        failed
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for f in self.close() {
            log::error!("cleanup: {f}");
        }
    }
}

fn remove_instance_dir(dir: &Path, failed: &mut Vec<String>) {
    // rmdir fails with EBUSY while a reader holds trace_pipe open; retry briefly.
    for _ in 0..50 {
        match fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == ErrorKind::NotFound => return,
            Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => {
                failed.push(format!("removing {}: {e}", dir.display()));
                return;
            }
        }
    }
    failed.push(format!("removing {}: still busy", dir.display()));
}

/// Remove instances `dcg-<pid>` and event groups `dcg_<pid>` whose process is gone (left
/// by a session killed with SIGKILL). Returns a description of each removal.
pub fn remove_stale(root: &Path) -> Vec<String> {
    let alive = |pid: &str| Path::new("/proc").join(pid).exists();
    let mut removed = Vec::new();
    if let Ok(dir) = fs::read_dir(root.join("instances")) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("dcg-") {
                if pid.bytes().all(|b| b.is_ascii_digit()) && !alive(pid) {
                    let _ = write(&e.path().join("tracing_on"), "0");
                    let mut failed = Vec::new();
                    remove_instance_dir(&e.path(), &mut failed);
                    if failed.is_empty() {
                        removed.push(format!("instance {name}"));
                    }
                }
            }
        }
    }
    for file in [EventFile::Dynamic, EventFile::Kprobe, EventFile::Uprobe] {
        let path = root.join(file.name());
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        for line in text.lines() {
            // `p:dcg_123/check /bin/t:0x1190 ...`
            let Some(spec) = line.split_whitespace().next() else {
                continue;
            };
            let Some((_, ev)) = spec.split_once(':') else {
                continue;
            };
            let Some((group, name)) = ev.split_once('/') else {
                continue;
            };
            if let Some(pid) = group.strip_prefix("dcg_") {
                if pid.bytes().all(|b| b.is_ascii_digit()) && !alive(pid) {
                    let _ = write(
                        &root.join("events").join(group).join(name).join("enable"),
                        "0",
                    );
                    if append(&path, &format!("-:{group}/{name}\n")).is_ok() {
                        removed.push(format!("event {group}/{name}"));
                    }
                }
            }
        }
    }
    removed
}

/// The name the tracing code saved for thread `pid` (`saved_cmdlines` under `tracefs`, kept
/// by the kernel at context switches while a tracer that wants names runs: function_graph
/// does), for a task that may have exited since.
pub fn saved_cmdline(tracefs: &Path, pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(tracefs.join("saved_cmdlines")).ok()?;
    text.lines().find_map(|l| {
        let (p, comm) = l.split_once(' ')?;
        (p.parse::<u32>().ok()? == pid && !comm.is_empty() && comm != "<...>")
            .then(|| comm.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_cmdlines_name_tasks_that_left() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("saved_cmdlines"),
            "1 init\n1234 dd\n77 <...>\n4242 kworker/0:1H\n",
        )
        .unwrap();
        assert_eq!(saved_cmdline(dir.path(), 1234).as_deref(), Some("dd"));
        assert_eq!(
            saved_cmdline(dir.path(), 4242).as_deref(),
            Some("kworker/0:1H")
        );
        // A slot the kernel reused has no name; an unknown thread neither.
        assert_eq!(saved_cmdline(dir.path(), 77), None);
        assert_eq!(saved_cmdline(dir.path(), 123), None);
        assert_eq!(saved_cmdline(Path::new("/nonexistent"), 1), None);
    }
}
