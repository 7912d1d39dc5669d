//! `dcg report` on real captures from the test kernel (`tests/data/captures`) with a
//! signature db built from its DWARF: golden outputs for every format, Chrome slices
//! parsed back and checked for nesting, the DOT rendered by Graphviz, folded counts
//! adding up; plus hand-made call sets for the corner cases.
//!
//! Bless goldens with `DCG_BLESS=1 cargo test -p dcg-tests --test report`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;

use dcg_calls::saved_format::{self, CallRecord};
use dcg_dbset::DbSet;
use dcg_report::{
    chrome, folded, CallGraph, FoldedWeight, Format, InputKind, ReportInput, ReportOptions,
};
use dcg_tests::{capture, check_golden, dcg_bin, testkernel_db};

// ---- inputs ------------------------------------------------------------------------

fn db_set() -> DbSet {
    dcg_dbresolve::open_paths(&[testkernel_db()]).unwrap()
}

/// Calls of a capture, decoded with the test-kernel db.
fn load(name: &str) -> CallGraph {
    let bytes = std::fs::read(capture(name)).unwrap();
    let loaded = dcg_report::load_ftrace(&bytes[..], name, &db_set()).unwrap();
    CallGraph::new(loaded.records).unwrap()
}

/// A capture decoded into a saved-calls file, as `dcg decode --output` writes it.
fn saved_calls(name: &str) -> Vec<u8> {
    let set = db_set();
    let text = std::fs::read(capture(name)).unwrap();
    let mut saved = Vec::new();
    saved_format::write_header(&mut saved, name).unwrap();
    let mut dec = dcg_calls::decode::Decoder::new(
        &set,
        dcg_calls::decode::Options {
            json: true,
            ..Default::default()
        },
    );
    dec.decode_stream(&text[..], &mut saved).unwrap();
    dec.finish(&mut saved).unwrap();
    saved
}

fn render(graph: &CallGraph, input: &ReportInput, format: Format) -> String {
    let args = ReportOptions {
        format,
        ..ReportOptions::default()
    };
    let mut out = Vec::new();
    dcg_report::write_report(&args, input, graph, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn ftrace_input(name: &str) -> ReportInput {
    ReportInput {
        source: name.to_string(),
        kind: InputKind::FtraceText { dbs: 1 },
        root: None,
    }
}

/// Compare with `tests/golden/report/<name>`; `DCG_BLESS=1` writes it instead.
fn check_report_golden(name: &str, actual: &str) {
    check_golden(&format!("report/{name}"), actual);
}

const CAPTURES: [&str; 3] = ["a.txt", "d.txt", "h.txt"];
const FORMATS: [(Format, &str); 5] = [
    (Format::Text, "text"),
    (Format::Json, "json"),
    (Format::Dot, "dot"),
    (Format::Folded, "folded"),
    (Format::Chrome, "chrome.json"),
];

// ---- golden outputs ----------------------------------------------------------------

/// a: retval only (CPU column); d: abstime, CPU, task/pid columns; h: module functions
/// and arguments.
#[test]
fn golden_every_format() {
    for cap in CAPTURES {
        let graph = load(cap);
        let stem = cap.trim_end_matches(".txt");
        for (format, ext) in FORMATS {
            let out = render(&graph, &ftrace_input(cap), format);
            check_report_golden(&format!("{stem}.{ext}"), &out);
        }
    }
}

#[test]
fn facts_of_a_txt() {
    let g = load("a.txt");
    let s = g.summarize();
    let f = |name: &str| {
        s.functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} not in the report"))
    };
    // One top-level do_sys_openat2 per workload command; their errnos by name. The other
    // top-level calls are timer interrupts that came between them.
    let open = f("do_sys_openat2");
    assert_eq!(open.calls, 19);
    let root_name = |r: &usize| g.names[g.func[*r] as usize].as_str();
    assert_eq!(
        g.roots
            .iter()
            .filter(|r| root_name(r) == "do_sys_openat2")
            .count(),
        19
    );
    for r in &g.roots {
        let n = root_name(r);
        assert!(
            n == "do_sys_openat2" || n.contains("irq") || n.contains("interrupt"),
            "top-level {n}"
        );
    }
    for e in [
        "-ENOENT", "-ENOTDIR", "-EISDIR", "-ELOOP", "-ENXIO", "-EACCES",
    ] {
        assert!(open.errors.contains_key(e), "{e}: {:?}", open.errors);
    }
    // ERR_PTR(-ENOENT) counts as -ENOENT.
    assert!(f("step_into_slowpath").errors.contains_key("-ENOENT"));
    // Self time is the duration minus the callees', so it never exceeds the total.
    for func in &s.functions {
        assert!(func.self_ns <= func.total_ns, "{}", func.name);
    }
    // The symlink loop (-ELOOP): one path_openat walks the link 40+ times.
    let name = |i: u32| g.names[i as usize].as_str();
    let e = s
        .edges
        .iter()
        .find(|e| name(e.caller) == "path_openat" && name(e.callee) == "link_path_walk")
        .unwrap();
    assert!(e.max_per_call >= 40, "{}", e.max_per_call);
    assert_eq!(e.caller_calls, 19);
    // Every call but the top-level ones is on exactly one edge.
    let on_edges: u64 = s.edges.iter().map(|e| e.count).sum();
    assert_eq!(on_edges as usize, g.len() - g.roots.len());
}

/// A saved-calls file (decode --output), bare records (decode --json) and the ftrace text
/// they came from report alike.
#[test]
fn saved_calls_and_ftrace_text_agree() {
    let text = std::fs::read(capture("d.txt")).unwrap();
    let saved = saved_calls("d.txt");
    assert!(dcg_report::looks_like_saved_calls(&saved));
    assert!(!dcg_report::looks_like_saved_calls(&text));
    let loaded = dcg_report::load_saved(&saved[..], "saved").unwrap();
    assert_eq!(loaded.kind, InputKind::SavedCalls);
    let from_saved = CallGraph::new(loaded.records).unwrap();
    let from_text = load("d.txt");
    // `dcg decode --json` output: the records without the header.
    let body = &saved[saved.iter().position(|&b| b == b'\n').unwrap() + 1..];
    assert!(dcg_report::looks_like_records(body) && !dcg_report::looks_like_records(&text));
    let from_json =
        CallGraph::new(dcg_report::load_records(body, "d.txt").unwrap().records).unwrap();
    for (format, _) in FORMATS {
        let input = ReportInput {
            source: "d.txt".into(),
            kind: InputKind::SavedCalls,
            root: None,
        };
        let want = render(&from_text, &input, format);
        assert_eq!(render(&from_saved, &input, format), want, "{format:?}");
        assert_eq!(render(&from_json, &input, format), want, "{format:?}");
    }
}

/// Error origins: the table from saved calls equals the one from the ftrace text they came
/// from, the saved records' `origin` ids are the calls the report finds, and files written
/// before the field existed report the same.
#[test]
fn error_origins_from_saved_calls_and_text_agree() {
    let saved = saved_calls("a.txt");
    let records = dcg_report::load_saved(&saved[..], "saved").unwrap().records;
    let from_saved = CallGraph::new(records.clone()).unwrap();
    let from_text = load("a.txt");
    let table = from_text.summarize().origins;
    assert_eq!(from_saved.summarize().origins, table);

    // Each saved origin id is the call the report's rule finds for that top-level call.
    let origins = from_saved.origins();
    let mut failing = 0;
    for (i, r) in from_saved.calls.iter().enumerate() {
        if r.parent.is_none() {
            assert_eq!(
                r.origin,
                origins[i].map(|o| from_saved.calls[o].id),
                "{}",
                r.id
            );
            failing += usize::from(r.origin.is_some());
        } else {
            assert_eq!(r.origin, None);
        }
    }
    assert_eq!(failing, 11);

    // The table of a.txt: the workload's failing opens.
    let row = |e: &str| table.iter().find(|t| t.error == e).unwrap();
    let enoent = row("-ENOENT");
    assert_eq!(enoent.calls, 3);
    assert_eq!(enoent.origins[0].function, "step_into_slowpath");
    assert_eq!(enoent.origins[0].calls, 2);
    assert_eq!(
        enoent.origins[0].roots,
        vec![("do_sys_openat2".to_string(), 2)]
    );
    assert_eq!(row("-ELOOP").origins[0].function, "pick_link");
    assert_eq!(row("-EISDIR").origins[0].function, "path_openat");
    assert_eq!(table.iter().map(|t| t.calls).sum::<u64>(), 11);

    // Records without the field (files of an older dcg) give the same report.
    let old: Vec<CallRecord> = records
        .into_iter()
        .map(|mut r| {
            r.origin = None;
            r
        })
        .collect();
    let mut bytes = Vec::new();
    for r in &old {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("origin");
        serde_json::to_writer(&mut bytes, &v).unwrap();
        bytes.push(b'\n');
    }
    let old = dcg_report::load_records(&bytes[..], "old").unwrap().records;
    assert!(old.iter().all(|r| r.origin.is_none()));
    assert_eq!(CallGraph::new(old).unwrap().summarize().origins, table);
}

/// Origins in the report: chains through ERR_PTR and int returns, a different error in
/// between, orphans (top-level in the report), `--root`.
#[test]
fn error_origins_hand_made() {
    let failing = |mut r: CallRecord, ret: &str| {
        r.ret = Some(ret.into());
        r.error = true;
        r
    };
    // root0 { mid1 { leaf2 -ENOENT, leaf3 -ENOENT } ERR_PTR(-ENOENT) } -ENOENT
    // root4 { mid5 { leaf6 -ENOENT } -EINVAL } -ENOENT
    // orphan8 (parent 7 missing) { leaf9 -EIO } -EIO
    // root10 -EPERM
    let recs = vec![
        failing(call(2, Some(1), "leaf", None), "-ENOENT"),
        failing(call(3, Some(1), "other", None), "-ENOENT"),
        failing(call(1, Some(0), "mid", None), "ERR_PTR(-ENOENT)"),
        failing(call(0, None, "root", None), "-ENOENT"),
        failing(call(6, Some(5), "leaf", None), "-ENOENT"),
        failing(call(5, Some(4), "mid", None), "-EINVAL"),
        failing(call(4, None, "root", None), "-ENOENT"),
        failing(call(9, Some(8), "leaf", None), "-EIO"),
        failing(call(8, Some(7), "orphan", None), "-EIO"),
        failing(call(10, None, "alone", None), "-EPERM"),
    ];
    let g = CallGraph::new(recs).unwrap();
    let o = g.origins();
    let id = |i: Option<usize>| i.map(|i| g.calls[i].id);
    assert_eq!(id(o[0]), Some(2));
    assert_eq!(id(o[4]), Some(4));
    assert_eq!(id(o[5]), Some(5));
    let t = g.summarize().origins;
    let names = |e: &str| -> Vec<(String, u64)> {
        t.iter()
            .find(|r| r.error == e)
            .unwrap()
            .origins
            .iter()
            .map(|o| (o.function.clone(), o.calls))
            .collect()
    };
    assert_eq!(t[0].error, "-ENOENT");
    assert_eq!(
        names("-ENOENT"),
        vec![("leaf".to_string(), 1), ("root".to_string(), 1)]
    );
    assert_eq!(names("-EIO"), vec![("leaf".to_string(), 1)]);
    assert_eq!(names("-EPERM"), vec![("alone".to_string(), 1)]);
    let input = ReportInput {
        source: "hand-made".into(),
        kind: InputKind::SavedCalls,
        root: None,
    };
    let text = render(&g, &input, Format::Text);
    assert!(
        text.contains(
            "Top 20 error origins by errno\n  \
             calls error   origin failing top-level functions\n      \
             1 -ENOENT leaf   root (1)\n      \
             1 -ENOENT root   root (1)\n      \
             1 -EIO    leaf   orphan (1)\n      \
             1 -EPERM  alone  alone (1)\n"
        ),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render(&g, &input, Format::Json)).unwrap();
    assert_eq!(json["error_origins"][0]["error"], "-ENOENT");
    assert_eq!(json["error_origins"][0]["calls"], 2);
    assert_eq!(json["error_origins"][0]["origins"][0]["function"], "leaf");
    assert_eq!(
        json["error_origins"][0]["origins"][0]["roots"][0]["function"],
        "root"
    );
    // --root mid: mid's own error, from the first child returning it.
    let r = CallGraph::new(g.calls.clone()).unwrap().restrict_to("mid");
    let t = r.summarize().origins;
    assert_eq!(t.len(), 2);
    let e = t.iter().find(|e| e.error == "-ENOENT").unwrap();
    assert_eq!(e.origins[0].function, "leaf");
    assert_eq!(e.origins[0].roots, vec![("mid".to_string(), 1)]);
    let e = t.iter().find(|e| e.error == "-EINVAL").unwrap();
    assert_eq!(e.origins[0].function, "mid");
}

// ---- Chrome trace-event JSON --------------------------------------------------------

/// Parse Chrome JSON back; check every slice is complete, slices on one track are
/// properly nested (each one inside or after the open ones), and the count matches.
fn check_chrome(json: &str, calls: usize, what: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(v["displayTimeUnit"], "ns");
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let slices: Vec<serde_json::Value> =
        events.iter().filter(|e| e["ph"] == "X").cloned().collect();
    assert_eq!(slices.len(), calls, "{what}: one slice per call");
    // (pid, tid) → (start ns, end ns, name) of its slices.
    type Spans = Vec<(i64, i64, String)>;
    let mut tracks: BTreeMap<(u64, u64), Spans> = BTreeMap::new();
    let ns = |x: &serde_json::Value| (x.as_f64().expect("number") * 1000.0).round() as i64;
    for e in &slices {
        let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
        assert!(dur >= 0, "{what}: negative duration {e}");
        assert!(
            e["name"].is_string() && e["args"].is_object(),
            "{what}: {e}"
        );
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let name = e["name"].as_str().unwrap().to_string();
        tracks.entry(key).or_default().push((ts, ts + dur, name));
    }
    for (track, mut v) in tracks {
        // By start; the longer (enclosing) slice first among equal starts.
        v.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<(i64, i64, String)> = Vec::new();
        for s in v {
            while open.last().is_some_and(|o| o.1 <= s.0) {
                open.pop();
            }
            if let Some(o) = open.last() {
                assert!(
                    s.1 <= o.1,
                    "{what}: track {track:?}: {} [{}, {}] overlaps {} [{}, {}]",
                    s.2,
                    s.0,
                    s.1,
                    o.2,
                    o.0,
                    o.1
                );
            }
            open.push(s);
        }
    }
    slices
}

#[test]
fn chrome_slices_nest() {
    // a0: no return values; c: arguments; e: probe events; g2: raw companion text.
    for cap in [
        "a.txt",
        "a0.txt",
        "c.txt",
        "d.txt",
        "e.txt",
        "g2-text.txt",
        "h.txt",
    ] {
        let g = load(cap);
        let out = render(&g, &ftrace_input(cap), Format::Chrome);
        let slices = check_chrome(&out, g.len(), cap);
        if cap == "h.txt" {
            let bm = slices
                .iter()
                .find(|s| s["name"] == "bm_status_write [binfmt_misc]")
                .expect("module function slice");
            assert_eq!(bm["args"]["ret"], "-EINVAL");
            assert_eq!(bm["args"]["count"], "2");
            assert_eq!(bm["cat"], "call,error");
        }
        if cap == "d.txt" {
            // Real timestamps (µs) are kept: the first open starts at 20.554406 s.
            let first = slices
                .iter()
                .find(|s| s["name"] == "do_sys_openat2")
                .unwrap();
            assert_eq!(first["ts"].as_f64().unwrap(), 20554406.0);
            assert_eq!(first["pid"], 102);
        }
    }
}

// ---- Graphviz -----------------------------------------------------------------------

#[test]
fn dot_renders_with_graphviz() {
    for (cap, want) in [
        ("a.txt", &["do_sys_openat2", "link_path_walk", "ENOENT"][..]),
        (
            "h.txt",
            &[
                "bm_status_write [binfmt_misc]",
                "parse_command [binfmt_misc]",
            ][..],
        ),
    ] {
        let g = load(cap);
        let dot = render(&g, &ftrace_input(cap), Format::Dot);
        let mut child = match Command::new("dot")
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => panic!("running Graphviz dot: {e} (apt-get install graphviz)"),
        };
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(dot.as_bytes()));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(
            out.status.success(),
            "{cap}: dot failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let svg = String::from_utf8(out.stdout).unwrap();
        assert!(svg.contains("<svg"), "{cap}");
        for w in want {
            assert!(svg.contains(w), "{cap}: {w} not in the SVG");
        }
    }
}

// ---- folded stacks ------------------------------------------------------------------

#[test]
fn folded_counts_add_up() {
    for cap in ["a.txt", "a0.txt", "c.txt", "d.txt", "e.txt", "h.txt"] {
        let g = load(cap);
        let out = render(&g, &ftrace_input(cap), Format::Folded);
        let mut sum = 0u64;
        for line in out.lines() {
            let (stack, n) = line.rsplit_once(' ').expect("stack and count");
            assert!(!stack.is_empty() && !stack.contains(";;"), "{cap}: {line}");
            sum += n.parse::<u64>().expect("count");
        }
        assert_eq!(sum as usize, g.len(), "{cap}: weights add up to the calls");
        // Self-time weights add up to the self time of every function.
        let self_ns: u64 = folded::stacks(&g, FoldedWeight::SelfNs)
            .iter()
            .map(|(_, w)| w)
            .sum();
        let expect: u64 = g.summarize().functions.iter().map(|f| f.self_ns).sum();
        assert_eq!(self_ns, expect, "{cap}");
    }
}

// ---- the command ---------------------------------------------------------------------

#[test]
fn command_line() {
    let dcg = dcg_bin();
    let tmp = tempfile::tempdir().unwrap();
    let db = testkernel_db();
    // Text to stdout, --top.
    let out = Command::new(&dcg)
        .args(["report", "--top", "3", "--db"])
        .arg(&db)
        .arg(capture("a.txt"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Top 3 functions by calls (of "), "{text}");
    assert!(text.contains("path_openat -> link_path_walk"), "{text}");
    // Saved calls from `decode --output`, Chrome JSON to a file, --root.
    let calls = tmp.path().join("d.calls");
    let st = Command::new(&dcg)
        .args(["decode", "--db"])
        .arg(&db)
        .arg(capture("d.txt"))
        .arg("--output")
        .arg(&calls)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let chrome_file = tmp.path().join("d.json");
    let out = Command::new(&dcg)
        .args([
            "report",
            "--format",
            "chrome",
            "--root",
            "do_file_open",
            "-o",
        ])
        .arg(&chrome_file)
        .arg(&calls)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    let json = std::fs::read_to_string(&chrome_file).unwrap();
    let slices = check_chrome(&json, count_slices(&json), "d.calls --root");
    assert!(slices.iter().all(|s| s["name"] != "do_sys_openat2"));
    assert_eq!(
        slices
            .iter()
            .filter(|s| s["name"] == "do_file_open")
            .count(),
        3
    );
    // No db at all (an empty store): counts and times still, values raw, a note.
    let out = Command::new(&dcg)
        .env("DCG_STORE", tmp.path().join("store"))
        .env("DCG_KERNEL_NOTES", tmp.path().join("no-notes"))
        .args(["report", "--format", "json"])
        .arg(capture("h.txt"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no signature db"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dbs"], 0);
    assert_eq!(v["error_returns"], 0);
    assert!(v["calls"].as_u64().unwrap() > 100);
    // --folded-weight self-ns without durations is refused.
    let nodur = tmp.path().join("nodur.calls");
    let mut f = std::fs::File::create(&nodur).unwrap();
    saved_format::write_header(&mut f, "test").unwrap();
    saved_format::write_record(&mut f, &call(0, None, "f", None)).unwrap();
    drop(f);
    let out = Command::new(&dcg)
        .args(["report", "--format", "folded", "--folded-weight", "self-ns"])
        .arg(&nodur)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no durations"));
}

fn count_slices(json: &str) -> usize {
    json.matches("\"ph\":\"X\"").count()
}

// ---- hand-made calls ------------------------------------------------------------------

fn call(id: u64, parent: Option<u64>, func: &str, dur: Option<u64>) -> CallRecord {
    CallRecord {
        id,
        parent,
        func: func.into(),
        demangled: None,
        module: None,
        cpu: Some(0),
        comm: None,
        pid: None,
        tgid: None,
        depth: 0,
        time_ns: None,
        duration_ns: dur,
        args: Vec::new(),
        ret: None,
        ret_raw: None,
        out: Vec::new(),
        error: false,
        origin: None,
        decoded: true,
        inline: None,
        ctx: None,
        irq_ns: None,
        lost: None,
        ended: None,
        stack: None,
        space: None,
    }
}

/// The distinct stacks of saved calls taken with `dcg trace --stack` on the test kernel
/// (`testkernel-stack.calls`: `do_file_open`, reached by openat(2) and by execve(2)):
/// each stack counted once per call that it led to, in the text and JSON reports.
#[test]
fn distinct_stacks_of_saved_calls() {
    let bytes = std::fs::read(capture("testkernel-stack.calls")).unwrap();
    let loaded = dcg_report::load_saved(&bytes[..], "testkernel-stack.calls").unwrap();
    let graph = CallGraph::new(loaded.records).unwrap();
    let roots: Vec<&CallRecord> = graph
        .roots
        .iter()
        .map(|&r| &graph.calls[r])
        .filter(|r| r.func == "do_file_open")
        .collect();
    let mut want: std::collections::BTreeMap<Vec<String>, u64> = Default::default();
    for r in &roots {
        let frames = r
            .stack
            .as_ref()
            .unwrap()
            .iter()
            .map(|f| f.label())
            .collect();
        *want.entry(frames).or_default() += 1;
    }
    assert!(want.len() >= 2, "{want:?}");
    let s = graph.summarize();
    assert_eq!(s.stacks.len(), 1);
    let got = &s.stacks[0];
    assert_eq!(got.function, "do_file_open");
    assert_eq!(got.calls, roots.len() as u64);
    assert_eq!(
        got.stacks
            .iter()
            .cloned()
            .collect::<std::collections::BTreeMap<_, _>>(),
        want
    );
    // Most calls first.
    assert!(got.stacks.windows(2).all(|w| w[0].1 >= w[1].1));
    let input = ReportInput {
        source: "testkernel-stack.calls".into(),
        kind: dcg_report::InputKind::SavedCalls,
        root: None,
    };
    let text = render(&graph, &input, Format::Text);
    assert!(
        text.contains(&format!(
            "  do_file_open: {} calls, {} distinct stacks",
            roots.len(),
            want.len()
        )),
        "{text}"
    );
    for (frames, n) in &want {
        let line = format!("{n} {}", frames.join(" <- "));
        assert!(
            text.lines().any(|l| l.trim_start() == line),
            "{line} in:\n{text}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&render(&graph, &input, Format::Json)).unwrap();
    let stacks = &json["stacks"][0];
    assert_eq!(stacks["function"], "do_file_open");
    assert_eq!(stacks["stacks"].as_array().unwrap().len(), want.len());
}

#[test]
fn recursion_orphans_and_missing_durations() {
    // a(100) { b(60) { a(20) { c } } b(10) }, then an orphan d whose parent is missing,
    // in completion order as a file has them.
    let mut recs = vec![
        call(3, Some(2), "c", None),
        call(2, Some(1), "a", Some(20)),
        call(1, Some(0), "b", Some(60)),
        call(4, Some(0), "b", Some(10)),
        call(0, None, "a", Some(100)),
        call(6, Some(5), "d", Some(7)),
    ];
    recs[0].ret = Some("ERR_PTR(-ENOENT)".into());
    recs[0].error = true;
    recs[3].ret = Some("-EINVAL".into());
    recs[3].error = true;
    let g = CallGraph::new(recs).unwrap();
    assert_eq!(g.roots.len(), 2);
    let s = g.summarize();
    let f = |n: &str| s.functions.iter().find(|f| f.name == n).unwrap();
    // The inner a is inside the outer one: total counts 100 once, self counts both.
    assert_eq!(f("a").total_ns, 100);
    assert_eq!(f("a").self_ns, (100 - 60 - 10) + 20);
    assert_eq!(f("a").avg_ns(), Some(60));
    assert_eq!(f("b").max_ns, Some(60));
    assert_eq!(f("c").timed, 0);
    assert_eq!(f("c").errors.get("-ENOENT"), Some(&1));
    assert_eq!(f("b").errors.get("-EINVAL"), Some(&1));
    assert_eq!(s.errors, 2);
    let edge = |a: &str, b: &str| {
        s.edges
            .iter()
            .find(|e| g.names[e.caller as usize] == a && g.names[e.callee as usize] == b)
            .unwrap()
    };
    assert_eq!(edge("a", "b").count, 2);
    assert_eq!(edge("a", "b").max_per_call, 2);
    assert_eq!(edge("a", "b").caller_calls, 2);
    assert_eq!(edge("a", "b").per_call(), 1.0);
    // Folded stacks: one per distinct path, weights = calls.
    let st = folded::stacks(&g, FoldedWeight::Calls);
    assert_eq!(
        st,
        vec![
            ("a".to_string(), 1),
            ("a;b".to_string(), 2),
            ("a;b;a".to_string(), 1),
            ("a;b;a;c".to_string(), 1),
            ("d".to_string(), 1),
        ]
    );
    // Chrome layout: nested, c (no duration) fits inside its parent.
    let (start, end, _) = chrome::layout(&g);
    for i in 0..g.len() {
        if let Some(p) = g.parent[i] {
            assert!(start[p] <= start[i] && end[i] <= end[p], "call {i}");
        }
    }
    let input = ReportInput {
        source: "hand-made".into(),
        kind: InputKind::SavedCalls,
        root: None,
    };
    check_chrome(&render(&g, &input, Format::Chrome), g.len(), "hand-made");
    // --root keeps the outer a and what it calls.
    let r = CallGraph::new(g.calls.clone()).unwrap().restrict_to("b");
    assert_eq!(r.roots.len(), 2);
    assert_eq!(r.len(), 4);
    // Duplicate ids are refused.
    assert!(CallGraph::new(vec![call(1, None, "x", None), call(1, None, "y", None)]).is_err());
}

/// Calls of a session that traced both sides (issue 42): kernel functions are told apart
/// from user ones of the same name, named `[kernel]` in the reports and annotated `_[k]`
/// in folded stacks (the flame graph tools' kernel colour).
#[test]
fn kernel_frames_are_marked_where_both_sides_were_traced() {
    use dcg_calls::saved_format::Space;
    let side = |mut c: CallRecord, s: Space| {
        c.space = Some(s);
        c
    };
    let recs = vec![
        side(call(1, None, "main", Some(100)), Space::User),
        side(call(2, Some(1), "read", Some(50)), Space::User),
        side(call(3, Some(2), "ksys_read", Some(40)), Space::Kernel),
        side(call(4, Some(3), "vfs_read", Some(30)), Space::Kernel),
        side(call(5, Some(1), "read", Some(20)), Space::Kernel),
    ];
    let g = CallGraph::new(recs).unwrap();
    let st = folded::stacks(&g, FoldedWeight::Calls);
    assert_eq!(
        st,
        vec![
            ("main".to_string(), 1),
            ("main;read".to_string(), 1),
            ("main;read;ksys_read_[k]".to_string(), 1),
            ("main;read;ksys_read_[k];vfs_read_[k]".to_string(), 1),
            ("main;read_[k]".to_string(), 1),
        ]
    );
    let input = ReportInput {
        source: "hand-made".into(),
        kind: InputKind::SavedCalls,
        root: None,
    };
    let text = render(&g, &input, Format::Text);
    assert!(text.contains("vfs_read [kernel]"), "{text}");
    let names = g
        .summarize()
        .functions
        .iter()
        .filter(|f| f.name.starts_with("read"))
        .count();
    assert_eq!(names, 2, "the user read and the kernel read apart");
}

#[test]
fn counts_only_without_durations() {
    let recs = vec![
        call(0, None, "top", None),
        call(1, Some(0), "leaf", None),
        call(2, Some(0), "leaf", None),
    ];
    let g = CallGraph::new(recs).unwrap();
    let input = ReportInput {
        source: "no-durations".into(),
        kind: InputKind::SavedCalls,
        root: None,
    };
    let text = render(&g, &input, Format::Text);
    assert!(text.contains("durations: none (counts only)"), "{text}");
    assert!(!text.contains("by total time"), "{text}");
    assert!(text.contains("      2 top -> leaf"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&render(&g, &input, Format::Json)).unwrap();
    assert_eq!(json["functions"][0]["name"], "leaf");
    assert_eq!(json["functions"][0]["total_ns"], serde_json::Value::Null);
    check_chrome(&render(&g, &input, Format::Chrome), 3, "no-durations");
    let dot = render(&g, &input, Format::Dot);
    assert!(dot.contains("\"top\" -> \"leaf\" [label=\"2\"];"), "{dot}");
}

#[test]
fn dot_quotes_names() {
    assert_eq!(dcg_report::dot::quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
}
