//! `dcg trace --stack` in user space: `tests/inproc/stacks.c` (known call paths into
//! `target`: two callers, one through an intermediate, recursion, a tail call, an
//! inlined caller, a stack deeper than dcg copies, a thread) at -O2 without frame
//! pointers where the build allows it, in every build the in-process recorder hooks, and
//! with the uprobe engine (the plain build). Each top-level call's stack must be exactly
//! the path the program took, and every frame's return address must follow a `call` of
//! the frame below it in the binary's own code (objdump, the oracle). Needs root, gcc and
//! objdump; skipped otherwise.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use dcg_calls::saved_format::{CallRecord, StackFrame};
use dcg_tests::uprobe_skip_reason as skip_reason;

macro_rules! require {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
    };
}

/// One test at a time: the uprobe runs read a process's maps when dcg decodes its first
/// event, and a test tracing thousands of calls beside another delays that past the end
/// of the other's short program.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The builds the recorder hooks; frame pointers are left out where gcc allows (not
/// with `-pg`).
const BUILDS: [&[&str]; 4] = [
    &["-pg"],
    &["-pg", "-mfentry"],
    &["-fpatchable-function-entry=5", "-fomit-frame-pointer"],
    &["-fomit-frame-pointer"],
];

fn build(dir: &Path, opts: &[&str]) -> PathBuf {
    let out = dir.join(format!("stacks{}", opts.join("").replace('=', "")));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("inproc/stacks.c");
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-pthread"])
        .args(opts)
        .arg("-o")
        .arg(&out)
        .arg(src)
        .status()
        .expect("running gcc");
    assert!(st.success(), "gcc {opts:?} failed for stacks.c");
    out
}

/// `dcg ARGS`, which must succeed.
fn dcg(args: &[&str]) -> std::process::Output {
    let out = Command::new(dcg_tests::dcg_bin())
        .args(args)
        .output()
        .expect("running dcg");
    assert!(
        out.status.success(),
        "dcg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The calls of `dcg trace --engine ENGINE --stack --json --func BIN:target -- BIN`. With
/// uprobes the program lingers a second: dcg reads a process's objects from its maps when
/// it decodes its first event, up to a pipe read later (100 ms), and this program is
/// gone by then; a stack then unwinds through the binary alone, cut where it leaves it
/// (`stacks_leave_programs_as_they_were` runs programs that do not wait).
fn traced(engine: &str, bin: &Path) -> Vec<CallRecord> {
    let target = format!("{}:target", bin.display());
    let args = [
        "trace", "--engine", engine, "--stack", "--json", "--func", &target, "--",
    ];
    let linger: &[&str] = if engine == "uprobe" { &["linger"] } else { &[] };
    let out = dcg(&[&args[..], &[path(bin)], linger].concat());
    dcg_tests::json_records(&String::from_utf8_lossy(&out.stdout))
}

/// From objdump: the function each `call` of the binary calls, by the address the call
/// returns to; and each function's start.
fn calls_of(bin: &Path) -> (HashMap<u64, String>, HashMap<String, u64>) {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .expect("running objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut calls, mut starts) = (HashMap::new(), HashMap::new());
    let mut pending: Option<String> = None;
    for line in text.lines() {
        if let Some((addr, name)) = line.split_once(" <") {
            if let (Ok(a), Some(name)) = (
                u64::from_str_radix(addr.trim(), 16),
                name.strip_suffix(">:"),
            ) {
                starts.insert(name.to_string(), a);
                continue;
            }
        }
        let Some((addr, insn)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if let Some(callee) = pending.take() {
            calls.insert(addr, callee);
        }
        if insn.starts_with("call") {
            pending = insn
                .split_once('<')
                .and_then(|(_, r)| r.strip_suffix('>'))
                .map(|c| c.split('+').next().unwrap_or(c).to_string());
        }
    }
    (calls, starts)
}

/// A frame as `func`, `func*` (inlined) or `func!` (cut short).
fn short(f: &StackFrame) -> String {
    format!(
        "{}{}{}",
        f.func,
        if f.inline { "*" } else { "" },
        if f.cut { "!" } else { "" }
    )
}

#[test]
fn user_stacks_are_the_paths_the_program_took() {
    require!();
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let runs = BUILDS
        .iter()
        .map(|b| ("inproc", *b))
        .chain([("uprobe", &["-fomit-frame-pointer"][..])]);
    for (engine, opts) in runs {
        // The uprobe engine copies 2 KiB of stack, the recorder 16 KiB: the deep
        // recursion (528 bytes a frame) is cut after 3 frames or about 30.
        let deep_frames = if engine == "uprobe" { 2..5 } else { 20..41 };
        let bin = build(dir.path(), opts);
        let (calls, starts) = calls_of(&bin);
        let records = traced(engine, &bin);
        let tops: Vec<&CallRecord> = records.iter().filter(|r| r.parent.is_none()).collect();
        assert_eq!(tops.len(), 7, "{opts:?}: target's top-level calls");
        let mut paths = Vec::new();
        for r in &tops {
            assert_eq!(r.func, "target");
            let stack = r
                .stack
                .as_deref()
                .unwrap_or_else(|| panic!("{opts:?}: no stack"));
            // Every frame of the program: its return address follows a call of the
            // frame below it (target itself for the innermost; `tail` jumps to target).
            let mut below = "target";
            for f in stack
                .iter()
                .filter(|f| f.module.as_deref() == Some(bin_name(&bin)))
            {
                if f.inline || f.func == "_start" {
                    continue;
                }
                let ra = starts[&f.func] + f.offset.expect("offset of a real frame");
                let called = calls.get(&ra).map(String::as_str);
                let ok = called == Some(below) || (called == Some("tail") && below == "target");
                assert!(
                    ok,
                    "{opts:?}: {} returns after a call of {called:?}, not {below}",
                    f.label()
                );
                below = &f.func;
            }
            // The program's part, up to main (or the thread's function).
            let end = stack
                .iter()
                .position(|f| f.func == "main" || f.func == "thread_main")
                .map_or(stack.len(), |i| i + 1);
            let path: Vec<String> = stack[..end].iter().map(short).collect();
            // Above it: the C library, then `_start` (the main thread) and nothing cut.
            let rest = &stack[end..];
            if !path.iter().any(|f| f.starts_with("deep")) {
                assert!(!rest.is_empty(), "{opts:?}: nothing above {path:?}");
                assert!(rest.iter().all(|f| !f.cut), "{opts:?}: {rest:?}");
                let last = rest.last().unwrap();
                let libc = rest
                    .iter()
                    .filter(|f| f.module.as_deref() == Some("libc.so.6"));
                assert!(libc.count() >= 1, "{opts:?}: {rest:?}");
                if path.last().map(String::as_str) == Some("main") {
                    assert_eq!(last.func, "_start", "{opts:?}: {rest:?}");
                }
            }
            paths.push(path.join(" "));
        }
        // The deep recursion: dcg's copy ends first; its outermost frame says so.
        let deep = paths
            .iter()
            .position(|p| p.starts_with("deep"))
            .expect("deep");
        let frames: Vec<&str> = paths[deep].split(' ').collect();
        assert!(
            deep_frames.contains(&frames.len()) && frames.last().unwrap().ends_with('!'),
            "{engine} {opts:?}: {frames:?}"
        );
        assert!(
            frames.iter().all(|f| f.starts_with("deep")),
            "{opts:?}: {frames:?}"
        );
        paths.remove(deep);
        paths.sort();
        let mut want = vec![
            "direct main",
            "middle via_middle main",
            "recurse recurse recurse recurse main",
            "main",
            "helper* with_inline main",
            "thread_main",
        ];
        want.sort();
        assert_eq!(paths, want, "{engine} {opts:?}");
    }
}

fn bin_name(bin: &Path) -> &str {
    bin.file_name().unwrap().to_str().unwrap()
}

#[test]
fn saved_stacks_reach_the_report() {
    require!();
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), &["-fomit-frame-pointer"]);
    let saved = dir.path().join("calls.jsonl");
    let target = format!("{}:target", bin.display());
    let args = [
        "trace",
        "--stack",
        "--output",
        path(&saved),
        "--func",
        &target,
        "--",
    ];
    let out = dcg(&[&args[..], &[path(&bin)]].concat());
    // The text shows each stack above its call, outermost first.
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let direct = lines
        .iter()
        .position(|l| l.contains("direct+0x"))
        .expect("direct's frame in the text");
    assert!(lines[direct - 1].contains("main+0x"), "{text}");
    let report = dcg(&["report", "--format", "json", path(&saved)]);
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).expect("report JSON");
    let stacks = &v["stacks"][0];
    assert!(
        stacks["function"]
            .as_str()
            .is_some_and(|f| f.starts_with("target ")),
        "{v}"
    );
    // Seven calls, seven different paths.
    assert_eq!(stacks["calls"], 7, "{stacks}");
    assert_eq!(
        stacks["stacks"].as_array().map(Vec::len),
        Some(7),
        "{stacks}"
    );
}

/// The call catcher: `-p PID` attaches to a running program (the uprobe engine) and
/// `--stack --count 2` prints the stacks of its next two calls of `target` (started
/// with `hold` so that it waits on stdin until dcg has attached).
#[test]
fn stacks_of_a_running_process() {
    require!();
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), &["-fomit-frame-pointer"]);
    let mut prog = Command::new(&bin)
        .arg("hold")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starting the program");
    let target = format!("{}:target", bin.display());
    let pid = prog.id().to_string();
    let dcg = Command::new(dcg_tests::dcg_bin())
        .args([
            "trace", "--stack", "--json", "--count", "2", "-p", &pid, "--func", &target,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running dcg");
    // Let dcg attach, then let the program run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut attached = false;
    while !attached && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let events = std::fs::read_to_string("/sys/kernel/tracing/uprobe_events")
            .or_else(|_| std::fs::read_to_string("/sys/kernel/debug/tracing/uprobe_events"))
            .unwrap_or_default();
        attached = events.contains(path(&bin));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(prog.stdin.take());
    let out = dcg.wait_with_output().expect("waiting for dcg");
    let _ = prog.wait();
    assert!(attached, "dcg never placed its probes");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = dcg_tests::json_records(&String::from_utf8_lossy(&out.stdout));
    let stacks: Vec<Vec<String>> = records
        .iter()
        .filter(|r| r.parent.is_none())
        .map(|r| r.stack.iter().flatten().map(|f| f.func.clone()).collect())
        .collect();
    assert_eq!(stacks.len(), 2, "{stacks:?}");
    assert_eq!(stacks[0][..2], ["direct", "main"], "{stacks:?}");
    assert_eq!(
        stacks[1][..3],
        ["middle", "via_middle", "main"],
        "{stacks:?}"
    );
}

/// `--stack` changes nothing the traced programs compute: `tests/inproc/real.c`
/// (threads, recursion, `longjmp` through traced frames, a signal handler calling traced
/// code, `fork` and `exec`) and `throw.cc` (C++ exceptions through traced frames) print
/// what they print untraced, in process (and `real.c` with uprobes), every top-level
/// call with its stack.
#[test]
fn stacks_leave_programs_as_they_were() {
    require!();
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let real = dcg_tests::gcc(dir.path(), "inproc/real.c", "real", &["-O2", "-pthread"]);
    let throw = dir.path().join("throw");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("inproc/throw.cc");
    let st = Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&throw)
        .arg(src)
        .status()
        .expect("running g++");
    assert!(st.success(), "g++ failed for throw.cc");
    let runs: [(&Path, &str, &[&str]); 3] = [
        (
            &real,
            "inproc",
            &["work", "fib", "jumper", "dive", "after_jump", "in_handler"],
        ),
        (
            &throw,
            "inproc",
            &["catcher", "rethrower", "middle", "thrower"],
        ),
        // Uprobes: not throw.cc, whose exceptions cannot unwind through the kernel's
        // uretprobe trampolines, with or without --stack.
        (
            &real,
            "uprobe",
            &["work", "fib", "jumper", "dive", "after_jump", "in_handler"],
        ),
    ];
    for (bin, engine, funcs) in runs {
        let untraced = Command::new(bin).output().expect("running it untraced");
        let mut args = vec!["trace", "--engine", engine, "--stack", "--json"];
        let specs: Vec<String> = funcs.iter().map(|f| format!("{}:{f}", path(bin))).collect();
        for s in &specs {
            args.extend(["--func", s.as_str()]);
        }
        args.extend(["--", path(bin)]);
        let out = dcg(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        let program: Vec<&str> = text.lines().filter(|l| !l.starts_with('{')).collect();
        let plain = String::from_utf8_lossy(&untraced.stdout);
        assert_eq!(
            program,
            plain.lines().collect::<Vec<_>>(),
            "{bin:?} {engine}"
        );
        let tops: Vec<CallRecord> = dcg_tests::json_records(&text)
            .into_iter()
            .filter(|r| r.parent.is_none())
            .collect();
        assert!(!tops.is_empty(), "{bin:?} {engine}");
        assert!(
            tops.iter()
                .all(|r| r.stack.as_ref().is_some_and(|s| !s.is_empty())),
            "{bin:?} {engine}: a top-level call without its stack"
        );
    }
}
