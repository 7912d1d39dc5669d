//! `dcg trace --filter EXPR`, `--min-duration D` and `--count N` over them, live, in
//! both user-space engines (uprobes and the in-process recorder): `tests/uprobe/values.c`
//! (each function called with known values, at -O2) traced and each filter's
//! trees checked against the calls the program makes. Refused filters: a caret under the
//! token and no session started. Needs root, gcc and uprobe events; skipped otherwise.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dcg_calls::saved_format::CallRecord;
use dcg_tests::uprobe_skip_reason as skip_reason;

macro_rules! require {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
    };
}

/// `tests/uprobe/values.c` built at -O2 with -g into `dir`.
fn values(dir: &Path) -> PathBuf {
    dcg_tests::gcc(dir, "uprobe/values.c", "values", &["-O2"])
}

const ENGINES: [&str; 2] = ["uprobe", "inproc"];

/// `dcg trace --engine ENGINE --json ARGS -- BIN`.
fn trace(engine: &str, bin: &Path, args: &[&str]) -> Output {
    Command::new(dcg_tests::dcg_bin())
        .args(["trace", "--engine", engine, "--json"])
        .args(args)
        .arg("--")
        .arg(bin)
        .output()
        .expect("running dcg")
}

/// The top-level calls of a trace's JSON records (the program's output left out).
fn top_level(out: &Output) -> Vec<CallRecord> {
    let text = String::from_utf8_lossy(&out.stdout);
    let records = dcg_tests::json_records(&text);
    let ids: Vec<u64> = records.iter().map(|r| r.id).collect();
    records
        .into_iter()
        .filter(|r| r.parent.is_none_or(|p| !ids.contains(&p)))
        .collect()
}

/// Each top-level call as `func(arg=value, ...) = ret`.
fn shown(out: &Output) -> Vec<String> {
    top_level(out)
        .iter()
        .map(|r| {
            format!(
                "{}({}) = {}",
                r.func,
                dcg_tests::args_text(r),
                r.ret.as_deref().unwrap_or("-")
            )
        })
        .collect()
}

fn func(bin: &Path, pattern: &str) -> String {
    format!("{}:{pattern}", bin.display())
}

#[test]
fn filters_keep_exactly_the_matching_trees() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = values(dir.path());
    for engine in ENGINES {
        let run = |pattern: &str, extra: &[&str]| {
            let f = func(&bin, pattern);
            let mut args = vec!["--args", "--show-retvals", "--func", f.as_str()];
            args.extend_from_slice(extra);
            let out = trace(engine, &bin, &args);
            assert!(
                out.status.success(),
                "{engine} {extra:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            shown(&out)
        };
        // An int parameter (check_arg(-5) from main, check_arg(-7) from outer(3)'s
        // inner; check_arg(7) and check_arg(2) are left out).
        assert_eq!(
            run("check_arg", &["--filter", "x < 0"]),
            ["check_arg(x=-5) = -22", "check_arg(x=-7) = -22"],
            "{engine}"
        );
        assert_eq!(
            run("check_arg", &["--filter", "x == 2"]),
            ["check_arg(x=2) = 2"],
            "{engine}"
        );
        // The return value by its errno name.
        assert_eq!(
            run("check_arg", &["--errno", "--filter", "ret == -EINVAL"]),
            ["check_arg(x=-5) = -EINVAL", "check_arg(x=-7) = -EINVAL"],
            "{engine}"
        );
        // An enumerator.
        assert_eq!(
            run("pick", &["--filter", "c == GREEN"]),
            ["pick(c=GREEN) = GREEN"],
            "{engine}"
        );
        // A string, by a glob; NULL.
        assert_eq!(
            run("greet", &["--filter", "name ~ \"w*\""]),
            ["greet(name=\"world\", len=5) = \"world\""],
            "{engine}"
        );
        assert_eq!(
            run("greet", &["--filter", "name == NULL"]),
            ["greet(name=NULL, len=0) = NULL"],
            "{engine}"
        );
        // Two filters: both must hold (is_even(3) and is_even(4) are called from main).
        assert_eq!(
            run("is_even", &["--filter", "n > 2", "--filter", "ret == true"]),
            ["is_even(n=4) = true"],
            "{engine}"
        );
        // `FUNC: EXPR`: the trees where check_arg got a positive x — check_arg(7) from
        // main, and outer(12), whose inner calls check_arg(2) (outer(3)'s gets -7).
        let check_arg = func(&bin, "check_arg");
        let kept = run(
            "outer",
            &["--func", &check_arg, "--filter", "check_arg: x > 0"],
        );
        assert_eq!(
            kept,
            ["check_arg(x=7) = 7", "outer(x=12) = 2"],
            "{engine}: {kept:?}"
        );
        // What a filter reads is captured and shown, as --args and --show-retvals would.
        let f = func(&bin, "check_arg");
        let out = trace(
            engine,
            &bin,
            &["--func", &f, "--filter", "ret < 0 && x == -5"],
        );
        assert!(out.status.success(), "{engine}");
        assert_eq!(shown(&out), ["check_arg(x=-5) = -22"], "{engine}");
        // A duration: nothing here takes a second.
        assert!(run("*", &["--min-duration", "1s"]).is_empty(), "{engine}");
        assert_eq!(
            run("pick", &["--filter", "duration < 1s"]).len(),
            2,
            "{engine}"
        );
    }
}

/// A filter on a top-level call's arguments is decided at its entry by the in-process
/// recorder: outer(3) is rejected there, and inner(3) under it is not recorded either
/// (not counted: only top-level calls are tested); outer(12) and its inner are kept. The
/// uprobe engine records both trees and drops one when decoding: the same trees shown.
#[test]
fn the_recorder_rejects_at_entry() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = values(dir.path());
    for engine in ENGINES {
        let (outer, inner) = (func(&bin, "outer"), func(&bin, "inner"));
        let out = trace(
            engine,
            &bin,
            &[
                "--args", "--func", &outer, "--func", &inner, "--filter", "x == 12",
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{engine}: {err}");
        let text = String::from_utf8_lossy(&out.stdout);
        let records = dcg_tests::json_records(&text);
        let mut calls: Vec<String> = records
            .iter()
            .map(|r| format!("{}({})", r.func, dcg_tests::args_text(r)))
            .collect();
        calls.sort();
        assert_eq!(calls, ["inner(x=12)", "outer(x=12)"], "{engine}");
        let notice = "1 top-level call rejected at entry by --filter";
        assert_eq!(err.contains(notice), engine == "inproc", "{engine}: {err}");
    }
}

/// `--count N` with a filter counts the trees shown: the first matching tree of many.
#[test]
fn count_counts_the_trees_shown() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = values(dir.path());
    let saved = dir.path().join("saved.calls");
    for engine in ENGINES {
        let f = func(&bin, "is_even");
        let out = trace(
            engine,
            &bin,
            &[
                "--args",
                "--func",
                f.as_str(),
                "--filter",
                "n == 4",
                "--count",
                "1",
                "--output",
                saved.to_str().unwrap(),
            ],
        );
        assert!(
            out.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // is_even(3), is_even(4), then is_even(-7) and is_even(2) under outer: the first
        // tree kept ends the session.
        assert_eq!(shown(&out), ["is_even(n=4) = -"], "{engine}");
        // The saved calls keep every call recorded: is_even(3) too with uprobes; the
        // recorder rejected it at its entry (n is an int in a register).
        let text = std::fs::read_to_string(&saved).unwrap();
        let saved: Vec<String> = dcg_tests::json_records(&text)
            .iter()
            .map(|r| r.args[0].value.clone())
            .collect();
        let first: &[&str] = if engine == "inproc" {
            &["4"]
        } else {
            &["3", "4"]
        };
        assert_eq!(&saved[..first.len()], first, "{engine}: {text}");
    }
}

/// Filters that cannot hold are refused before the command runs, each with a caret under
/// the offending token.
#[test]
fn refused_filters_say_where() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = values(dir.path());
    let f = func(&bin, "check_arg");
    let cases = [
        ("nmae == 3", "unknown name 'nmae' (parameters: x)", "^^^^"),
        ("x == \"s\"", "", "^^^"),
        ("nope: x > 1", "unknown function 'nope'", "^^^^"),
        ("x >", "", "^"),
    ];
    for engine in ENGINES {
        for (expr, said, caret) in cases {
            let out = trace(engine, &bin, &["--args", "--func", &f, "--filter", expr]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{engine} {expr}: {err}");
            assert!(
                err.contains(&format!("--filter: {said}")),
                "{engine} {expr}: {err}"
            );
            assert!(
                err.contains(&format!("\n  {expr}\n")),
                "{engine} {expr}: {err}"
            );
            assert!(
                err.lines().any(|l| l.trim_start() == caret),
                "{engine} {expr}: {err}"
            );
            // The command never ran: nothing it prints is there.
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("done"),
                "{err}"
            );
        }
    }
}

/// `--notrace`: the function is not traced, the calls it makes are, under its caller
/// (check_arg, which inner calls, under outer).
#[test]
fn notrace_leaves_out_the_function_not_its_callees() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = values(dir.path());
    for engine in ENGINES {
        let all = func(&bin, "*er");
        let check_arg = func(&bin, "check_arg");
        let out = trace(
            engine,
            &bin,
            &[
                "--args",
                "--func",
                &all,
                "--func",
                &check_arg,
                "--notrace",
                "inner",
            ],
        );
        assert!(
            out.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let records = dcg_tests::json_records(&text);
        assert!(
            !records.iter().any(|r| r.func == "inner"),
            "{engine}: {text}"
        );
        let outer: Vec<u64> = records
            .iter()
            .filter(|r| r.func == "outer")
            .map(|r| r.id)
            .collect();
        assert_eq!(outer.len(), 2, "{engine}: {text}");
        let under_outer: Vec<&str> = records
            .iter()
            .filter(|r| r.func == "check_arg" && r.parent.is_some_and(|p| outer.contains(&p)))
            .map(|r| r.args[0].value.as_str())
            .collect();
        assert_eq!(under_outer, ["-7", "2"], "{engine}: {text}");
        // Without it, inner is there, between them.
        let out = trace(engine, &bin, &["--func", &all, "--func", &check_arg]);
        let records = dcg_tests::json_records(&String::from_utf8_lossy(&out.stdout));
        assert!(records.iter().any(|r| r.func == "inner"), "{engine}");
    }
}

/// `--comm` and `--cgroup` select kernel tasks: refused in user space, before anything
/// runs.
#[test]
fn task_filters_are_the_kernels() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = values(dir.path());
    let f = func(&bin, "check_arg");
    for opt in [["--comm", "values"], ["--cgroup", "user.slice"]] {
        let out = trace("auto", &bin, &["--func", &f, opt[0], opt[1]]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{opt:?}: {err}");
        assert!(
            err.contains("--comm and --cgroup select kernel tasks"),
            "{opt:?}: {err}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("done"));
    }
}

/// The recorder's entry tests on real programs (`tests/inproc/real.c`, `throw.cc`, plain
/// and patchable builds): calls rejected in four threads and a forked child, a rejected
/// call a `longjmp` crosses back into, one a C++ exception unwinds through and is caught
/// in. The program prints what it prints untraced, the trees kept are exactly the
/// matching ones, no call is left open, and the rejections are counted.
#[test]
fn rejected_calls_leave_programs_as_they_were() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("inproc");
    for (cc, file, build) in [
        ("gcc", "real.c", "-O2"),
        ("gcc", "real.c", "-fpatchable-function-entry=5"),
        ("g++", "throw.cc", "-O2"),
    ] {
        let bin = dir.path().join(format!("{file}{build}"));
        let st = Command::new(cc)
            .args([build, "-O2", "-g", "-pthread", "-o"])
            .arg(&bin)
            .arg(src.join(file))
            .status()
            .expect("running the compiler");
        assert!(st.success(), "{cc} {file} {build}");
        let untraced = Command::new(&bin).output().expect("running it untraced");
        let run = |funcs: &[&str], filter: &str| {
            let mut args = vec!["--args".to_string(), "--show-retvals".to_string()];
            for f in funcs {
                args.extend(["--func".to_string(), func(&bin, f)]);
            }
            args.extend(["--filter".to_string(), filter.to_string()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = trace("inproc", &bin, &args);
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{file} {build}: {err}");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            // The program's own lines (stdout is shared with the JSON records).
            let program: Vec<&str> = text.lines().filter(|l| !l.starts_with('{')).collect();
            let plain = String::from_utf8_lossy(&untraced.stdout).into_owned();
            assert_eq!(program, plain.lines().collect::<Vec<_>>(), "{file} {build}");
            (shown(&out), dcg_tests::json_records(&text), err)
        };
        if file == "real.c" {
            let funcs = ["work", "fib", "jumper", "dive", "after_jump", "in_handler"];
            // Three of the four threads' calls and the forked child's are rejected.
            let (shown, _, err) = run(&funcs, "salt == 2");
            assert_eq!(shown.len(), 500, "{build}");
            assert!(shown.iter().all(|c| c.contains("salt=2")), "{build}");
            assert!(
                err.contains("1501 top-level calls rejected at entry"),
                "{err}"
            );
            // jumper(5) rejected: the longjmp from dive(0) lands in it, and it returns.
            let (shown, records, err) = run(&funcs, "depth == 3");
            assert!(shown.is_empty(), "{build}: {shown:?}");
            assert!(records.is_empty(), "{build}: {records:?}");
            assert!(err.contains("1 top-level call rejected at entry"), "{err}");
            let (shown, records, err) = run(&funcs, "depth == 5");
            assert_eq!(shown, ["jumper(depth=5) = 7"], "{build}");
            // dive(5) .. dive(0), closed by the longjmp, under it.
            assert_eq!(records.len(), 7, "{build}: {records:?}");
            assert!(!err.contains("rejected at entry"), "{err}");
        } else {
            let funcs = ["catcher", "rethrower", "middle", "thrower"];
            // catcher(3): its thrower's exception is caught in the rejected call.
            let (shown, records, err) = run(&funcs, "x != 3");
            assert_eq!(
                shown,
                // Saved calls name functions by their (mangled) symbols.
                [
                    "_Z7catcheri(x=0) = 1",
                    "_Z7catcheri(x=1) = 11",
                    "_Z7catcheri(x=2) = 21",
                    "_Z7catcheri(x=4) = -1",
                    "_Z9rethroweri(x=7) = -",
                    "_Z7catcheri(x=1) = 11"
                ],
                "{build}"
            );
            assert_eq!(records.len(), 18, "{build}");
            assert!(err.contains("1 top-level call rejected at entry"), "{err}");
        }
    }
}

/// `pid` is the process, `tid` the thread: both engines save each call's process
/// (`tgid`), the two threads of `tests/uprobe/threads.c` share it, and `--filter` on the
/// saved calls (`dcg report`) reads `pid` as the process and `tid` as the thread.
#[test]
fn pid_is_the_process_tid_the_thread() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/threads.c", "threads", &["-O2"]);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for engine in ENGINES {
        let saved = dir.path().join(format!("{engine}.calls"));
        let out = trace(
            engine,
            &bin,
            &[
                "--func",
                &func(&bin, "work"),
                "--output",
                saved.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
        let tops = top_level(&out);
        assert_eq!(tops.len(), 2, "{engine}");
        let tids: Vec<u32> = tops.iter().map(|r| r.pid.unwrap()).collect();
        // The recorder's rings name their process. A uprobe event names it once the
        // kernel saved the thread's (at a context switch after the thread's first event),
        // else dcg reads /proc while the thread lives: a short thread on a loaded machine
        // may have ended by then.
        let known: Vec<u32> = tops.iter().filter_map(|r| r.tgid).collect();
        let want = if engine == "inproc" { 2 } else { 1 };
        assert!(known.len() >= want, "{engine}: {tops:?}");
        let process = known[0];
        assert!(known.iter().all(|&p| p == process), "{engine}: {known:?}");
        assert!(
            tids[0] != tids[1] && !tids.contains(&process),
            "{engine}: {tids:?}"
        );
        let kept = |filter: &str| -> usize {
            let out = Command::new(dcg_tests::dcg_bin())
                .args(["report", "--format", "folded", "--filter", filter])
                .arg(&saved)
                .output()
                .expect("running dcg report");
            assert!(out.status.success(), "{filter}: {}", text(&out.stderr));
            text(&out.stdout)
                .lines()
                .filter(|l| l.split(' ').next().is_some_and(|s| s.ends_with("work")))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<usize>().unwrap())
                .sum()
        };
        assert_eq!(kept(&format!("pid == {process}")), known.len(), "{engine}");
        assert_eq!(kept(&format!("pid == {}", tids[0])), 0, "{engine}");
        assert_eq!(kept(&format!("tid == {}", tids[0])), 1, "{engine}");
    }
}
