//! The in-process engine (`--engine inproc`): dcg preloads its recorder
//! (`libdcg_recorder.so`, crate `dcg-recorder`) into the command it starts, hands it a
//! plan (each function, how its entry is hooked, how every value is fetched: the same
//! fetch expressions the uprobes use, plus xmm and x87 registers) and drains the rings it
//! records into. The records feed the same call pipeline as uprobe events.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dcg_calls::outputs::Outputs;
use dcg_inproc::layout::{self, FetchOp};
use dcg_inproc::plan::{PlanFunc, PlanTarget};
use dcg_inproc::rings::{self, Copier, Record, Rings};
use dcg_live::options::TraceOptions;
use dcg_live::process::Child;
use dcg_live::tracefs;

use crate::error::{Result, UtraceError};
use crate::hooks::Binary;
use crate::merge::Merge;
use crate::plan::{InlineSite, NotInProcess, Probe, Target, UserPlan};
use crate::probe_feed::Calls;
use crate::session::{calls_for, end_of, ignore_closed, Stop};
use crate::uprobe_events::{probe_session, uprobe_root, Stream};
use crate::{Finished, Notice, EXIT_NO_MATCH};

/// File name of the recorder library.
pub const RECORDER: &str = "libdcg_recorder.so";

/// Why a session cannot run in process (then uprobes do): a static binary, `-p PID`, no
/// command, no recorder library.
pub fn unavailable(opts: &TraceOptions, targets: &[Target]) -> Option<NotInProcess> {
    if opts.target.pid().is_some() {
        return Some(NotInProcess::AttachesToPid);
    }
    if opts.target.command().is_empty() {
        return Some(NotInProcess::NoCommand);
    }
    for t in targets {
        let bytes = std::fs::read(&t.path).ok()?;
        if Binary::new(&bytes, &t.segments).is_static {
            return Some(NotInProcess::StaticallyLinked(t.path.clone()));
        }
    }
    if opts.recorder.is_none() {
        return Some(NotInProcess::NoRecorder);
    }
    None
}

/// What the recorder cannot see when a traced function is a library's: the calls made
/// while the loader runs the constructors of the command's libraries, which it does
/// before the recorder's own (a preloaded library is initialised after every library
/// the program needs). Names those libraries.
pub fn unseen_constructors(args: &TraceOptions, targets: &[Target]) -> Option<Notice> {
    let exe = dcg_live::process::command_path(args.target.command().first()?).ok()?;
    let exe = exe.canonicalize().unwrap_or(exe);
    if targets.iter().all(|t| t.path == exe) {
        return None;
    }
    let libs: Vec<String> = crate::plan::libraries_of_command(&exe)
        .iter()
        .filter(|l| !l.to_string_lossy().contains("/ld-linux"))
        .filter(|l| crate::plan::has_constructors(l))
        .filter_map(|l| Some(l.file_name()?.to_string_lossy().into_owned()))
        .collect();
    (!libs.is_empty()).then_some(Notice::UnseenConstructors(libs))
}

/// Rings: how many threads can record at once (a ring is given back when its thread
/// ends), and how much each holds before dcg's copier thread takes it (it looks every
/// millisecond while they fill, up to every 8 while they stay nearly empty; a hot loop
/// writes half a GB a second, and a loaded machine can keep the copier off the CPU for
/// ten: 9 MB at worst).
const RINGS: u32 = 64;
const RING_BYTES: u32 = 16 << 20;
/// Each ring in a session tracing the kernel too. There each wakeup of the copier runs
/// the kernel side's programs on every kernel function it reaches, on the CPUs the
/// program runs on: rings four times as large let it pause four times as long (32 ms at
/// most; copier::Pause). Measured on Debian 7.2 in qemu (one vCPU), the copier's looks
/// cost joint-loop about 8 us a call of 150 at 1-8 ms apart and 2-3 at 50 ms. The
/// memory is a ring's only as its thread fills it.
const JOINT_RING_BYTES: u32 = 64 << 20;
/// How often the engine looks at what came (records, the command's end, a signal, the
/// duration).
const LOOK: Duration = Duration::from_millis(10);
/// The same while a session tracing both sides holds the records to the end: only the
/// command's end, a signal and the duration are looked for, and every wakeup of dcg
/// costs the traced program (on one CPU it is preempted, inside a traced system call,
/// and the kernel side's programs run on each kernel function dcg's thread calls).
/// The command's end is seen at most this late.
const DEFERRED_LOOK: Duration = Duration::from_millis(50);

/// Trace a plan in process: the call pipeline into `outputs`, then [`run`].
pub(crate) fn trace(
    plan: &UserPlan<'_>,
    outputs: Outputs,
    out: &mut dyn Write,
    note: &mut dyn FnMut(Notice),
    joint: Option<crate::Joint<'_>>,
) -> Result<Finished> {
    let no_db = dcg_dbset::DbSet::new(Vec::new());
    let mut calls = calls_for(&no_db, plan, outputs)?;
    let kernel = joint.map(|j| {
        calls.set_kernel_set(j.dbs);
        j.side
    });
    let finished = run(plan, &mut calls, out, note, kernel)?;
    calls.close()?;
    Ok(finished)
}

/// Run the session in process. Functions the recorder cannot hook are traced with
/// uprobes in the same session (filtered on the command and its children), their events
/// merged with the recorder's by time.
pub(crate) fn run(
    plan: &UserPlan<'_>,
    calls: &mut Calls<'_>,
    out: &mut dyn Write,
    note: &mut dyn FnMut(Notice),
    mut kernel: Option<&mut dyn crate::KernelSide>,
) -> Result<Finished> {
    let (targets, probes) = (plan.targets, plan.probes.as_slice());
    let (probe_of, funcs, fallback) = split_hooked(&plan.hooks);
    let root = if fallback.is_empty() {
        None
    } else {
        match uprobe_root() {
            Ok(r) => Some(r),
            Err(e) => {
                note(Notice::NoUprobesForUnhooked(e.to_string()));
                None
            }
        }
    };
    if funcs.is_empty() && root.is_none() {
        note(Notice::NothingToTrace);
        return Ok(Finished {
            exit: EXIT_NO_MATCH,
            calls: None,
        });
    }
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir } else { Path::new("/tmp") };
    let ring_bytes = if kernel.is_some() {
        JOINT_RING_BYTES
    } else {
        RING_BYTES
    };
    let prepared = prepare(dir, plan, &funcs, ring_bytes, note)?;
    tracefs::arm_stop_handlers();
    // The uprobes of what the recorder cannot hook, before the command runs.
    let (mut session, events) = match &root {
        Some(root) => {
            for r in tracefs::remove_stale(root) {
                note(Notice::RemovedStale(r));
            }
            let (session, events) =
                probe_session(root, targets, probes, fallback.iter().copied(), false)?;
            (Some(session), Some(events))
        }
        None => (None, None),
    };
    let Prepared {
        clock,
        rings,
        env,
        _plan_file,
    } = prepared;
    let mut child = Some(Child::spawn_at_exec_with(
        plan.session.target.command(),
        &env,
    )?);
    // A session tracing both sides decodes the recorder's bytes once the command has
    // ended (without uprobes: see `Pump::until_stop`); the copier holds them meanwhile,
    // in memory it backs now, after the fork (which leaves the pages dcg had then
    // write-protected: a page fault at the first write of each).
    let rings = std::sync::Arc::new(rings);
    let mut copier = if kernel.is_some() && session.is_none() {
        Copier::start_holding(rings)?
    } else {
        Copier::start(rings)?
    };
    // The kernel half, attached while the command waits at its exec.
    if let (Some(k), Some(c)) = (kernel.as_deref_mut(), child.as_ref()) {
        if let Err(why) = k.attach(c.pid()) {
            note(Notice::NoKernelSide(why));
            kernel = None;
            copier.hold_no_more();
        }
    }
    let mut pipe = match session.as_mut() {
        Some(session) => {
            let pid = child.as_ref().map_or(0, Child::pid);
            // Uprobe timestamps on the recorder's clock, so both merge by time.
            session.write("trace_clock", "mono")?;
            session.write("set_event_pid", &pid.to_string())?;
            let group = session.group().to_string();
            session.write(&format!("events/{group}/enable"), "1")?;
            session.write("tracing_on", "1")?;
            Some(session.open_pipe()?)
        }
        None => None,
    };
    let no_inlines: [InlineSite<'_>; 0] = [];
    let mut stream = events.as_ref().map(|events| {
        let mut s = Stream::new(events, probes, &no_inlines);
        if !plan.follow_children {
            s.only_process(child.as_ref().map(Child::pid));
        }
        s
    });
    if let Some(c) = child.as_mut() {
        c.resume()?;
    }
    // The decoding (this thread) yields the CPU to the traced program: what it has not
    // decoded yet waits in the copier's memory, which keeps its normal priority.
    // SAFETY: setpriority on this thread (Linux: a thread id is a PRIO_PROCESS who).
    unsafe {
        nix::libc::setpriority(nix::libc::PRIO_PROCESS, nix::libc::gettid() as u32, 10);
    }
    let mut pump = Pump::new(targets, probes, &probe_of, &funcs, clock);
    // Only the recorder feeds the session: nothing to wait for before passing events on.
    pump.only_recorder = pipe.is_none();
    // The kernel's calls come when the command has ended: every user event waits for
    // them, to be passed on in time order with them.
    pump.hold_all = kernel.is_some();
    pump.count = plan.session.stop.count;
    if plan.session.stack {
        pump.stacks = Some(crate::ustack::UserStacks::new(targets));
    }
    let mut merge = Merge::default();
    let mut sources = Sources {
        copier: &copier,
        pipe: pipe.as_mut(),
        stream: stream.as_mut(),
    };
    let stop = pump.until_stop(&mut sources, &mut merge, &mut child, calls, plan, out)?;
    // Whatever is recorded by now is read; then the recorders write nothing more.
    let exit = end_of(stop, &mut child, &plan.session, note);
    copier.rings().stop();
    copier.stop();
    if let Some(session) = session.as_mut() {
        let _ = session.write("tracing_on", "0");
    }
    if let Some(k) = kernel {
        match k.finish() {
            Ok(records) => merge.kernel_calls(records),
            Err(why) => note(Notice::NoKernelSide(why)),
        }
    }
    if !matches!(stop, Stop::Count | Stop::OutputClosed) {
        let mut sources = Sources {
            copier: &copier,
            pipe: pipe.as_mut(),
            stream: stream.as_mut(),
        };
        match pump.step(&mut sources, &mut merge, calls, out, true) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
            _ => {}
        }
    }
    drop(pipe);
    ignore_closed(calls.finish(out))?;
    ignore_closed(out.flush())?;
    let mut cleanup_failed = false;
    if let Some(mut session) = session.take() {
        let (overrun, dropped) = session.buffer_stats();
        if overrun + dropped > 0 {
            note(Notice::LostUprobeEvents(overrun + dropped));
        }
        for f in session.close() {
            note(Notice::Cleanup(f));
            cleanup_failed = true;
        }
    }
    ring_notes(copier.rings(), &funcs, &probe_of, plan, dir, note);
    Ok(Finished {
        exit: if cleanup_failed { 1 } else { exit },
        calls: calls.take_collected(),
    })
}

/// Plan index → probe index for the functions the recorder hooks, their plans, and the
/// probes left to uprobes.
fn split_hooked(planned: &[Option<Vec<PlanFunc>>]) -> (Vec<usize>, Vec<PlanFunc>, Vec<usize>) {
    let mut probe_of = Vec::new();
    let mut funcs = Vec::new();
    let mut fallback = Vec::new();
    for (i, f) in planned.iter().enumerate() {
        match f {
            Some(f) => {
                for f in f {
                    probe_of.push(i);
                    funcs.push(f.clone());
                }
            }
            None => fallback.push(i),
        }
    }
    (probe_of, funcs, fallback)
}

/// The recorder's side made ready: its plan file (removed when dropped), its rings, the
/// clock its records are read by, and the environment the command starts with.
struct Prepared {
    clock: rings::TscClock,
    rings: Rings,
    env: [(String, String); 3],
    _plan_file: RemoveOnDrop,
}

/// Write the plan, create the rings, find the recorder: what the command is started
/// with. Stale sessions' files in `dir` are removed first.
fn prepare(
    dir: &Path,
    plan: &UserPlan<'_>,
    funcs: &[PlanFunc],
    ring_bytes: u32,
    note: &mut dyn FnMut(Notice),
) -> Result<Prepared> {
    let plan_targets: Vec<PlanTarget> = plan
        .targets
        .iter()
        .map(|t| PlanTarget {
            build_id: t.build_id.clone(),
            path: t.path.display().to_string(),
        })
        .collect();
    for r in rings::remove_stale(dir) {
        note(Notice::RemovedStale(r));
    }
    let io = |e: dcg_inproc::InprocError| UtraceError::Io(std::io::Error::other(e.to_string()));
    let plan_path = rings::session_file(dir, "plan");
    let mut flags = if plan.follow_children {
        layout::PLAN_FOLLOW_FORKS
    } else {
        0
    };
    if rings::tsc_usable() {
        flags |= layout::PLAN_TSC;
    }
    if plan.session.stack {
        flags |= layout::PLAN_STACK;
    }
    let clock = rings::TscClock::new();
    dcg_inproc::plan::write_plan(&plan_path, &plan_targets, funcs, flags).map_err(io)?;
    let plan_file = RemoveOnDrop(plan_path.clone());
    let rings = Rings::create(dir, RINGS, ring_bytes).map_err(io)?;
    let recorder = plan
        .recorder
        .as_deref()
        .ok_or(UtraceError::InProcessAsked(NotInProcess::NoRecorder))?;
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(p) if !p.is_empty() => format!("{} {p}", recorder.display()),
        _ => recorder.display().to_string(),
    };
    let env = [
        ("LD_PRELOAD".to_string(), preload),
        (
            layout::ENV_PLAN.to_string(),
            plan_path.display().to_string(),
        ),
        (
            layout::ENV_SHM.to_string(),
            rings.path().display().to_string(),
        ),
    ];
    Ok(Prepared {
        clock,
        rings,
        env,
        _plan_file: plan_file,
    })
}

/// The two sources of a session: the recorder's rings (through the copier) and, for the
/// functions it cannot hook, the uprobe events' pipe.
struct Sources<'s, 'e, 'p> {
    copier: &'s Copier,
    pipe: Option<&'s mut dcg_live::tracefs::TracePipe>,
    stream: Option<&'s mut Stream<'e, 'p>>,
}

/// What passing both sources' records on keeps from one pass to the next.
struct Pump<'a, 'p> {
    targets: &'a [Target],
    probes: &'a [Probe<'p>],
    probe_of: &'a [usize],
    /// Which fetches of each plan function are strings.
    entry_kinds: Vec<Vec<u8>>,
    ret_kinds: Vec<Vec<u8>>,
    clock: rings::TscClock,
    /// Only the recorder feeds the session: nothing to wait for before passing events on.
    only_recorder: bool,
    /// A session tracing both sides: nothing is passed on before the last step.
    hold_all: bool,
    count: Option<u64>,
    batch: Vec<Record>,
    lines: Vec<String>,
    objects_seen: u32,
    /// Load bias of each target by (process, target); (0, target): the latest.
    biases: std::collections::HashMap<(u32, usize), u64>,
    /// `--stack`: unwinds the recorder's stack records.
    stacks: Option<crate::ustack::UserStacks<'a>>,
    chunks: Vec<rings::Chunk>,
}

impl<'a, 'p> Pump<'a, 'p> {
    fn new(
        targets: &'a [Target],
        probes: &'a [Probe<'p>],
        probe_of: &'a [usize],
        funcs: &[PlanFunc],
        clock: rings::TscClock,
    ) -> Self {
        let kinds = |ops: &[FetchOp]| -> Vec<u8> { ops.iter().map(|o| o.kind).collect() };
        Pump {
            targets,
            probes,
            probe_of,
            entry_kinds: funcs.iter().map(|f| kinds(&f.entry)).collect(),
            ret_kinds: funcs.iter().map(|f| kinds(&f.ret)).collect(),
            clock,
            only_recorder: false,
            hold_all: false,
            count: None,
            batch: Vec::new(),
            lines: Vec::new(),
            objects_seen: 0,
            biases: Default::default(),
            stacks: None,
            chunks: Vec::new(),
        }
    }

    /// Pass records on until a stop condition; why it stopped.
    fn until_stop(
        &mut self,
        sources: &mut Sources<'_, '_, '_>,
        merge: &mut Merge,
        child: &mut Option<Child>,
        calls: &mut Calls<'_>,
        plan: &UserPlan<'_>,
        out: &mut dyn Write,
    ) -> Result<Stop> {
        let deadline = plan.session.stop.deadline(Instant::now());
        // A session tracing both sides passes nothing on before the kernel's calls come:
        // with the recorder alone feeding it, its bytes wait in the copier's memory while
        // the command runs and are decoded in the last step, once the kernel side has
        // detached. Decoding them now would cost the traced program far more than its
        // records do: every page fault and system call dcg makes meanwhile runs through
        // the kernel side's programs, on the CPUs the program runs on.
        // `run` starts a holding copier for exactly such a session.
        let defer = sources.copier.holding();
        Ok(loop {
            if let Some(sig) = tracefs::stop_requested() {
                break Stop::Signal(sig);
            }
            let ended = child.as_mut().and_then(Child::poll).map(Stop::Ended);
            let stepped = if defer {
                // Their ticks are converted then, by the samples taken meanwhile (most
                // by the copier, which looks at the rings every few milliseconds anyway).
                sources.copier.clock_samples_into(&mut self.clock);
                self.clock.update();
                Ok(false)
            } else {
                self.step(sources, merge, calls, out, false)
            };
            match stepped {
                Ok(true) => break Stop::Count,
                Ok(false) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break Stop::OutputClosed,
                Err(e) => return Err(e.into()),
            }
            if let Some(s) = ended {
                break s;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break Stop::Duration;
            }
            match out.flush() {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break Stop::OutputClosed,
                r => r?,
            }
            if sources.pipe.is_none() {
                std::thread::sleep(if defer { DEFERRED_LOOK } else { LOOK });
            }
        })
    }

    /// Take what both sources have; pass on what every source has delivered up to
    /// `upto`. `last`: the pipe is read until it is empty. Whether the count is reached.
    fn step(
        &mut self,
        sources: &mut Sources<'_, '_, '_>,
        merge: &mut Merge,
        calls: &mut Calls<'_>,
        out: &mut dyn Write,
        last: bool,
    ) -> std::io::Result<bool> {
        let copier = sources.copier;
        for (pid, path, bias) in copier.rings().new_objects(&mut self.objects_seen) {
            if let Some(t) = self
                .targets
                .iter()
                .position(|t| t.path.as_os_str() == path.as_str())
            {
                self.biases.insert((pid, t), bias);
                self.biases.insert((0, t), bias);
            }
            if let Some(s) = self.stacks.as_mut() {
                s.learn(pid, &path, bias);
            }
            calls.learn_file(&path, bias);
        }
        if let (Some(pipe), Some(stream)) =
            (sources.pipe.as_deref_mut(), sources.stream.as_deref_mut())
        {
            loop {
                self.lines.clear();
                pipe.read_lines(
                    Duration::from_millis(if last { 30 } else { 10 }),
                    &mut self.lines,
                )
                .map_err(|e| std::io::Error::other(e.to_string()))?;
                if self.lines.is_empty() {
                    break;
                }
                stream.feed(&self.lines, merge, out, None)?;
                if !last {
                    break;
                }
            }
            if last {
                stream.flush_carry(merge, out)?;
            }
        }
        self.batch.clear();
        copier.take(&mut self.chunks);
        copier.clock_samples_into(&mut self.clock);
        self.clock.update();
        rings::records_of(&self.chunks, &self.clock, &mut self.batch);
        copier.give_back(&mut self.chunks);
        for r in &self.batch {
            if r.kind == layout::REC_EXEC {
                merge.record(r, 0, None, &self.entry_kinds, &self.ret_kinds);
            } else if let Some(&probe) = self.probe_of.get(r.func as usize) {
                // Where the function is in the thread's process: inline frames place
                // calls by their return addresses. (A forked child has its parent's.)
                let t = self.probes[probe].target;
                let ip = self
                    .biases
                    .get(&(r.pid, t))
                    .or_else(|| self.biases.get(&(0, t)))
                    .map(|b| b.wrapping_add(self.probes[probe].addr));
                if r.kind == layout::REC_STACK {
                    if let (Some(s), Some(ip)) = (self.stacks.as_mut(), ip) {
                        merge.stack(r, s.frames(r.pid, ip, &r.payload));
                    }
                    continue;
                }
                merge.record(r, probe, ip, &self.entry_kinds, &self.ret_kinds);
            }
        }
        // Uprobe events reach the pipe a little later than the recorder's records.
        let upto = if last {
            u64::MAX
        } else if self.hold_all {
            // Nothing to pass on before the kernel's calls come (nor to sort meanwhile).
            return Ok(false);
        } else if self.only_recorder {
            u64::MAX
        } else {
            rings::mono_ns().saturating_sub(100_000_000)
        };
        merge.release(upto, calls, out, self.count)
    }
}

/// What the rings say at the end: nothing hooked, entries that could not be patched,
/// records lost, threads without a ring.
fn ring_notes(
    rings: &Rings,
    funcs: &[PlanFunc],
    probe_of: &[usize],
    plan: &UserPlan<'_>,
    dir: &Path,
    note: &mut dyn FnMut(Notice),
) {
    let probes = &plan.probes;
    if !funcs.is_empty() && rings.attached() == 0 {
        note(Notice::RecorderHookedNothing {
            command: plan.session.target.command().first().cloned(),
        });
    }
    if rings.unhooked() > 0 {
        let names: Vec<String> = rings
            .unhooked_funcs()
            .into_iter()
            .filter_map(|i| probe_of.get(i as usize))
            .map(|&p| probes[p].symbol.clone())
            .collect();
        note(Notice::Unpatched {
            count: rings.unhooked(),
            names,
        });
    }
    let lost = rings.lost();
    if lost > 0 {
        note(Notice::LostRecords(lost));
    }
    if rings.threads_without_ring() > 0 {
        note(Notice::NoFreeRing {
            threads: rings.threads_without_ring(),
            rings: RINGS,
        });
    }
    if rings.rejected() > 0 {
        note(Notice::RejectedAtEntry(rings.rejected()));
    }
    if rings.no_space() > 0 {
        note(Notice::NoRingMemory {
            threads: rings.no_space(),
            dir: dir.to_path_buf(),
        });
    }
}

/// A file removed when the session ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
