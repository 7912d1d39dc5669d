//! `dcg trace --fields`: members behind a pointer parameter (`tests/uprobe/fields.c`:
//! ints, a bit-field signed and unsigned, a nested struct's members, an enum, one and two
//! pointers followed, `NULL` on the way), read at the entry by both user-space engines;
//! `--deref[=N]`: whole structs N pointers deep (`tests/uprobe/deref.c`); `--filter` on
//! member paths (`tests/uprobe/members.c`: an int, a `char[8]`, an enum), live and over
//! the saved calls.
//! The program prints what it was given, the oracle every value dcg shows is compared
//! with. Refused paths: one line naming the path and why, and nothing runs. Needs root,
//! gcc and uprobe events; skipped otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dcg_tests::uprobe_skip_reason as skip_reason;

macro_rules! require {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
    };
}

fn build(dir: &Path) -> PathBuf {
    dcg_tests::gcc(dir, "uprobe/fields.c", "fields", &["-O2"])
}

fn trace(engine: &str, bin: &Path, fields: &str) -> Output {
    Command::new(dcg_tests::dcg_bin())
        .args([
            "trace", "--engine", engine, "--json", "--fields", fields, "--func",
        ])
        .arg(format!("{}:apply", bin.display()))
        .arg("--")
        .arg(bin)
        .output()
        .expect("running dcg")
}

const PATHS: &str = "c->port,c->ready,c->level,c->in.a,c->in.b,c->mode,c->next->port,\
                     c->next->next->in.a";

#[test]
fn fields_are_the_members_the_program_saw() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path());
    for engine in ["inproc", "uprobe"] {
        let out = trace(engine, &bin, &format!("{}:apply:{PATHS}", bin.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{engine}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let program: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("fields "))
            .map(str::to_string)
            .collect();
        assert_eq!(program.len(), 3, "{engine}: {text}");
        let shown: Vec<String> = dcg_tests::json_records(&text)
            .iter()
            .map(|r| {
                r.args
                    .iter()
                    .filter(|a| a.name.contains("->"))
                    .map(|a| format!("{}={}", a.name, a.value))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(shown, program, "{engine}");
    }
    // Without FUNC: every traced function with the parameter (apply's `c`).
    let out = trace("inproc", &bin, "c->port");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(r#"{"name":"c->port","value":"9090"}"#),
        "{text}"
    );
}

/// `dcg trace --json ARGS --func BIN:FUNC -- BIN` with `engine`.
fn trace_with(engine: &str, bin: &Path, func: &str, args: &[&str]) -> Output {
    Command::new(dcg_tests::dcg_bin())
        .args(["trace", "--engine", engine, "--json"])
        .args(args)
        .arg("--func")
        .arg(format!("{}:{func}", bin.display()))
        .arg("--")
        .arg(bin)
        .output()
        .expect("running dcg")
}

/// `line` with every hex number as `0x_`.
fn without_addresses(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        out.push_str("0x_");
        rest = rest[i + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    out
}

/// `--deref=N`: each call's struct argument N levels deep as `tests/uprobe/deref.c` says
/// it should show (a global by its symbol, a stack and a heap struct by their addresses,
/// NULL), by both engines, at -O0 and -O2; the program prints what it prints untraced.
#[test]
fn deref_shows_the_structs_the_program_passed() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        let bin = dcg_tests::gcc(dir.path(), "uprobe/deref.c", &format!("deref{opt}"), &[opt]);
        let untraced = Command::new(&bin).output().expect("running deref");
        for engine in ["inproc", "uprobe"] {
            for depth in 1..=3 {
                let flag = if depth == 1 {
                    "--deref".to_string()
                } else {
                    format!("--deref={depth}")
                };
                let out = trace_with(engine, &bin, "apply", &[&flag]);
                let what = format!("{engine} {opt} {flag}");
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let text = String::from_utf8_lossy(&out.stdout);
                let prefix = format!("deref{depth} ");
                let program: Vec<&str> = text
                    .lines()
                    .filter_map(|l| l.strip_prefix(prefix.as_str()))
                    .collect();
                assert_eq!(program.len(), 5, "{what}: {text}");
                let shown: Vec<String> = dcg_tests::json_records(&text)
                    .iter()
                    .map(|r| r.args.iter().find(|a| a.name == "c").unwrap().value.clone())
                    .collect();
                assert_eq!(shown, program, "{what}");
                // As untraced, but for the addresses (another run, another layout).
                let printed: Vec<String> = text
                    .lines()
                    .filter(|l| l.starts_with("deref"))
                    .map(without_addresses)
                    .collect();
                let expected: Vec<String> = String::from_utf8_lossy(&untraced.stdout)
                    .lines()
                    .map(without_addresses)
                    .collect();
                assert_eq!(printed, expected, "{what}");
            }
        }
    }
}

/// `--deref-bytes`: the cap cuts a struct (`…` where it cut, the rest left out) and a
/// pointer it left unfollowed.
#[test]
fn deref_bytes_cap_what_is_read() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/deref.c", "deref", &["-O2"]);
    for engine in ["inproc", "uprobe"] {
        let out = trace_with(engine, &bin, "apply", &["--deref=3", "--deref-bytes", "64"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let first = &dcg_tests::json_records(&text)[0];
        let c = &first.args.iter().find(|a| a.name == "c").unwrap().value;
        // struct conf is 56 bytes: its name's first 8 bytes fit, mid does not.
        assert!(
            c.starts_with("&top{port=8080, name=\"dcg\", m=MODE_FAST,")
                && c.ends_with("next=&mid…, cb=handler}"),
            "{engine}: {c}"
        );
        let out = trace_with(engine, &bin, "apply", &["--deref", "--deref-bytes", "40"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let first = &dcg_tests::json_records(&text)[0];
        let c = &first.args.iter().find(|a| a.name == "c").unwrap().value;
        assert!(c.ends_with("level=-3, …}"), "{engine}: {c}");
    }
}

#[test]
fn refused_fields_say_why() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path());
    let cases = [
        ("c->nope", "struct conf has no member nope"),
        ("x->port", "no traced function has a parameter x"),
        ("apply:x->port", "apply has no parameter x (it has: c, k)"),
        ("c.port", "use ->"),
        (
            "c->next->next->next->next->port",
            "follows 5 pointers (at most 3)",
        ),
        ("c->in", "not a scalar"),
        ("nope:c->port", "nope is not among the traced functions"),
    ];
    for (spec, why) in cases {
        let out = trace("inproc", &bin, spec);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{spec}: {err}");
        let line = err.lines().last().unwrap_or("");
        assert!(
            line.starts_with("dcg: --fields: ") && line.contains(why),
            "{spec}: {err}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("fields "),
            "{spec}: the program ran"
        );
    }
}

/// `dcg trace ARGS` fails with `said`, one line, before anything is looked up or traced.
fn refused_at_once(args: &[&str], said: &str) {
    let out = Command::new(dcg_tests::dcg_bin())
        .arg("trace")
        .args(args)
        .output()
        .expect("running dcg");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?}");
    assert_eq!(err.trim_end(), said, "{args:?}");
}

/// One call of `tests/uprobe/members.c` as it printed it: `serve k=0 port=8080
/// tag=hello mode=MODE_FAST`, by member.
struct Served {
    line: String,
    k: String,
    port: String,
    tag: String,
    mode: String,
}

fn served(text: &str) -> Vec<Served> {
    text.lines()
        .filter(|l| l.starts_with("serve "))
        .map(|l| {
            let get = |key: &str| {
                l.split(' ')
                    .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
                    .unwrap_or_else(|| panic!("{key} in {l}"))
                    .to_string()
            };
            Served {
                line: l.to_string(),
                k: get("k"),
                port: get("port"),
                tag: get("tag"),
                mode: get("mode"),
            }
        })
        .collect()
}

/// Filters on members keep exactly the calls whose members, as the program printed them,
/// pass; the member read shows as an argument named by its path, as `--fields` shows it;
/// the program's output is as untraced. The recorder rejects an int member's test at the
/// entry (its word is an entry fetch); a `char[8]` member is decided on the decoded calls.
#[test]
fn filters_on_members_keep_the_calls_whose_members_match() {
    require!();
    type Want = fn(&Served) -> bool;
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/members.c", "members", &["-O2"]);
    let untraced = Command::new(&bin).output().unwrap();
    let untraced = String::from_utf8_lossy(&untraced.stdout).into_owned();
    let all = served(&untraced);
    assert_eq!(all.len(), 5, "{untraced}");
    let cases: [(&str, &str, Want, usize); 5] = [
        ("c->port == 8080", "c->port", |s| s.port == "8080", 2),
        (
            "c->in.tag == \"hello\"",
            "c->in.tag",
            |s| s.tag == "hello",
            0,
        ),
        (
            "c->in.tag ~ \"hel*\"",
            "c->in.tag",
            |s| s.tag.starts_with("hel"),
            0,
        ),
        (
            "c->mode == MODE_SLOW",
            "c->mode",
            |s| s.mode == "MODE_SLOW",
            3,
        ),
        (
            "c->mode == MODE_FAST && c->port != 8080",
            "c->port",
            |s| s.mode == "MODE_FAST" && s.port != "8080",
            4,
        ),
    ];
    for engine in ["inproc", "uprobe"] {
        for (filter, shown, want, rejected) in cases {
            let out = trace_with(engine, &bin, "serve", &["--filter", filter]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{engine} {filter}: {err}");
            let text = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("serve ")).collect();
            let program: Vec<&str> = all.iter().map(|s| s.line.as_str()).collect();
            assert_eq!(lines, program, "{engine} {filter}: the program's output");
            let expected: Vec<&str> = all
                .iter()
                .filter(|s| want(s))
                .map(|s| s.k.as_str())
                .collect();
            assert!(
                !expected.is_empty() && expected.len() < all.len(),
                "{filter}"
            );
            let records = dcg_tests::json_records(&text);
            let arg = |r: &dcg_calls::saved_format::CallRecord, name: &str| {
                r.args
                    .iter()
                    .find(|a| a.name == name)
                    .map(|a| a.value.clone())
                    .unwrap_or_else(|| panic!("{engine} {filter}: no {name} in {r:?}"))
            };
            let kept: Vec<String> = records.iter().map(|r| arg(r, "k")).collect();
            assert_eq!(kept, expected, "{engine} {filter}: {text}");
            for r in &records {
                let s = all.iter().find(|s| s.k == arg(r, "k")).unwrap();
                let value = match shown {
                    "c->port" => s.port.clone(),
                    "c->in.tag" => format!("\"{}\"", s.tag),
                    _ => s.mode.clone(),
                };
                assert_eq!(arg(r, shown), value, "{engine} {filter}");
            }
            let notice = format!("{rejected} top-level calls rejected at entry by --filter");
            assert_eq!(
                err.contains(&notice),
                engine == "inproc" && rejected > 0,
                "{engine} {filter}: {err}"
            );
        }
    }
}

/// `dcg report --filter` over the saved calls of a session that read the member
/// (`--fields`) keeps the trees the live filter keeps; a saved call without the member's
/// argument has no call that passes.
#[test]
fn report_filters_on_members_as_the_live_filter() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/members.c", "members", &["-O2"]);
    let filter = "c->port == 8080";
    let saved = dir.path().join("all.calls");
    let kept_saved = dir.path().join("kept.calls");
    // The `k` of each call the report keeps (a Chrome trace: one slice per call, with
    // its values).
    let ks = |calls: &Path, filter: &str| -> Vec<String> {
        let out = Command::new(dcg_tests::dcg_bin())
            .args(["report", "--format", "chrome", "--filter", filter])
            .arg(calls)
            .output()
            .expect("running dcg report");
        assert!(
            out.status.success(),
            "{filter}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let trace: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "call")
            .map(|e| e["args"]["k"].as_str().unwrap().to_string())
            .collect()
    };
    for engine in ["inproc", "uprobe"] {
        let out = trace_with(
            engine,
            &bin,
            "serve",
            &["--fields", "c->port", "--output", saved.to_str().unwrap()],
        );
        assert!(out.status.success(), "{engine}");
        let live = trace_with(
            engine,
            &bin,
            "serve",
            &["--filter", filter, "--output", kept_saved.to_str().unwrap()],
        );
        assert!(live.status.success(), "{engine}");
        let live: Vec<String> = dcg_tests::json_records(&String::from_utf8_lossy(&live.stdout))
            .iter()
            .map(|r| r.args.iter().find(|a| a.name == "k").unwrap().value.clone())
            .collect();
        assert_eq!(live, ["0", "2", "4"], "{engine}");
        assert_eq!(ks(&saved, filter), live, "{engine}");
        assert_eq!(ks(&kept_saved, filter), live, "{engine}");
        // Saved without the member: nothing passes.
        let bare = dir.path().join("bare.calls");
        let out = trace_with(
            engine,
            &bin,
            "serve",
            &["--args", "--output", bare.to_str().unwrap()],
        );
        assert!(out.status.success(), "{engine}");
        assert!(ks(&bare, filter).is_empty(), "{engine}");
    }
}

/// A member path that does not resolve is refused before the program runs: the
/// dcg-deref message with a caret under the path; with the function_graph engine a
/// kernel filter on a member is refused in one line.
#[test]
fn refused_member_filters_say_where() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/members.c", "members", &["-O2"]);
    for engine in ["inproc", "uprobe"] {
        let expr = "k == 1 && c->prot == 8080";
        let out = trace_with(engine, &bin, "serve", &["--filter", expr]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{engine}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines,
            [
                "dcg: --filter: c->prot: struct conn has no member prot (it has: port, in, \
                 mode, next)",
                "  k == 1 && c->prot == 8080",
                "            ^^^^^^^",
            ],
            "{engine}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("serve "),
            "{engine}: the program ran"
        );
    }
}

/// A kernel filter on a member with the function_graph engine (which reads no members) is
/// refused in one line, before anything is looked up or traced.
#[test]
fn kernel_member_filters_need_bpf() {
    refused_at_once(
        &[
            "--engine",
            "fgraph",
            "--func",
            "do_sys_openat2",
            "--filter",
            "how->flags & 0x40",
            "--",
            "true",
        ],
        "dcg: --filter: how->flags is a member: filters on members are decided by the BPF \
         engine only (the function_graph engine shows them with --fields): leave out --engine \
         fgraph",
    );
}
