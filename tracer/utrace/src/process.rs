//! The traced process: a command dcg starts stopped (so no call is missed), or a running
//! process it attaches to.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// How the traced process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(Signal, bool),
    /// Gone (an attached process, not our child: its status is unknown).
    Gone,
}

impl Ended {
    /// A sentence for stderr: `exited with status 3`, `killed by SIGSEGV (core dumped)`.
    pub fn describe(&self) -> String {
        match self {
            Ended::Exited(c) => format!("exited with status {c}"),
            Ended::Signaled(s, core) => {
                format!("killed by {s}{}", if *core { " (core dumped)" } else { "" })
            }
            Ended::Gone => "exited".into(),
        }
    }

    /// The exit code dcg passes on (the shell's convention: 128 + signal).
    pub fn code(&self) -> u8 {
        match self {
            Ended::Exited(c) => (*c & 0xff) as u8,
            Ended::Signaled(s, _) => 128u8.wrapping_add(*s as i32 as u8),
            Ended::Gone => 0,
        }
    }
}

/// A command started by dcg, stopped before `exec` until [`Child::resume`]. Killed when
/// dropped before it was resumed (setup failed).
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    resumed: bool,
    reaped: bool,
}

/// The executable `cmd` runs: a path, or a name found in `$PATH`.
pub fn command_path(cmd: &str) -> Result<PathBuf> {
    if cmd.contains('/') {
        let p = Path::new(cmd);
        if !p.is_file() {
            bail!("{cmd}: no such file");
        }
        return Ok(p.to_path_buf());
    }
    super::plan::search_path(cmd).ok_or_else(|| anyhow!("{cmd}: command not found"))
}

impl Child {
    /// Fork; the child stops itself (SIGSTOP) and then execs `argv` once continued. Returns
    /// after the child has stopped.
    pub fn spawn_stopped(argv: &[String]) -> Result<Child> {
        let Some(cmd) = argv.first() else {
            bail!("no command given");
        };
        let exe = command_path(cmd)?;
        let c_exe = CString::new(exe.as_os_str().as_encoded_bytes())
            .map_err(|_| anyhow!("{cmd}: NUL in the path"))?;
        let c_args: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| anyhow!("NUL in an argument of {cmd}"))?;
        let msg = format!("dcg: cannot execute {cmd}\n");
        // SAFETY: the child only calls async-signal-safe functions (raise, execv, write,
        // _exit) on data prepared before the fork.
        match unsafe { nix::unistd::fork() }.context("fork")? {
            nix::unistd::ForkResult::Child => {
                let _ = nix::sys::signal::raise(Signal::SIGSTOP);
                let _ = nix::unistd::execv(&c_exe, &c_args);
                // SAFETY: writing a prepared buffer to stderr and exiting without running
                // the parent's atexit handlers.
                unsafe {
                    nix::libc::write(2, msg.as_ptr().cast(), msg.len());
                    nix::libc::_exit(127);
                }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let mut c = Child {
                    pid: child,
                    resumed: false,
                    reaped: false,
                };
                loop {
                    match waitpid(child, Some(WaitPidFlag::WUNTRACED)) {
                        Ok(WaitStatus::Stopped(_, _)) => return Ok(c),
                        Err(nix::errno::Errno::EINTR) => continue,
                        Ok(other) => {
                            c.reaped = true;
                            bail!("{cmd} did not start: {other:?}");
                        }
                        Err(e) => {
                            c.reaped = true;
                            bail!("waiting for {cmd} to start: {e}");
                        }
                    }
                }
            }
        }
    }

    /// Its pid.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }

    /// Let it run (exec the command).
    pub fn resume(&mut self) -> Result<()> {
        kill(self.pid, Signal::SIGCONT).context("continuing the command")?;
        self.resumed = true;
        Ok(())
    }

    /// End it early (tracing stopped before it did): send `sig`, wait up to two seconds,
    /// then SIGKILL. Returns how it ended, `None` if it had already been reaped.
    pub fn terminate(&mut self, sig: Signal) -> Option<Ended> {
        if self.reaped {
            return None;
        }
        let _ = kill(self.pid, sig);
        let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < end {
            if let Some(e) = self.poll() {
                return Some(e);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = kill(self.pid, Signal::SIGKILL);
        loop {
            match waitpid(self.pid, None) {
                Err(nix::errno::Errno::EINTR) => continue,
                Ok(WaitStatus::Signaled(_, s, core)) => {
                    self.reaped = true;
                    return Some(Ended::Signaled(s, core));
                }
                Ok(WaitStatus::Exited(_, c)) => {
                    self.reaped = true;
                    return Some(Ended::Exited(c));
                }
                Ok(_) => continue,
                Err(_) => {
                    self.reaped = true;
                    return Some(Ended::Gone);
                }
            }
        }
    }

    /// Its end, if it has ended (never blocks).
    pub fn poll(&mut self) -> Option<Ended> {
        if self.reaped {
            return None;
        }
        loop {
            match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, c)) => {
                    self.reaped = true;
                    return Some(Ended::Exited(c));
                }
                Ok(WaitStatus::Signaled(_, s, core)) => {
                    self.reaped = true;
                    return Some(Ended::Signaled(s, core));
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::ECHILD) => {
                    self.reaped = true;
                    return Some(Ended::Gone);
                }
                _ => return None,
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.resumed && !self.reaped {
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = waitpid(self.pid, None);
        }
    }
}

/// The thread ids of process `pid`.
pub fn threads_of(pid: i32) -> Result<Vec<i32>> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<i32> = std::fs::read_dir(&dir)
        .with_context(|| format!("process {pid}: no such process"))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// Whether process `pid` (not our child) still runs: it exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// The command name of process `pid`.
pub fn comm_of(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}
