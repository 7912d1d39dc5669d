//! Hardening of live user-space tracing (uprobes on the host):
//!
//! - kill test: `DCG_KILL_RUNS` (default 50) traces of a program that never ends, each
//!   interrupted after a random 50–1500 ms by SIGINT, SIGTERM or SIGKILL (in turn). After
//!   SIGINT/SIGTERM nothing of the session may remain in tracefs; after SIGKILL the next
//!   `dcg trace` must remove the stale instance and events, and say so.
//! - concurrency: 4 `dcg trace` sessions at once, each on a different function of its own
//!   run of the same program; each output holds exactly its own calls, none lost.
//!
//! - signals ignored at start: SIGINT (a script's background job) still stops a trace at
//!   any moment; SIGHUP ignored by `nohup` stays ignored.
//!
//! Needs root, uprobe events and gcc; skipped (with the reason printed) otherwise.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const TRACEFS: &str = "/sys/kernel/tracing";
const FUNCS: [&str; 4] = ["hk_alpha", "hk_beta", "hk_gamma", "hk_delta"];

/// The tests remove each other's stale sessions only when their dcg is gone, but a
/// SIGKILLed session is stale at once: run the tests of this file one at a time.
static ALONE: Mutex<()> = Mutex::new(());

/// Why these tests cannot run here, if they cannot.
fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    let _ = dcg_live::tracefs::mount_point();
    if !Path::new(TRACEFS).join("uprobe_events").exists() {
        return Some(format!("{TRACEFS}/uprobe_events is missing"));
    }
    if Command::new("gcc").arg("--version").output().is_err() {
        return Some("gcc is missing".into());
    }
    None
}

macro_rules! require_uprobes {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
        let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    };
}

/// Compile tests/hardening/spin.c into `dir`.
fn spin(dir: &Path) -> PathBuf {
    let out = dir.join("spin");
    let src = dcg_tests::repo_root().join("tests/hardening/spin.c");
    let st = Command::new("gcc")
        .args(["-O0", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("running gcc");
    assert!(st.success(), "gcc failed for {}", src.display());
    out
}

/// What tracefs still holds of dcg session `pid`: its instance, its probe definitions.
fn leftovers(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let inst = Path::new(TRACEFS).join(format!("instances/dcg-{pid}"));
    if inst.exists() {
        found.push(inst.display().to_string());
    }
    let group = format!(":dcg_{pid}/");
    for file in ["uprobe_events", "dynamic_events"] {
        let events = std::fs::read_to_string(Path::new(TRACEFS).join(file)).unwrap_or_default();
        found.extend(
            events
                .lines()
                .filter(|l| l.contains(&group))
                .map(|l| format!("{file}: {l}")),
        );
    }
    if Path::new(TRACEFS)
        .join(format!("events/dcg_{pid}"))
        .exists()
    {
        found.push(format!("{TRACEFS}/events/dcg_{pid}"));
    }
    found
}

/// Pids of the processes running `exe`.
fn running(exe: &Path) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe))
        .collect()
}

/// Whether a dcg process other than `ours` runs (e.g. another test suite at the same
/// time): it removes stale sessions too, so ours may be removed by it, not by our next run.
fn foreign_dcg(ours: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != ours)
        .any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "dcg")
        })
}

/// Whether dcg's `stderr` reports removing (some of) the remains of session `pid`.
fn reported(stderr: &str, pid: u32) -> bool {
    stderr.contains(&format!("removed stale instance dcg-{pid}\n"))
        || stderr.contains(&format!("removed stale event dcg_{pid}/"))
}

/// SIGKILL every process running `exe` (they may be stopped) and wait until they are gone.
fn kill_all(exe: &Path) -> Vec<i32> {
    let pids = running(exe);
    for &p in &pids {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
    let end = Instant::now() + Duration::from_secs(10);
    while !running(exe).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    pids
}

/// Reads a pipe to the end in a thread (a full pipe must not block dcg).
fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn dcg_trace(args: &[&str]) -> Command {
    let mut cmd = Command::new(dcg_tests::dcg_bin());
    cmd.arg("trace")
        .args(args)
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Wait for `child` for at most `secs`; SIGKILL it (and fail) after that.
fn wait_or_fail(child: &mut Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: dcg {} still running after {secs} s", child.id());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// xorshift64*: reproducible random delays without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number")),
        Err(_) => default,
    }
}

#[test]
fn interrupted_traces_leave_nothing_behind() {
    require_uprobes!();
    let runs = env_u64("DCG_KILL_RUNS", 50);
    let seed = env_u64("DCG_KILL_SEED", 0x5eed_dc91_2345);
    eprintln!("{runs} runs, DCG_KILL_SEED={seed:#x}");
    let dir = tempfile::tempdir().unwrap();
    let bin = spin(dir.path());
    let b = bin.to_str().unwrap();
    let func = format!("{b}:hk_*");
    let signals = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGKILL];
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    // SIGKILLed sessions not removed yet; whether another dcg ran since.
    let mut pending_stale: Vec<(u32, bool)> = Vec::new();
    let mut stale_removed = 0;
    let mut removed_by_others = 0;
    let mut stats = [0u32; 3];
    let mut events_seen = 0usize;
    for run in 0..runs {
        let sig = signals[run as usize % signals.len()];
        let delay = rng.range(50, 1500);
        let mut child = dcg_trace(&["--show-retvals", "--func", &func, "--", b])
            .spawn()
            .expect("running dcg");
        let dpid = child.id();
        let out = drain(child.stdout.take().unwrap());
        let err = drain(child.stderr.take().unwrap());
        std::thread::sleep(Duration::from_millis(delay));
        if foreign_dcg(dpid) {
            pending_stale.iter_mut().for_each(|p| p.1 = true);
        }
        let what = format!("run {run}: {sig} after {delay} ms");
        kill(Pid::from_raw(dpid as i32), sig).unwrap();
        let status = wait_or_fail(&mut child, 60, &what);
        // The command dcg started must end with it; after a SIGKILL it is orphaned (maybe
        // still stopped). Either way it holds dcg's stdout and stderr: end it before
        // reading them to the end.
        let orphans = kill_all(&bin);
        let stdout = out.join().unwrap();
        let stderr = err.join().unwrap();
        if foreign_dcg(dpid) {
            pending_stale.iter_mut().for_each(|p| p.1 = true);
        }
        events_seen += stdout.lines().filter(|l| l.contains("hk_")).count();
        // A session that got as far as its start removes the remains of SIGKILLed ones,
        // and says so (one interrupted earlier, while reading DWARF, may not have).
        pending_stale.retain_mut(|(stale, foreign)| {
            let left = leftovers(*stale);
            if !reported(&stderr, *stale) {
                if left.is_empty() {
                    // Gone, but not by this run: only another dcg may have done that.
                    assert!(
                        *foreign,
                        "{what}: SIGKILLed dcg {stale}'s session vanished, unreported"
                    );
                    removed_by_others += 1;
                    return false;
                }
                return true;
            }
            assert!(
                left.is_empty(),
                "{what}: SIGKILLed dcg {stale} still left: {left:#?}"
            );
            stale_removed += 1;
            false
        });
        if sig == Signal::SIGKILL {
            let left = leftovers(dpid);
            eprintln!("{what}: SIGKILLed dcg {dpid} left {} items", left.len());
            if !left.is_empty() {
                // (Else it was killed before it created anything.)
                pending_stale.push((dpid, false));
            }
            stats[2] += 1;
            continue;
        }
        let left = leftovers(dpid);
        assert!(
            left.is_empty(),
            "{what}: dcg {dpid} left: {left:#?}\n{stderr}"
        );
        assert!(
            orphans.is_empty(),
            "{what}: the traced command outlived dcg: {orphans:?}\n{stderr}"
        );
        // A clean stop: exit 0, or the signal's default action when it came before dcg
        // installed its handlers (nothing was created then).
        assert!(
            status.success() || status.code().is_none(),
            "{what}: {status}\n{stderr}"
        );
        assert!(!stderr.contains("cleanup:"), "{what}: {stderr}");
        assert!(!stderr.contains("LOST"), "{what}: {stderr}");
        stats[run as usize % signals.len()] += 1;
    }
    if !pending_stale.is_empty() {
        // The last runs were SIGKILLed: one more (short) session cleans up after them.
        let out = dcg_trace(&["--count", "1", "--func", &func, "--", b])
            .output()
            .expect("running dcg");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let foreign = foreign_dcg(0);
        for (stale, seen) in pending_stale {
            assert!(leftovers(stale).is_empty(), "{:#?}", leftovers(stale));
            if reported(&stderr, stale) {
                stale_removed += 1;
            } else if seen || foreign {
                removed_by_others += 1;
            } else {
                panic!("dcg-{stale} was not reported as removed:\n{stderr}")
            }
        }
        kill_all(&bin);
    }
    eprintln!(
        "{runs} runs (SIGINT {}, SIGTERM {}, SIGKILL {}; {stale_removed} stale sessions \
         removed by the next run, {removed_by_others} by another dcg), {events_seen} calls \
         shown, {:.1} s",
        stats[0],
        stats[1],
        stats[2],
        start.elapsed().as_secs_f64()
    );
}

type Drained = std::thread::JoinHandle<String>;

/// `dcg trace --func FUNC -- PROG` started with `sigs` ignored, as a shell does for
/// background jobs (SIGINT) and `nohup` for SIGHUP: the child, its pid, and its stdout
/// and stderr being drained.
fn trace_ignoring(
    func: &str,
    prog: &str,
    sigs: &'static [Signal],
) -> (Child, u32, Drained, Drained) {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet};
    use std::os::unix::process::CommandExt;
    let mut cmd = dcg_trace(&["--func", func, "--", prog]);
    // SAFETY: sigaction is async-signal-safe, as required between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let ign = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
            for &s in sigs {
                sigaction(s, &ign).map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("running dcg");
    let pid = child.id();
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    (child, pid, out, err)
}

/// Until `pid` catches `sig` (its handler is set), for at most 30 s.
fn wait_caught(pid: u32, sig: Signal) {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            return;
        };
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0);
        if caught & (1 << (sig as u32 - 1)) != 0 {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A script's background job inherits SIGINT ignored: a SIGINT must still stop the trace
/// at any moment (found by the kernel kill test, where `dcg trace ... &` in the guest ran
/// on forever after an early SIGINT). The kernel drops a SIGINT sent before dcg's main()
/// sets its handler, so each one goes out once dcg catches it; the earliest ones land
/// before dcg touched tracefs and must end it by the signal's default action (before the
/// fix, the handler came only with the first tracefs change). And a `nohup`ed trace keeps
/// running through SIGHUP.
#[test]
fn inherited_ignored_signals() {
    use std::os::unix::process::ExitStatusExt;
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = spin(dir.path());
    let b = bin.to_str().unwrap();
    let func = format!("{b}:hk_alpha");
    let mut died_by_signal = 0;
    for delay in [0u64, 0, 0, 2, 10, 40, 150, 600] {
        let (mut child, dpid, out, err) = trace_ignoring(&func, b, &[Signal::SIGINT]);
        std::thread::sleep(Duration::from_millis(delay));
        wait_caught(dpid, Signal::SIGINT);
        kill(Pid::from_raw(dpid as i32), Signal::SIGINT).unwrap();
        let what = format!("SIGINT (ignored at start) after {delay} ms");
        let status = wait_or_fail(&mut child, 60, &what);
        let orphans = kill_all(&bin);
        let _ = out.join().unwrap();
        let stderr = err.join().unwrap();
        assert!(orphans.is_empty(), "{what}: command outlived dcg\n{stderr}");
        assert!(leftovers(dpid).is_empty(), "{what}: {:?}", leftovers(dpid));
        // Stopped cleanly (0) or, before it touched tracefs, by the signal itself.
        if status.signal() == Some(Signal::SIGINT as i32) {
            died_by_signal += 1;
        } else {
            assert!(status.success(), "{what}: {status}\n{stderr}");
        }
    }
    assert!(
        died_by_signal > 0,
        "no SIGINT landed before dcg touched tracefs: the handler comes too late"
    );

    // nohup: SIGHUP ignored at start stays ignored; SIGTERM still stops the trace.
    let (mut child, dpid, out, err) = trace_ignoring(&func, b, &[Signal::SIGHUP]);
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end && leftovers(dpid).is_empty() {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(dpid as i32), Signal::SIGHUP).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "a nohup'ed dcg stopped on SIGHUP"
    );
    kill(Pid::from_raw(dpid as i32), Signal::SIGTERM).unwrap();
    let status = wait_or_fail(&mut child, 60, "SIGTERM after SIGHUP");
    kill_all(&bin);
    let stdout = out.join().unwrap();
    let stderr = err.join().unwrap();
    assert!(status.success(), "{status}\n{stderr}");
    assert!(stdout.contains("hk_alpha"), "{stdout}\n{stderr}");
    assert!(leftovers(dpid).is_empty(), "{:?}", leftovers(dpid));
}

#[test]
fn four_sessions_see_only_their_own_calls() {
    require_uprobes!();
    const CALLS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let bin = spin(dir.path());
    let b = bin.to_str().unwrap();
    let calls = CALLS.to_string();
    let start = Instant::now();
    let sessions: Vec<_> = FUNCS
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let func = format!("{b}:{f}");
            let saved = dir.path().join(format!("{f}.jsonl"));
            let mut cmd = if i % 2 == 0 {
                // JSON on stdout.
                dcg_trace(&["--json", "--args", "--show-retvals", "--func", &func])
            } else {
                // Text on stdout, records saved to a file.
                let mut c = dcg_trace(&["--args", "--show-retvals", "--func", &func]);
                c.arg("--output").arg(&saved);
                c
            };
            cmd.args(["--", b, &calls, "1000"]);
            let mut child = cmd.spawn().expect("running dcg");
            let out = drain(child.stdout.take().unwrap());
            let err = drain(child.stderr.take().unwrap());
            (*f, i % 2 == 0, saved, child, out, err)
        })
        .collect();
    let mut pids = Vec::new();
    for (f, json, saved, mut child, out, err) in sessions {
        let status = wait_or_fail(&mut child, 120, f);
        let stdout = out.join().unwrap();
        let stderr = err.join().unwrap();
        pids.push(child.id());
        assert!(status.success(), "{f}: {status}\n{stderr}");
        assert!(!stderr.contains("LOST"), "{f}: {stderr}");
        assert!(!stderr.to_lowercase().contains("lost"), "{f}: {stderr}");
        assert!(!stderr.contains("could not be parsed"), "{f}: {stderr}");
        assert!(!stderr.contains("cleanup:"), "{f}: {stderr}");
        let records = if json {
            stdout
        } else {
            // The text output: one line per call, all of this session's function.
            let lines: Vec<&str> = stdout.lines().filter(|l| l.contains('(')).collect();
            assert_eq!(lines.len(), CALLS, "{f}: text output:\n{stdout}");
            for l in &lines {
                assert!(l.contains(&format!("{f}(")), "{f}: foreign call: {l}");
                assert!(!l.contains("no return"), "{f}: {l}");
            }
            std::fs::read_to_string(&saved).unwrap_or_else(|e| panic!("{f}: {e}"))
        };
        let mut n = 0;
        let mut seen_args = Vec::new();
        for line in records.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{f}: {e}: {line}"));
            let Some(func) = v.get("func").and_then(|x| x.as_str()) else {
                // A header record (source, db), not a call.
                continue;
            };
            assert_eq!(func, f, "{f}: foreign call {line}");
            n += 1;
            let first = v["args"][0]["value"].as_str().unwrap_or_default();
            seen_args.push(
                first
                    .parse::<i64>()
                    .unwrap_or_else(|_| panic!("{f}: first argument of {line}")),
            );
        }
        assert_eq!(n, CALLS, "{f}: {n} calls recorded of {CALLS}");
        // Calls in order, none twice: the first argument is the iteration.
        let expected: Vec<i64> = (0..CALLS as i64).collect();
        assert_eq!(seen_args, expected, "{f}: first arguments");
    }
    for p in pids {
        let left = leftovers(p);
        assert!(left.is_empty(), "dcg {p} left: {left:#?}");
    }
    assert!(running(&bin).is_empty());
    eprintln!(
        "4 sessions × {CALLS} calls in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// Inputs the fuzz targets (fuzz/) crashed on, kept in tests/data/fuzz-regressions/ as
/// `<target>-<what>`: each must now give an error (or a valid result), not a panic or an
/// allocation of what a corrupt header claims.
#[test]
fn fuzz_regressions() {
    let dir = dcg_tests::repo_root().join("tests/data/fuzz-regressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let target = name.split_once('-').map_or(name.as_str(), |(t, _)| t);
        match target {
            "dwarfscan_elf" => {
                let opts = dwarfscan::Options::default();
                match dwarfscan::scan_elf_bytes("fuzz.o", &bytes, &opts) {
                    Ok(_) if name.ends_with("-zlib-size-oom") => {
                        panic!("{name}: scanned without an error")
                    }
                    Ok(mut result) => {
                        if let Ok(db) = result.to_bytes() {
                            let db =
                                sigdb::Db::from_bytes(db).expect("dwarfscan wrote an invalid db");
                            db.check_frames().expect("dwarfscan wrote an invalid frame");
                        }
                    }
                    Err(e) => {
                        if name.ends_with("-zlib-size-oom") {
                            // A .debug_* section whose compression header claims 512 GiB.
                            assert!(
                                e.to_string().contains("corrupt compression header"),
                                "{name}: {e}"
                            );
                        }
                    }
                }
            }
            "sigdb_open" => {
                let _ = sigdb::Db::from_bytes(bytes);
            }
            "fgraph_line" => {
                for line in String::from_utf8_lossy(&bytes).split('\n') {
                    let _ = dcg_fgraph::parse_line(line);
                    let _ = dcg_fgraph::parse_event_line(line);
                }
            }
            other => panic!("{name}: unknown fuzz target {other}"),
        }
    }
}
