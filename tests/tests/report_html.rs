//! `dcg report --format html` and `dcg trace --report html` in a real browser: Debian's
//! Chromium, headless and with every host name unresolvable, opens pages written from the
//! repository's real captures (`a.txt`, `a0.txt`, `c.txt`, `h.txt`) and from a live
//! trace; the test reads the DOM the page's script built (`--dump-dom`, parsed here) and
//! checks what a person would see: no script error, each call line as the text printer
//! writes it (arguments, return value, duration), error origins marked at both ends,
//! every flame graph frame and its zoom, the search's path and its next match, the call
//! graph's nodes and edge counts (and the table without Graphviz), the tables, interrupt
//! subtrees marked as the BPF engine's saved calls carry them. One screenshot per view
//! lands in `target/test-screenshots/html-report/` for a reviewer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use dcg_calls::saved_format::{self, CallRecord, Context};
use dcg_tests::{capture, dcg_bin, testkernel_db};

/// The flat-tree driver of the calls crate's tests: events of one task through the same
/// `CallTree` the BPF engine feeds.
#[path = "../../tracer/calls/tests/common/mod.rs"]
mod flat;

/// A small HTML parser for Chromium's serialization of the DOM (`--dump-dom`): every
/// element but the void ones has its end tag, attribute values are double-quoted.
mod dom {
    #[derive(Debug)]
    pub enum Node {
        El(El),
        Text(String),
    }

    #[derive(Debug, Default)]
    pub struct El {
        pub tag: String,
        pub attrs: Vec<(String, String)>,
        pub kids: Vec<Node>,
    }

    const VOID: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr",
    ];
    const RAW: &[&str] = &["script", "style"];

    pub fn unescape(s: &str) -> String {
        let mut o = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(at) = rest.find('&') {
            o.push_str(&rest[..at]);
            rest = &rest[at..];
            let Some(end) = rest.find(';').filter(|&e| e < 10) else {
                o.push('&');
                rest = &rest[1..];
                continue;
            };
            let name = &rest[1..end];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "nbsp" => Some('\u{a0}'),
                n if n.starts_with("#x") => u32::from_str_radix(&n[2..], 16)
                    .ok()
                    .and_then(char::from_u32),
                n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            };
            match c {
                Some(c) => {
                    o.push(c);
                    rest = &rest[end + 1..];
                }
                None => {
                    o.push('&');
                    rest = &rest[1..];
                }
            }
        }
        o.push_str(rest);
        o
    }

    /// The element starting at `s[i] == '<'`: it, where its tag ends, whether `/>`.
    fn open_tag(s: &str, i: usize) -> (El, usize, bool) {
        let b = s.as_bytes();
        let mut j = i + 1;
        while j < b.len() && !b[j].is_ascii_whitespace() && b[j] != b'>' && b[j] != b'/' {
            j += 1;
        }
        let mut el = El {
            tag: s[i + 1..j].to_string(),
            ..El::default()
        };
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j >= b.len() {
                return (el, j, false);
            }
            if b[j] == b'>' {
                return (el, j + 1, false);
            }
            if s[j..].starts_with("/>") {
                return (el, j + 2, true);
            }
            let start = j;
            while j < b.len()
                && !b[j].is_ascii_whitespace()
                && !matches!(b[j], b'=' | b'>')
                && !s[j..].starts_with("/>")
            {
                j += 1;
            }
            let name = s[start..j].to_string();
            let mut value = String::new();
            if j < b.len() && b[j] == b'=' {
                j += 1;
                if j < b.len() && (b[j] == b'"' || b[j] == b'\'') {
                    let q = b[j] as char;
                    let end = s[j + 1..].find(q).map_or(s.len(), |e| j + 1 + e);
                    value = unescape(&s[j + 1..end]);
                    j = (end + 1).min(s.len());
                } else {
                    let v = j;
                    while j < b.len() && !b[j].is_ascii_whitespace() && b[j] != b'>' {
                        j += 1;
                    }
                    value = unescape(&s[v..j]);
                }
            }
            if name.is_empty() {
                j += 1;
            } else {
                el.attrs.push((name, value));
            }
        }
    }

    fn close(stack: &mut Vec<El>) {
        let el = stack.pop().expect("an open element");
        stack.last_mut().expect("the root").kids.push(Node::El(el));
    }

    /// The document: a root element holding what `s` holds.
    pub fn parse(s: &str) -> El {
        let b = s.as_bytes();
        let mut stack = vec![El {
            tag: "#root".into(),
            ..El::default()
        }];
        let mut i = 0;
        while i < s.len() {
            let rest = &s[i..];
            if rest.starts_with("<!--") {
                i = rest.find("-->").map_or(s.len(), |e| i + e + 3);
            } else if rest.starts_with("<!") {
                i = rest.find('>').map_or(s.len(), |e| i + e + 1);
            } else if rest.starts_with("</") {
                let end = rest.find('>').map_or(s.len(), |e| i + e);
                let tag = s[i + 2..end].trim();
                if let Some(pos) = stack.iter().rposition(|e| e.tag == tag).filter(|&p| p > 0) {
                    while stack.len() > pos {
                        close(&mut stack);
                    }
                }
                i = end + 1;
            } else if b[i] == b'<' && b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
                let (mut el, end, self_closing) = open_tag(s, i);
                i = end;
                if self_closing || VOID.contains(&el.tag.as_str()) {
                    stack.last_mut().unwrap().kids.push(Node::El(el));
                } else if RAW.contains(&el.tag.as_str()) {
                    let e = s[i..]
                        .find(&format!("</{}", el.tag))
                        .map_or(s.len(), |e| i + e);
                    el.kids.push(Node::Text(s[i..e].to_string()));
                    stack.last_mut().unwrap().kids.push(Node::El(el));
                    i = s[e..].find('>').map_or(s.len(), |x| e + x + 1);
                } else {
                    stack.push(el);
                }
            } else {
                let first = rest.chars().next().map_or(1, char::len_utf8);
                let end = rest[first..].find('<').map_or(s.len(), |e| i + first + e);
                stack
                    .last_mut()
                    .unwrap()
                    .kids
                    .push(Node::Text(unescape(&s[i..end])));
                i = end;
            }
        }
        while stack.len() > 1 {
            close(&mut stack);
        }
        stack.pop().unwrap()
    }

    impl El {
        pub fn attr(&self, name: &str) -> Option<&str> {
            self.attrs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }

        pub fn has_class(&self, c: &str) -> bool {
            self.attr("class")
                .is_some_and(|v| v.split_whitespace().any(|x| x == c))
        }

        pub fn elements(&self) -> impl Iterator<Item = &El> {
            self.kids.iter().filter_map(|k| match k {
                Node::El(e) => Some(e),
                Node::Text(_) => None,
            })
        }

        pub fn text(&self) -> String {
            let mut s = String::new();
            fn walk(e: &El, s: &mut String) {
                for k in &e.kids {
                    match k {
                        Node::El(e) => walk(e, s),
                        Node::Text(t) => s.push_str(t),
                    }
                }
            }
            walk(self, &mut s);
            s
        }

        /// Every element below that `pred` accepts, in document order.
        pub fn find_all(&self, pred: &dyn Fn(&El) -> bool) -> Vec<&El> {
            let mut v = Vec::new();
            fn walk<'a>(e: &'a El, pred: &dyn Fn(&El) -> bool, v: &mut Vec<&'a El>) {
                for k in e.elements() {
                    if pred(k) {
                        v.push(k);
                    }
                    walk(k, pred, v);
                }
            }
            walk(self, pred, &mut v);
            v
        }

        pub fn by_id(&self, id: &str) -> Option<&El> {
            self.find_all(&|e| e.attr("id") == Some(id))
                .into_iter()
                .next()
        }

        /// The elements from this one down to the first that `pred` accepts.
        pub fn path_to(&self, pred: &dyn Fn(&El) -> bool) -> Option<Vec<&El>> {
            if pred(self) {
                return Some(vec![self]);
            }
            for k in self.elements() {
                if let Some(mut p) = k.path_to(pred) {
                    p.insert(0, self);
                    return Some(p);
                }
            }
            None
        }
    }
}

use dom::El;

fn chromium() -> &'static str {
    let found = Command::new("chromium").arg("--version").output().is_ok();
    assert!(
        found,
        "chromium is missing (apt-get install chromium: .ci/install-deps.sh)"
    );
    "chromium"
}

/// Chromium, headless, on `url`, with `what` (`--dump-dom`, `--screenshot=PNG`): no host
/// name resolves, so a page that fetched anything from the network would miss it.
fn browse(url: &str, what: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let started = Instant::now();
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
            "--host-resolver-rules=MAP * ~NOTFOUND",
            // Timers the page set while loading run before the dump.
            "--virtual-time-budget=60000",
            "--window-size=1400,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(what)
        .arg(url)
        .output()
        .expect("running chromium");
    assert!(out.status.success(), "chromium {what} {url} failed");
    // A guard against a hang, not a timing target (BENCHMARKS.md has the timings).
    assert!(started.elapsed().as_secs() < 120, "chromium {what} {url}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The DOM after the page's script ran, with `fragment` (`search=f`, `view=flame`).
fn dom(page: &Path, fragment: &str) -> El {
    let d = browse(
        &format!("file://{}#{fragment}", page.display()),
        "--dump-dom",
    );
    let doc = dom::parse(&d);
    let body = body(&doc);
    assert_eq!(
        body.attr("data-ready"),
        Some("1"),
        "the page did not finish:\n{}",
        &d[..d.len().min(2000)]
    );
    assert_eq!(body.attr("data-errors"), None, "script errors");
    doc
}

fn body(doc: &El) -> &El {
    doc.find_all(&|e| e.tag == "body")[0]
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

/// `dcg decode` of a capture with the test kernel's db: the text printer's output, and
/// the saved calls.
fn decode(dir: &Path, name: &str) -> (String, PathBuf) {
    let out = dir.join(format!("{name}.calls"));
    let run = Command::new(dcg_bin())
        .args(["decode", "--color", "never", "--db"])
        .arg(testkernel_db())
        .arg(capture(name))
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success());
    (String::from_utf8(run.stdout).unwrap(), out)
}

fn read_calls(calls: &Path) -> (saved_format::Header, Vec<CallRecord>) {
    let (h, mut recs) =
        saved_format::read(std::io::BufReader::new(std::fs::File::open(calls).unwrap())).unwrap();
    recs.sort_by_key(|r| r.id);
    (h, recs)
}

fn write_calls(path: &Path, source: &str, recs: &[CallRecord]) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    saved_format::write_header(&mut f, source).unwrap();
    for r in recs {
        writeln!(f, "{}", serde_json::to_string(r).unwrap()).unwrap();
    }
}

/// `dcg report --format html -o page input` with the environment `env` adds.
fn report_with(input: &Path, page: &Path, env: &[(&str, &Path)]) {
    let mut cmd = Command::new(dcg_bin());
    cmd.args(["report", "--format", "html", "-o"])
        .arg(page)
        .arg(input);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let st = cmd.status().unwrap();
    assert!(st.success());
    check_self_contained(page);
}

fn report(input: &Path, page: &Path) {
    report_with(input, page, &[])
}

/// The page refers to nothing outside itself: no address outside its scripts (no script,
/// style, font or image by address, no link, no import, `href` and `url()` only to `#id`
/// within the page), and its scripts load nothing. (SVG's namespace names are names, not
/// addresses; comments, such as the flame graph's credits, load nothing.)
fn check_self_contained(page: &Path) {
    let html = std::fs::read_to_string(page).unwrap().to_ascii_lowercase();
    let mut outside = String::new();
    let mut scripts = String::new();
    let mut rest = html.as_str();
    while let Some(at) = rest.find("<script") {
        outside.push_str(&rest[..at]);
        let end = rest[at..].find("</script>").map_or(rest.len(), |e| at + e);
        scripts.push_str(&rest[at..end]);
        rest = &rest[end..];
    }
    outside.push_str(rest);
    while let Some(at) = outside.find("<!--") {
        let end = outside[at..]
            .find("-->")
            .map_or(outside.len(), |e| at + e + 3);
        outside.replace_range(at..end, "");
    }
    for ns in [
        "xmlns=\"http://www.w3.org/2000/svg\"",
        "xmlns:xlink=\"http://www.w3.org/1999/xlink\"",
        "xmlns:fg=\"http://github.com/jonhoo/inferno\"",
    ] {
        outside = outside.replace(ns, "");
    }
    let outside = outside.replace("url(#", "").replace("href=\"#", "");
    let found = |text: &str, bad: &[&str]| {
        for b in bad {
            let at = text.find(b);
            assert!(
                at.is_none(),
                "{}: refers outside itself ({b}): …{}…",
                page.display(),
                text[at.unwrap_or(0).saturating_sub(80)..]
                    .chars()
                    .take(160)
                    .collect::<String>()
            );
        }
    };
    found(
        &outside,
        &[
            "http:",
            "https:",
            "ftp:",
            "//",
            "<link",
            "@import",
            "url(",
            "src=",
            "href=",
            "<iframe",
            "<img",
            "<object",
            "<embed",
            "@font-face",
        ],
    );
    found(
        &scripts,
        &[
            " src=",
            "fetch(",
            "xmlhttprequest",
            "websocket",
            "eventsource",
            "sendbeacon",
            "import(",
            "importscripts",
            "createelement(\"script",
            "createelement('script",
        ],
    );
}

/// One call as the text printer wrote it: its name, its argument list, its return value
/// and where a top-level call's error came from, its duration column.
#[derive(Debug, Default, Clone, PartialEq)]
struct TextCall {
    name: String,
    args: String,
    ret: Option<String>,
    from: Option<String>,
    dur: Option<String>,
    depth: usize,
    /// It returned in the text (a call open when the trace ended is printed, not saved).
    returned: bool,
}

/// The end of an argument list that starts after `(` at `s[0]`: parentheses nest, strings
/// are skipped.
fn args_end(s: &str) -> usize {
    let (mut depth, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth == 0 => return i,
            ')' if !quoted => depth -= 1,
            _ => {}
        }
    }
    panic!("no end of the arguments in {s:?}")
}

/// `ret=VALUE[ from FUNC]` out of a line's comment.
fn ret_of(comment: &str, top: bool) -> (Option<String>, Option<String>) {
    let Some(at) = comment.find("ret=") else {
        return (None, None);
    };
    let v = &comment[at + 4..];
    let v = v.strip_suffix(" */").unwrap_or(v);
    match v.split_once(" from ").filter(|_| top) {
        Some((v, from)) => (Some(v.to_string()), Some(from.to_string())),
        None => (Some(v.to_string()), None),
    }
}

/// The calls of a function_graph text that returned, in entry order (the saved calls).
fn text_calls(text: &str) -> Vec<TextCall> {
    let mut calls: Vec<TextCall> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for line in text.lines() {
        let Some((head, body)) = line.split_once('|') else {
            continue;
        };
        if line.starts_with('#') {
            continue;
        }
        let dur = head
            .split_once(')')
            .map(|(_, d)| d.trim())
            .filter(|d| !d.is_empty())
            .map(str::to_string);
        let content = body.trim_start();
        let depth = (body.len() - content.len()).saturating_sub(2) / 2;
        if content.starts_with("/*") || content.is_empty() {
            continue;
        }
        if let Some(close) = content.strip_prefix('}') {
            let i = open.pop().expect("a close has its open call");
            let (ret, from) = ret_of(close, calls[i].depth == 0);
            calls[i] = TextCall {
                ret,
                from,
                dur,
                returned: true,
                ..calls[i].clone()
            };
            continue;
        }
        let p = content.find('(').expect("a call line");
        let end = p + 1 + args_end(&content[p + 1..]);
        let rest = &content[end + 1..];
        let mut call = TextCall {
            name: content[..p].to_string(),
            args: content[p + 1..end].to_string(),
            depth,
            ..TextCall::default()
        };
        if rest.starts_with(';') {
            (call.ret, call.from) = ret_of(rest, depth == 0);
            call.dur = dur;
            call.returned = true;
            calls.push(call);
        } else {
            calls.push(call);
            open.push(calls.len() - 1);
        }
    }
    calls.retain(|c| c.returned);
    calls
}

/// A call's row in the page: its index (entry order) and its spans, class → text.
#[derive(Debug)]
struct Row {
    i: usize,
    spans: Vec<(String, String)>,
}

impl Row {
    fn get(&self, class: &str) -> Option<&str> {
        self.spans
            .iter()
            .find(|(c, _)| c.split_whitespace().any(|x| x == class))
            .map(|(_, t)| t.as_str())
    }

    fn marks(&self) -> Vec<&str> {
        self.spans
            .iter()
            .filter(|(c, _)| c.starts_with("mark"))
            .map(|(_, t)| t.as_str())
            .collect()
    }

    fn name(&self) -> &str {
        self.get("fn").unwrap()
    }
}

fn row_of(call: &El) -> Row {
    let r = call.elements().find(|e| e.has_class("row")).expect("a row");
    Row {
        i: call.attr("data-i").unwrap().parse().unwrap(),
        spans: r
            .elements()
            .map(|s| (s.attr("class").unwrap_or("").to_string(), s.text()))
            .collect(),
    }
}

/// The rows that carry `mark`.
fn with_mark<'r>(rows: &'r [Row], mark: &str) -> Vec<&'r Row> {
    rows.iter().filter(|r| r.marks().contains(&mark)).collect()
}

/// Every call row the page built, in document order.
fn rows(doc: &El) -> Vec<Row> {
    doc.find_all(&|e| e.tag == "div" && e.has_class("call"))
        .into_iter()
        .map(row_of)
        .collect()
}

/// The rows from the top-level call down to the one found (`.call.found`).
fn found_path(doc: &El) -> Vec<Row> {
    doc.path_to(&|e| e.has_class("call") && e.has_class("found"))
        .expect("a call found")
        .into_iter()
        .filter(|e| e.has_class("call"))
        .map(row_of)
        .collect()
}

/// Each built row shows its call as the text printer wrote it: the same name, argument
/// list, return value, duration and error origin.
fn check_rows_match_text(rows: &[Row], text: &[TextCall], what: &str) {
    assert!(!rows.is_empty(), "{what}: no rows");
    for r in rows {
        let t = &text[r.i];
        let ctx = format!("{what}: call {} {t:?} vs {r:?}", r.i);
        assert_eq!(r.name(), t.name, "{ctx}");
        assert_eq!(
            r.get("args"),
            Some(format!("({})", t.args).as_str()),
            "{ctx}"
        );
        assert_eq!(
            r.get("ret").map(str::to_string),
            t.ret.as_ref().map(|v| format!(" = {v}")),
            "{ctx}"
        );
        assert_eq!(r.get("dur"), t.dur.as_deref(), "{ctx}");
        let from = r
            .marks()
            .into_iter()
            .find_map(|m| m.strip_prefix("error from "));
        assert_eq!(from, t.from.as_deref(), "{ctx}");
    }
}

/// The flame graph's frames as folded-stack prefixes (`a;b;c`) of `calls`, `all` not
/// included: one frame each.
fn stack_prefixes(calls: &Path) -> BTreeSet<String> {
    let (_, recs) = read_calls(calls);
    let weight = if recs.iter().all(|r| r.duration_ns.is_some()) {
        "self-ns"
    } else {
        "calls"
    };
    let out = Command::new(dcg_bin())
        .args(["report", "--format", "folded", "--folded-weight", weight])
        .arg(calls)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut prefixes = BTreeSet::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let stack = l.rsplit_once(' ').unwrap().0;
        let parts: Vec<&str> = stack.split(';').collect();
        for k in 1..=parts.len() {
            prefixes.insert(parts[..k].join(";"));
        }
    }
    prefixes
}

/// The frames of the page's flame graph: (function, hidden) of each `<g>` in `frames`.
fn frames(doc: &El) -> Vec<(String, bool)> {
    frame_groups(doc)
        .into_iter()
        .map(|(name, g)| (name, g.has_class("hide")))
        .collect()
}

/// The `<g>` of each frame of the page's flame graph, with its function.
fn frame_groups(doc: &El) -> Vec<(String, &El)> {
    doc.by_id("frames")
        .expect("the flame graph's frames")
        .elements()
        .filter(|g| g.tag == "g")
        .map(|g| {
            let title = g.elements().find(|e| e.tag == "title").unwrap().text();
            (title.rsplit_once(" (").unwrap().0.to_string(), g)
        })
        .collect()
}

/// Each flame graph frame's function and fill colour.
fn frame_fills(doc: &El) -> Vec<(String, (u8, u8, u8))> {
    frame_groups(doc)
        .into_iter()
        .map(|(name, g)| {
            let fill = g
                .elements()
                .find(|e| e.tag == "rect")
                .and_then(|r| r.attr("fill"))
                .unwrap_or_default()
                .to_string();
            let rgb: Vec<u8> = fill
                .trim_start_matches("rgb(")
                .trim_end_matches(')')
                .split(',')
                .filter_map(|v| v.trim().parse().ok())
                .collect();
            assert_eq!(rgb.len(), 3, "{name}: fill {fill:?}");
            (name, (rgb[0], rgb[1], rgb[2]))
        })
        .collect()
}

/// Caller → callee edges with their counts, from the JSON report.
fn edges(calls: &Path) -> BTreeMap<(String, String), u64> {
    let out = Command::new(dcg_bin())
        .args(["report", "--format", "json"])
        .arg(calls)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                (
                    e["caller"].as_str().unwrap().to_string(),
                    e["callee"].as_str().unwrap().to_string(),
                ),
                e["calls"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The call graph view's edges: Graphviz's (`g.edge`: title `a->b`, the count its
/// label) or the table's rows.
fn graph_edges(doc: &El) -> BTreeMap<(String, String), u64> {
    let view = doc.by_id("view-graph").unwrap();
    let mut m = BTreeMap::new();
    if let Some(svg) = view.elements().find(|e| e.tag == "svg") {
        for g in svg.find_all(&|e| e.tag == "g" && e.has_class("edge")) {
            let title = g.elements().find(|e| e.tag == "title").unwrap().text();
            let (a, b) = title.split_once("->").unwrap();
            let label = g.find_all(&|e| e.tag == "text")[0].text();
            m.insert((a.to_string(), b.to_string()), label.parse().unwrap());
        }
    } else {
        for tr in view.find_all(&|e| e.tag == "tr").into_iter().skip(1) {
            let td: Vec<String> = tr.elements().map(El::text).collect();
            m.insert((td[0].clone(), td[1].clone()), td[2].parse().unwrap());
        }
    }
    m
}

/// The function names of the saved calls from the top-level call down to call `i`.
fn chain(recs: &[CallRecord], i: usize) -> Vec<String> {
    let index: BTreeMap<u64, usize> = recs.iter().enumerate().map(|(k, r)| (r.id, k)).collect();
    let mut v = Vec::new();
    let mut at = Some(i);
    while let Some(k) = at {
        v.push(dcg_report::model::display_name(&recs[k]));
        at = recs[k].parent.and_then(|p| index.get(&p).copied());
    }
    v.reverse();
    v
}

/// What every capture's page shows: each built row as the text printer writes the call;
/// every frame of the flame graph; the call graph's edges and counts; a table heading;
/// the search's path to a call. Returns the page, the text calls and the saved calls.
fn check_capture(dir: &Path, name: &str) -> (PathBuf, Vec<TextCall>, Vec<CallRecord>) {
    let (text, calls) = decode(dir, name);
    let tcalls = text_calls(&text);
    let (_, recs) = read_calls(&calls);
    assert_eq!(
        tcalls.len(),
        recs.len(),
        "{name}: every call printed and saved"
    );
    let page = dir.join(format!("{}.html", name.trim_end_matches(".txt")));
    report(&calls, &page);
    let d = dom(&page, "");
    assert_eq!(
        body(&d).attr("data-calls"),
        Some(recs.len().to_string().as_str())
    );
    let built = rows(&d);
    check_rows_match_text(&built, &tcalls, name);
    eprintln!(
        "{name}: {} calls, {} bytes, ready in {} ms (data-load-ms), {} rows built, each as \
         the text printer writes it",
        recs.len(),
        std::fs::metadata(&page).unwrap().len(),
        body(&d).attr("data-load-ms").unwrap(),
        built.len()
    );
    // Every frame of the flame graph is drawn.
    let prefixes = stack_prefixes(&calls);
    let d = dom(&page, "view=flame");
    assert_eq!(frames(&d).len(), prefixes.len() + 1, "{name}: frames");
    // The call graph: Graphviz's drawing, each function a node, each edge with its count.
    let want = edges(&calls);
    let d = dom(&page, "view=graph");
    let view = d.by_id("view-graph").unwrap();
    let svg = view
        .elements()
        .find(|e| e.tag == "svg")
        .expect("Graphviz's <svg> (graphviz is installed)");
    let nodes: BTreeSet<String> = svg
        .find_all(&|e| e.tag == "g" && e.has_class("node"))
        .into_iter()
        .map(|g| g.elements().find(|e| e.tag == "title").unwrap().text())
        .collect();
    let funcs: BTreeSet<String> = recs.iter().map(dcg_report::model::display_name).collect();
    assert_eq!(nodes, funcs, "{name}: one node per function");
    assert_eq!(graph_edges(&d), want, "{name}: edges and their counts");
    // The tables: the text report's.
    let d = dom(&page, "view=tables");
    let tables = d.by_id("view-tables").unwrap().text();
    assert!(
        tables.contains(&format!("functions by calls (of {})", funcs.len())),
        "{name}: a table heading"
    );
    (page, tcalls, recs)
}

#[test]
fn captures_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (page, tcalls, recs) = check_capture(dir.path(), "a.txt");
    // The default view: a failing top-level call with its typed error return on its row,
    // and the function its error came from.
    let d = dom(&page, "");
    let all = rows(&d);
    let failing = all
        .iter()
        .find(|r| r.name() == "do_sys_openat2" && r.get("ret") == Some(" = -ENOENT"))
        .expect("do_sys_openat2 = -ENOENT on one row");
    assert!(
        failing.marks().contains(&"error from step_into_slowpath"),
        "{failing:?}"
    );
    assert!(all
        .iter()
        .any(|r| r.get("ret") == Some(" = ERR_PTR(-ENOENT)")));

    // The error's origin, opened (`#call=` does what a click on "error from" does): the
    // call itself is marked, under the failing call.
    let origin_id = recs[failing.i].origin.expect("a saved origin");
    let origin = recs.iter().position(|r| r.id == origin_id).unwrap();
    let d = dom(&page, &format!("call={origin}"));
    let path = found_path(&d);
    let at = path.last().unwrap();
    assert_eq!(at.i, origin);
    assert_eq!(at.name(), "step_into_slowpath");
    assert!(at.marks().contains(&"error origin"), "{at:?}");
    assert_eq!(at.get("ret"), Some(" = ERR_PTR(-ENOENT)"));
    assert_eq!(path[0].i, failing.i, "under the failing call");
    check_rows_match_text(&path, &tcalls, "a.txt origin");

    // The search: Enter goes from match to match (here twice), round; the path to the
    // match is open, each call on it as its saved call's parent chain names it.
    let lookups: Vec<usize> = (0..recs.len())
        .filter(|&k| recs[k].func == "lookup_fast")
        .collect();
    assert!(lookups.len() > 2);
    let d = dom(&page, "search=lookup_fast&n=2");
    let b = body(&d);
    assert_eq!(
        b.attr("data-found-count"),
        Some(lookups.len().to_string().as_str())
    );
    assert_eq!(b.attr("data-found-at"), Some("2"));
    let path = found_path(&d);
    let names: Vec<&str> = path.iter().map(Row::name).collect();
    assert_eq!(
        names,
        chain(&recs, lookups[1]),
        "the second lookup_fast's path"
    );
    assert_eq!(names[0], "do_sys_openat2");
    assert_eq!(path.last().unwrap().i, lookups[1]);
    check_rows_match_text(&path, &tcalls, "a.txt search");
    let count = d.by_id("search-count").unwrap().text();
    assert_eq!(count, format!("2 of {}", lookups.len()));
    // One Enter more than there are matches: the first again.
    let d = dom(
        &page,
        &format!("search=lookup_fast&n={}", lookups.len() + 1),
    );
    assert_eq!(found_path(&d).last().unwrap().i, lookups[0]);

    // A click on a frame zooms the flame graph to it: the frames outside it and its
    // callers are hidden, Reset Zoom shows.
    let prefixes = stack_prefixes(&dir.path().join("a.txt.calls"));
    let at: Vec<&String> = prefixes
        .iter()
        .filter(|p| p.rsplit(';').next() == Some("do_file_open"))
        .collect();
    assert_eq!(at.len(), 1, "do_file_open has one frame: {at:?}");
    let stack = at[0].clone();
    let inside = prefixes
        .iter()
        .filter(|p| *p == &stack || p.starts_with(&format!("{stack};")))
        .count();
    let callers = stack.matches(';').count() + 1; // `all` and the callers
    let d = dom(&page, "view=flame&zoom=do_file_open");
    assert_eq!(body(&d).attr("data-zoomed"), Some("do_file_open"));
    let fr = frames(&d);
    let shown = fr.iter().filter(|(_, hidden)| !hidden).count();
    assert_eq!(
        shown,
        inside + callers,
        "zoomed: the frame, its callees, its callers"
    );
    assert_eq!(fr.len() - shown, prefixes.len() + 1 - inside - callers);
    assert!(!d.by_id("unzoom").unwrap().has_class("hide"), "Reset Zoom");
    let d = dom(&page, "view=flame");
    assert!(d.by_id("unzoom").unwrap().has_class("hide"));
    assert!(frames(&d).iter().all(|(_, hidden)| !hidden));
    let png = shots_dir().join("a-flame-zoomed.png");
    browse(
        &format!("file://{}#view=flame&zoom=do_file_open", page.display()),
        &format!("--screenshot={}", png.display()),
    );
    screenshots(&page, "a", "lookup_fast&n=2");
}

/// Without Graphviz the call graph is a table of the edges, with a note that says why.
#[test]
fn call_graph_without_graphviz() {
    let dir = tempfile::tempdir().unwrap();
    let (_, calls) = decode(dir.path(), "a.txt");
    let page = dir.path().join("no-dot.html");
    let empty = dir.path().join("no-programs");
    std::fs::create_dir(&empty).unwrap();
    report_with(&calls, &page, &[("PATH", &empty)]);
    let d = dom(&page, "view=graph");
    let view = d.by_id("view-graph").unwrap();
    assert!(view.elements().all(|e| e.tag != "svg"));
    assert!(view.text().contains("Graphviz is not installed"));
    let heads: Vec<String> = view
        .find_all(&|e| e.tag == "th")
        .iter()
        .map(|e| e.text())
        .collect();
    assert_eq!(heads, ["caller", "callee", "calls"]);
    assert_eq!(graph_edges(&d), edges(&calls));
    let png = shots_dir().join("a-graph-without-graphviz.png");
    browse(
        &format!("file://{}#view=graph", page.display()),
        &format!("--screenshot={}", png.display()),
    );
}

/// Output parameters (`dcg trace --deref`, in process, over `tests/uprobe/outputs.c`):
/// each row shows them after the return value as the text does (`*out=8087`); a call
/// without outputs has none. Needs what user-space tracing needs; skipped otherwise.
#[test]
fn output_parameters_in_a_browser() {
    if let Some(why) = dcg_tests::uprobe_skip_reason() {
        eprintln!("skipping: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/outputs.c", "outputs", &["-O2"]);
    let calls = dir.path().join("outputs.calls");
    let st = Command::new(dcg_bin())
        .args([
            "trace",
            "--engine",
            "inproc",
            "--deref",
            "--show-retvals",
            "--output",
        ])
        .arg(&calls)
        .arg("--func")
        .arg(format!("{}:parse", bin.display()))
        .arg("--func")
        .arg(format!("{}:move", bin.display()))
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let page = dir.path().join("outputs.html");
    report(&calls, &page);
    let d = dom(&page, "");
    let shown: Vec<(String, Option<String>)> = rows(&d)
        .iter()
        .map(|r| (r.name().to_string(), r.get("outs").map(str::to_string)))
        .collect();
    let want = |f: &str, o: Option<&str>| (f.to_string(), o.map(str::to_string));
    assert_eq!(
        shown,
        [
            want("parse [outputs]", Some(" *out=8087")),
            want("parse [outputs]", None),
            want("move [outputs]", Some(" *p={x=17, y=26, m=MODE_FAST}")),
        ]
    );
}

/// The other captures: no return values (a0), arguments (c), module functions (h).
#[test]
fn more_captures_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (page, _, recs) = check_capture(dir.path(), "a0.txt");
    assert!(recs.iter().all(|r| r.ret.is_none()));
    let d = dom(&page, "");
    assert!(rows(&d).iter().all(|r| r.get("ret").is_none()));
    screenshots(&page, "a0", "lookup_fast");

    let (page, tcalls, _) = check_capture(dir.path(), "c.txt");
    let d = dom(&page, "");
    let open = rows(&d)
        .into_iter()
        .find(|r| r.name() == "do_sys_openat2")
        .unwrap();
    assert!(
        open.get("args")
            .unwrap()
            .starts_with("(dfd=-100, filename="),
        "typed arguments: {open:?}"
    );
    assert_eq!(
        open.get("args"),
        Some(format!("({})", tcalls[open.i].args).as_str())
    );
    screenshots(&page, "c", "getname_flags");

    let (page, tcalls, recs) = check_capture(dir.path(), "h.txt");
    let bm = recs
        .iter()
        .position(|r| r.func == "bm_status_write")
        .unwrap();
    let d = dom(&page, "search=bm_status_write");
    let at = found_path(&d).pop().unwrap();
    assert_eq!(at.i, bm);
    assert_eq!(at.name(), "bm_status_write [binfmt_misc]");
    assert_eq!(at.get("ret"), Some(" = -EINVAL"));
    assert!(at.get("args").unwrap().contains("count=2"), "{at:?}");
    check_rows_match_text(&[at], &tcalls, "h.txt");
    screenshots(&page, "h", "bm_status_write");
}

/// Calls that ran in an interrupt, as the BPF engine saves them (every call with its
/// context): the subtree is marked where it begins; lost calls are said where they were
/// lost and at the top of the tree.
#[test]
fn interrupt_subtrees_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let (_, calls) = decode(dir.path(), "a.txt");
    let (header, mut recs) = read_calls(&calls);
    // The first getname_flags call and its subtree, as if a timer interrupt ran them.
    let top = recs.iter().position(|r| r.func == "getname_flags").unwrap();
    let top_id = recs[top].id;
    let mut inside = BTreeSet::from([top_id]);
    for r in &recs {
        if r.parent.is_some_and(|p| inside.contains(&p)) {
            inside.insert(r.id);
        }
    }
    // And the capture lost 3 calls while it recorded it: counted up to the top.
    let mut up = BTreeSet::new();
    let mut at = recs[top].parent;
    while let Some(p) = at {
        up.insert(p);
        at = recs.iter().find(|r| r.id == p).and_then(|r| r.parent);
    }
    for r in &mut recs {
        r.ctx = Some(if inside.contains(&r.id) {
            Context::Irq
        } else {
            Context::Task
        });
        if r.id == top_id || up.contains(&r.id) {
            r.lost = Some(3);
        }
    }
    let marked = dir.path().join("irq.calls");
    write_calls(&marked, &header.source, &recs);
    let page = dir.path().join("irq.html");
    report(&marked, &page);
    let d = dom(&page, "");
    let all = rows(&d);
    let irq = with_mark(&all, "==> irq (interrupt)");
    assert_eq!(irq.len(), 1, "one subtree, marked once");
    assert_eq!(irq[0].i, top);
    let lost: Vec<usize> = all
        .iter()
        .filter(|r| r.marks().contains(&"3 calls lost"))
        .map(|r| r.i)
        .collect();
    let root = recs
        .iter()
        .position(|r| up.contains(&r.id) && r.parent.is_none())
        .unwrap();
    assert_eq!(lost, [root, top], "where they were lost and at the top");
    screenshots(&page, "irq", "getname_flags");
}

/// A session tracing both sides (`joint-7.2.calls`: `--kernel --kernel-depth 1` on
/// Debian 7.2, a user function opening an existing and a missing file): the kernel calls
/// a user call made are marked where the kernel begins, their rows tinted; the failed
/// user call's error comes from its system call; the flame graph's kernel frames carry
/// the kernel annotation.
#[test]
fn kernel_calls_under_user_calls_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    let calls = capture("joint-7.2.calls");
    let page = dir.path().join("joint.html");
    report(&calls, &page);
    let d = dom(&page, "");
    let all = rows(&d);
    let kernel = with_mark(&all, "kernel");
    let names: Vec<&str> = kernel.iter().map(|r| r.name()).collect();
    assert_eq!(
        names,
        [
            "__x64_sys_openat [kernel]",
            "__x64_sys_close [kernel]",
            "__x64_sys_openat [kernel]"
        ],
        "{all:?}"
    );
    assert_eq!(kernel[2].get("ret").map(str::trim), Some("= -ENOENT"));
    let tinted = d.find_all(&|e| e.tag == "div" && e.has_class("call") && e.has_class("kernel"));
    assert_eq!(tinted.len(), 3);
    // The top-level system calls outside the user calls are not marked: no user call
    // made them.
    let top_kernel = all
        .iter()
        .filter(|r| r.name().ends_with(" [kernel]") && !r.marks().contains(&"kernel"))
        .count();
    assert!(top_kernel > 100, "{top_kernel}");
    let failed = all
        .iter()
        .find(|r| {
            r.name().starts_with("load_config") && r.get("ret").is_some_and(|v| v.contains("-1"))
        })
        .unwrap_or_else(|| panic!("the failed load_config: {all:?}"));
    assert!(
        failed
            .marks()
            .contains(&"error from __x64_sys_openat [kernel]"),
        "{failed:?}"
    );
    // The flame graph draws kernel frames in the java palette's kernel orange (green a
    // hundred under red, no blue), the user's in its red (green and blue alike, 50-130).
    let fills = frame_fills(&d);
    let fill = |name: &str| {
        fills
            .iter()
            .find(|(n, _)| n.starts_with(name))
            .map(|f| f.1)
            .unwrap_or_else(|| panic!("no frame {name}: {fills:?}"))
    };
    let (r, g, b) = fill("__x64_sys_openat");
    assert!(
        r >= 190 && r - g == 100 && b == 0,
        "kernel: {:?}",
        (r, g, b)
    );
    let (r, g, b) = fill("load_config");
    assert!(
        r >= 200 && g == b && (50..=130).contains(&g),
        "user: {:?}",
        (r, g, b)
    );
    assert_ne!(fill("load_config"), fill("__x64_sys_openat"));
    // (A search screenshot of a call far down the page comes out blank in headless
    // Chromium, though the DOM has it found and in view: the first call searched here.)
    screenshots(&page, "joint", "__x64_sys_openat");
}

/// Saved calls with stacks (`testkernel-stack.calls`: `dcg trace --stack` on the test
/// kernel, a function reached by openat(2) and by execve(2)): the page marks every
/// top-level call that has one, and `#stack=I` (a click on the mark) opens it below the
/// call's row, its frames outermost first as `dcg trace` prints them.
#[test]
fn stacks_open_below_their_calls() {
    let dir = tempfile::tempdir().unwrap();
    let calls = capture("testkernel-stack.calls");
    let page = dir.path().join("stack.html");
    report(&calls, &page);
    let (_, recs) = read_calls(&calls);
    let with: Vec<usize> = (0..recs.len())
        .filter(|&i| recs[i].stack.is_some())
        .collect();
    assert!(with.len() >= 2, "{} calls with a stack", with.len());
    let d = dom(&page, "");
    let marked: Vec<usize> = rows(&d)
        .iter()
        .filter(|r| r.marks().contains(&"stack"))
        .map(|r| r.i)
        .collect();
    assert_eq!(marked, with);
    for &i in &with[..2] {
        let d = dom(&page, &format!("stack={i}"));
        let shown = d.find_all(&|e| e.tag == "pre" && e.has_class("frames"));
        assert_eq!(shown.len(), 1, "one stack open");
        let want: Vec<String> = recs[i]
            .stack
            .as_ref()
            .unwrap()
            .iter()
            .rev()
            .map(|f| f.label())
            .collect();
        assert_eq!(shown[0].text(), want.join("\n"));
    }
    screenshots(&page, "stack", "do_file_open");
}

/// The same through the code that makes BPF saved calls: a task's entries and returns
/// with their contexts through the flat call tree (a timer interrupt inside `inner`, a
/// softirq on the way out of `outer`); the page marks what the text printer marks, the
/// interrupts' time in its words.
#[test]
fn interrupt_subtrees_from_the_call_tree() {
    use flat::Ev::{Enter, Exit};
    let trace = |json: bool| {
        let set = dcg_dbset::DbSet::new(Vec::new());
        let mut sinks = flat::sinks(json);
        let mut tree = dcg_calls::tree::CallTree::new(
            dcg_calls::funcs::FuncTable::new(&set),
            dcg_calls::tree::Shape::Flat,
            0,
        );
        let (task, irq, softirq) = (
            Some(Context::Task),
            Some(Context::Irq),
            Some(Context::Softirq),
        );
        let events = [
            Enter("outer", 0, task),
            Enter("inner", 1_000, task),
            Enter("tick", 2_000, irq),
            Enter("wall", 2_500, irq),
            Exit("wall", 3_000),
            Exit("tick", 5_000),
            Exit("inner", 9_000),
            Enter("run_timers", 9_500, softirq),
            Exit("run_timers", 10_500),
            Exit("outer", 12_000),
        ];
        let t = dcg_calls::sink::Task {
            key: 9,
            pid: Some(9),
            comm: Some("cat"),
            cpu: Some(1),
            process: None,
        };
        flat::drive(&mut tree, &mut sinks, t, &events)
    };
    let text = trace(false);
    let mut recs: Vec<CallRecord> = trace(true)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    recs.sort_by_key(|r| r.id);
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("flat.calls");
    write_calls(&calls, "flat call tree", &recs);
    let page = dir.path().join("flat.html");
    report(&calls, &page);
    // `wall`, three deep, opened by the search.
    let d = dom(&page, "search=wall");
    let all = rows(&d);
    assert_eq!(all.len(), 5);
    let by = |f: &str| all.iter().find(|r| r.name() == f).unwrap();
    // Where the text printer begins a subtree (`==========> |  irq`), the page does.
    for (f, word) in [("tick", "irq"), ("run_timers", "softirq")] {
        assert!(text.contains(&format!("==========> |  {word}")), "{text}");
        assert!(
            by(f)
                .marks()
                .contains(&format!("==> {word} (interrupt)").as_str()),
            "{:?}",
            by(f)
        );
    }
    for f in ["outer", "inner", "wall"] {
        assert!(by(f).marks().iter().all(|m| !m.contains("interrupt")));
    }
    // The interrupts' time, as the text printer says it at the call's return.
    for (f, irqs) in [("inner", "3.000 us"), ("outer", "4.000 us")] {
        assert!(
            text.contains(&format!("}} /* {f} */ /* irqs {irqs} */")),
            "{text}"
        );
        assert!(by(f).marks().contains(&format!("irqs {irqs}").as_str()));
    }
    screenshots(&page, "flat-irq", "wall");
}

/// A live trace's report (in-process engine on a C program): values as the trace shows.
/// Tracing needs root; the test says so rather than pass without running.
#[test]
fn live_trace_report_in_a_browser() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test traces a program and needs root (run the tests as root, as CI does)"
    );
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
    check_self_contained(&page);
    let d = dom(&page, "search=check_arg");
    let at = found_path(&d).pop().unwrap();
    assert_eq!(
        at.name(),
        "check_arg [values]",
        "the function, in the program"
    );
    let all = rows(&d);
    assert!(
        all.iter().any(|r| r.name() == "check_arg [values]"
            && r.get("args") == Some("(x=-5)")
            && r.get("ret") == Some(" = -EINVAL")),
        "check_arg(x=-5) = -EINVAL on one row"
    );
    screenshots(&page, "live", "check_arg");
}

/// A small deterministic random number generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 > 1.0 - p
    }
}

/// 100,000 calls shaped like a kernel trace: 5,000 functions, each calling its own few
/// callees further down (usually the same ones, now and then another set), many
/// top-level calls of 200 entry points, trees up to 40 deep; 2 % of the calls fail.
fn deep_calls(n: u64) -> Vec<CallRecord> {
    const F: u64 = 5000;
    let mut rng = Rng(0x29_2911);
    let callees: Vec<Vec<(u64, bool)>> = (0..F)
        .map(|i| {
            if i + 2 >= F {
                return Vec::new();
            }
            let k = rng.below(5);
            (0..k)
                .map(|_| {
                    let to = i + 1 + rng.below((F / 10).min(F - 1 - i));
                    (to, rng.chance(0.47))
                })
                .collect()
        })
        .collect();
    struct Gen<'a> {
        rng: Rng,
        callees: &'a [Vec<(u64, bool)>],
        recs: Vec<CallRecord>,
        next: u64,
        n: u64,
    }
    impl Gen<'_> {
        fn call(&mut self, f: u64, parent: Option<u64>, depth: u32, mut t: u64) -> u64 {
            let id = self.next;
            self.next += 1;
            let start = t;
            t += 100;
            if depth < 40 {
                for &(c, usual) in &self.callees[f as usize] {
                    if usual != self.rng.chance(0.02) && self.next < self.n {
                        t = self.call(c, Some(id), depth + 1, t);
                    }
                }
            }
            t += 100 + self.rng.below(500);
            let error = self.rng.chance(0.02);
            self.recs.push(CallRecord {
                id,
                parent,
                func: format!("fn_{f}"),
                demangled: None,
                module: None,
                cpu: Some(0),
                comm: None,
                pid: None,
                tgid: None,
                depth,
                time_ns: Some(start),
                duration_ns: Some(t - start),
                args: vec![saved_format::ArgValue {
                    name: "x".into(),
                    value: depth.to_string(),
                }],
                ret: Some(if error { "-ENOENT" } else { "0" }.into()),
                ret_raw: Some(if error { "-2" } else { "0" }.into()),
                out: Vec::new(),
                error,
                origin: None,
                decoded: true,
                inline: None,
                ctx: None,
                irq_ns: None,
                lost: None,
                ended: None,
                stack: None,
                space: None,
            });
            t
        }
    }
    let mut g = Gen {
        rng: Rng(0x1d_2026),
        callees: &callees,
        recs: Vec::new(),
        next: 0,
        n,
    };
    let mut t = 0;
    while g.next < n {
        let root = g.rng.below(200);
        t = g.call(root, None, 0, t);
    }
    g.recs.sort_by_key(|r| r.id);
    g.recs
}

/// 100,000 calls in deep trees of thousands of functions: the page is written and opens
/// (lazily: only what is open is built), the flame graph has every one of its thousands
/// of frames, the call graph is the table (too many functions for Graphviz, said so),
/// the deepest call opens. Prints the measurements BENCHMARKS.md quotes ("HTML report").
#[test]
fn large_report_opens() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("deep.calls");
    let recs = deep_calls(100_000);
    write_calls(&calls, "generated: 100,000 calls in deep trees", &recs);
    let funcs: BTreeSet<&str> = recs.iter().map(|r| r.func.as_str()).collect();
    let roots = recs.iter().filter(|r| r.parent.is_none()).count();
    let deepest = (0..recs.len()).max_by_key(|&k| recs[k].depth).unwrap();
    let depth = recs[deepest].depth;
    assert!(
        funcs.len() > dcg_report::html::GRAPHVIZ_MAX_FUNCTIONS,
        "{}",
        funcs.len()
    );
    assert!(depth >= 25, "{depth}");

    let page = dir.path().join("deep.html");
    // Built (or found up to date) before the clock starts.
    dcg_bin();
    let started = Instant::now();
    report(&calls, &page);
    let write_s = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&page).unwrap().len();
    let prefixes = stack_prefixes(&calls);
    assert!(prefixes.len() > 5_000, "{}", prefixes.len());

    let started = Instant::now();
    let d = dom(&page, "");
    let wall_s = started.elapsed().as_secs_f64();
    let load_ms: u64 = body(&d).attr("data-load-ms").unwrap().parse().unwrap();
    assert_eq!(body(&d).attr("data-calls"), Some("100000"));
    let built = rows(&d).len();
    assert!(
        built <= 3_000 + 500,
        "lazy: {built} rows built at the start"
    );
    eprintln!(
        "HTML report of {} calls ({} functions, {roots} top-level calls, {} flame graph \
         frames, {} edges, {depth} deep): written in {write_s:.2} s, {size} bytes; the \
         page ready in {load_ms} ms (data-load-ms), {built} rows built; headless Chromium \
         opened and dumped it in {wall_s:.2} s",
        recs.len(),
        funcs.len(),
        prefixes.len() + 1,
        edges(&calls).len(),
    );

    let d = dom(&page, "view=flame");
    assert_eq!(frames(&d).len(), prefixes.len() + 1);
    let d = dom(&page, "view=graph");
    let view = d.by_id("view-graph").unwrap();
    assert!(view.text().contains(&format!(
        "{} functions: more than Graphviz lays out",
        funcs.len()
    )));
    assert_eq!(graph_edges(&d), edges(&calls));
    // The deepest call, opened.
    let d = dom(&page, &format!("call={deepest}"));
    let path = found_path(&d);
    let names: Vec<&str> = path.iter().map(Row::name).collect();
    assert_eq!(names, chain(&recs, deepest));
    assert_eq!(path.len() as u32, depth + 1);
    screenshots(&page, "deep", "fn_4000");
}
