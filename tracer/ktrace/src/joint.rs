//! The kernel half of a session tracing user and kernel functions together (issue 42):
//! the BPF engine (or function_graph, on the `mono` trace clock), limited to the command's
//! process, attached while the command waits at its `exec`, recording in a thread of its
//! own while the user side runs the command;
//! its calls are collected, not printed, and handed to the user side, which joins them
//! into its trees.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dcg_calls::outputs::{OutputSpec, Outputs};
use dcg_calls::saved_format::CallRecord;
use dcg_dbset::DbSet;
use dcg_live::options::{Engine, Target, TraceOptions};
use dcg_live::tracefs;

use crate::plan::{KernelPlan, Tuning};
use crate::{bpf_engine, fgraph_engine, Available, KtraceError, Notice, Result};

/// What the recording thread hands back: the calls, and the notices of the session.
type Recorded = std::result::Result<(Vec<CallRecord>, Vec<Notice>), String>;

/// What the recording thread says once attached (the notices so far, the last saying what
/// is traced), or why it cannot attach.
type Attached = std::result::Result<Vec<Notice>, String>;

/// The kernel half: its options and dbs, and once attached, the thread recording.
pub struct KernelHalf {
    opts: TraceOptions,
    tuning: Tuning,
    dbs: Arc<DbSet>,
    recording: Option<JoinHandle<Recorded>>,
    /// Notices of a session that ended (printed by the caller).
    notices: Vec<Notice>,
}

impl KernelHalf {
    /// The kernel half of a session whose kernel functions are `opts.func` (every one a
    /// kernel pattern), with these dbs, traced by `opts.engine` (`auto`: the BPF engine,
    /// function_graph where BPF is unusable).
    pub fn new(opts: TraceOptions, tuning: Tuning, dbs: DbSet) -> KernelHalf {
        KernelHalf {
            opts,
            tuning,
            dbs: Arc::new(dbs),
            recording: None,
            notices: Vec::new(),
        }
    }

    /// The kernel's dbs.
    pub fn dbs(&self) -> Arc<DbSet> {
        Arc::clone(&self.dbs)
    }

    /// The notices of the session so far (those of the planning once attached, the
    /// rest once the recording ended), taken.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Attach for process `pid` (stopped at its `exec`): returns once the programs are
    /// attached, or with why they cannot be.
    pub fn attach(&mut self, pid: i32) -> std::result::Result<(), String> {
        let mut opts = self.opts.clone();
        opts.target = Target::Pid(pid);
        let (tuning, dbs) = (self.tuning, Arc::clone(&self.dbs));
        let (tx, rx) = mpsc::channel::<Attached>();
        let handle = std::thread::Builder::new()
            .name("dcg-kernel".into())
            .spawn(move || record(&opts, tuning, &dbs, &tx))
            .map_err(|e| format!("cannot start the kernel side: {e}"))?;
        match rx.recv() {
            Ok(Ok(notices)) => {
                self.notices.extend(notices);
                self.recording = Some(handle);
                Ok(())
            }
            Ok(Err(why)) => {
                let _ = handle.join();
                Err(why)
            }
            Err(_) => Err(match handle.join() {
                Ok(Err(why)) => why,
                _ => "the kernel side ended before it attached".to_string(),
            }),
        }
    }

    /// The command ended (the recording thread sees it go): its calls.
    pub fn finish(&mut self) -> std::result::Result<Vec<CallRecord>, String> {
        let Some(handle) = self.recording.take() else {
            return Ok(Vec::new());
        };
        // A command that ended is seen gone within the recording loop's poll; a process
        // that lives on (`-p`, a session stopped by --duration or --count) is not: the
        // recording then stops as on a signal, with the user side.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !handle.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if !handle.is_finished() {
            tracefs::request_stop(nix::sys::signal::Signal::SIGTERM as i32);
        }
        match handle.join() {
            Ok(Ok((calls, notices))) => {
                self.notices.extend(notices);
                Ok(calls)
            }
            Ok(Err(why)) => Err(why),
            Err(_) => Err("the kernel side failed".to_string()),
        }
    }
}

/// The recording thread: plan, attach (said on `attached`), record until the process is
/// gone, decode into calls.
fn record(
    opts: &TraceOptions,
    tuning: Tuning,
    dbs: &DbSet,
    attached: &mpsc::Sender<Attached>,
) -> Recorded {
    // What is traced is said once attached (the engines say it when they let a command
    // run, which the user side does here).
    let notices = std::cell::RefCell::new(Vec::new());
    let mut notify = |n: Notice| {
        if !matches!(n, Notice::Progress(_) | Notice::Tracing { .. }) {
            notices.borrow_mut().push(n);
        }
    };
    let told = std::cell::Cell::new(false);
    let result = (|| -> Result<Option<Vec<CallRecord>>> {
        let root = tracefs::mount_point()?;
        // What a dcg killed with SIGKILL left (an instance, its graph functions), as a
        // kernel session removes it (the user engine does only where it uses tracefs).
        for r in tracefs::remove_stale(&root) {
            notify(Notice::RemovedStale(r));
        }
        let avail = Available::read(&root).map_err(KtraceError::Available)?;
        // Not named, the kernel side is the BPF engine (any kernel with BPF, every value,
        // the calls' times always); function_graph where BPF is unusable.
        let auto = opts.engine == Engine::Auto;
        let mut opts = opts.clone();
        if auto {
            opts.engine = Engine::Bpf;
        }
        let Some(mut plan) = KernelPlan::make(&opts, tuning, dbs, root, avail, &mut notify)? else {
            return Ok(None);
        };
        plan.session.joined = true;
        // Collected for the user side, which prints them in its trees.
        plan.outputs = OutputSpec {
            report: true,
            ..OutputSpec::default()
        };
        let tracing = Notice::Tracing {
            functions: plan.roots.len(),
            target: plan.session.traced(None),
            probes: 0,
        };
        let mut ready = || {
            let mut now = notices.take();
            now.push(tracing.clone());
            let _ = attached.send(Ok(now));
            told.set(true);
        };
        let outputs = Outputs::open(plan.outputs.clone())?;
        let mut none = std::io::sink();
        let summary = match plan.engine.engine {
            Engine::Bpf => match bpf_engine::attach(&plan, &mut notify) {
                Ok(session) => {
                    ready();
                    bpf_engine::run(&plan, session, outputs, &mut none, &mut notify)?
                }
                Err(KtraceError::BpfUnavailable(e)) if auto => {
                    notify(Notice::BpfFallback(e.to_string()));
                    plan.engine.engine = Engine::Fgraph;
                    fgraph_engine::run_when_ready(
                        &plan,
                        outputs,
                        &mut none,
                        &mut notify,
                        &mut ready,
                    )?
                }
                Err(e) => return Err(e),
            },
            _ => fgraph_engine::run_when_ready(&plan, outputs, &mut none, &mut notify, &mut ready)?,
        };
        let mut calls = summary.calls.unwrap_or_default();
        // `--kernel-depth`: the levels below a user call shown.
        if opts.depth > 0 {
            calls.retain(|c| c.depth < opts.depth);
        }
        Ok(Some(calls))
    })();
    let notices = notices.take();
    let why = match result {
        Ok(Some(calls)) => return Ok((calls, notices)),
        Ok(None) => format!("no kernel function matches {}", opts.func.join(", ")),
        Err(e) => e.to_string(),
    };
    if !told.get() {
        let _ = attached.send(Err(why.clone()));
    }
    Err(why)
}
