//! Output parameters (`--deref`, `--fields`): `tests/uprobe/outputs.c`'s functions write
//! through the pointers they are given, and the program prints what those hold after
//! each call — the oracle. The in-process recorder reads them again at the return (a
//! scalar, a pointer, a struct, a double, an enum); the fifth output of one call, past what
//! the recorder keeps, is `?`, as every output is with uprobes (a uretprobe has no
//! arguments); a `NULL` output pointer has no value; a `const` pointer is no output. At
//! -O0 and -O2. Needs root, gcc and uprobe events; skipped otherwise.

use std::path::Path;
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

const FUNCS: [&str; 4] = ["parse", "lookup", "move", "split"];

fn trace(engine: &str, bin: &Path, flags: &[&str]) -> Output {
    let mut cmd = Command::new(dcg_tests::dcg_bin());
    cmd.args(["trace", "--engine", engine, "--show-retvals"])
        .args(flags);
    for f in FUNCS {
        cmd.arg("--func").arg(format!("{}:{f}", bin.display()));
    }
    cmd.arg("--").arg(bin).output().expect("running dcg")
}

/// A call's output parameters as `name=value`, space-separated.
fn outs(r: &CallRecord) -> String {
    r.out
        .iter()
        .map(|o| format!("{}={}", o.name, o.value))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the program printed after each call but the return value (`out=8087`), one
/// line per call.
fn printed(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("out "))
        .map(|l| {
            l.split(' ')
                .skip(1)
                .filter(|w| !w.starts_with("ret="))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn outputs_are_what_the_pointers_hold_at_the_return() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        let bin = dcg_tests::gcc(dir.path(), "uprobe/outputs.c", &format!("out{opt}"), &[opt]);
        let out = trace("inproc", &bin, &["--json", "--deref"]);
        let what = format!("inproc {opt}");
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let records = dcg_tests::json_records(&text);
        let shown: Vec<String> = records.iter().map(outs).collect();
        // The program's words, as dcg names them: `&table[1]` is `&table+0xc` (12-byte
        // points); the fifth output of `split` is past what the recorder keeps.
        let mut expected = printed(&text);
        assert_eq!(expected.len(), 6, "{what}: {text}");
        // The program computes what it computes untraced.
        let untraced = Command::new(&bin).output().expect("running outputs");
        assert_eq!(
            expected,
            printed(&String::from_utf8_lossy(&untraced.stdout)),
            "{what}"
        );
        expected[2] = expected[2].replace("&table[1]", "&table+0xc");
        expected[5].push_str(" five=?");
        assert_eq!(shown, expected, "{what}: {text}");
        assert_eq!(shown[0], "out=8087", "{what}");
        assert_eq!(shown[1], "", "{what}: a NULL output pointer");
        assert_eq!(shown[4], "p={x=17, y=26, m=MODE_FAST}", "{what}");
        // A const pointer is an input: `move`'s `by` has no output, `parse`'s `s` neither.
        assert!(records
            .iter()
            .all(|r| r.out.iter().all(|o| o.name != "by" && o.name != "s")));

        // The text shows them in the return comment.
        let out = trace("inproc", &bin, &["--deref"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("/* ret=1 *out=8087 */"), "{what}: {text}");
        assert!(
            text.contains("); /* *p={x=17, y=26, m=MODE_FAST} */"),
            "{what}: {text}"
        );

        // `--fields` alone: the scalar outputs, no struct.
        let out = trace("inproc", &bin, &["--json", "--fields", "parse:s"]);
        let records = dcg_tests::json_records(&String::from_utf8_lossy(&out.stdout));
        let moved = records.iter().find(|r| r.func == "move").expect("move");
        assert!(moved.out.is_empty(), "{what}: {:?}", moved.out);
        assert_eq!(outs(&records[0]), "out=8087", "{what}");

        // Uprobes cannot reach the pointer at the return: `?`, never a guess.
        let out = trace("uprobe", &bin, &["--json", "--deref"]);
        assert!(
            out.status.success(),
            "uprobe {opt}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let records = dcg_tests::json_records(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(records.len(), 6, "uprobe {opt}");
        for r in &records {
            assert!(!r.out.is_empty(), "uprobe {opt}: {r:?}");
            assert!(r.out.iter().all(|o| o.value == "?"), "uprobe {opt}: {r:?}");
        }
    }
}

/// Without `--deref` or `--fields` nothing is read at the return and no call has outputs.
#[test]
fn no_outputs_without_deref_or_fields() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = dcg_tests::gcc(dir.path(), "uprobe/outputs.c", "out", &["-O2"]);
    let out = trace("inproc", &bin, &["--json", "--args"]);
    let records = dcg_tests::json_records(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r.out.is_empty()));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("\"out\":"));
}
