//! `dcg report --format html` and `dcg trace --report html` in a real browser: Debian's
//! Chromium, headless, opens pages written from the repository's real captures and from
//! a live trace; the test reads the DOM the page's script built (`--dump-dom`) and checks
//! what a person would see: no script error, known calls with their typed values, error
//! origins marked, every flame graph frame, a search that opens the right path,
//! interrupt subtrees marked. One screenshot per view lands in
//! `target/test-screenshots/html-report/` for a reviewer.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use dcg_calls::record::{self, CallRecord, Context};
use dcg_tests::{capture, dcg_bin, testkernel_db};

fn chromium() -> &'static str {
    let found = Command::new("chromium").arg("--version").output().is_ok();
    assert!(
        found,
        "chromium is missing (apt-get install chromium: .ci/install-deps.sh)"
    );
    "chromium"
}

/// Chromium, headless, on `url`, with `what` (`--dump-dom`, `--screenshot=PNG`).
fn browse(url: &str, what: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(what)
        .arg(url)
        .output()
        .expect("running chromium");
    assert!(out.status.success(), "chromium {what} {url} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The DOM after the page's script ran, with `fragment` (`search=f`, `view=flame`).
fn dom(page: &Path, fragment: &str) -> String {
    let d = browse(
        &format!("file://{}#{fragment}", page.display()),
        "--dump-dom",
    );
    assert!(
        d.contains("data-ready=\"1\""),
        "the page did not finish:\n{}",
        &d[..d.len().min(2000)]
    );
    assert!(
        !d.contains("data-errors="),
        "script errors: {}",
        attr(&d, "data-errors").unwrap_or_default()
    );
    d
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    Some(dom[at..].split('"').next()?.to_string())
}

fn shots_dir() -> PathBuf {
    let d = dcg_tests::repo_root().join("target/test-screenshots/html-report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Screenshots of every view of `page`, named `NAME-VIEW.png`.
fn screenshots(page: &Path, name: &str, search: &str) {
    for (view, fragment) in [
        ("tree", "view=tree".to_string()),
        ("flame", "view=flame".to_string()),
        ("graph", "view=graph".to_string()),
        ("tables", "view=tables".to_string()),
        ("search", format!("search={search}")),
    ] {
        let png = shots_dir().join(format!("{name}-{view}.png"));
        browse(
            &format!("file://{}#{fragment}", page.display()),
            &format!("--screenshot={}", png.display()),
        );
        assert!(
            std::fs::metadata(&png)
                .map(|m| m.len() > 10_000)
                .unwrap_or(false),
            "{png:?}"
        );
    }
}

/// A capture decoded into saved calls with the test kernel's db.
fn saved_calls(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(format!("{name}.calls"));
    let st = Command::new(dcg_bin())
        .args(["decode", "--db"])
        .arg(testkernel_db())
        .arg(capture(name))
        .arg("--output")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    out
}

fn report(input: &Path, page: &Path) {
    let st = Command::new(dcg_bin())
        .args(["report", "--format", "html", "-o"])
        .arg(page)
        .arg(input)
        .status()
        .unwrap();
    assert!(st.success());
}

/// The frames inferno draws: every prefix of every folded stack, and `all`.
fn expected_frames(calls: &Path) -> usize {
    let out = Command::new(dcg_bin())
        .args(["report", "--format", "folded", "--folded-weight", "self-ns"])
        .arg(calls)
        .output()
        .unwrap();
    let mut prefixes = BTreeSet::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let stack = l.rsplit_once(' ').unwrap().0;
        let parts: Vec<&str> = stack.split(';').collect();
        for k in 1..=parts.len() {
            prefixes.insert(parts[..k].join(";"));
        }
    }
    prefixes.len() + 1
}

/// Frames in the page's flame graph: the `<g>` of each in the `frames` group.
fn frames_drawn(dom: &str) -> usize {
    let at = dom.find("id=\"frames\"").expect("the flame graph's frames");
    let end = at + dom[at..].find("</svg>").expect("the flame graph's end");
    dom[at..end].matches("<title>").count()
}

#[test]
fn captures_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let calls = saved_calls(dir.path(), "a.txt");
    let page = dir.path().join("a.html");
    report(&calls, &page);
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size > 10_000, "{size}");
    // The default view: top-level calls and two levels under them, typed values, the
    // error origins of failing calls marked.
    let d = dom(&page, "");
    assert!(d.contains(">do_sys_openat2<"), "a known call");
    assert!(d.contains(" = -ENOENT<"), "its typed error return");
    assert!(
        d.contains(">error from step_into_slowpath<"),
        "where its error came from"
    );
    assert!(d.contains(">ERR_PTR(-ENOENT)<") || d.contains(" = ERR_PTR(-ENOENT)<"));
    assert_eq!(attr(&d, "data-calls").as_deref(), Some("2316"));
    // The search opens the path of the first lookup_fast: do_sys_openat2 → do_file_open →
    // path_openat → link_path_walk → lookup_fast.
    let d = dom(&page, "search=lookup_fast");
    assert_eq!(attr(&d, "data-found-depth").as_deref(), Some("4"));
    assert!(d.contains("class=\"call found\""));
    // Every frame of the flame graph is drawn.
    let d = dom(&page, "view=flame");
    assert_eq!(frames_drawn(&d), expected_frames(&calls));
    screenshots(&page, "a", "lookup_fast");
}

/// Calls that ran in an interrupt: their subtree is marked where it begins; a call that
/// lost calls says how many.
#[test]
fn interrupt_subtrees_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let calls = saved_calls(dir.path(), "a.txt");
    let (header, mut recs): (record::Header, Vec<CallRecord>) = record::read(
        std::io::BufReader::new(std::fs::File::open(&calls).unwrap()),
    )
    .unwrap();
    // The first getname_flags call and its subtree, as if a timer interrupt ran them.
    let top = recs
        .iter()
        .filter(|r| r.func == "getname_flags")
        .map(|r| r.id)
        .min()
        .unwrap();
    let mut inside = BTreeSet::from([top]);
    loop {
        let n = inside.len();
        for r in &recs {
            if r.parent.is_some_and(|p| inside.contains(&p)) {
                inside.insert(r.id);
            }
        }
        if inside.len() == n {
            break;
        }
    }
    for r in &mut recs {
        if inside.contains(&r.id) {
            r.ctx = Some(Context::Irq);
        }
        // And the capture lost 3 calls while recording it.
        if r.id == top {
            r.lost = Some(3);
        }
    }
    let marked = dir.path().join("irq.calls");
    let mut f = std::fs::File::create(&marked).unwrap();
    record::write_header(&mut f, &header.source).unwrap();
    for r in &recs {
        use std::io::Write;
        writeln!(f, "{}", serde_json::to_string(r).unwrap()).unwrap();
    }
    drop(f);
    let page = dir.path().join("irq.html");
    report(&marked, &page);
    let d = dom(&page, "");
    assert_eq!(
        d.matches("==&gt; hardirq (interrupt)").count(),
        1,
        "one subtree, marked once"
    );
    assert_eq!(
        d.matches("3 calls lost").count(),
        1,
        "the lost calls, said once"
    );
    screenshots(&page, "irq", "getname_flags");
}

/// A live trace's report (in-process engine on a C program): values as the trace shows.
#[test]
fn live_trace_report_in_a_browser() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipping: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("values");
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&bin)
        .arg(dcg_tests::repo_root().join("tests/uprobe/values.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let page = dir.path().join("live.html");
    let b = bin.to_str().unwrap();
    let out = Command::new(dcg_bin())
        .args(["trace", "--args", "--show-retvals", "--errno", "--func"])
        .arg(format!("{b}:*"))
        .args(["--report", "html", "-o"])
        .arg(&page)
        .args(["--", b])
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = dom(&page, "search=check_arg");
    assert!(d.contains("(x=-5)"), "an argument");
    assert!(d.contains(" = -EINVAL<"), "its typed return");
    assert!(attr(&d, "data-found").is_some_and(|f| f != "none"));
    screenshots(&page, "live", "check_arg");
}

/// 100,000 calls: the page opens, lazily (only what is open is built).
#[test]
fn large_report_opens() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("big.calls");
    let mut f = std::fs::File::create(&calls).unwrap();
    record::write_header(&mut f, "hand-made: 1,000 trees of 100 calls").unwrap();
    let mut id = 0u64;
    for t in 0..1000u64 {
        let root = id;
        id += 1;
        for k in 0..99u64 {
            let rec = CallRecord {
                id,
                parent: Some(root),
                func: format!("leaf_{}", k % 17),
                module: None,
                cpu: Some(0),
                comm: None,
                pid: None,
                depth: 1,
                time_ns: Some(t * 1_000_000 + k * 1000),
                duration_ns: Some(500),
                args: vec![record::ArgValue {
                    name: "k".into(),
                    value: k.to_string(),
                }],
                ret: Some("0".into()),
                ret_raw: None,
                error: false,
                origin: None,
                decoded: true,
                inline: None,
                ctx: None,
                irq_ns: None,
                lost: None,
            };
            use std::io::Write;
            writeln!(f, "{}", serde_json::to_string(&rec).unwrap()).unwrap();
            id += 1;
        }
        let rec = CallRecord {
            id: root,
            parent: None,
            func: "root".into(),
            module: None,
            cpu: Some(0),
            comm: None,
            pid: None,
            depth: 0,
            time_ns: Some(t * 1_000_000),
            duration_ns: Some(99_000),
            args: Vec::new(),
            ret: Some("0".into()),
            ret_raw: None,
            error: false,
            origin: None,
            decoded: true,
            inline: None,
            ctx: None,
            irq_ns: None,
            lost: None,
        };
        use std::io::Write;
        writeln!(f, "{}", serde_json::to_string(&rec).unwrap()).unwrap();
    }
    drop(f);
    let page = dir.path().join("big.html");
    report(&calls, &page);
    let size = std::fs::metadata(&page).unwrap().len();
    let started = Instant::now();
    let d = dom(&page, "search=leaf_16");
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "100,000 calls: {size} bytes, opened and searched in {secs:.2} s (headless chromium)"
    );
    assert_eq!(attr(&d, "data-calls").as_deref(), Some("100000"));
    assert_eq!(attr(&d, "data-found-depth").as_deref(), Some("1"));
    // A guard against a hang, not a timing target (BENCHMARKS has the measurement).
    assert!(secs < 120.0, "{secs}");
}
