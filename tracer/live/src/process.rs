//! The traced process: a command dcg starts stopped (so no call is missed), or a running
//! process it attaches to. Used by the kernel and the user-space tracers alike.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// Errors starting or inspecting a process.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// No command was given.
    #[error("no command given")]
    NoCommand,
    /// The command is not a file, or not on `$PATH`.
    #[error("{0}: command not found")]
    NotFound(String),
    /// A path that does not exist.
    #[error("{0}: no such file")]
    NoSuchFile(String),
    /// An argument holds a NUL byte.
    #[error("NUL byte in an argument of {0}")]
    Nul(String),
    /// fork, waitpid or kill failed.
    #[error("{what}: {errno}")]
    Sys {
        /// What was done.
        what: String,
        /// The error.
        errno: nix::errno::Errno,
    },
    /// The command stopped or exited before it could be traced.
    #[error("{cmd} did not start: {status}")]
    DidNotStart {
        /// The command.
        cmd: String,
        /// What waitpid said.
        status: String,
    },
    /// No process with that pid.
    #[error("process {0}: no such process")]
    NoProcess(i32),
}

type Result<T> = std::result::Result<T, ProcessError>;

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

/// A command started by dcg, stopped until [`Child::resume`]: before `exec`
/// ([`Child::spawn_stopped`]) or just after it ([`Child::spawn_at_exec`]). Killed when
/// dropped before it was resumed (setup failed).
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    resumed: bool,
    reaped: bool,
    /// Held by ptrace at its `exec` (resumed by detaching).
    ptraced: bool,
}

/// The executable `cmd` runs: a path, or a name found in `$PATH`.
pub fn command_path(cmd: &str) -> Result<PathBuf> {
    if cmd.contains('/') {
        let p = Path::new(cmd);
        if !p.is_file() {
            return Err(ProcessError::NoSuchFile(cmd.to_string()));
        }
        return Ok(p.to_path_buf());
    }
    search_path(cmd).ok_or_else(|| ProcessError::NotFound(cmd.to_string()))
}

impl Child {
    /// Fork; the child stops itself (SIGSTOP) and then execs `argv` once continued. Returns
    /// after the child has stopped. (The kernel tracer sees the `exec` itself.)
    pub fn spawn_stopped(argv: &[String]) -> Result<Child> {
        Child::spawn(argv, false, &[])
    }

    /// Fork and exec `argv` under ptrace, which stops the child just after its `exec`,
    /// before the program's first instruction; [`Child::resume`] detaches. Nothing the
    /// child runs as dcg (between fork and exec) happens while it is traced, and its
    /// name is the program's from the first event on.
    pub fn spawn_at_exec(argv: &[String]) -> Result<Child> {
        Child::spawn(argv, true, &[])
    }

    /// [`Child::spawn_at_exec`] with `env` set in the command's environment (over what
    /// dcg's has).
    pub fn spawn_at_exec_with(argv: &[String], env: &[(String, String)]) -> Result<Child> {
        Child::spawn(argv, true, env)
    }

    fn spawn(argv: &[String], at_exec: bool, env: &[(String, String)]) -> Result<Child> {
        let Some(cmd) = argv.first() else {
            return Err(ProcessError::NoCommand);
        };
        let exe = command_path(cmd)?;
        let c_exe = CString::new(exe.as_os_str().as_encoded_bytes())
            .map_err(|_| ProcessError::Nul(cmd.clone()))?;
        let c_args: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.as_bytes()))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| ProcessError::Nul(cmd.clone()))?;
        let msg = format!("dcg: cannot execute {cmd}\n");
        // The argv array execv takes, built before the fork: the child allocates nothing.
        let mut c_argv: Vec<*const nix::libc::c_char> = c_args.iter().map(|a| a.as_ptr()).collect();
        c_argv.push(std::ptr::null());
        // The environment, when something is added to it.
        let c_env: Vec<CString> = if env.is_empty() {
            Vec::new()
        } else {
            std::env::vars_os()
                .filter(|(k, _)| {
                    !env.iter()
                        .any(|(n, _)| k.as_encoded_bytes() == n.as_bytes())
                })
                .map(|(k, v)| {
                    let mut b = k.into_encoded_bytes();
                    b.push(b'=');
                    b.extend_from_slice(v.as_encoded_bytes());
                    b
                })
                .chain(env.iter().map(|(k, v)| format!("{k}={v}").into_bytes()))
                .filter_map(|b| CString::new(b).ok())
                .collect()
        };
        let mut c_envp: Vec<*const nix::libc::c_char> = c_env.iter().map(|a| a.as_ptr()).collect();
        c_envp.push(std::ptr::null());
        // The signals dcg catches get, in the command, the dispositions the shell gave
        // dcg (a background job's SIGINT stays ignored); the rest dcg leaves as it got them.
        let dispositions = crate::tracefs::inherited_dispositions();
        // SAFETY: the child only calls async-signal-safe functions (signal, ptrace, raise,
        // execv, write, _exit) on data prepared before the fork.
        let fork = unsafe { nix::unistd::fork() }.map_err(|errno| ProcessError::Sys {
            what: "fork".into(),
            errno,
        })?;
        match fork {
            nix::unistd::ForkResult::Child => {
                // SAFETY: PTRACE_TRACEME takes no pointers; execv gets NUL-terminated
                // strings and a NULL-terminated array that outlive the call; on failure
                // the child writes a prepared buffer to stderr and exits without running
                // the parent's atexit handlers.
                unsafe {
                    for (sig, ignored) in dispositions {
                        let h = if ignored {
                            nix::libc::SIG_IGN
                        } else {
                            nix::libc::SIG_DFL
                        };
                        nix::libc::signal(sig, h);
                    }
                    if at_exec {
                        nix::libc::ptrace(
                            nix::libc::PTRACE_TRACEME,
                            0,
                            std::ptr::null_mut::<nix::libc::c_void>(),
                            std::ptr::null_mut::<nix::libc::c_void>(),
                        );
                    } else {
                        nix::libc::raise(nix::libc::SIGSTOP);
                    }
                    if env.is_empty() {
                        nix::libc::execv(c_exe.as_ptr(), c_argv.as_ptr());
                    } else {
                        nix::libc::execve(c_exe.as_ptr(), c_argv.as_ptr(), c_envp.as_ptr());
                    }
                    nix::libc::write(2, msg.as_ptr().cast(), msg.len());
                    nix::libc::_exit(127);
                }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let mut c = Child {
                    pid: child,
                    resumed: false,
                    reaped: false,
                    ptraced: at_exec,
                };
                loop {
                    match waitpid(child, Some(WaitPidFlag::WUNTRACED)) {
                        Ok(WaitStatus::Stopped(_, _)) => return Ok(c),
                        Err(nix::errno::Errno::EINTR) => continue,
                        Ok(other) => {
                            c.reaped = true;
                            let status = match other {
                                WaitStatus::Exited(_, code) => Ended::Exited(code).describe(),
                                WaitStatus::Signaled(_, s, core) => {
                                    Ended::Signaled(s, core).describe()
                                }
                                other => format!("{other:?}"),
                            };
                            return Err(ProcessError::DidNotStart {
                                cmd: cmd.clone(),
                                status,
                            });
                        }
                        Err(errno) => {
                            c.reaped = true;
                            return Err(ProcessError::Sys {
                                what: format!("waiting for {cmd} to start"),
                                errno,
                            });
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

    /// Let it run (exec the command, or run it from its first instruction).
    pub fn resume(&mut self) -> Result<()> {
        let r = if self.ptraced {
            nix::sys::ptrace::detach(self.pid, None)
        } else {
            kill(self.pid, Signal::SIGCONT)
        };
        r.map_err(|errno| ProcessError::Sys {
            what: "continuing the command".into(),
            errno,
        })?;
        self.resumed = true;
        Ok(())
    }

    /// End it early (tracing stopped before it did): send `sig`, wait up to two seconds,
    /// then SIGKILL. Returns how it ended, `None` if it had already been reaped.
    pub fn terminate(&mut self, sig: Signal) -> Option<Ended> {
        if self.reaped {
            return None;
        }
        if self.ptraced && !self.resumed {
            // Still held at its exec: let go of it with the signal.
            let _ = nix::sys::ptrace::detach(self.pid, Some(sig));
            self.resumed = true;
        }
        let _ = kill(self.pid, sig);
        // A command never continued gets the signal once it runs.
        let _ = kill(self.pid, Signal::SIGCONT);
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
    /// A command still running when its session ends (an error path) is ended too.
    fn drop(&mut self) {
        if !self.resumed && !self.reaped {
            let _ = kill(self.pid, Signal::SIGKILL);
            let _ = waitpid(self.pid, None);
        } else if !self.reaped {
            self.terminate(Signal::SIGTERM);
        }
    }
}

/// The thread ids of process `pid`.
pub fn threads_of(pid: i32) -> Result<Vec<i32>> {
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<i32> = std::fs::read_dir(&dir)
        .map_err(|_| ProcessError::NoProcess(pid))?
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

/// The process (thread group) thread `tid` belongs to, while it exists.
pub fn tgid_of(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The command name of process `pid`, `?` when it is gone.
pub fn comm_of(pid: i32) -> String {
    comm(pid).unwrap_or_else(|| "?".into())
}

/// The command name of thread `tid` while it exists.
pub fn comm(tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// `name` looked up in `$PATH`.
pub fn search_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|c| {
            c.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .and_then(|c| c.canonicalize().ok())
}
