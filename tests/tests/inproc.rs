//! `dcg trace --engine inproc`: the in-process recorder on real programs compiled at test
//! time, in every build it hooks (`-pg`, `-pg -mfentry`, `-fpatchable-function-entry=5`,
//! plain). What a traced program prints must equal what it prints untraced; every value
//! it prints for itself must equal dcg's (floats included); both user-space engines give
//! the same saved calls for integer-only functions; nothing is left behind (ring files,
//! preloading of processes dcg did not start). Needs root (the uprobe comparisons) and gcc;
//! skipped with the reason otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dcg_calls::saved_format::CallRecord;
use dcg_tests::oracle::{agreement, dcg_calls, oracle_calls};

use dcg_tests::uprobe_skip_reason as skip_reason;

macro_rules! require {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
    };
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The builds the recorder hooks, by their compiler options.
const BUILDS: [&[&str]; 4] = [
    &["-pg"],
    &["-pg", "-mfentry"],
    &["-fpatchable-function-entry=5"],
    &[],
];

/// Compile `src` with `cc`, `opts` and -g into `dir`.
fn build(dir: &Path, cc: &str, src: &Path, opts: &[&str]) -> PathBuf {
    let stem = src.file_stem().unwrap().to_string_lossy();
    let out = dir.join(format!("{stem}{}", opts.join("").replace('=', "")));
    let st = Command::new(cc)
        .args(opts)
        .args(["-g", "-pthread", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .expect("running the compiler");
    assert!(st.success(), "{cc} {opts:?} failed for {}", src.display());
    out
}

/// Ring and plan files of dcg `pid` still in /dev/shm.
fn leftovers(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("dcg-inproc-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// `dcg trace ARGS`; checks that dcg left no file behind.
fn dcg(args: &[&str]) -> Output {
    let child = Command::new(dcg_tests::dcg_bin())
        .arg("trace")
        .args(args)
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running dcg");
    let pid = child.id();
    let out = child.wait_with_output().expect("waiting for dcg");
    assert!(
        leftovers(pid).is_empty(),
        "left behind: {:?}",
        leftovers(pid)
    );
    out
}

/// `dcg trace --engine inproc --args --show-retvals --func BIN:PATTERN -- BIN`.
fn trace_values(bin: &str, pattern: &str) -> Output {
    trace_values_of(bin, pattern, &[])
}

/// The same with arguments for the command: `-- BIN ARGS...`.
fn trace_values_of(bin: &str, pattern: &str, cmd_args: &[&str]) -> Output {
    let func = format!("{bin}:{pattern}");
    let mut args = vec![
        "--engine",
        "inproc",
        "--args",
        "--show-retvals",
        "--func",
        &func,
        "--",
        bin,
    ];
    args.extend_from_slice(cmd_args);
    dcg(&args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .output()
        .expect("running the program")
}

/// The saved calls of a trace.
fn records(path: &Path) -> Vec<CallRecord> {
    let f = std::fs::File::open(path).expect("saved calls");
    dcg_calls::saved_format::read(std::io::BufReader::new(f))
        .expect("reading saved calls")
        .1
}

/// tests/uprobe/abi.c (every ABI class: floats, long double, SSE and mixed structs,
/// structs in memory, _Float128, varargs) in every build, gcc at -O0 and -O2: every value
/// the program prints for itself equals dcg's, none is unreadable. (The program cannot
/// print a `_Float128` return and says `?`; dcg shows its bytes.)
#[test]
fn every_abi_value_is_read() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let src = repo_file("uprobe/abi.c");
    for opt in ["-O0", "-O2"] {
        for b in BUILDS {
            let mut opts = vec![opt];
            opts.extend_from_slice(b);
            let bin = build(dir.path(), "gcc", &src, &opts);
            let bs = bin.to_str().unwrap();
            let trace = dir.path().join("trace.txt");
            let out = dcg(&[
                "--engine",
                "inproc",
                "--args",
                "--show-retvals",
                "--func",
                &format!("{bs}:*"),
                "--trace-output",
                trace.to_str().unwrap(),
                "--",
                bs,
            ]);
            let err = text(&out.stderr);
            assert!(out.status.success(), "{opts:?}: {err}");
            assert!(err.contains("engine: in process"), "{err}");
            let traced = std::fs::read_to_string(&trace).unwrap();
            let oracle = oracle_calls(&text(&out.stdout));
            assert_eq!(oracle.len(), 24, "{}", text(&out.stdout));
            let a = agreement(&oracle, &dcg_calls(&traced));
            eprintln!(
                "{opts:?}: {} values, {} agree, unreadable {:?}, wrong {:?}",
                a.checked, a.agree, a.unreadable, a.wrong
            );
            assert!(
                a.unreadable.is_empty(),
                "{opts:?}: {:?}\n{traced}",
                a.unreadable
            );
            assert_eq!(a.wrong.len(), 1, "{opts:?}: {:#?}\n{traced}", a.wrong);
            assert!(
                a.wrong[0].starts_with("quad_id.ret: dcg (_Float128){0x0, 0x4000800000000000}"),
                "{:?}",
                a.wrong
            );
        }
    }
}

/// A call as the engines show it: function, depth, arguments, return value.
type Shown = (String, u32, Vec<(String, String)>, Option<String>);

/// tests/uprobe/values.c (integers, bools, enums, strings, pointers, errno values,
/// structs): the in-process and the uprobe engine give the same saved calls.
#[test]
fn engines_agree_on_integer_functions() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let src = repo_file("uprobe/values.c");
    for opt in ["-O0", "-O2"] {
        let bin = build(dir.path(), "gcc", &src, &[opt]);
        let bs = bin.to_str().unwrap();
        let mut saved = Vec::new();
        for engine in ["inproc", "uprobe"] {
            let calls = dir.path().join(format!("{engine}{opt}.calls"));
            let out = trace_engine(engine, &[format!("{bs}:*")], &["--errno"], &calls, bs);
            assert!(out.status.success(), "{engine}: {}", text(&out.stderr));
            let recs: Vec<Shown> = records(&calls)
                .into_iter()
                .map(|r| {
                    let args = r.args.into_iter().map(|a| (a.name, a.value)).collect();
                    (r.func, r.depth, args, r.ret)
                })
                .collect();
            saved.push(recs);
        }
        assert!(saved[0].len() > 15, "{:#?}", saved[0]);
        assert_eq!(saved[0], saved[1], "{opt}: inproc vs uprobe");
    }
}

/// `dcg trace --engine ENGINE --args --show-retvals EXTRA --func F... --output CALLS --
/// CMD`.
fn trace_engine(engine: &str, funcs: &[String], extra: &[&str], calls: &Path, cmd: &str) -> Output {
    let mut args = vec!["--engine", engine, "--args", "--show-retvals"];
    args.extend_from_slice(extra);
    for f in funcs {
        args.extend(["--func", f.as_str()]);
    }
    args.extend(["--output", calls.to_str().unwrap(), "--", cmd]);
    dcg(&args)
}

/// Lines of a trace's text output with durations, CPUs and thread ids removed.
fn calls_only(trace: &str) -> Vec<String> {
    trace
        .lines()
        .filter_map(|l| dcg_tests::oracle::call_text(l).map(|(_, c)| c.to_string()))
        .collect()
}

/// tests/inproc/real.c in every build at -O2: threads, recursion, longjmp, a signal
/// handler, fork and exec print the same traced as untraced, and the trace holds every
/// call (the threads' 2,000 `work` calls, the skipped frames closed by the longjmp, the
/// exec'd image's calls).
#[test]
fn real_programs_run_as_untraced() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let src = repo_file("inproc/real.c");
    for b in BUILDS {
        let mut opts = vec!["-O2"];
        opts.extend_from_slice(b);
        let bin = build(dir.path(), "gcc", &src, &opts);
        let bs = bin.to_str().unwrap();
        let plain = run(&bin, &[]);
        assert!(plain.status.success());
        let out = trace_values(bs, "*");
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{opts:?}: {err}");
        let program: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
        let untraced: Vec<&str> = std::str::from_utf8(&plain.stdout)
            .unwrap()
            .lines()
            .collect();
        assert_eq!(
            program, untraced,
            "{opts:?}: the traced program printed otherwise"
        );
        let calls = calls_only(&stdout);
        let work = calls
            .iter()
            .filter(|c| c.trim_start().starts_with("work("))
            .count();
        // 4 threads x 500, and the forked child's one.
        assert_eq!(work, 2001, "{opts:?}:\n{stdout}");
        assert!(
            calls
                .iter()
                .any(|c| c.contains("jumper(depth=5)") || c.contains("} /* jumper ret=7 */")),
            "{opts:?}:\n{stdout}"
        );
        // After the longjmp the next call is main's again, not nested in the skipped frames.
        let after = calls
            .iter()
            .find(|c| c.contains("after_jump(x=7)"))
            .expect("after_jump");
        let jumper = calls
            .iter()
            .find(|c| c.contains("jumper(depth=5)"))
            .expect("jumper");
        let indent = |s: &str| s.len() - s.trim_start().len();
        assert_eq!(indent(after), indent(jumper), "{opts:?}:\n{stdout}");
        assert_eq!(
            calls
                .iter()
                .filter(|c| c.contains("in_handler(sig=10); /* ret=110 */"))
                .count(),
            3,
            "{opts:?}:\n{stdout}"
        );
        // The exec'd image (the child's exec of itself) is traced too.
        assert!(
            calls.iter().any(|c| c.contains("main(argc=3")),
            "{opts:?}:\n{stdout}"
        );
        assert!(
            !stdout.contains("no return"),
            "{opts:?}: unfinished calls\n{stdout}"
        );
        assert!(err.contains("exec recorder=yes"), "{opts:?}: {err}");
        // --no-children: the forked child and its exec are left alone.
        let out = dcg(&[
            "--engine",
            "inproc",
            "--no-children",
            "--func",
            &format!("{bs}:work"),
            "--",
            bs,
        ]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        let program: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
        assert_eq!(program, untraced, "{opts:?} --no-children");
        let work = calls_only(&stdout)
            .iter()
            .filter(|c| c.contains("work("))
            .count();
        assert_eq!(work, 2000, "{opts:?} --no-children:\n{stdout}");
        assert!(err.contains("exec recorder=no"), "{opts:?}: {err}");
    }
}

/// tests/inproc/throw.cc: C++ exceptions thrown through traced frames, caught, rethrown:
/// the program computes what it does untraced; the frames the exceptions left are closed.
#[test]
fn cpp_exceptions_through_traced_frames() {
    require!();
    if Command::new("g++").arg("--version").output().is_err() {
        eprintln!("skipping: g++ is missing");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = repo_file("inproc/throw.cc");
    for b in BUILDS {
        let mut opts = vec!["-O2"];
        opts.extend_from_slice(b);
        let bin = build(dir.path(), "g++", &src, &opts);
        let bs = bin.to_str().unwrap();
        let untraced = text(&run(&bin, &[]).stdout);
        assert_eq!(untraced.trim(), "s=142");
        let out = trace_values(bs, "_Z*");
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{opts:?}: {err}\n{stdout}");
        assert!(stdout.contains("s=142"), "{opts:?}:\n{stdout}\n{err}");
        let calls = calls_only(&stdout);
        // catcher(3) and catcher(4) catch: their frames return -1 (names demangled).
        assert_eq!(
            calls
                .iter()
                .filter(|c| c.contains("catcher ret=-1"))
                .count(),
            2,
            "{opts:?}:\n{stdout}"
        );
        assert!(
            calls.iter().any(|c| c.contains("rethrower(x=7)")),
            "{stdout}"
        );
        assert!(!stdout.contains("no return"), "{opts:?}:\n{stdout}");
    }
}

/// A float-heavy program: every float, double and long double argument and return, struct
/// returns of every class (and a struct too big to show whole).
#[test]
fn floats_are_read() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("floats.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#define NOINLINE __attribute__((noinline))
NOINLINE float fscale(float a, int k) { return a * k; }
NOINLINE double dmix(double a, long b, double c) { return a * b + c; }
NOINLINE long double lhalf(long double x) { return x / 2; }
NOINLINE double many(double a, double b, double c, double d, double e, double f,
                     double g, double h, double i) { return a + b + c + d + e + f + g + h + i; }
struct huge { long v[10]; };
NOINLINE long first(struct huge h) { return h.v[0] + h.v[9]; }
struct ld { long l; double d; };
NOINLINE struct ld mixed(long l, double d) { struct ld r = { l * 2, d / 2 }; return r; }
struct dd { double x, y; };
NOINLINE struct dd pair(double x) { struct dd r = { x, -x }; return r; }
struct big { long a, b, c; };
NOINLINE struct big big3(long x) { struct big r = { x, x + 1, x + 2 }; return r; }
int main(void) {
  double s = fscale(-0.1f, 3) + dmix(1.5, 2, -0.25) + (double)lhalf(5.0L);
  s += many(1, 2, 3, 4, 5, 6, 7, 8, 9.5);
  struct huge h = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}};
  s += first(h);
  struct ld m = mixed(21, 5.0);
  struct dd p = pair(0.25);
  struct big b = big3(7);
  s += m.l + m.d + p.y + b.a + b.c;
  printf("%g\n", s);
  return 0;
}
"#,
    )
    .unwrap();
    for opt in ["-O0", "-O2"] {
        let bin = build(dir.path(), "gcc", &src, &[opt]);
        let bs = bin.to_str().unwrap();
        let out = trace_values(bs, "*");
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        for want in [
            "fscale(a=-0.1, k=3); /* ret=-0.3 */",
            "dmix(a=1.5, b=2, c=-0.25); /* ret=2.75 */",
            "lhalf(x=5); /* ret=2.5 */",
            "many(a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9.5); /* ret=45.5 */",
            // An 80-byte struct: the words read, and a mark that there is more.
            "first(h=(struct huge){0x1, 0x2, 0x3, 0x4, ...}); /* ret=11 */",
            // Struct returns by value: INTEGER+SSE (rax, xmm0: 42 and 2.5), two SSE
            // eightbytes (xmm0, xmm1: 0.25 and -0.25), MEMORY (through rax).
            "mixed(l=21, d=5); /* ret=(struct ld){0x2a, 0x4004000000000000} */",
            "pair(x=0.25); /* ret=(struct dd){0x3fd0000000000000, 0xbfd0000000000000} */",
            "big3(x=7); /* ret=(struct big){0x7, 0x8, 0x9} */",
        ] {
            assert!(stdout.contains(want), "{opt}: {want}\n{stdout}");
        }
    }
}

/// The target's own exit, a crash and an abort: dcg reports how it ended, every record
/// made before is shown, and it never hangs.
#[test]
fn exits_crashes_and_aborts() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let src = repo_file("uprobe/crash.c");
    let bin = build(dir.path(), "gcc", &src, &["-O1"]);
    let bs = bin.to_str().unwrap();
    let started = Instant::now();
    let out = trace_values(bs, "*");
    let err = text(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(err.contains("killed by SIGSEGV"), "{err}");
    assert_eq!(out.status.code(), Some(128 + 11), "{err}");
    assert!(
        text(&out.stdout).contains("no return"),
        "{}",
        text(&out.stdout)
    );
}

/// Ctrl-C on dcg (SIGINT) while the command runs: the command is ended (with the same
/// signal: it prints how many `tick` calls returned), every one of them is in the trace,
/// and the ring files are gone.
#[test]
fn sigint_flushes_every_record() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "gcc", &repo_file("inproc/ends.c"), &["-O2"]);
    let bs = bin.to_str().unwrap();
    let child = Command::new(dcg_tests::dcg_bin())
        .args(["trace", "--engine", "inproc", "--show-retvals", "--func"])
        .arg(format!("{bs}:tick"))
        .args(["--", bs, "signal"])
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    let returned: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ticks="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the program did not say how many ticks: {err}"));
    let traced = stdout.lines().filter(|l| l.contains("; /* ret=")).count() as u64;
    assert!(returned > 1000, "{returned} ticks");
    assert_eq!(traced, returned, "{err}");
    assert!(!err.contains("LOST"), "{err}");
    assert!(leftovers(pid).is_empty(), "{:?}", leftovers(pid));
}

/// libc's own `_setjmp` and `longjmp` traced (tests/inproc/jumps.c): neither engine
/// hooks a function that returns twice, a direct `setjmp` shows its 0, each `longjmp`
/// says which `setjmp` returns again with what, the frames it leaves close, and the
/// calls after it are main's again. Both engines give the same calls.
#[test]
fn setjmp_and_longjmp_traced() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let libc = libc_path();
    let lib = libc.to_str().unwrap();
    for opt in ["-O0", "-O2"] {
        let bin = build(dir.path(), "gcc", &repo_file("inproc/jumps.c"), &[opt]);
        let bs = bin.to_str().unwrap();
        let untraced = text(&run(&bin, &[]).stdout);
        let mut saved = Vec::new();
        for engine in ["inproc", "uprobe"] {
            let calls = dir.path().join(format!("{engine}{opt}.calls"));
            let funcs = [
                format!("{bs}:*"),
                format!("{lib}:_setjmp"),
                format!("{lib}:longjmp"),
                format!("{lib}:getpid"),
            ];
            let out = trace_engine(engine, &funcs, &[], &calls, bs);
            let (stdout, err) = (text(&out.stdout), text(&out.stderr));
            assert!(out.status.success(), "{engine}{opt}: {err}");
            let program: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
            assert_eq!(program.join("\n"), untraced.trim_end(), "{engine}{opt}");
            let calls_text = calls_only(&stdout);
            let shown = |want: &str| calls_text.iter().filter(|c| c.contains(want)).count();
            assert_eq!(
                shown("_setjmp(arg1=&outer); /* ret=0 */"),
                1,
                "{engine}{opt}\n{stdout}"
            );
            assert_eq!(
                shown("_setjmp(arg1=&inner); /* ret=0 */"),
                1,
                "{engine}{opt}\n{stdout}"
            );
            for want in [
                "(env=&outer, val=1); /* _setjmp returns 1 */",
                "(env=&inner, val=5); /* _setjmp returns 5 */",
                "(env=&inner, val=0); /* _setjmp returns 1 */",
            ] {
                assert_eq!(shown(want), 1, "{engine}{opt}: {want}\n{stdout}");
            }
            assert!(!stdout.contains("no return"), "{engine}{opt}\n{stdout}");
            let recs: Vec<(String, u32, Option<String>)> = records(&calls)
                .into_iter()
                .filter(|r| r.func != "getpid" && r.depth > 0)
                .map(|r| (r.func, r.depth, r.ret))
                .collect();
            // After each longjmp, main calls again at depth 1.
            let main_calls = recs.iter().filter(|r| r.1 == 1).count();
            assert_eq!(main_calls, 5, "{engine}{opt}: {recs:?}");
            saved.push(recs);
        }
        assert_eq!(saved[0], saved[1], "{opt}: inproc vs uprobe");
    }
}

/// tests/inproc/threads.c: 200 threads over the program's life, 8 at a time, more than
/// there are rings: a thread's ring is given back when it ends, and every call of every
/// thread is traced.
#[test]
fn threads_beyond_the_rings() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "gcc", &repo_file("inproc/threads.c"), &["-O2"]);
    let bs = bin.to_str().unwrap();
    let untraced = text(&run(&bin, &[]).stdout);
    let out = trace_values(bs, "work");
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(stdout.contains(untraced.trim()), "{stdout}");
    let work = calls_only(&stdout)
        .iter()
        .filter(|c| c.contains("work(i="))
        .count();
    assert_eq!(work, 2000, "{err}");
    assert!(
        !err.contains("no free ring") && !err.contains("LOST"),
        "{err}"
    );
}

/// A traced function that calls `exit` or `abort` two traced frames down: dcg says how
/// the command ended, exits as it did, and shows the calls that never returned.
#[test]
fn exit_and_abort_inside_traced_calls() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "gcc", &repo_file("inproc/ends.c"), &["-O2"]);
    let bs = bin.to_str().unwrap();
    for (how, code, said) in [
        ("exit", 3, "exited with status 3"),
        ("abort", 128 + 6, "killed by SIGABRT"),
    ] {
        let out = trace_values_of(bs, "*", &[how]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{how}: {err}");
        assert!(err.contains(said), "{how}: {err}");
        let calls = calls_only(&stdout);
        for want in [
            "work(how=",
            "tick(i=",
            "finish(how=",
            "} /* work (no return) */",
        ] {
            assert!(
                calls.iter().any(|c| c.contains(want)),
                "{how}: {want}\n{stdout}"
            );
        }
    }
}

/// `-p PID` and a static binary stay on uprobes (nothing is preloaded into a process dcg
/// did not start), and say so; a process running the same binary that dcg did not start
/// has no recorder in it.
#[test]
fn uprobes_where_nothing_can_be_preloaded() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let loop_c = repo_file("uprobe/loop.c");
    let bin = build(dir.path(), "gcc", &loop_c, &["-O2"]);
    let bs = bin.to_str().unwrap();
    // A process of the same binary started by someone else.
    let mut other = Command::new(&bin).args(["0", "2000"]).spawn().unwrap();
    let out = dcg(&[
        "--count",
        "3",
        "--show-retvals",
        "--func",
        &format!("{bs}:tick"),
        "--",
        bs,
        "0",
    ]);
    assert!(
        text(&out.stderr).contains("engine: in process"),
        "{}",
        text(&out.stderr)
    );
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", other.id())).unwrap();
    assert!(!maps.contains("libdcg_recorder"), "{maps}");
    let pid = other.id().to_string();
    let out = dcg(&["--count", "2", "--func", &format!("{bs}:tick"), "-p", &pid]);
    let err = text(&out.stderr);
    assert!(err.contains("engine: uprobes (-p attaches"), "{err}");
    assert_eq!(
        text(&out.stdout)
            .lines()
            .filter(|l| l.contains("tick()"))
            .count(),
        2
    );
    other.kill().unwrap();
    let _ = other.wait();
    let stat = dir.path().join("static");
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-static", "-o"])
        .arg(&stat)
        .arg(&loop_c)
        .status()
        .unwrap();
    if st.success() {
        let s = stat.to_str().unwrap();
        let out = dcg(&[
            "--show-retvals",
            "--func",
            &format!("{s}:tick"),
            "--",
            s,
            "3",
        ]);
        let err = text(&out.stderr);
        assert!(err.contains("statically linked"), "{err}");
        assert_eq!(
            text(&out.stdout)
                .lines()
                .filter(|l| l.contains("tick()"))
                .count(),
            3
        );
    }
}

/// A function the recorder cannot hook (4 bytes: no room for a jump) is traced with
/// uprobes in the same session, its calls in their place in the tree.
#[test]
fn unhookable_functions_fall_back_to_uprobes() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = c_program(
        dir.path(),
        "tiny",
        r#"#include <stdio.h>
#define NOINLINE __attribute__((noinline))
volatile int sink;
NOINLINE int tiny(int x) { return x + 1; }
NOINLINE int outer(int n) {
  int s = 0;
  for (int i = 0; i < n; i++) { s += tiny(i); sink = s; }
  return s;
}
int main(void) { printf("%d\n", outer(3)); return 0; }
"#,
        &["-O2"],
    );
    let bs = bin.to_str().unwrap();
    let out = trace_values(bs, "*");
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("tiny in ") && err.contains("traced with uprobes"),
        "{err}"
    );
    let calls = calls_only(&stdout);
    let at = calls
        .iter()
        .position(|c| c.contains("outer(n=3) {"))
        .expect(&stdout);
    for (k, want) in [
        "tiny(x=0); /* ret=1 */",
        "tiny(x=1); /* ret=2 */",
        "tiny(x=2); /* ret=3 */",
    ]
    .iter()
    .enumerate()
    {
        assert!(calls[at + 1 + k].contains(want), "{want}:\n{stdout}");
    }
    assert!(calls[at + 4].contains("} /* outer ret=6 */"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "6"), "{stdout}");
}

/// dcg killed by SIGKILL leaves its ring and plan files; the next session removes them
/// and says so.
#[test]
fn files_of_a_killed_dcg_are_removed_by_the_next() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "gcc", &repo_file("uprobe/loop.c"), &["-O2"]);
    let bs = bin.to_str().unwrap();
    let mut child = Command::new(dcg_tests::dcg_bin())
        .args(["trace", "--engine", "inproc", "--func"])
        .arg(format!("{bs}:tick"))
        .args(["--", bs, "0", "1000"])
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let end = Instant::now() + Duration::from_secs(20);
    while leftovers(pid).len() < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(leftovers(pid).len(), 2, "{:?}", leftovers(pid));
    child.kill().unwrap();
    child.wait().unwrap();
    // Its traced command lives on; end it.
    let _ = Command::new("pkill").args(["-f", bs]).status();
    let out = dcg(&[
        "--engine",
        "inproc",
        "--func",
        &format!("{bs}:tick"),
        "--",
        bs,
        "2",
    ]);
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("removed stale dcg-inproc-{pid}-")),
        "{err}"
    );
    assert!(leftovers(pid).is_empty(), "{:?}", leftovers(pid));
}

/// Inlined copies as frames in process (tests/uprobe/inline.c at -O2): calls made from a
/// copy's code sit under its frame; a copy at its function's entry has its arguments.
#[test]
fn inline_frames_in_process() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "gcc", &repo_file("uprobe/inline.c"), &["-O2"]);
    let bs = bin.to_str().unwrap();
    let out = trace_values(bs, "*");
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let calls = calls_only(&stdout);
    let at = calls
        .iter()
        .position(|c| c.trim_start() == "scale(v=4, k=3) /* inlined in first */ {")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        calls[at + 1].contains("helper(x=4); /* ret=9 */"),
        "{stdout}"
    );
    assert!(calls[at + 2].trim_start() == "} /* scale */", "{stdout}");
    let indent = |s: &str| s.len() - s.trim_start().len();
    assert_eq!(indent(&calls[at + 1]), indent(&calls[at]) + 2, "{stdout}");
    assert!(
        calls
            .iter()
            .any(|c| c.contains("/* inlined in second */ {")),
        "{stdout}"
    );
}

/// An IFUNC of libc (`strlen`) is traced as the implementation its resolver chose at
/// start-up: every call, named `strlen`, its value typed by the declaration of `strlen`
/// in a caller's DWARF (the implementations have none).
#[test]
fn ifunc_implementation_is_traced() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = c_program(
        dir.path(),
        "lens",
        r#"#include <stdio.h>
#include <string.h>
int main(void) {
  const char *w[] = {"a", "abcd", "abcdefghij"};
  size_t n = 0;
  for (int i = 0; i < 3; i++) n += strlen(w[i]);
  printf("%zu\n", n);
  return 0;
}
"#,
        &["-O0", "-fno-builtin"],
    );
    let bs = bin.to_str().unwrap();
    let libc = libc_path();
    let out = dcg(&[
        "--engine",
        "inproc",
        "--show-retvals",
        "--func",
        &format!("{bs}:main"),
        "--func",
        &format!("{}:strlen", libc.display()),
        "--",
        bs,
    ]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("strlen in ") && err.contains("is an IFUNC") && err.contains("typed by"),
        "{err}"
    );
    let lens: Vec<String> = calls_only(&stdout)
        .iter()
        .filter_map(|c| c.trim_start().strip_prefix("strlen(); /* ret="))
        .map(|r| r.trim_end_matches(" */").to_string())
        .collect();
    assert_eq!(lens, ["1", "4", "10"], "{stdout}");
    assert!(stdout.lines().any(|l| l == "15"), "{stdout}");
}

/// libc's `__mmap64` holds a copy of itself inlined (DWARF says so): traced, it is one
/// call with its arguments and value, not a frame repeating itself inside it.
#[test]
fn a_copy_inlined_into_its_own_function_is_no_frame() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = c_program(
        dir.path(),
        "mm",
        r#"#include <stdio.h>
#include <sys/mman.h>
int main(void) {
  void *p = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("%d\n", p != MAP_FAILED);
  return 0;
}
"#,
        &["-O2"],
    );
    let bs = bin.to_str().unwrap();
    let libc = libc_path();
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--func",
        &format!("{}:__mmap64", libc.display()),
        "--",
        bs,
    ]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("inlined in __mmap64"), "{err}");
    let calls = calls_only(&stdout);
    assert_eq!(calls.len(), 1, "{stdout}");
    assert!(
        calls[0].trim_start().starts_with(
            "__mmap64(addr=NULL, len=4096, prot=1, flags=34, fd=-1, offset=0); /* ret=0x"
        ),
        "{stdout}"
    );
}

/// libc's own allocator traced in process: the recorder's set-up frees memory itself
/// while it hooks `free`, so a hook must be live only once its trampoline is executable
/// (it crashed every program before).
#[test]
fn libc_allocator_traced_in_process() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = c_program(
        dir.path(),
        "alloc",
        r#"#include <stdio.h>
#include <stdlib.h>
int main(void) {
  char *volatile p = malloc(1000);
  printf("%d\n", p != NULL);
  free(p);
  return 0;
}
"#,
        &["-O2"],
    );
    let bs = bin.to_str().unwrap();
    let libc = libc_path();
    let out = dcg(&[
        "--engine",
        "inproc",
        "--show-retvals",
        "--args",
        "--func",
        &format!("{}:malloc", libc.display()),
        "--func",
        &format!("{}:free", libc.display()),
        "--",
        bs,
    ]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(stdout.lines().any(|l| l == "1"), "{stdout}");
    let calls = calls_only(&stdout);
    let ptr = calls
        .iter()
        .find_map(|c| {
            c.trim_start()
                .strip_prefix("__libc_malloc(bytes=1000); /* ret=")
                .map(|r| r.trim_end_matches(" */").to_string())
        })
        .unwrap_or_else(|| panic!("malloc(1000) traced:\n{stdout}"));
    assert!(
        calls
            .iter()
            .any(|c| c.trim_start() == format!("__libc_free(mem={ptr});")),
        "free of {ptr} traced:\n{stdout}"
    );
}

/// The C library the compiler links against, as the dynamic linker loads it.
fn libc_path() -> PathBuf {
    let out = Command::new("gcc")
        .arg("-print-file-name=libc.so.6")
        .output()
        .unwrap();
    let libc = PathBuf::from(text(&out.stdout).trim());
    libc.canonicalize().unwrap_or(libc)
}

/// C source `text` written as `NAME.c` in `dir` and built by gcc with `flags`.
fn c_program(dir: &Path, name: &str, text: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, text).unwrap();
    build(dir, "gcc", &src, flags)
}
