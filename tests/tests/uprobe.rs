//! `dcg trace --func PATH:PATTERN`: live uprobe tracing of C programs compiled at test
//! time (tests/uprobe/*.c), output asserted exactly after normalizing durations, CPUs,
//! thread ids and run-time addresses. Every test also checks that dcg left nothing in
//! tracefs. Needs root and uprobe events; skipped (with the reason printed) otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dcg_tests::oracle::{agreement, dcg_calls, oracle_calls};

fn dcg_exe() -> PathBuf {
    dcg_tests::dcg_bin()
}
const TRACEFS: &str = "/sys/kernel/tracing";

fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("uprobe")
        .join(name)
}

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

/// Tests run dcg sessions concurrently; the stale-session test needs to be alone, since
/// every session removes the stale ones it finds.
static SESSIONS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Skip the test (with the reason) when uprobes cannot be used; else hold a share of
/// [`SESSIONS`] (`exclusive`: all of it) for the rest of the test.
macro_rules! require_uprobes {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
        let _sessions = SESSIONS.read().unwrap_or_else(|e| e.into_inner());
    };
    (exclusive) => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
        let _sessions = SESSIONS.write().unwrap_or_else(|e| e.into_inner());
    };
}

/// Compile `tests/uprobe/<name>.c` into `dir` with `opt` (and -g).
fn compile(dir: &Path, name: &str, opt: &str) -> PathBuf {
    let out = dir.join(format!("{name}{opt}"));
    let st = Command::new("gcc")
        .args([opt, "-g", "-pthread", "-o"])
        .arg(&out)
        .arg(src(&format!("{name}.c")))
        .status()
        .expect("running gcc");
    assert!(st.success(), "gcc failed for {name}.c");
    out
}

fn symbols(bin: &Path) -> String {
    let out = Command::new("nm").arg(bin).output().expect("running nm");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether tracefs still holds anything of dcg session `pid`.
fn leftovers(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let inst = Path::new(TRACEFS).join(format!("instances/dcg-{pid}"));
    if inst.exists() {
        found.push(inst.display().to_string());
    }
    let events =
        std::fs::read_to_string(Path::new(TRACEFS).join("uprobe_events")).unwrap_or_default();
    let group = format!(":dcg_{pid}/");
    found.extend(
        events
            .lines()
            .filter(|l| l.contains(&group))
            .map(str::to_string),
    );
    found
}

fn assert_clean(pid: u32) {
    let left = leftovers(pid);
    assert!(left.is_empty(), "dcg {pid} left behind: {left:#?}");
}

/// Run `dcg trace ARGS`, check that it cleaned up, return its output.
fn dcg(args: &[&str]) -> Output {
    let child = Command::new(dcg_exe())
        .args(["trace", "--engine", "uprobe"])
        .args(args)
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running dcg");
    let pid = child.id();
    let out = child.wait_with_output().expect("waiting for dcg");
    assert_clean(pid);
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Replace run-time addresses (more than 10 hex digits: 0x55…, 0x7ff…) by `0x…`.
fn hide_addresses(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'0' && b.get(i + 1) == Some(&b'x') {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                j += 1;
            }
            if j - i - 2 > 10 {
                out.push_str("0x…");
                i = j;
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// One output line, split into its columns.
#[derive(Debug)]
struct Row {
    proc_: Option<String>,
    duration: bool,
    text: String,
}

/// Parse a function_graph line printed by dcg: ` C) [proc | ]duration |  text`.
fn row(line: &str) -> Row {
    let (_, rest) = line
        .split_once(") ")
        .unwrap_or_else(|| panic!("no cpu column: {line:?}"));
    // `comm-tid` (the whole name, padded), then ` | `.
    let proc_end = rest.find(" | ").filter(|&e| {
        let p = rest[..e].trim();
        e <= 32
            && p.rsplit_once('-')
                .is_some_and(|(_, t)| t.parse::<u32>().is_ok())
    });
    let (proc_, rest) = match proc_end {
        Some(e) => (Some(rest[..e].trim().to_string()), &rest[e + 3..]),
        None => (None, rest),
    };
    assert_eq!(&rest[14..17], "|  ", "duration column of {line:?}");
    Row {
        proc_,
        duration: !rest[..14].trim().is_empty(),
        text: hide_addresses(&rest[17..]),
    }
}

/// The calls of an output, one per line, indentation kept, columns dropped. Lines of
/// the traced program (none starts with a space) are skipped.
fn calls(stdout: &str) -> String {
    let mut s = String::new();
    for l in stdout.lines().filter(|l| l.starts_with(' ')) {
        let r = row(l);
        s.push_str(&r.text);
        s.push('\n');
    }
    s
}

/// Every line must be parsed by dcg's own function_graph parser as what it is.
fn check_parses(stdout: &str) {
    use dcg_fgraph::{parse_line, Line};
    for l in stdout.lines().filter(|l| l.starts_with(' ')) {
        let r = row(l);
        let t = r.text.trim_start();
        match parse_line(l) {
            Line::Entry(c) => assert!(t.ends_with('{') && !r.duration, "{l:?} {c:?}"),
            Line::Leaf(c) => assert!(t.contains(");"), "{l:?} {c:?}"),
            Line::Exit(e) => assert!(t.starts_with('}'), "{l:?} {e:?}"),
            other => panic!("{l:?} parsed as {other:?}"),
        }
    }
}

const VALUES_COMMON: &str = r#"main() {
  do_nothing();
  is_even(n=3); /* ret=false */
  is_even(n=4); /* ret=true */
  next_byte(b=65); /* ret=66 */
  next_byte(b=255); /* ret=0 */
  check_arg(x=-5); /* ret=-22 */
  check_arg(x=7); /* ret=7 */
  twice(u=4000000000); /* ret=3705032704 */
  pick(c=RED); /* ret=BLUE */
  pick(c=GREEN); /* ret=GREEN */
  lookup(kind=0); /* ret=NULL */
  lookup(kind=1); /* ret=0x… */
  lookup(kind=2); /* ret=&global_value */
  greet(name="world", len=5); /* ret="world" */
  greet(name=NULL, len=0); /* ret=NULL */
  greet(name="two\nlines \"quoted\"", len=9); /* ret="two\nlines \"quoted\"" */
  swap(p=(struct pair)0x200000001); /* ret=(struct pair)0x100000002 */
  sum_wide(w=(struct wide){0x3, 0x4}); /* ret=7 */
  many(a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8); /* ret=36 */
  outer(x=3) {
    inner(x=3) {
      check_arg(x=-7); /* ret=-22 */
    } /* inner ret=-22 */
    is_even(n=-22); /* ret=true */
    do_nothing();
  } /* outer ret=-22 */
  outer(x=12) {
    inner(x=12) {
      check_arg(x=2); /* ret=2 */
    } /* inner ret=2 */
    is_even(n=2); /* ret=true */
    do_nothing();
  } /* outer ret=2 */
"#;

#[test]
fn every_value_kind_o0() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "values", "-O0");
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--func",
        &format!("{b}:*"),
        "--",
        b,
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let expected = format!(
        "{VALUES_COMMON}  fact(n=3) {{
    fact(n=2) {{
      fact(n=1); /* ret=1 */
    }} /* fact ret=2 */
  }} /* fact ret=6 */
}} /* main ret=0 */
"
    );
    // The program's own output comes first on the same terminal; dcg prints only calls.
    let got = calls(&stdout.replace("done 30\n", ""));
    assert_eq!(got, expected);
    check_parses(&stdout.replace("done 30\n", ""));
    assert!(text(&out.stderr).contains("built one from the DWARF"));
}

/// `dcg trace --report`: the call-graph report of the traced calls instead of the tree,
/// counted from the same calls (33 calls of 15 functions, check_arg's 2 errors).
#[test]
fn live_report() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "values", "-O0");
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--show-retvals",
        "--errno",
        "--report",
        "--func",
        &format!("{b}:*"),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout).replace("done 30\n", "");
    assert!(
        stdout.starts_with("dcg report: dcg trace --func "),
        "{stdout}"
    );
    assert!(stdout.contains("input: live trace\n"), "{stdout}");
    assert!(
        stdout.contains("calls: 33 of 15 functions, 1 top-level"),
        "{stdout}"
    );
    let check_arg = stdout
        .lines()
        .find(|l| l.contains(" check_arg ["))
        .unwrap_or_else(|| panic!("no check_arg row: {stdout}"));
    let cols: Vec<&str> = check_arg.split_whitespace().collect();
    assert_eq!((cols[0], cols[5]), ("4", "2"), "{check_arg}");
    assert!(
        !stdout.contains("main() {"),
        "the tree is not printed: {stdout}"
    );
}

/// `--trace-output FILE`: the traced command's output stays on stdout, the trace goes to
/// FILE (complete, no temporary left); an unwritable FILE is a one-line error before
/// anything is traced.
#[test]
fn trace_output_keeps_the_command_output_apart() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "values", "-O0");
    let b = bin.to_str().unwrap();
    let tree = dir.path().join("tree.txt");
    let func = format!("{b}:*");
    let out = dcg(&[
        "--show-retvals",
        "--func",
        &func,
        "--trace-output",
        tree.to_str().unwrap(),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "done 30\n", "only the command's output");
    let written = std::fs::read_to_string(&tree).unwrap();
    assert!(written.contains("main() {"), "{written}");
    assert!(!written.contains("done 30"), "{written}");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains(".tmp")),
        "temporary left: {names:?}"
    );

    let bad = dir.path().join("no-such-dir").join("tree.txt");
    let out = dcg(&[
        "--func",
        &func,
        "--trace-output",
        bad.to_str().unwrap(),
        "--",
        b,
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("no-such-dir"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn every_value_kind_o2() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "values", "-O2");
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--func",
        &format!("{b}:*"),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // GCC turns the recursion of fact into a loop at -O2.
    let expected = format!("{VALUES_COMMON}  fact(n=3); /* ret=6 */\n}} /* main ret=0 */\n");
    let stdout = text(&out.stdout).replace("done 30\n", "");
    assert_eq!(calls(&stdout), expected);
    check_parses(&stdout);
}

#[test]
fn cold_split_and_constprop_clone() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "clones", "-O2");
    let syms = symbols(&bin);
    assert!(
        syms.contains(" classify.cold"),
        "gcc made no classify.cold:\n{syms}"
    );
    assert!(
        syms.contains(" scale.constprop.0"),
        "gcc made no scale.constprop.0:\n{syms}"
    );
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--show-retvals",
        "--errno",
        "--args",
        "--func",
        &format!("{b}:*"),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout).replace("done -12 -19\n", "");
    assert_eq!(
        calls(&stdout),
        "main(argc=1, argv=0x…) {
  classify(v=2); /* ret=0 */
  classify(v=-2) {
    report_bad(v=-2);
  } /* classify ret=-ERANGE */
  scale.constprop.0(x=2, factor=3); /* ret=6 */
  scale.constprop.0(x=3, factor=3); /* ret=9 */
} /* main ret=0 */
"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("classify.cold: the cold part of classify, not an entry point"),
        "{stderr}"
    );
    // atoi is inlined in main: its copy is probed (the branch holding it never runs).
    assert!(
        stderr.contains("atoi: a copy inlined in main (traced), shown as a frame"),
        "{stderr}"
    );
}

#[test]
fn patterns_that_match_nothing() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "clones", "-O2");
    let b = bin.to_str().unwrap();
    let out = dcg(&["--func", &format!("{b}:no_such_*"), "--", b]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no function matches 'no_such_*'"));
    // Inline-only, and the db has no inlined copies: say where it went.
    let db = dir.path().join("clones.sigdb");
    let st = Command::new(dcg_tests::dwarfscan_bin())
        .args(["-q", "-j", "1", "--no-inline-instances", "-o"])
        .arg(&db)
        .arg(&bin)
        .status()
        .expect("running dwarfscan");
    assert!(st.success());
    let out = dcg(&[
        "--db",
        db.to_str().unwrap(),
        "--func",
        &format!("{b}:atoi"),
        "--",
        b,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "atoi: inlined into main, no code of its own: not traced (a db with its inlined \
             copies, what dwarfscan writes by default, would trace them)"
        ),
        "{stderr}"
    );
    // With them (the db built in memory has them): its container is traced.
    let out = dcg(&["--func", &format!("{b}:atoi"), "--", b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("atoi: a copy inlined in main (traced)"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        calls(&text(&out.stdout)),
        "main();\n",
        "{}",
        text(&out.stdout)
    );
    // A cold part alone is not an entry point.
    let out = dcg(&["--func", &format!("{b}:classify.cold"), "--", b]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no function that can be probed matches"));
    assert!(out.stdout.is_empty());
}

/// The copies of `scale` the program says it runs: (caller, v, k), in order.
fn inline_runs(stdout: &str) -> Vec<(String, String, String)> {
    stdout
        .lines()
        .filter_map(|l| {
            let (caller, rest) = l.split_once(": scale(")?;
            let (v, k) = rest.strip_suffix(')')?.split_once(", ")?;
            Some((caller.to_string(), v.to_string(), k.to_string()))
        })
        .collect()
}

fn arg<'r>(r: &'r dcg_calls::saved_format::CallRecord, name: &str) -> Option<&'r str> {
    r.args
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.value.as_str())
}

/// An inline function inlined into three callers (tests/uprobe/inline.c, -O2): each
/// execution of a copy is one frame inside its caller with the arguments the program
/// passed (three in a loop: three frames), the call made from the copy's code is its
/// child, the caller's other call is not. With this gcc the copy in `first` starts at
/// `first`'s first instruction (read by its entry probe), the others in the middle of
/// their callers (probes of their own).
#[test]
fn inlined_copies_as_frames() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "inline", "-O2");
    let b = bin.to_str().unwrap();
    let (scale, helper) = (format!("{b}:scale"), format!("{b}:helper"));
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--json",
        "--func",
        &scale,
        "--func",
        &helper,
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "scale: 3 copies inlined in first, second, third (traced), each shown as a frame"
        ),
        "{stderr}"
    );
    let stdout = text(&out.stdout);
    let runs = inline_runs(&stdout);
    assert_eq!(runs.len(), 7, "{stdout}");
    let recs: Vec<dcg_calls::saved_format::CallRecord> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: u64| recs.iter().find(|r| r.id == id).unwrap();
    let children = |id: u64| {
        let mut c: Vec<_> = recs.iter().filter(|r| r.parent == Some(id)).collect();
        c.sort_by_key(|r| r.id);
        c
    };
    let mut copies: Vec<_> = recs.iter().filter(|r| r.inline.is_some()).collect();
    copies.sort_by_key(|r| r.id);
    assert_eq!(copies.len(), runs.len(), "{stdout}");
    for (c, (caller, v, k)) in copies.iter().zip(&runs) {
        let site = c.inline.as_ref().unwrap();
        assert_eq!(c.func, "scale", "{c:?}");
        assert_eq!(&site.container, caller, "{c:?}");
        assert!(site.file.ends_with("inline.c") && site.line > 0, "{c:?}");
        assert_eq!(
            c.module.as_deref(),
            Some(bin.file_name().unwrap().to_str().unwrap())
        );
        // Its caller's frame holds it; no return value.
        let parent = by_id(c.parent.expect("a parent"));
        assert_eq!(&parent.func, caller, "{c:?}");
        assert!(parent.inline.is_none());
        assert_eq!(c.ret, None, "{c:?}");
        assert_eq!(arg(c, "v"), Some(v.as_str()), "{c:?}");
        assert_eq!(arg(c, "k"), Some(k.as_str()), "{c:?}");
        // The call made from the copy's code is its child.
        let inside = children(c.id);
        assert_eq!(inside.len(), 1, "{inside:?}");
        assert_eq!(inside[0].func, "helper");
        assert_eq!(arg(inside[0], "x"), Some(v.as_str()), "{inside:?}");
        // The caller's other call, after the copy (first) or before it (second), is
        // not under it.
        let kids = children(parent.id);
        let names: Vec<&str> = kids.iter().map(|r| r.func.as_str()).collect();
        match caller.as_str() {
            "first" => assert_eq!(names, ["scale", "helper"], "{kids:?}"),
            "second" => {
                assert_eq!(names, ["helper", "scale"], "{kids:?}");
                assert_eq!(arg(kids[0], "x"), arg(parent, "b"), "{kids:?}");
            }
            _ => assert_eq!(names, ["scale", "scale", "scale"], "{kids:?}"),
        }
    }
    // first and second ran twice, one frame of their copy per run; third ran its copy
    // three times in one call.
    for (caller, calls, copies) in [("first", 2, 1), ("second", 2, 1), ("third", 1, 3)] {
        let found: Vec<_> = recs.iter().filter(|r| r.func == caller).collect();
        assert_eq!(found.len(), calls, "{caller}: {found:?}");
        for r in found {
            let n = children(r.id).iter().filter(|c| c.inline.is_some()).count();
            assert_eq!(n, copies, "{r:?}");
        }
    }

    // Text: the copies alone, then with the call made from them.
    let out = dcg(&["--args", "--func", &scale, "--", b]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    check_parses(&stdout);
    let runs = inline_runs(&stdout);
    let mut want = String::new();
    for (i, (caller, v, k)) in runs.iter().enumerate() {
        let args = match caller.as_str() {
            "first" => format!("a={v}"),
            "second" => {
                let a: i64 = v.parse::<i64>().unwrap() - (2 * k.parse::<i64>().unwrap() + 1);
                format!("a={a}, b={k}")
            }
            _ => format!(
                "n={}, k={k}",
                runs.iter().filter(|r| r.0 == "third").count()
            ),
        };
        // third's runs are one call.
        let opens = i == 0 || caller != "third" || runs[i - 1].0 != "third";
        let closes = runs
            .get(i + 1)
            .is_none_or(|r| caller != "third" || r.0 != "third");
        if opens {
            want.push_str(&format!("{caller}({args}) {{\n"));
        }
        want.push_str(&format!(
            "  scale(v={v}, k={k}); /* inlined in {caller} */\n"
        ));
        if closes {
            want.push_str(&format!("}} /* {caller} */\n"));
        }
    }
    assert_eq!(calls(&stdout), want);
    let out = dcg(&["--args", "--func", &scale, "--func", &helper, "--", b]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    check_parses(&stdout);
    let lines = calls(&stdout);
    assert!(
        lines.starts_with(
            "first(a=4) {
  scale(v=4, k=3) /* inlined in first */ {
    helper(x=4);
  } /* scale */
  helper(x=31);
} /* first */
second(a=4, b=5) {
  helper(x=5);
  scale(v=15, k=5) /* inlined in second */ {
    helper(x=15);
  } /* scale */
} /* second */
"
        ),
        "{lines}"
    );

    // --no-inline-frames: the callers alone hold the calls.
    let out = dcg(&[
        "--no-inline-frames",
        "--func",
        &scale,
        "--func",
        &helper,
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = calls(&text(&out.stdout));
    assert!(!lines.contains("scale"), "{lines}");
    assert!(
        lines.starts_with("first() {\n  helper();\n  helper();\n} /* first */\n"),
        "{lines}"
    );
}

/// Unoptimized code (-O0: always_inline copies, entry probes after the prologue): the
/// return address is read by a probe at the entry (the uretprobe has replaced it by the
/// prologue's end), so the call after the copy is outside it. DWARF gives the copies'
/// parameters no location at their first instruction here: `?`, or the program's value.
#[test]
fn inlined_copies_at_o0() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "inline", "-O0");
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--args",
        "--func",
        &format!("{b}:scale"),
        "--func",
        &format!("{b}:helper"),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    check_parses(&stdout);
    let runs = inline_runs(&stdout);
    let (v, k) = (&runs[0].1, &runs[0].2);
    let lines = calls(&stdout);
    let first = lines.lines().nth(1).unwrap();
    let shown = first
        .trim()
        .strip_prefix("scale(")
        .and_then(|r| r.strip_suffix(") /* inlined in first */ {"))
        .unwrap_or_else(|| panic!("{lines}"));
    for (arg, want) in shown.split(", ").zip([v, k]) {
        let (name, value) = arg.split_once('=').unwrap();
        assert!(value == "?" || value == want, "{name}={value}: {lines}");
    }
    let shape: String = lines
        .lines()
        .map(|l| match l.split_once("scale(") {
            Some((indent, rest)) => {
                format!("{indent}scale(…){}\n", &rest[rest.find(')').unwrap() + 1..])
            }
            None => format!("{l}\n"),
        })
        .collect();
    assert!(
        shape.starts_with(&format!(
            "first(a={v}) {{
  scale(…) /* inlined in first */ {{
    helper(x={v});
  }} /* scale */
  helper(x={});
}} /* first */
second(",
            3 * (2 * v.parse::<i64>().unwrap() + 1) + v.parse::<i64>().unwrap()
        )),
        "{lines}"
    );
}

/// A function both inlined (in the copy of another inline function) and out of line
/// (tests/uprobe/inline.c: twice, outer, user): the out-of-line calls are traced as
/// always, the copy is a frame inside the enclosing copy's frame, each with the
/// arguments the program passed.
#[test]
fn inlined_and_out_of_line_copies() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "inline", "-O2");
    let b = bin.to_str().unwrap();
    let f = |name: &str| format!("{b}:{name}");
    let out = dcg(&[
        "--args",
        "--show-retvals",
        "--func",
        &f("twice"),
        "--func",
        &f("outer"),
        "--func",
        &f("helper"),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for name in ["twice", "outer"] {
        assert!(
            stderr.contains(&format!("{name}: a copy inlined in user (traced)")),
            "{stderr}"
        );
    }
    let stdout = text(&out.stdout);
    check_parses(&stdout);
    // The program's last line of each kind.
    let said = |prefix: &str| -> String {
        stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {stdout}"))
            .to_string()
    };
    // "user: outer(A) twice(V)", "twice: N", "results U W"
    let copies = said("user: ");
    let (a, v) = copies
        .strip_prefix("outer(")
        .and_then(|r| r.strip_suffix(')'))
        .and_then(|r| r.split_once(") twice("))
        .unwrap();
    let n = said("twice: ");
    let results = said("results ");
    let (u, w) = results.split_once(' ').unwrap();
    let lines = calls(&stdout);
    let want = format!(
        "user(a={a}) {{
  outer(a={a}) /* inlined in user */ {{
    twice(v={v}) /* inlined in user */ {{
      helper(x={v}); /* ret={} */
    }} /* twice */
  }} /* outer */
}} /* user ret={u} */
twice(v={n}) {{
  helper(x={n}); /* ret={} */
}} /* twice ret={w} */
",
        2 * v.parse::<i64>().unwrap() + 1,
        2 * n.parse::<i64>().unwrap() + 1,
    );
    assert!(lines.ends_with(&want), "{lines}");
    // Every frame is named by its binary, also the enclosing copy (opened without a probe
    // of its own).
    let out = dcg(&["--json", "--func", &f("twice"), "--", b]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let recs: Vec<dcg_calls::saved_format::CallRecord> = text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let name = bin.file_name().unwrap().to_str().unwrap();
    let inline: Vec<(&str, &str)> = recs
        .iter()
        .filter_map(|r| Some((r.func.as_str(), r.inline.as_ref()?.container.as_str())))
        .collect();
    assert_eq!(inline, [("twice", "user"), ("outer", "user")], "{recs:?}");
    for r in &recs {
        assert_eq!(r.module.as_deref(), Some(name), "{r:?}");
    }
}

#[test]
fn two_threads() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "threads", "-O0");
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--func",
        &format!("{b}:*"),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout).replace("done 4\n", "");
    check_parses(&stdout);
    // Group lines by thread id, threads in order of appearance; every line names its
    // thread, with the whole name (`threads-O0`). (The comm is the kernel's
    // cached name of the pid: the first events of a reused pid can still show the previous
    // owner's, e.g. `bash-4265` then `threads-4265`.)
    let mut order: Vec<String> = Vec::new();
    let mut comms: Vec<String> = Vec::new();
    let mut by: std::collections::HashMap<String, String> = Default::default();
    for l in stdout.lines() {
        let r = row(l);
        let p = r.proc_.expect("comm-tid column with two tasks");
        let (comm, tid) = p.rsplit_once('-').expect("comm-tid");
        let key = format!("-{tid}");
        if !order.contains(&key) {
            order.push(key.clone());
        }
        comms.push(format!("{comm}{key}"));
        let e = by.entry(key).or_default();
        e.push_str(&r.text);
        e.push('\n');
    }
    assert_eq!(order.len(), 3, "{stdout}");
    let pids: Vec<u32> = order
        .iter()
        .map(|p| p.rsplit_once('-').unwrap().1.parse().unwrap())
        .collect();
    let (main_t, t1, t2) = {
        let mut sorted = pids.clone();
        sorted.sort();
        (sorted[0], sorted[1], sorted[2])
    };
    let get = |tid: u32| {
        let p = order
            .iter()
            .find(|p| p.ends_with(&format!("-{tid}")))
            .unwrap();
        by[p].clone()
    };
    let thread = |id: u32| {
        format!(
            "thread_main(arg=0x{id}) {{
  work(id={id}) {{
    leaf(x={id}); /* ret={} */
    leaf(x={}); /* ret={} */
  }} /* work ret={} */
}} /* thread_main ret=NULL */
",
            id * 2,
            id + 10,
            (id + 10) * 2,
            id * 2 + (id + 10) * 2
        )
    };
    assert_eq!(get(t1), thread(1));
    assert_eq!(get(t2), thread(2));
    // The main thread's only call has no traced call of its own thread inside.
    assert_eq!(get(main_t), "main(); /* ret=0 */\n");
    assert!(
        order
            .iter()
            .all(|k| comms.iter().any(|c| c == &format!("threads-O0{k}"))),
        "{comms:?}"
    );
}

#[test]
fn program_that_crashes() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "crash", "-O0");
    let b = bin.to_str().unwrap();
    // The tree goes to a file: on a shared stdout the program's own line can land
    // between dcg's writes.
    let tree = dir.path().join("tree.txt");
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--func",
        &format!("{b}:*"),
        "--trace-output",
        tree.to_str().unwrap(),
        "--",
        b,
    ]);
    assert_eq!(out.status.code(), Some(128 + 11), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("killed by SIGSEGV"), "{stderr}");
    assert_eq!(text(&out.stdout), "about to crash\n");
    let stdout = std::fs::read_to_string(&tree).unwrap();
    assert_eq!(
        calls(&stdout),
        "main() {
  process(p=0x…) {
    ok(x=1); /* ret=2 */
    deref(p=0x…); /* ret=5 */
  } /* process ret=7 */
  process(p=NULL) {
    ok(x=1); /* ret=2 */
    deref(p=NULL); /* no return */
  } /* process (no return) */
} /* main (no return) */
"
    );
}

#[test]
fn depth_errors_only_json_and_output() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "values", "-O0");
    let b = bin.to_str().unwrap();
    let (f_outer, f_inner, f_check) = (
        format!("{b}:outer"),
        format!("{b}:inner"),
        format!("{b}:check_arg"),
    );
    let funcs = ["--func", f_outer.as_str(), "--func", f_inner.as_str()];
    let funcs2 = [&funcs[..], &["--func", f_check.as_str()]].concat();
    // --depth 2: check_arg (depth 2) is hidden, inner becomes a leaf.
    // The program returns -errno values as the kernel does: read them so (--errno).
    let mut a = vec!["--show-retvals", "--errno", "--args", "--depth", "2"];
    a.extend(funcs2.iter().copied());
    a.extend(["--", b]);
    let out = dcg(&a);
    assert!(out.status.success());
    assert_eq!(
        calls(&text(&out.stdout).replace("done 30\n", "")),
        "check_arg(x=-5); /* ret=-EINVAL */
check_arg(x=7); /* ret=7 */
outer(x=3) {
  inner(x=3); /* ret=-EINVAL */
} /* outer ret=-EINVAL from check_arg */
outer(x=12) {
  inner(x=12); /* ret=2 */
} /* outer ret=2 */
"
    );
    // --errors-only: only the paths to error returns.
    let mut a = vec!["--show-retvals", "--errno", "--args", "--errors-only"];
    a.extend(funcs2.iter().copied());
    a.extend(["--", b]);
    let out = dcg(&a);
    assert_eq!(
        calls(&text(&out.stdout).replace("done 30\n", "")),
        "check_arg(x=-5); /* ret=-EINVAL */
outer(x=3) {
  inner(x=3) {
    check_arg(x=-7); /* ret=-EINVAL */
  } /* inner ret=-EINVAL */
} /* outer ret=-EINVAL from check_arg */
"
    );
    // --json and --output: the same records.
    let saved = dir.path().join("calls.jsonl");
    let mut a = vec![
        "--show-retvals",
        "--errno",
        "--args",
        "--json",
        "--output",
        saved.to_str().unwrap(),
    ];
    a.extend(funcs.iter().copied());
    a.extend(["--", b]);
    let out = dcg(&a);
    assert!(out.status.success());
    let stdout = text(&out.stdout).replace("done 30\n", "");
    let recs: Vec<dcg_calls::saved_format::CallRecord> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (header, saved_recs) = dcg_calls::saved_format::read(std::io::BufReader::new(
        std::fs::File::open(&saved).unwrap(),
    ))
    .unwrap();
    assert!(header.source.contains("uprobes on"), "{header:?}");
    assert_eq!(recs, saved_recs);
    let summary: Vec<String> = recs
        .iter()
        .map(|r| {
            format!(
                "{} parent={:?} depth={} {}({}) ret={} error={} origin={:?}",
                r.id,
                r.parent,
                r.depth,
                r.func,
                dcg_tests::args_text(r),
                r.ret.as_deref().unwrap_or("-"),
                r.error,
                r.origin
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "1 parent=Some(0) depth=1 inner(x=3) ret=-EINVAL error=true origin=None",
            "0 parent=None depth=0 outer(x=3) ret=-EINVAL error=true origin=Some(1)",
            "3 parent=Some(2) depth=1 inner(x=12) ret=2 error=false origin=None",
            "2 parent=None depth=0 outer(x=12) ret=2 error=false origin=None",
        ]
    );
    assert!(recs.iter().all(|r| r.duration_ns.is_some() && r.decoded));
    assert!(recs
        .iter()
        .all(|r| r.module.as_deref() == Some("values-O0")));
}

/// Wait until `cond` or panic after `secs`.
fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Killer(std::process::Child);

impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn attach_and_detach() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "loop", "-O0");
    let b = bin.to_str().unwrap();
    let mut prog = Killer(
        Command::new(&bin)
            .args(["0", "2000"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = prog.0.id().to_string();
    std::thread::sleep(Duration::from_millis(100));
    let out = dcg(&[
        "--show-retvals",
        "--args",
        "--count",
        "3",
        "--func",
        &format!("{b}:tick"),
        "-p",
        &pid,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = calls(&text(&out.stdout));
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 3, "{got}");
    for l in &lines {
        assert!(
            l.starts_with("tick(i=") && l.contains(", tag=\"tick\"); /* ret="),
            "{l}"
        );
    }
    assert!(text(&out.stderr).contains(&format!("detached from process {pid}")));
    // It keeps running, without probes.
    std::thread::sleep(Duration::from_millis(100));
    assert!(prog.0.try_wait().unwrap().is_none(), "the process died");
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    assert!(maps.contains(b), "{maps}");
}

/// The pid of the command dcg `dpid` started.
fn child_of(dpid: u32) -> i32 {
    let kids = std::fs::read_to_string(format!("/proc/{dpid}/task/{dpid}/children")).unwrap();
    kids.split_whitespace().next().unwrap().parse().unwrap()
}

fn probes_live(dpid: u32) -> bool {
    std::fs::read_to_string(format!(
        "{TRACEFS}/instances/dcg-{dpid}/events/dcg_{dpid}/enable"
    ))
    .is_ok_and(|s| s.trim() == "1")
}

#[test]
fn sigint_and_sigterm_stop_cleanly() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use std::io::Read;
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "loop", "-O0");
    let b = bin.to_str().unwrap();
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let mut child = Command::new(dcg_exe())
            .args([
                "trace",
                "--engine",
                "uprobe",
                "--show-retvals",
                "--func",
                &format!("{b}:tick"),
                "--",
                b,
                "0",
                "1000",
            ])
            .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let dpid = child.id();
        wait_for(60, "the probes", || probes_live(dpid));
        let cpid = child_of(dpid);
        std::thread::sleep(Duration::from_millis(200));
        kill(Pid::from_raw(dpid as i32), sig).unwrap();
        wait_for(60, "dcg to exit", || child.try_wait().unwrap().is_some());
        // The command dcg started ends with it (as under `perf record -- CMD`).
        let gone = kill(Pid::from_raw(cpid), None).is_err();
        if !gone {
            let _ = kill(Pid::from_raw(cpid), Signal::SIGKILL);
        }
        let mut stdout = String::new();
        let mut stderr = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(gone, "{sig}: the command keeps running: {stderr}");
        assert_clean(dpid);
        assert!(child.wait().unwrap().success(), "{sig}: {stderr}");
        let got = calls(&stdout);
        assert!(got.lines().count() >= 1, "{got}");
        for l in got.lines() {
            assert!(
                l.starts_with("tick(); /* ret=") || l == "tick(); /* no return */",
                "{l}"
            );
        }
        assert!(
            stderr.contains(&format!("was still running: killed by {sig}")),
            "{stderr}"
        );
    }
}

#[test]
fn count_stops_the_command() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "loop", "-O0");
    let b = bin.to_str().unwrap();
    let out = dcg(&[
        "--args",
        "--count",
        "2",
        "--func",
        &format!("{b}:tick"),
        "--",
        b,
        "0",
        "1000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        calls(&text(&out.stdout)),
        "tick(i=0, tag=\"tick\");\ntick(i=1, tag=\"tick\");\n"
    );
    assert!(text(&out.stderr).contains("was still running: killed by SIGTERM"));
}

#[test]
fn stale_session_of_a_killed_dcg_is_removed() {
    require_uprobes!(exclusive);
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "loop", "-O0");
    let b = bin.to_str().unwrap();
    let mut child = Command::new(dcg_exe())
        .args([
            "trace",
            "--engine",
            "uprobe",
            "--func",
            &format!("{b}:tick"),
            "--",
            b,
            "0",
            "1000",
        ])
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dpid = child.id();
    wait_for(60, "the probes", || probes_live(dpid));
    let cpid = child_of(dpid);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(cpid),
        nix::sys::signal::Signal::SIGKILL,
    );
    assert!(!leftovers(dpid).is_empty(), "SIGKILL cannot clean up");
    // The next session removes it.
    let out = dcg(&["--func", &format!("{b}:tick"), "--", b, "3"]);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains(&format!("removed stale instance dcg-{dpid}")),
        "{}",
        text(&out.stderr)
    );
    assert_clean(dpid);
    assert_eq!(
        calls(&text(&out.stdout))
            .lines()
            .filter(|l| l.starts_with("tick();"))
            .count(),
        3
    );
}

/// Compile `tests/uprobe/<name>.c` with `cc` (gcc or clang) and `opts`, with -g.
fn compile_with(dir: &Path, cc: &str, name: &str, opts: &[&str]) -> Option<PathBuf> {
    let out = dir.join(format!("{name}-{cc}{}", opts.join("")));
    let st = Command::new(cc)
        .args(opts)
        .args(["-g", "-o"])
        .arg(&out)
        .arg(src(&format!("{name}.c")))
        .status()
        .ok()?;
    assert!(st.success(), "{cc} failed for {name}.c");
    Some(out)
}

/// The host's libc, as the traced programs load it.
fn host_libc() -> String {
    let out = Command::new("gcc")
        .arg("-print-file-name=libc.so.6")
        .output()
        .expect("running gcc");
    let p = PathBuf::from(text(&out.stdout).trim());
    p.canonicalize().unwrap_or(p).display().to_string()
}

/// tests/uprobe/abi.c at -O0 and -O2 with gcc and clang: every value the program prints
/// for itself (arguments and returns of every ABI class) equals dcg's, or dcg says it
/// cannot read it (`?xmm0`), only where no uprobe can: xmm and x87 registers. (The
/// oracle prints `?` for a quad return, which C's printf cannot show: dcg must not show
/// one either.)
#[test]
fn abi_values_agree_with_the_program() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let libc = host_libc();
    let have_clang = Command::new("clang").arg("--version").output().is_ok();
    // Returns that no uprobe can read, whatever the optimization: in xmm0 and st0.
    let float_returns = [
        "ld_ret.ret=?st0",
        "dsum.ret=?xmm0",
        "fhalf.ret=?xmm0",
        "sd_get.ret=?xmm0",
        "cx_re.ret=?xmm0",
        "quad_id.ret=?xmm0",
        "make_cz.ret=?xmm0:xmm1",
    ];
    let o2_unreadable = [
        "ld_ret.ret=?st0",
        "dsum.x=?xmm0",
        "dsum.y=?xmm1",
        "dsum.ret=?xmm0",
        "fhalf.f=?xmm0",
        "fhalf.ret=?xmm0",
        "sd_get.s=?xmm0",
        "sd_get.ret=?xmm0",
        "ld_get.s=?rdi:xmm0",
        "cx_re.z=?xmm0:xmm1",
        "cx_re.ret=?xmm0",
        "quad_id.x=?xmm0",
        "quad_id.ret=?xmm0",
        "make_cz.a=?xmm0",
        "make_cz.ret=?xmm0:xmm1",
    ];
    for cc in ["gcc", "clang"] {
        if cc == "clang" && !have_clang {
            eprintln!("clang is missing: only gcc");
            continue;
        }
        // -O0 without a frame pointer: no frame slots to read after the prologue, every
        // argument where the System V ABI puts it at the entry (the classes of long
        // double returns, SSE, mixed, packed and empty structs).
        for opts in [&["-O0"][..], &["-O2"], &["-O0", "-fomit-frame-pointer"]] {
            let opt = opts.join(" ");
            let bin = compile_with(dir.path(), cc, "abi", opts).unwrap();
            let b = bin.to_str().unwrap();
            let trace = dir.path().join(format!("trace-{cc}{}.txt", opts.join("")));
            let out = dcg(&[
                "--args",
                "--show-retvals",
                "--func",
                &format!("{b}:*"),
                "--func",
                &format!("{libc}:setvbuf"),
                "--trace-output",
                trace.to_str().unwrap(),
                "--",
                b,
            ]);
            let err = text(&out.stderr);
            assert!(out.status.success(), "{err}");
            let traced = std::fs::read_to_string(&trace).unwrap();
            let oracle = oracle_calls(&text(&out.stdout));
            assert_eq!(oracle.len(), 24, "{}", text(&out.stdout));
            let a = agreement(&oracle, &dcg_calls(&traced));
            eprintln!(
                "{cc} {opt}: {} values, {} agree, {} unreadable {:?}, {} wrong",
                a.checked,
                a.agree,
                a.unreadable.len(),
                a.unreadable,
                a.wrong.len()
            );
            assert!(a.wrong.is_empty(), "{cc} {opt}: {:#?}\n{traced}", a.wrong);
            if opt == "-O0" {
                // Unoptimized code spills every argument to its frame: all are read.
                assert_eq!(a.unreadable, float_returns, "{cc} {opt}\n{traced}");
            } else {
                // Without frame slots (optimized code, or no frame pointer) floats stay
                // in xmm registers, where no uprobe reads; everything else is read (at a
                // global function's entry by the ABI where DWARF has no location there).
                assert_eq!(a.unreadable, o2_unreadable, "{cc} {opt}\n{traced}");
            }
            assert_eq!(a.agree + a.unreadable.len(), a.checked, "{a:?}");
            if a.unreadable.iter().any(|u| u.contains("xmm")) {
                assert!(
                    err.contains("xmm") && err.contains("cannot be read"),
                    "the reason once on stderr: {err}"
                );
            }
        }
    }
}

/// The kernel's -errno reading of user-space returns only when asked: `minus` returns
/// -1 and -2 as numbers, and as `-EPERM`/`-ENOENT` errors with `--errno`.
#[test]
fn errno_names_only_when_asked() {
    require_uprobes!();
    let dir = tempfile::tempdir().unwrap();
    let bin = compile_with(dir.path(), "gcc", "abi", &["-O2"]).unwrap();
    let b = bin.to_str().unwrap();
    let func = format!("{b}:minus");
    let plain = dcg(&["--show-retvals", "--func", &func, "--", b]);
    let c = calls(&text(&plain.stdout));
    assert_eq!(c, "minus(); /* ret=-1 */\nminus(); /* ret=-2 */\n");
    let errno = dcg(&["--show-retvals", "--errno", "--func", &func, "--", b]);
    let c = calls(&text(&errno.stdout));
    assert_eq!(c, "minus(); /* ret=-EPERM */\nminus(); /* ret=-ENOENT */\n");
    let errors = dcg(&["--show-retvals", "--errors-only", "--func", &func, "--", b]);
    assert_eq!(
        calls(&text(&errors.stdout)),
        "",
        "not errors without --errno"
    );
}

/// libc traced by its public names with its debug file (Debian's libc6-dbg): `calloc`,
/// `free`, `puts` are `__libc_calloc`, `__libc_free`, `_IO_puts` in DWARF; `kill` and
/// `chmod` are assembly (traced without arguments, said why); only the exec'd program is
/// recorded (the first malloc is the program's own).
#[test]
fn libc_by_public_names() {
    require_uprobes!();
    let libc = host_libc();
    if !Path::new("/usr/lib/debug/.build-id").is_dir() {
        eprintln!("skipping: no debug files (install libc6-dbg)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = compile_with(dir.path(), "gcc", "libc", &["-O2"]).unwrap();
    let b = bin.to_str().unwrap();
    let f = |name: &str| format!("{libc}:{name}");
    let (calloc, free, puts, kill, chmod, malloc, atoi) = (
        f("calloc"),
        f("free"),
        f("puts"),
        f("kill"),
        f("chmod"),
        f("malloc"),
        f("atoi"),
    );
    let trace = dir.path().join("trace.txt");
    let out = dcg(&[
        "--args",
        "--show-retvals",
        "--func",
        &calloc,
        "--func",
        &free,
        "--func",
        &puts,
        "--func",
        &kill,
        "--func",
        &chmod,
        "--func",
        &malloc,
        "--func",
        &atoi,
        "--trace-output",
        trace.to_str().unwrap(),
        "--",
        b,
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let program = text(&out.stdout);
    let said = |key: &str| -> String {
        program
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} in {program}"))
            .to_string()
    };
    let traced = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<String> = traced
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| row(l).text.trim().to_string())
        .collect();
    let raw: Vec<&str> = traced
        .lines()
        .filter_map(|l| dcg_tests::oracle::call_text(l).map(|(_, t)| t.trim()))
        .collect();
    // The program's first allocation is the first malloc recorded.
    let first_malloc = raw
        .iter()
        .find(|t| t.starts_with("__libc_malloc("))
        .unwrap_or_else(|| panic!("{traced}"));
    assert!(
        first_malloc.contains(&format!("ret={} */", said("malloc"))),
        "{first_malloc} vs the program's {}",
        said("malloc")
    );
    assert!(
        raw.contains(
            &format!(
                "__libc_calloc(n=3, elem_size=8); /* ret={} */",
                said("calloc")
            )
            .as_str()
        ),
        "{traced}"
    );
    assert!(
        raw.contains(&format!("__libc_free(mem={});", said("malloc")).as_str()),
        "{traced}"
    );
    assert!(
        lines.contains(&"_IO_puts(str=\"done\"); /* ret=5 */".to_string()),
        "{traced}"
    );
    // Assembly wrappers without DWARF of their own, typed by the declarations in the
    // program's DWARF (`kill(pid_t, int)`, `chmod(const char *, mode_t)`): arguments where
    // the ABI passes them, unnamed.
    assert!(
        raw.iter()
            .any(|t| t.starts_with("kill(arg1=") && t.ends_with(", arg2=0); /* ret=0 */")),
        "{traced}"
    );
    assert!(
        raw.contains(
            &format!(
                "chmod(arg1=\"/nonexistent/dcg-test\", arg2=420); /* ret={} */",
                said("chmod")
            )
            .as_str()
        ),
        "{traced}"
    );
    for name in ["kill", "chmod"] {
        assert!(
            err.contains(&format!("{name}: no DWARF of its own")) && err.contains("typed by"),
            "{err}"
        );
    }
    // Only the exec'd program is recorded: every call is its own (pid, name), none of
    // dcg's forked child before its exec.
    let json = dir.path().join("trace.jsonl");
    let out = dcg(&[
        "--show-retvals",
        "--json",
        "--func",
        &malloc,
        "--trace-output",
        json.to_str().unwrap(),
        "--",
        b,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let program = text(&out.stdout);
    let pid: u32 = program
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .unwrap()
        .parse()
        .unwrap();
    let first: String = program
        .lines()
        .find_map(|l| l.strip_prefix("malloc="))
        .unwrap()
        .to_string();
    let recs: Vec<dcg_calls::saved_format::CallRecord> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!recs.is_empty());
    let comm: String = bin
        .file_name()
        .unwrap()
        .to_string_lossy()
        .chars()
        .take(15)
        .collect();
    for r in &recs {
        assert_eq!(r.pid, Some(pid), "{r:?}");
        assert_eq!(r.comm.as_deref(), Some(comm.as_str()), "{r:?}");
    }
    assert_eq!(recs[0].ret.as_deref(), Some(first.as_str()), "{recs:?}");
    // atoi is inlined in libc too, but its out-of-line calls are traced: no such note.
    assert!(
        lines.contains(&format!("atoi(nptr=\"42\"); /* ret={} */", said("atoi"))),
        "{traced}"
    );
    assert!(!err.contains("atoi: inlined into"), "{err}");
}
