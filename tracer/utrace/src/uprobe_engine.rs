//! The uprobe engine (`--engine uprobe`): an entry uprobe and a uretprobe per function in
//! a private tracefs instance, the command started and held at its `exec` or the threads
//! of `-p` followed, the event stream read into the call pipeline until a stop condition.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use dcg_calls::outputs::Outputs;
use dcg_live::plan::SessionPlan;
use dcg_live::process::{self, Child};
use dcg_live::tracefs::{self, EventFile, Session, TracePipe};

use crate::error::{Result, UtraceError};
use crate::merge::Merge;
use crate::plan::UserPlan;
use crate::probe_feed::EventSink;
use crate::session::{calls_for, end_of, ignore_closed, Stop};
use crate::uprobe_events::{drain, probe_session, uprobe_root, Event, Stream, EXEC_EVENT};
use crate::{Finished, Notice};

/// Trace `probes` with uprobes: set the instance up, start or follow the process, read
/// until a stop condition, clean up.
pub(crate) fn run(
    plan: &UserPlan<'_>,
    outputs: Outputs,
    out: &mut dyn Write,
    note: &mut dyn FnMut(Notice),
    joint: Option<crate::Joint<'_>>,
) -> Result<Finished> {
    if let Some(pid) = plan.session.target.pid() {
        if !process::is_alive(pid) {
            return Err(UtraceError::NoProcess(pid));
        }
    }
    let root = uprobe_root()?;
    // Handlers first: a SIGINT in the middle of removing stale sessions must not leave
    // one half removed, unreported (the stop is seen once the trace starts).
    tracefs::arm_stop_handlers();
    for r in tracefs::remove_stale(&root) {
        note(Notice::RemovedStale(r));
    }
    let mut tracer = Tracer::setup(&root, plan, joint.is_some(), note)?;
    let result = tracer.trace(plan, outputs, out, note, joint);
    let failures = tracer.session.close();
    for f in &failures {
        note(Notice::Cleanup(f.clone()));
    }
    let mut finished = result?;
    if !failures.is_empty() {
        finished.exit = 1;
    }
    Ok(finished)
}

/// A running trace: the session with its probes, and the traced process.
struct Tracer {
    session: Session,
    child: Option<Child>,
    events: HashMap<String, Event>,
}

impl Tracer {
    /// Create the instance and the probes, start the command (stopped) or find the
    /// threads of `-p`, filter the instance on them and enable the probes.
    /// `mono`: the events on `CLOCK_MONOTONIC`, the kernel side's clock (a session
    /// tracing both sides).
    fn setup(
        root: &std::path::Path,
        plan: &UserPlan<'_>,
        mono: bool,
        note: &mut dyn FnMut(Notice),
    ) -> Result<Tracer> {
        let (targets, probes) = (plan.targets, plan.probes.as_slice());
        let target = &plan.session.target;
        let (mut session, mut events) =
            probe_session(root, targets, probes, 0..probes.len(), plan.session.stack)?;
        if mono {
            session.write("trace_clock", "mono")?;
        }
        let group = session.group().to_string();
        for (i, s) in plan.inlines.iter().enumerate() {
            let (Some(event), Some(line)) = (&s.event, s.def(&group, &targets[s.target].path))
            else {
                continue;
            };
            match session.add_event(EventFile::Uprobe, event, &line) {
                Ok(()) => {
                    events.insert(event.clone(), Event::Inline(i));
                }
                // The copy's frame still opens at its first call, without arguments.
                Err(e) => {
                    for c in &s.copies {
                        note(Notice::InlineProbeFailed {
                            callee: c.callee().map_or("?", |f| f.name()).to_string(),
                            caller: c.caller().map_or("?", |f| f.symbol()).to_string(),
                            why: e.to_string(),
                        });
                    }
                }
            }
        }
        // An exec ends the calls its thread had open: the new program starts a new tree.
        let exec = format!("events/sched/{EXEC_EVENT}/enable");
        if session.has(&exec) {
            session.write(&exec, "1")?;
            events.insert(EXEC_EVENT.to_string(), Event::Exec);
        }
        let mut child = None;
        let pids: Vec<i32> = if let Some(pid) = target.pid() {
            process::threads_of(pid)?
        } else if !target.command().is_empty() {
            let c = Child::spawn_at_exec(target.command())?;
            let pid = c.pid();
            child = Some(c);
            vec![pid]
        } else {
            Vec::new()
        };
        if !pids.is_empty() {
            let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
            session.write("set_event_pid", &list.join(" "))?;
        }
        session.write(&format!("events/{group}/enable"), "1")?;
        session.write("tracing_on", "1")?;
        Ok(Tracer {
            session,
            child,
            events,
        })
    }

    /// Stream events until a stop condition; print calls; returns the exit code.
    fn trace(
        &mut self,
        plan: &UserPlan<'_>,
        outputs: Outputs,
        out: &mut dyn Write,
        note: &mut dyn FnMut(Notice),
        joint: Option<crate::Joint<'_>>,
    ) -> Result<Finished> {
        let (probes, inlines) = (plan.probes.as_slice(), plan.inlines.as_slice());
        let session = &plan.session;
        // Probes name their functions: the tree looks nothing up by name.
        let no_db = dcg_dbset::DbSet::new(Vec::new());
        let mut calls = calls_for(&no_db, plan, outputs)?;
        let mut pipe = self.session.open_pipe()?;
        // The kernel half, attached while the command waits at its exec; the user
        // events wait for its calls, which come when the command has ended.
        let mut kernel = joint.map(|j| {
            calls.set_kernel_set(j.dbs);
            j.side
        });
        let pid = self.child.as_ref().map(Child::pid).or(session.target.pid());
        if let (Some(k), Some(pid)) = (kernel.as_deref_mut(), pid) {
            if let Err(why) = k.attach(pid) {
                note(Notice::NoKernelSide(why));
                kernel = None;
            }
        }
        let mut held = kernel.as_ref().map(|_| Merge::default());
        if let Some(c) = self.child.as_mut() {
            c.resume()?;
        }
        let mut stream = Stream::new(&self.events, probes, inlines);
        if session.stack {
            stream.with_stacks();
        }
        if !plan.follow_children {
            let pid = self
                .child
                .as_ref()
                .map(|c| c.pid())
                .or(session.target.pid());
            stream.only_process(pid);
        }
        let sink: &mut dyn EventSink = match held.as_mut() {
            Some(m) => m,
            None => &mut calls,
        };
        let stop = read_until_stop(&mut self.child, &mut pipe, &mut stream, sink, session, out)?;
        // Stop recording, then drain what is already in the buffer.
        let _ = self.session.write("tracing_on", "0");
        if matches!(
            stop,
            Stop::Ended(_) | Stop::Gone | Stop::Duration | Stop::Signal(_)
        ) {
            drain(&mut pipe, &mut stream, sink, out, session.stop.count)?;
        }
        stream.flush_carry(sink, out)?;
        if let (Some(m), Some(k)) = (held.as_mut(), kernel) {
            match k.finish() {
                Ok(records) => m.kernel_calls(records),
                Err(why) => note(Notice::NoKernelSide(why)),
            }
            let count = session.stop.count;
            match m.release(u64::MAX, &mut calls, out, count) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
                _ => {}
            }
        }
        let (overrun, dropped) = self.session.buffer_stats();
        drop(pipe);
        ignore_closed(calls.finish(out))?;
        ignore_closed(out.flush())?;
        let collected = calls.take_collected();
        calls.close()?;
        let lost = stream.lost_seen.max(overrun + dropped);
        if lost > 0 {
            note(Notice::LostEvents(lost));
        }
        if stream.unparsed > 0 {
            note(Notice::Unparsed(stream.unparsed));
        }
        Ok(Finished {
            exit: end_of(stop, &mut self.child, session, note),
            calls: collected,
        })
    }
}

/// Read the pipe into the calls until a stop condition.
fn read_until_stop(
    child: &mut Option<Child>,
    pipe: &mut TracePipe,
    stream: &mut Stream<'_, '_>,
    calls: &mut dyn EventSink,
    session: &SessionPlan,
    out: &mut dyn Write,
) -> Result<Stop> {
    let deadline = session.stop.deadline(Instant::now());
    let mut lines = Vec::new();
    loop {
        if let Some(sig) = tracefs::stop_requested() {
            return Ok(Stop::Signal(sig));
        }
        // Check for the end before reading, so what the process did last is drained.
        let ended = match child.as_mut() {
            Some(c) => c.poll().map(Stop::Ended),
            None => session
                .target
                .pid()
                .filter(|&p| !process::is_alive(p))
                .map(|_| Stop::Gone),
        };
        let timeout = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
            None => Duration::from_millis(100),
        };
        lines.clear();
        pipe.read_lines(timeout, &mut lines)?;
        match stream.feed(&lines, calls, out, session.stop.count) {
            Ok(true) => return Ok(Stop::Count),
            Ok(false) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Stop::OutputClosed),
            Err(e) => return Err(e.into()),
        }
        if let Some(s) = ended {
            return Ok(s);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Stop::Duration);
        }
        match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Stop::OutputClosed),
            r => r?,
        }
    }
}
