//! `dcg report --filter` and `--min-duration` end to end: over real saved calls (the
//! golden JSON decode of capture c.txt, 19 `do_sys_openat2` trees of the test kernel) and
//! a saved-calls file with strings, each selection checked against the calls counted here
//! from the records; refused expressions print one line with the caret below.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use dcg_calls::saved_format::CallRecord;
use dcg_tests::{dcg_bin, repo_root};

fn real_calls() -> PathBuf {
    repo_root().join("tests/golden/decode/c.json")
}

fn read_records(path: &Path) -> Vec<CallRecord> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("\"dcg\":\"calls\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Calls per function of `dcg report --format json` with `args`.
fn report(input: &Path, args: &[&str]) -> BTreeMap<String, u64> {
    let out = Command::new(dcg_bin())
        .arg("report")
        .arg(input)
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["calls"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Calls per function of the records `keep` says.
fn counts(records: &[CallRecord], keep: impl Fn(&CallRecord) -> bool) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in records.iter().filter(|r| keep(r)) {
        *out.entry(r.func.clone()).or_default() += 1;
    }
    out
}

/// Each record's top-level call.
fn tops(records: &[CallRecord]) -> HashMap<u64, u64> {
    let by_id: HashMap<u64, &CallRecord> = records.iter().map(|r| (r.id, r)).collect();
    records
        .iter()
        .map(|r| {
            let mut at = r;
            while let Some(p) = at.parent.and_then(|p| by_id.get(&p)) {
                at = p;
            }
            (r.id, at.id)
        })
        .collect()
}

/// The top-level calls of trees holding a call for which `pick` holds.
fn trees_with(records: &[CallRecord], pick: impl Fn(&CallRecord) -> bool) -> Vec<u64> {
    let top = tops(records);
    let mut out: Vec<u64> = records
        .iter()
        .filter(|r| pick(r))
        .map(|r| top[&r.id])
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn errno_filter_keeps_exactly_the_failing_trees() {
    let records = read_records(&real_calls());
    let top = tops(&records);
    let failing = trees_with(&records, |r| {
        r.parent.is_none() && r.ret.as_deref() == Some("-ENOENT")
    });
    assert_eq!(failing.len(), 3, "the capture has three failing opens");
    let want = counts(&records, |r| failing.contains(&top[&r.id]));
    assert_eq!(report(&real_calls(), &["--filter", "ret == -ENOENT"]), want);
    // The same by the errno's number, and two filters that must both hold.
    assert_eq!(report(&real_calls(), &["--filter", "ret == -2"]), want);
    let both = report(
        &real_calls(),
        &["--filter", "ret < 0", "--filter", "!(ret != -ENOENT)"],
    );
    assert_eq!(both, want);
    // Without options the report is the whole input.
    assert_eq!(report(&real_calls(), &[]), counts(&records, |_| true));
}

#[test]
fn enum_filter_inside_the_tree() {
    let records = read_records(&real_calls());
    let top = tops(&records);
    let with_tgid = trees_with(&records, |r| {
        r.func == "__task_pid_nr_ns" && r.args.iter().any(|a| a.value == "PIDTYPE_TGID")
    });
    assert_eq!(with_tgid.len(), 1);
    let want = counts(&records, |r| with_tgid.contains(&top[&r.id]));
    let got = report(
        &real_calls(),
        &["--filter", "__task_pid_nr_ns: type == PIDTYPE_TGID"],
    );
    assert_eq!(got, want);
    let none = report(
        &real_calls(),
        &["--filter", "get_pid_task: type != PIDTYPE_PID"],
    );
    assert!(none.is_empty(), "{none:?}");
}

#[test]
fn min_duration_keeps_long_calls_and_their_callers() {
    let records = read_records(&real_calls());
    let by_id: HashMap<u64, &CallRecord> = records.iter().map(|r| (r.id, r)).collect();
    let mut kept = std::collections::HashSet::new();
    for r in &records {
        if r.duration_ns.is_some_and(|d| d >= 100_000) {
            let mut at = Some(r);
            while let Some(c) = at {
                kept.insert(c.id);
                at = c.parent.and_then(|p| by_id.get(&p).copied());
            }
        }
    }
    let want = counts(&records, |r| kept.contains(&r.id));
    assert!(want.len() > 1 && want.values().sum::<u64>() < records.len() as u64);
    assert_eq!(report(&real_calls(), &["--min-duration", "100us"]), want);
    assert_eq!(report(&real_calls(), &["--min-duration", "0.1ms"]), want);
    // With a filter: the long calls of the failing trees.
    let top = tops(&records);
    let failing = trees_with(&records, |r| {
        r.parent.is_none() && r.ret.as_deref() == Some("-ENOENT")
    });
    let want = counts(&records, |r| {
        kept.contains(&r.id) && failing.contains(&top[&r.id])
    });
    let got = report(
        &real_calls(),
        &["--min-duration", "100us", "--filter", "ret == -ENOENT"],
    );
    assert_eq!(got, want);
}

const STRINGS: &str = r#"{"dcg":"calls","version":1,"source":"hand"}
{"id":2,"parent":1,"func":"getname","module":null,"cpu":0,"comm":"cat","pid":7,"depth":1,"time_ns":null,"duration_ns":300,"args":[{"name":"filename","value":"\"/etc/ld.so.conf\""}],"ret":"0xff11","ret_raw":"0xff11","error":false,"origin":null,"decoded":true}
{"id":1,"parent":null,"func":"do_sys_openat2","module":null,"cpu":0,"comm":"cat","pid":7,"depth":0,"time_ns":null,"duration_ns":6000,"args":[{"name":"dfd","value":"-100"},{"name":"filename","value":"\"/etc/ld.so.conf\""}],"ret":"3","ret_raw":"3","error":false,"origin":null,"decoded":true}
{"id":3,"parent":null,"func":"do_sys_openat2","module":null,"cpu":1,"comm":"sh","pid":8,"depth":0,"time_ns":null,"duration_ns":900,"args":[{"name":"dfd","value":"-100"},{"name":"filename","value":"\"/etc/passwd\""}],"ret":"-ENOENT","ret_raw":"-2","error":true,"origin":3,"decoded":true}
{"id":4,"parent":null,"func":"do_sys_openat2","module":null,"cpu":1,"comm":"sh","pid":8,"depth":0,"time_ns":null,"duration_ns":800,"args":[{"name":"dfd","value":"-100"},{"name":"filename","value":"\"/etc/a.conf\"..."}],"ret":"-ENOENT","ret_raw":"-2","error":true,"origin":4,"decoded":true}
"#;

#[test]
fn string_glob_filter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.calls");
    std::fs::write(&path, STRINGS).unwrap();
    let got = report(&path, &["--filter", r#"filename ~ "*.conf""#]);
    // The string cut short (`"..."...`) cannot be read: its call is not kept.
    assert_eq!(
        got,
        BTreeMap::from([("do_sys_openat2".into(), 1), ("getname".into(), 1)])
    );
    let got = report(
        &path,
        &["--filter", r#"comm == "sh" && tid == 8 && cpu == 1"#],
    );
    assert_eq!(got, BTreeMap::from([("do_sys_openat2".into(), 2)]));
    let got = report(
        &path,
        &["--filter", r#"getname: filename == "/etc/ld.so.conf""#],
    );
    assert_eq!(got.values().sum::<u64>(), 2);
}

#[test]
fn refused_expressions_print_a_caret() {
    let run = |args: &[&str]| {
        let out = Command::new(dcg_bin())
            .arg("report")
            .arg(real_calls())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    };
    assert_eq!(
        run(&["--filter", "ret == -ENOENT", "--filter", "nmae == 1"]),
        "dcg: --filter: unknown name 'nmae' (parameters: dfd, filename, how)\n  nmae == 1\n  ^^^^\n"
    );
    assert_eq!(
        run(&["--filter", "ret == \"x"]),
        "dcg: --filter: unterminated string\n  ret == \"x\n         ^^\n"
    );
    let out = Command::new(dcg_bin())
        .args(["report", "--min-duration", "10"])
        .arg(real_calls())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// ---- dcg decode --------------------------------------------------------------------

/// A db with `long do_sys_openat2(int dfd, const char *filename, struct open_how *how)`
/// only: the capture's other functions stay raw.
fn openat2_db(dir: &Path) -> PathBuf {
    use sigdb::{
        DbBuilder, FuncFlags, FunctionDesc, Location, ModuleDesc, ModuleKind, ParamDesc,
        Qualifiers, TypeDesc, TypeKind,
    };
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![],
        base: 0,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let long = b.add_type(TypeDesc::base(TypeKind::Int, "long int", 8, true));
    let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
    let cch = b.add_type(TypeDesc::qualified(Qualifiers::CONST, ch, 1));
    let s = b.add_type(TypeDesc::pointer(cch, 8));
    let how = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "open_how", 24));
    let phow = b.add_type(TypeDesc::pointer(how, 8));
    let params = [("dfd", int), ("filename", s), ("how", phow)]
        .into_iter()
        .enumerate()
        .map(|(i, (name, ty))| ParamDesc {
            name: name.into(),
            ty,
            loc: Location::Reg([5, 4, 1][i]),
        })
        .collect();
    b.add_function(FunctionDesc {
        module: m,
        addr: 0x1000,
        size: 0xd0,
        name: "do_sys_openat2".into(),
        symbol: None,
        ret: long,
        params,
        flags: FuncFlags::empty(),
    });
    let path = dir.join("openat2.sigdb");
    std::fs::write(&path, b.finish().unwrap()).unwrap();
    path
}

fn decode(db: &Path, args: &[&str]) -> String {
    let out = Command::new(dcg_bin())
        .args(["--offline", "decode", "--color", "never", "--db"])
        .arg(db)
        .arg(repo_root().join("tests/data/captures/c.txt"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json_records(text: &str) -> Vec<CallRecord> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn decode_filter_and_min_duration() {
    let dir = tempfile::tempdir().unwrap();
    let db = openat2_db(dir.path());
    let all = json_records(&decode(&db, &["--json"]));
    let top = tops(&all);
    let failing = trees_with(&all, |r| {
        r.parent.is_none() && r.ret.as_deref() == Some("-ENOENT")
    });
    assert_eq!(failing.len(), 3);
    let want: Vec<u64> = all
        .iter()
        .filter(|r| failing.contains(&top[&r.id]))
        .map(|r| r.id)
        .collect();
    let got = json_records(&decode(&db, &["--json", "--filter", "ret == -ENOENT"]));
    assert_eq!(got.iter().map(|r| r.id).collect::<Vec<_>>(), want);
    // Text: the same trees, each line as the whole decode prints it.
    let text_all = decode(&db, &[]);
    let text = decode(&db, &["--filter", "ret == -ENOENT"]);
    let opens = |t: &str| {
        t.lines()
            .filter(|l| l.contains("|  do_sys_openat2("))
            .count()
    };
    assert_eq!((opens(&text_all), opens(&text)), (19, 3));
    let mut rest = text_all.lines();
    for line in text.lines() {
        assert!(
            rest.any(|l| l == line),
            "not in the whole decode, in order: {line}"
        );
    }
    // --min-duration: the long calls and their callers.
    let by_id: HashMap<u64, &CallRecord> = all.iter().map(|r| (r.id, r)).collect();
    let mut kept = std::collections::BTreeSet::new();
    for r in all
        .iter()
        .filter(|r| r.duration_ns.is_some_and(|d| d >= 50_000))
    {
        let mut at = Some(r);
        while let Some(c) = at {
            kept.insert(c.id);
            at = c.parent.and_then(|p| by_id.get(&p).copied());
        }
    }
    let got = json_records(&decode(&db, &["--json", "--min-duration", "50us"]));
    let got: std::collections::BTreeSet<u64> = got.iter().map(|r| r.id).collect();
    assert_eq!(got, kept);
    // A refused expression on a function the db knows: before decoding, with a caret.
    let expr = "do_sys_openat2: filename == 3";
    let out = Command::new(dcg_bin())
        .args(["--offline", "decode", "--db"])
        .arg(&db)
        .arg(repo_root().join("tests/data/captures/c.txt"))
        .args(["--filter", expr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "dcg: --filter: a number '3' compared with a string\n  {expr}\n  {}^\n",
            " ".repeat(expr.len() - 1)
        )
    );
    // A string parameter the capture shows as an address cannot be read: nothing passes.
    let none = decode(&db, &["--filter", r#"filename ~ "*""#]);
    assert_eq!(none, "");
}

// ---- binding to a real db --------------------------------------------------------

const OPEN_C: &str = r#"
#include <stdbool.h>
typedef unsigned short umode_t;
enum pid_type { PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID, PIDTYPE_SID };
struct file { int x; };
struct path { void *a, *b; };
typedef const char *cstr;
long do_open(cstr name, int flags, const umode_t mode, enum pid_type type,
             struct file *file, bool create, struct path p, unsigned char u)
{
    return flags + mode + type + create + (long)file + (long)name + (long)p.a + u;
}
"#;

/// A db dwarfscan builds from `OPEN_C` compiled with gcc.
fn c_db(dir: &Path) -> sigdb::Db {
    let src = dir.join("open.c");
    let obj = dir.join("open.o");
    std::fs::write(&src, OPEN_C).unwrap();
    let st = Command::new("gcc")
        .args(["-g", "-O1", "-c", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let mut result = dwarfscan::scan(
        &[dwarfscan::Input::new(&obj)],
        &dwarfscan::Options::default(),
    )
    .unwrap();
    let path = dir.join("open.sigdb");
    result.write(&path).unwrap();
    sigdb::Db::open(&path).unwrap()
}

#[test]
fn binding_to_a_db_dwarfscan_built() {
    use dcg_filter::{bind, parse, CallValues, Signature, Value, ValueType};
    let dir = tempfile::tempdir().unwrap();
    let db = c_db(dir.path());
    let f = db.by_name("do_open").next().unwrap();
    let sig = Signature::of(&f, &[]);
    let types: Vec<(&str, &ValueType)> = sig
        .params
        .iter()
        .map(|p| (p.name.as_str(), &p.ty))
        .collect();
    assert_eq!(types[0], ("name", &ValueType::CString));
    assert_eq!(
        types[1],
        (
            "flags",
            &ValueType::Int {
                size: 4,
                signed: true
            }
        )
    );
    // Through the typedef and the const.
    assert_eq!(
        types[2],
        (
            "mode",
            &ValueType::Int {
                size: 2,
                signed: false
            }
        )
    );
    assert!(
        matches!(types[3], ("type", ValueType::Enum(e)) if e.name == "enum pid_type"
        && e.value("PIDTYPE_SID") == Some(3))
    );
    assert_eq!(types[4], ("file", &ValueType::Pointer));
    assert_eq!(types[5], ("create", &ValueType::Bool));
    assert_eq!(types[6], ("p", &ValueType::Other("struct path".into())));
    assert_eq!(
        types[7],
        (
            "u",
            &ValueType::Int {
                size: 1,
                signed: false
            }
        )
    );
    assert_eq!(
        sig.ret,
        ValueType::Int {
            size: 8,
            signed: true
        }
    );

    struct Call(Vec<Value<'static>>);
    impl CallValues for Call {
        fn arg(&self, i: usize) -> Value<'_> {
            self.0.get(i).copied().unwrap_or(Value::Missing)
        }
        fn ret(&self) -> Value<'_> {
            Value::Raw((-2i64) as u64)
        }
        fn duration_ns(&self) -> Option<u64> {
            Some(20_000)
        }
        fn comm(&self) -> Option<&str> {
            Some("cat")
        }
        fn pid(&self) -> Option<u64> {
            Some(1)
        }
        fn tid(&self) -> Option<u64> {
            Some(1)
        }
        fn cpu(&self) -> Option<u64> {
            Some(0)
        }
    }
    let call = Call(vec![
        Value::Str("/etc/ld.so.conf"),
        Value::Raw(0x0000_0000_ffff_ff9c), // -100 in 32 bits, junk above
        Value::Raw(0xdead_01a4),           // 0644 in 16 bits
        Value::Raw(3),
        Value::Raw(0),
        Value::Raw(1),
        Value::Raw(0x1000),
        Value::Raw(0x1ff),
    ]);
    for (text, want) in [
        (r#"name ~ "*.conf""#, true),
        ("flags == -100", true),
        ("mode == 0644 || mode == 420", true),
        ("type == PIDTYPE_SID", true),
        ("file == NULL && create", true),
        ("u == 255", true),
        ("ret == -ENOENT && duration >= 20us", true),
        ("flags & 0x4 != 0", true),
        ("type != PIDTYPE_SID || !create", false),
    ] {
        let p = bind(&parse(text).unwrap(), &sig).unwrap();
        assert_eq!(p.matches(&call), want, "{text}");
    }
    let refused = |text: &str| {
        bind(&parse(text).unwrap(), &sig)
            .unwrap_err()
            .caret_message("--filter", text)
    };
    assert_eq!(
        refused("type == PIDTYPE_FOO"),
        "--filter: 'PIDTYPE_FOO' is not an enumerator of enum pid_type (PIDTYPE_PID, \
         PIDTYPE_TGID, PIDTYPE_PGID, PIDTYPE_SID)\n  type == PIDTYPE_FOO\n          ^^^^^^^^^^^"
    );
    assert_eq!(
        refused("mdoe == 1"),
        "--filter: unknown name 'mdoe' (parameters: name, flags, mode, type, file, create, \
         p, u)\n  mdoe == 1\n  ^^^^"
    );
}
