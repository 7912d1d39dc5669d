//! Evaluation: raw values from an engine by the bound type, rendered values read back,
//! and the trees kept of saved calls.

mod common;

use dcg_calls::saved_format::CallRecord;
use dcg_filter::saved::{select, RecordValues};
use dcg_filter::{bind, parse, CallValues, Program, Signature, Value};

/// A call as an engine would deliver it.
#[derive(Default)]
struct Call<'a> {
    args: Vec<Value<'a>>,
    ret: Option<Value<'a>>,
    duration: Option<u64>,
    comm: Option<&'a str>,
    pid: Option<u64>,
}

impl CallValues for Call<'_> {
    fn arg(&self, index: usize) -> Value<'_> {
        self.args.get(index).copied().unwrap_or(Value::Missing)
    }
    fn ret(&self) -> Value<'_> {
        self.ret.unwrap_or(Value::Missing)
    }
    fn duration_ns(&self) -> Option<u64> {
        self.duration
    }
    fn comm(&self) -> Option<&str> {
        self.comm
    }
    fn pid(&self) -> Option<u64> {
        self.pid
    }
    fn tid(&self) -> Option<u64> {
        self.pid
    }
    fn cpu(&self) -> Option<u64> {
        Some(1)
    }
}

fn program(text: &str) -> Program {
    bind(&parse(text).unwrap(), &common::signature()).unwrap()
}

/// `do_open(name, flags, mode, type, file, create, p)` as raw values.
fn raw_call(name: &str, flags: u64, ret: u64) -> Call<'_> {
    Call {
        args: vec![
            Value::Str(name),
            Value::Raw(flags),
            Value::Raw(0o644),
            Value::Raw(1),
            Value::Raw(0),
            Value::Raw(1),
            Value::Raw(0),
        ],
        ret: Some(Value::Raw(ret)),
        duration: Some(1_500),
        comm: Some("cat"),
        pid: Some(42),
    }
}

#[test]
fn raw_values_by_their_type() {
    let c = raw_call("/etc/ld.so.conf", 0x8000_0041, (-2i64) as u64);
    for (text, want) in [
        (r#"name ~ "*.conf""#, true),
        (r#"name ~ "/etc/*""#, true),
        (r#"name == "/etc/ld.so.conf""#, true),
        (r#"name != "/etc/ld.so.conf""#, false),
        ("name != NULL", true),
        // int is 32 bits, signed: 0x80000041 is negative.
        ("flags < 0", true),
        ("flags & 0x40", true),
        ("flags & 0x2", false),
        ("flags & 0x40 == 0x40", true),
        ("!(flags & 0x2)", true),
        ("mode == 0x1a4", true),
        ("type == PIDTYPE_TGID", true),
        ("type != PIDTYPE_PID", true),
        ("file == NULL", true),
        ("create", true),
        ("create == false", false),
        ("ret == -ENOENT", true),
        ("ret == -2", true),
        ("ret < 0 && duration >= 1.5us", true),
        ("duration > 1.5us", false),
        (r#"comm == "cat" && pid == 42 && cpu == 1"#, true),
        ("tid == 43 || comm ~ \"c*\"", true),
    ] {
        assert_eq!(program(text).matches(&c), want, "{text}");
    }
}

#[test]
fn error_pointers_and_unsigned_wrap() {
    let sig = common::signature();
    let p = bind(&parse("file == -ENOMEM").unwrap(), &sig).unwrap();
    let mut c = raw_call("x", 0, 0);
    c.args[4] = Value::Raw((-12i64) as u64);
    assert!(p.matches(&c));
    c.args[4] = Value::Raw(0xffff_8880_0000_1000);
    assert!(!p.matches(&c));
    // umode_t is 16 bits unsigned: -1 is 0xffff.
    c.args[2] = Value::Raw(0xffff);
    assert!(program("mode == -1").matches(&c));
}

#[test]
fn missing_or_unreadable_values_compare_false() {
    let mut c = raw_call("x", 0, 0);
    c.args[1] = Value::Missing;
    assert!(!program("flags == 0").matches(&c));
    assert!(!program("flags != 0").matches(&c));
    c.ret = None;
    c.duration = None;
    assert!(!program("ret == 0 || duration > 1ns").matches(&c));
    // Text no reader knows: a cut string, a symbol, a value no source could read.
    c.args[0] = Value::Text(r#""/etc/ld.so"..."#);
    assert!(!program(r#"name ~ "*""#).matches(&c));
    c.args[4] = Value::Text("&init_user_ns");
    assert!(!program("file == NULL").matches(&c));
    c.args[3] = Value::Text("?reg5");
    assert!(!program("type == PIDTYPE_PID").matches(&c));
}

#[test]
fn rendered_values_read_back_by_type() {
    let mut c = raw_call("x", 0, 0);
    c.args = [
        r#""a \"q\"\n.conf""#,
        "-100",
        "420",
        "PIDTYPE_PGID",
        "ERR_PTR(-ENOMEM)",
        "true",
        "(struct path)0x10",
    ]
    .into_iter()
    .map(Value::Text)
    .collect();
    c.ret = Some(Value::Text("-ENOENT"));
    for (text, want) in [
        (r#"name ~ "a \"q\"*""#, true),
        (r#"name == "a \"q\".conf""#, false),
        (r#"name ~ "a*.conf""#, true),
        ("flags == -100", true),
        ("mode == 420", true),
        ("type == PIDTYPE_PGID", true),
        ("type == 2", true),
        ("file == -ENOMEM", true),
        ("file != NULL", true),
        ("create == true", true),
        ("ret == -ENOENT", true),
        ("ret == -2", true),
    ] {
        assert_eq!(program(text).matches(&c), want, "{text}");
    }
}

// ---- saved calls -------------------------------------------------------------------

/// A call: id, parent, func, arguments (name, value), ret, duration.
type Spec<'a> = (
    u64,
    Option<u64>,
    &'a str,
    &'a [(&'a str, &'a str)],
    Option<&'a str>,
    u64,
);

/// Records as JSON lines write them.
fn records(calls: &[Spec<'_>]) -> Vec<CallRecord> {
    calls
        .iter()
        .map(|&(id, parent, func, args, ret, dur)| {
            let args: Vec<_> = args
                .iter()
                .map(|(n, v)| serde_json::json!({"name": n, "value": v}))
                .collect();
            serde_json::from_value(serde_json::json!({
                "id": id, "parent": parent, "func": func, "module": null, "cpu": 0,
                "comm": "cat", "pid": 7, "depth": 0, "time_ns": null, "duration_ns": dur,
                "args": args, "ret": ret, "ret_raw": null, "error": false, "origin": null,
                "decoded": true,
            }))
            .unwrap()
        })
        .collect()
}

/// Two trees of `do_sys_openat2` (completion order: children first).
fn two_opens() -> Vec<CallRecord> {
    records(&[
        (
            2,
            Some(1),
            "getname",
            &[("filename", "\"/etc/a.conf\"")],
            Some("0xff11"),
            300,
        ),
        (
            3,
            Some(1),
            "do_filp_open",
            &[("dfd", "-100"), ("op", "0xffa0")],
            Some("ERR_PTR(-ENOENT)"),
            5_000,
        ),
        (
            1,
            None,
            "do_sys_openat2",
            &[("dfd", "-100"), ("filename", "\"/etc/a.conf\"")],
            Some("-ENOENT"),
            6_000,
        ),
        (
            5,
            Some(4),
            "getname",
            &[("filename", "\"/etc/passwd\"")],
            Some("0xff12"),
            200,
        ),
        (
            6,
            Some(4),
            "do_filp_open",
            &[("dfd", "-100"), ("op", "0xffa0")],
            Some("0xff13"),
            900,
        ),
        (
            4,
            None,
            "do_sys_openat2",
            &[("dfd", "-100"), ("filename", "\"/etc/passwd\"")],
            Some("3"),
            1_500,
        ),
    ])
}

fn ids(rs: &[CallRecord]) -> Vec<u64> {
    rs.iter().map(|r| r.id).collect()
}

fn filters(texts: &[&str]) -> Vec<dcg_filter::Filter> {
    texts.iter().map(|t| parse(t).unwrap()).collect()
}

#[test]
fn saved_trees_kept_by_their_top_level_call() {
    let keep = |f: &[&str]| ids(&select(two_opens(), &filters(f), None, None).unwrap());
    assert_eq!(keep(&[]), [2, 3, 1, 5, 6, 4]);
    assert_eq!(keep(&["ret == -ENOENT"]), [2, 3, 1]);
    assert_eq!(keep(&[r#"filename ~ "*.conf""#]), [2, 3, 1]);
    assert_eq!(keep(&["ret >= 0", "dfd == -100"]), [5, 6, 4]);
    assert_eq!(keep(&["ret >= 0", "duration > 2us"]), Vec::<u64>::new());
    assert_eq!(
        keep(&["duration < 2us || ret == -ENOENT"]),
        [2, 3, 1, 5, 6, 4]
    );
    // A call inside the tree.
    assert_eq!(keep(&["do_filp_open: ret == -ENOENT"]), [2, 3, 1]);
    assert_eq!(keep(&["getname: filename == \"/etc/passwd\""]), [5, 6, 4]);
    assert_eq!(keep(&["tid == 7 && cpu == 0 && comm == \"cat\""]).len(), 6);
    assert_eq!(keep(&["pid == 7"]), Vec::<u64>::new());
}

#[test]
fn saved_min_duration_keeps_long_calls_and_their_callers() {
    let keep = |f: &[&str], d| ids(&select(two_opens(), &filters(f), Some(d), None).unwrap());
    assert_eq!(keep(&[], 1_000), [3, 1, 4]);
    assert_eq!(keep(&[], 250), [2, 3, 1, 6, 4]);
    assert_eq!(keep(&["ret == 3"], 1_000), [4]);
    assert_eq!(keep(&[], 10_000), Vec::<u64>::new());
}

#[test]
fn saved_filter_binding_to_no_function_is_refused() {
    let e = select(
        two_opens(),
        &filters(&["ret == 0", "nmae == 1"]),
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(e.filter, 1);
    assert_eq!(
        e.error.to_string(),
        "unknown name 'nmae' (parameters: dfd, filename)"
    );
    // A name some function has: the others have no matching call.
    let rs = select(
        two_opens(),
        &filters(&["getname: filename ~ \"*wd\""]),
        None,
        None,
    )
    .unwrap();
    assert_eq!(ids(&rs), [5, 6, 4]);
}

#[test]
fn untyped_signature_reads_enumerators_as_names() {
    let sig = Signature::untyped(["type"]);
    let p = bind(&parse("type == PIDTYPE_TGID").unwrap(), &sig).unwrap();
    let r = &records(&[(1, None, "f", &[("type", "PIDTYPE_TGID")], None, 1)])[0];
    assert!(p.matches(&RecordValues(r)));
    let r = &records(&[(1, None, "f", &[("type", "PIDTYPE_PID")], None, 1)])[0];
    assert!(!p.matches(&RecordValues(r)));
}

proptest::proptest! {
    /// Saved files are input: no rendered text makes evaluation panic, for every type.
    #[test]
    fn reading_any_text_never_panics(text in "\\PC{0,24}|-E[A-Z]{0,8}|ERR_PTR\\(.{0,10}\\)|'.{0,5}'|\".{0,8}") {
        let call = Call {
            args: vec![Value::Text(&text); 7],
            ret: Some(Value::Text(&text)),
            ..Call::default()
        };
        for f in [
            r#"name ~ "*""#, "name == NULL", "flags < 0", "mode & 1", "type == PIDTYPE_PID",
            "file == -ENOMEM", "create", "ret == -ENOENT",
        ] {
            let _ = program(f).matches(&call);
        }
        let untyped = Signature::untyped(["a"]);
        for f in ["a == 1", "a ~ \"x*\"", "a == FOO", "a & 3", "a == NULL"] {
            let p = bind(&parse(f).unwrap(), &untyped).unwrap();
            let _ = p.matches(&call);
        }
    }
}

#[test]
fn saved_calls_of_a_db_function_bind_to_its_types() {
    let dbs = dcg_dbset::DbSet::new(vec![common::db()]);
    let args: &[(&str, &str)] = &[
        ("name", "\"/etc/x.conf\""),
        ("flags", "65"),
        ("mode", "420"),
        ("type", "PIDTYPE_TGID"),
        ("file", "ERR_PTR(-ENOMEM)"),
        ("create", "false"),
    ];
    let rs = records(&[(1, None, "do_open", args, Some("-ENOENT"), 10)]);
    let keep = |f: &str| ids(&select(rs.clone(), &filters(&[f]), None, Some(&dbs)).unwrap()) == [1];
    assert!(keep("type == PIDTYPE_TGID && type != 2 && type == 1"));
    assert!(keep(
        "file == -ENOMEM && flags & 0x40 && mode == 0644 && !create"
    ));
    assert!(keep("ret == -ENOENT && name ~ \"*.conf\""));
    assert!(!keep("ret == -EPERM"));
    // Typed: an enumerator of another enum is refused, as for a live session.
    let e = select(
        rs.clone(),
        &filters(&["type == PIDTYPE_FOO"]),
        None,
        Some(&dbs),
    )
    .unwrap_err();
    assert!(matches!(
        e.error.kind,
        dcg_filter::ErrorKind::UnknownEnumerator { .. }
    ));
    // Untyped (no db), the same name is only compared as text.
    assert!(select(rs, &filters(&["type == PIDTYPE_FOO"]), None, None)
        .unwrap()
        .is_empty());
}
