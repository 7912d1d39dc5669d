//! `dcg trace --fields`: members behind a pointer parameter (`tests/uprobe/fields.c`:
//! ints, a bit-field signed and unsigned, a nested struct's members, an enum, one and two
//! pointers followed, `NULL` on the way), read at the entry by both user-space engines.
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

/// Kernel functions refuse `--fields`, before anything is looked up or traced.
#[test]
fn kernel_functions_refuse_fields() {
    let out = Command::new(dcg_tests::dcg_bin())
        .args([
            "trace",
            "--fields",
            "how->flags",
            "--func",
            "do_sys_openat2",
            "--",
            "true",
        ])
        .output()
        .expect("running dcg");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(
        err.trim_end(),
        "dcg: --fields: kernel functions' members are not read yet (user-space functions' are)"
    );
}
