//! `dcg trace --fields`: members behind a pointer parameter (`tests/uprobe/fields.c`:
//! ints, a bit-field signed and unsigned, a nested struct's members, an enum, one and two
//! pointers followed, `NULL` on the way), read at the entry by both user-space engines;
//! `--deref[=N]`: whole structs N pointers deep (`tests/uprobe/deref.c`).
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

/// `dcg trace --json ARGS --func BIN:apply -- BIN` with `engine`.
fn trace_with(engine: &str, bin: &Path, args: &[&str]) -> Output {
    Command::new(dcg_tests::dcg_bin())
        .args(["trace", "--engine", engine, "--json"])
        .args(args)
        .arg("--func")
        .arg(format!("{}:apply", bin.display()))
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
                let out = trace_with(engine, &bin, &[&flag]);
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
        let out = trace_with(engine, &bin, &["--deref=3", "--deref-bytes", "64"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let first = &dcg_tests::json_records(&text)[0];
        let c = &first.args.iter().find(|a| a.name == "c").unwrap().value;
        // struct conf is 56 bytes: its name's first 8 bytes fit, mid does not.
        assert!(
            c.starts_with("&top{port=8080, name=\"dcg\", m=MODE_FAST,")
                && c.ends_with("next=&mid…, cb=handler}"),
            "{engine}: {c}"
        );
        let out = trace_with(engine, &bin, &["--deref", "--deref-bytes", "40"]);
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

/// Kernel functions refuse `--deref`, before anything is looked up or traced.
#[test]
fn kernel_functions_refuse_deref() {
    let out = Command::new(dcg_tests::dcg_bin())
        .args(["trace", "--deref", "--func", "do_sys_openat2", "--", "true"])
        .output()
        .expect("running dcg");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(
        err.trim_end(),
        "dcg: --deref: kernel functions' structs are not read yet (user-space functions' are; \
         --fields reads a kernel function's members)"
    );
}
