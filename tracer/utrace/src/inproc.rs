//! The in-process engine (`--engine inproc`): dcg preloads its recorder
//! (`libdcg_recorder.so`, crate `dcg-recorder`) into the command it starts, hands it a
//! plan (each function, how its entry is hooked, how every value is fetched: the same
//! fetch expressions the uprobes use, plus xmm and x87 registers) and drains the rings it
//! records into. The records feed the same call pipeline as uprobe events.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dcg_inproc::layout::{self, fflags, mode, FetchOp, FETCH_STRING};
use dcg_inproc::plan::{parse_fetch, PlanFunc, PlanTarget};
use dcg_inproc::rings::{self, RawValue, Record, Rings};
use dcg_live::options::TraceOptions;
use dcg_live::process::Child;
use dcg_live::tracefs;

use crate::calls::{Calls, Meta};
use crate::hooks::{Binary, Hook};
use crate::plan::{Probe, Target, Value, COMM_FIELD};
use crate::{Finished, Result, Stop, UtraceError};

/// File name of the recorder library.
pub const RECORDER: &str = "libdcg_recorder.so";

/// Where the recorder library is: `$DCG_RECORDER`, else beside the `dcg` executable (as
/// cargo builds both), else in `../lib/dcg/` from it (an installed layout).
pub fn recorder_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DCG_RECORDER") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(RECORDER), dir.join("../lib/dcg").join(RECORDER)]
        .into_iter()
        .find(|p| p.is_file())
}

/// Why a session cannot run in process (then uprobes do): a static binary, `-p PID`, no
/// command, no recorder library.
pub fn unavailable(args: &TraceOptions, targets: &[Target]) -> Option<String> {
    if args.pid.is_some() {
        return Some("-p attaches to a running process".into());
    }
    if args.command.is_empty() {
        return Some("no command to start".into());
    }
    for t in targets {
        let bytes = std::fs::read(&t.path).ok()?;
        if Binary::new(&bytes, &t.segments).is_static {
            return Some(format!(
                "{} is statically linked (no preloading)",
                t.path.display()
            ));
        }
    }
    if recorder_path().is_none() {
        return Some(format!(
            "{RECORDER} was not found beside dcg (set DCG_RECORDER)"
        ));
    }
    None
}

/// The plan of each probe: how its entry is hooked and its fetches; probes that cannot
/// be hooked get `None` and a note.
fn plan_funcs(
    targets: &[Target],
    probes: &[Probe<'_>],
    notes: &mut Vec<String>,
) -> Result<Vec<Option<PlanFunc>>> {
    let mut bytes = Vec::new();
    for t in targets {
        bytes.push(std::fs::read(&t.path).map_err(|e| UtraceError::Binary {
            path: t.path.display().to_string(),
            what: e.to_string(),
        })?);
    }
    let bins: Vec<Binary<'_>> = targets
        .iter()
        .zip(&bytes)
        .map(|(t, b)| Binary::new(b, &t.segments))
        .collect();
    let mut out = Vec::new();
    for p in probes {
        let t = &targets[p.target];
        let size = p
            .func
            .map(|f| u64::from(f.size()))
            .or_else(|| t.symbols.at(p.addr).iter().map(|s| s.size).max())
            .unwrap_or(0);
        let (mode, site_off, patch_len) = match bins[p.target].hook(p.addr, size) {
            Hook::Mcount(o) => (mode::MCOUNT, o, 0),
            Hook::Patchable(o) => (mode::PATCHABLE, o, 0),
            Hook::Plain(n) => (mode::PLAIN, 0, n),
            Hook::No(why) => {
                notes.push(format!(
                    "{} in {}: not traced in process: {why} (--engine uprobe traces it)",
                    p.symbol,
                    t.path.display()
                ));
                out.push(None);
                continue;
            }
        };
        let ops = |fields: &[crate::plan::Field]| -> Result<Vec<FetchOp>> {
            fields
                .iter()
                .filter(|f| f.name != COMM_FIELD)
                .map(|f| {
                    parse_fetch(&f.fetch).map_err(|e| UtraceError::Binary {
                        path: t.path.display().to_string(),
                        what: e.to_string(),
                    })
                })
                .collect()
        };
        let mut flags = 0;
        if p.returns_twice {
            flags |= fflags::NO_RET_HOOK;
        }
        if p.ret_fields.iter().any(|f| f.fetch.starts_with("%st0")) {
            flags |= fflags::RET_X87;
        }
        out.push(Some(PlanFunc {
            target: p.target as u32,
            addr: p.addr,
            size: size as u32,
            mode,
            flags,
            site_off,
            patch_len,
            entry: ops(&p.entry_fields)?,
            ret: ops(&p.ret_fields)?,
        }));
    }
    Ok(out)
}

/// Rings: how many threads can record, and how much each can hold before dcg drains.
const RINGS: u32 = 64;
const RING_BYTES: u32 = 4 << 20;

/// Run the session in process; `None` when no function could be hooked.
pub fn run(
    targets: &[Target],
    probes: &[Probe<'_>],
    calls: &mut Calls<'_>,
    args: &TraceOptions,
    out: &mut dyn Write,
    note: &mut dyn FnMut(&str),
) -> Result<Finished> {
    let mut notes = Vec::new();
    let planned = plan_funcs(targets, probes, &mut notes)?;
    for n in notes {
        note(&n);
    }
    // Plan index → probe index.
    let mut probe_of = Vec::new();
    let mut funcs = Vec::new();
    for (i, f) in planned.into_iter().enumerate() {
        if let Some(f) = f {
            probe_of.push(i);
            funcs.push(f);
        }
    }
    if funcs.is_empty() {
        note("nothing to trace in process");
        return Ok(Finished {
            exit: crate::EXIT_NO_MATCH,
            calls: None,
        });
    }
    let plan_targets: Vec<PlanTarget> = targets
        .iter()
        .map(|t| PlanTarget {
            build_id: t.build_id.clone(),
            path: t.path.display().to_string(),
        })
        .collect();
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() { dir } else { Path::new("/tmp") };
    for r in rings::remove_stale(dir) {
        note(&format!("removed stale {r}"));
    }
    let io = |e: dcg_inproc::InprocError| UtraceError::Io(std::io::Error::other(e.to_string()));
    let plan_path = rings::session_file(dir, "plan");
    let flags = if args.no_children {
        0
    } else {
        layout::PLAN_FOLLOW_FORKS
    };
    dcg_inproc::plan::write_plan(&plan_path, &plan_targets, &funcs, flags).map_err(io)?;
    let _plan_file = RemoveOnDrop(plan_path.clone());
    let mut rings = Rings::create(dir, RINGS, RING_BYTES).map_err(io)?;
    let recorder = recorder_path()
        .ok_or_else(|| UtraceError::Io(std::io::Error::other(format!("{RECORDER} not found"))))?;
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
    // Which fetches of each plan function are strings.
    let kinds =
        |ops: &[FetchOp]| -> Vec<bool> { ops.iter().map(|o| o.kind == FETCH_STRING).collect() };
    let entry_kinds: Vec<Vec<bool>> = funcs.iter().map(|f| kinds(&f.entry)).collect();
    let ret_kinds: Vec<Vec<bool>> = funcs.iter().map(|f| kinds(&f.ret)).collect();

    tracefs::arm_stop_handlers();
    let mut child = Some(Child::spawn_at_exec_with(&args.command, &env)?);
    if let Some(c) = child.as_mut() {
        c.resume()?;
    }
    let deadline = args
        .duration
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let mut batch = Vec::new();
    let mut objects_seen = 0;
    let mut feed =
        |rings: &mut Rings, calls: &mut Calls<'_>, out: &mut dyn Write| -> std::io::Result<bool> {
            for (_, path, bias) in rings.new_objects(&mut objects_seen) {
                calls.learn_file(&path, bias);
            }
            batch.clear();
            rings.drain(&mut batch);
            for r in &batch {
                let Some(&probe) = probe_of.get(r.func as usize) else {
                    continue;
                };
                let comm = rings.comm(r.ring);
                feed_record(calls, r, probe, &comm, &entry_kinds, &ret_kinds, out)?;
                if args.count.is_some_and(|n| calls.counts().top_level >= n) {
                    return Ok(true);
                }
            }
            Ok(false)
        };
    let stop = loop {
        if let Some(sig) = tracefs::stop_requested() {
            break Stop::Signal(sig);
        }
        let ended = child.as_mut().and_then(Child::poll).map(Stop::Ended);
        match feed(&mut rings, calls, out) {
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
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever is recorded by now is read; then the recorders write nothing more.
    rings.stop();
    if !matches!(stop, Stop::Count | Stop::OutputClosed) {
        match feed(&mut rings, calls, out) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
            _ => {}
        }
    }
    let exit = crate::end_of(stop, &mut child, args, note);
    // A command that was ended: what it recorded until then.
    let _ = feed(&mut rings, calls, out);
    crate::ignore_closed(calls.finish(out))?;
    crate::ignore_closed(out.flush())?;
    if rings.attached() == 0 {
        note(&format!(
            "the recorder hooked nothing: {} did not load it, or loaded none of the traced \
             binaries (--engine uprobe traces without it)",
            args.command.first().map_or("the command", String::as_str)
        ));
    }
    if rings.unhooked() > 0 {
        note(&format!(
            "{} function entries could not be patched in process and were not traced",
            rings.unhooked()
        ));
    }
    let lost = rings.lost();
    if lost > 0 {
        note(&format!(
            "LOST {lost} records (a thread's ring was full): some calls are missing or incomplete"
        ));
    }
    if rings.threads_without_ring() > 0 {
        note(&format!(
            "{} threads found no free ring (of {RINGS}) and were not traced",
            rings.threads_without_ring()
        ));
    }
    Ok(Finished {
        exit,
        calls: calls.take_collected(),
    })
}

/// One record into the call pipeline.
fn feed_record(
    calls: &mut Calls<'_>,
    r: &Record,
    probe: usize,
    comm: &str,
    entry_kinds: &[Vec<bool>],
    ret_kinds: &[Vec<bool>],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let m = Meta {
        comm,
        tid: r.tid,
        cpu: u32::from(r.cpu),
        ts: r.ts,
        ip: None,
    };
    let f = r.func as usize;
    let decode = |kinds: &[bool]| -> Vec<Value> {
        rings::values(&r.payload, kinds.iter().copied())
            .unwrap_or_default()
            .into_iter()
            .map(|v| match v {
                RawValue::Word(w) => Value::Num(w),
                RawValue::Str(s) => Value::Str(String::from_utf8_lossy(&s).into_owned()),
                RawValue::Fault => Value::Fault,
            })
            .collect()
    };
    match r.kind {
        layout::REC_ENTRY => calls.entry(&m, probe, &decode(&entry_kinds[f]), out),
        layout::REC_EXIT => calls.ret(&m, probe, &decode(&ret_kinds[f]), out),
        layout::REC_UNWIND => calls.unwound(&m, probe, out),
        _ => Ok(()),
    }
}

/// A file removed when the session ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
