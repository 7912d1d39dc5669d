//! What both user-space engines share about a session: why it stopped and what became
//! of the traced process, the call pipeline's options, the name the saved calls give the
//! source.

use dcg_live::options::TraceOptions;
use dcg_live::process::{self, Child, Ended};

use crate::plan::{InlineSite, Probe, Target};
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
    args: &TraceOptions,
    note: &mut dyn FnMut(Notice),
) -> u8 {
    {
        match stop {
            Stop::Ended(e) => {
                let c = child.as_ref().map_or(0, |c| c.pid());
                let cmd = args
                    .target
                    .command()
                    .first()
                    .map_or("command", String::as_str);
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
                if let Some(p) = args.target.pid() {
                    note(Notice::ProcessExited(p));
                }
            }
            Stop::Count | Stop::Duration | Stop::Signal(_) | Stop::OutputClosed => {
                if let Some(p) = args.target.pid() {
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
                            command: args
                                .target
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

/// The call pipeline of a session: its output options, and the name to show for tasks
/// the trace lost the name of (the traced program's).
pub(crate) fn calls_for<'a>(
    no_db: &'a dcg_dbset::DbSet,
    probes: &'a [Probe<'a>],
    inlines: &'a [InlineSite<'a>],
    targets: &'a [Target],
    args: &TraceOptions,
    source: String,
) -> Result<Calls<'a>> {
    let opts = probe_feed::Options {
        args: args.args,
        retvals: args.show_retvals,
        max_depth: args.depth,
        errno: args.errno,
        inline_frames: !args.no_inline_frames,
    };
    let spec = dcg_calls::outputs::OutputSpec {
        json: args.output.json,
        errors_only: args.output.errors_only,
        color: args.output.color,
        cpu_width: cpu_width(),
        threads: true,
        report: args.output.report,
        saved: args.output.saved_calls.clone(),
        source,
        ..Default::default()
    };
    let mut calls = Calls::new(no_db, probes, inlines, targets, opts, &spec)?;
    calls.set_default_comm(match (args.target.pid(), args.target.command().first()) {
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

/// Width of the CPU column: digits of the highest possible CPU number.
fn cpu_width() -> usize {
    let max = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            s.trim()
                .rsplit([',', '-'])
                .next()
                .and_then(|n| n.parse::<u32>().ok())
        })
        .unwrap_or(0);
    max.to_string().len()
}

/// How the saved calls name the source: the engine, the traced files, the command or pid.
pub(crate) fn source_name(args: &TraceOptions, targets: &[Target], engine: &str) -> String {
    let files: Vec<String> = targets
        .iter()
        .map(|t| t.path.display().to_string())
        .collect();
    match (args.target.pid(), args.target.command().is_empty()) {
        (Some(p), _) => format!("{engine} on {} in pid {p}", files.join(", ")),
        (None, false) => format!(
            "{engine} on {}: {}",
            files.join(", "),
            args.target.command().join(" ")
        ),
        (None, true) => format!("{engine} on {}", files.join(", ")),
    }
}
