//! What both user-space engines share about a session: why it stopped and what became
//! of the traced process, and the call pipeline of a plan.

use dcg_calls::outputs::Outputs;
use dcg_live::plan::SessionPlan;
use dcg_live::process::{self, Child, Ended};

use crate::plan::UserPlan;
use crate::probe_feed::{self, Calls};
use crate::{Notice, Result};

/// Why tracing stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The traced command ended.
    Ended(Ended),
    /// The attached process is gone.
    Gone,
    /// `--count` reached.
    Count,
    /// `--duration` elapsed.
    Duration,
    /// A signal asked to stop.
    Signal(i32),
    /// Standard output was closed.
    OutputClosed,
}

/// What became of the traced process, said in a note; the exit code.
pub(crate) fn end_of(
    stop: Stop,
    child: &mut Option<Child>,
    session: &SessionPlan,
    note: &mut dyn FnMut(Notice),
) -> u8 {
    let target = &session.target;
    {
        match stop {
            Stop::Ended(e) => {
                let c = child.as_ref().map_or(0, |c| c.pid());
                let cmd = target.command().first().map_or("command", String::as_str);
                if e != Ended::Exited(0) {
                    note(Notice::CommandEnded {
                        command: cmd.to_string(),
                        pid: c,
                        ended: e,
                    });
                }
                return e.code();
            }
            Stop::Gone => {
                if let Some(p) = target.pid() {
                    note(Notice::ProcessExited(p));
                }
            }
            Stop::Count | Stop::Duration | Stop::Signal(_) | Stop::OutputClosed => {
                if let Some(p) = target.pid() {
                    note(Notice::Detached {
                        pid: p,
                        comm: process::comm_of(p),
                    });
                } else if let Some(c) = child.as_mut() {
                    // Like `perf record -- CMD`: the command runs for the trace; end it
                    // (with the signal dcg got, else SIGTERM).
                    let sig = match stop {
                        Stop::Signal(s) if s != nix::libc::SIGPIPE => {
                            nix::sys::signal::Signal::try_from(s)
                                .unwrap_or(nix::sys::signal::Signal::SIGTERM)
                        }
                        _ => nix::sys::signal::Signal::SIGTERM,
                    };
                    let pid = c.pid();
                    if let Some(e) = c.terminate(sig) {
                        note(Notice::CommandStopped {
                            command: target
                                .command()
                                .first()
                                .map_or("command", String::as_str)
                                .to_string(),
                            pid,
                            ended: e,
                        });
                    }
                }
            }
        }
        0
    }
}

/// The call pipeline of a plan, into `outputs`, and the name to show for tasks the
/// trace lost the name of (the traced program's).
pub(crate) fn calls_for<'a>(
    no_db: &'a dcg_dbset::DbSet,
    plan: &'a UserPlan<'a>,
    outputs: Outputs,
) -> Result<Calls<'a>> {
    let session = &plan.session;
    let opts = probe_feed::Options {
        args: session.values.args,
        retvals: session.values.retvals,
        max_depth: session.depth,
        errno: plan.errno,
        inline_frames: session.inline_frames,
        // The uprobe engine's entry events carry stacks; the recorder's come as records.
        stacks: session.stack && plan.engine.engine == crate::plan::UserEngine::Uprobes,
    };
    let mut calls = Calls::new(
        no_db,
        &plan.probes,
        &plan.inlines,
        plan.targets,
        opts,
        outputs,
    );
    let target = &session.target;
    calls.set_default_comm(match (target.pid(), target.command().first()) {
        (Some(p), _) => Some(process::comm_of(p)),
        // The kernel names a task after the first 15 bytes of the executable's name.
        (None, Some(cmd)) => std::path::Path::new(cmd).file_name().map(|n| {
            let n = n.to_string_lossy();
            let mut end = n.len().min(15);
            while !n.is_char_boundary(end) {
                end -= 1;
            }
            n[..end].to_string()
        }),
        (None, None) => None,
    });
    Ok(calls)
}

/// A closed standard output at the end is not an error.
pub(crate) fn ignore_closed(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
