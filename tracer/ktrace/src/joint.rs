//! The kernel half of a session tracing user and kernel functions together (issue 42):
//! the BPF engine, limited to the command's process, attached while the command waits at
//! its `exec`, recording in a thread of its own while the user side runs the command;
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
use crate::{bpf_engine, Available, KtraceError, Notice, Result};

/// What the recording thread hands back: the calls, and the notices of the session.
type Recorded = std::result::Result<(Vec<CallRecord>, Vec<Notice>), String>;

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
    /// kernel pattern), with these dbs: traced by the BPF engine.
    pub fn new(mut opts: TraceOptions, tuning: Tuning, dbs: DbSet) -> KernelHalf {
        opts.engine = Engine::Bpf;
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

    /// The notices of the session so far (what the recording thread reported once it
    /// ended), taken.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// Attach for process `pid` (stopped at its `exec`): returns once the programs are
    /// attached, or with why they cannot be.
    pub fn attach(&mut self, pid: i32) -> std::result::Result<(), String> {
        let mut opts = self.opts.clone();
        opts.target = Target::Pid(pid);
        let (tuning, dbs) = (self.tuning, Arc::clone(&self.dbs));
        let (tx, rx) = mpsc::channel::<std::result::Result<(), String>>();
        let handle = std::thread::Builder::new()
            .name("dcg-kernel".into())
            .spawn(move || record(&opts, tuning, &dbs, &tx))
            .map_err(|e| format!("cannot start the kernel side: {e}"))?;
        match rx.recv() {
            Ok(Ok(())) => {
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
    attached: &mpsc::Sender<std::result::Result<(), String>>,
) -> Recorded {
    let mut notices = Vec::new();
    let mut notify = |n: Notice| {
        if !matches!(n, Notice::Progress(_)) {
            notices.push(n);
        }
    };
    let told = std::cell::Cell::new(false);
    let result = (|| -> Result<Option<Vec<CallRecord>>> {
        let root = tracefs::mount_point()?;
        let avail = Available::read(&root).map_err(KtraceError::Available)?;
        let Some(mut plan) = KernelPlan::make(opts, tuning, dbs, root, avail, &mut notify)? else {
            return Ok(None);
        };
        // Collected for the user side, which prints them in its trees.
        plan.outputs = OutputSpec {
            report: true,
            ..OutputSpec::default()
        };
        let session = bpf_engine::attach(&plan, &mut notify)?;
        let _ = attached.send(Ok(()));
        told.set(true);
        let outputs = Outputs::open(plan.outputs.clone())?;
        let mut none = std::io::sink();
        let summary = bpf_engine::run(&plan, session, outputs, &mut none, &mut notify)?;
        let mut calls = summary.calls.unwrap_or_default();
        // `--kernel-depth`: the levels below a user call shown.
        if opts.depth > 0 {
            calls.retain(|c| c.depth < opts.depth);
        }
        Ok(Some(calls))
    })();
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
