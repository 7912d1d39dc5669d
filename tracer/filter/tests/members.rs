//! Member paths in filters (`how->flags & 0x40`): lexed as one name, resolved by
//! dcg-deref against the db function (refused with its message, under a caret), typed
//! by the member's type, decided at the entry only for an engine that reads members
//! there, and read back from a saved call's argument named by the path.

mod common;

use dcg_calls::saved_format::CallRecord;
use dcg_filter::lex::{tokens, Tok};
use dcg_filter::saved::{select, RecordValues};
use dcg_filter::{bind, parse, CmpOp, EntryTest, EntryValue, ErrorKind, Program};

fn program(text: &str) -> Program {
    let f = parse(text).unwrap();
    bind(&f, &common::how_signature(std::slice::from_ref(&f)))
        .unwrap_or_else(|e| panic!("{}", e.caret_message("--filter", text)))
}

fn refused(text: &str) -> (ErrorKind, String) {
    let f = parse(text).unwrap();
    let e = bind(&f, &common::how_signature(std::slice::from_ref(&f))).unwrap_err();
    (e.kind.clone(), e.caret_message("--filter", text))
}

#[test]
fn a_path_is_one_name() {
    let t = tokens("c->next->name ~ \"d*\" && c->in.tag", 0).unwrap();
    assert_eq!(t[0].tok, Tok::Ident("c->next->name".into()));
    assert_eq!(t[0].span, 0..13);
    assert_eq!(t[4].tok, Tok::Ident("c->in.tag".into()));
    assert_eq!(t[4].span, 24..33);
    // Not a step: an arrow or a dot not followed by a name.
    let t = tokens("c->1 c-> x", 0).unwrap();
    let toks: Vec<&Tok> = t.iter().map(|t| &t.tok).collect();
    assert_eq!(
        toks,
        [
            &Tok::Ident("c".into()),
            &Tok::Minus,
            &Tok::Gt,
            &Tok::Int(1),
            &Tok::Ident("c".into()),
            &Tok::Minus,
            &Tok::Gt,
            &Tok::Ident("x".into()),
        ]
    );
    assert!(tokens("c. y", 0).is_err());
}

#[test]
fn paths_of_a_filter() {
    let f = parse("FUNC: a->b == 3 || (how->flags & 0x40) && !x.y").unwrap();
    assert_eq!(f.func.as_ref().unwrap().0, "FUNC");
    assert_eq!(f.paths(), ["a->b", "how->flags", "x.y"]);
    assert!(parse("flags & 0x40").unwrap().paths().is_empty());
}

#[test]
fn members_typed_as_their_members() {
    for text in [
        "how->flags & 0x40",
        "how->flags == 0x8041",
        "how->mode == 0644",
        r#"how->tag == "hello""#,
        r#"how->tag ~ "he*""#,
        "how->type == PIDTYPE_TGID",
        "how->ready",
        "how->next != NULL",
        "how->label == NULL",
        "0 < how->mode",
        "how: how->flags & 0x40",
    ] {
        let p = program(text);
        assert_eq!(p.members().count(), 1, "{text}");
    }
    assert_eq!(
        program("how->flags & 0x40 && how->mode == 1 && how->flags > 2")
            .members()
            .collect::<Vec<_>>(),
        ["how->flags", "how->mode"]
    );
}

#[test]
fn refused_members_say_why_under_a_caret() {
    let (kind, msg) = refused("how->flags & 1 && how->nope == 3");
    assert!(matches!(kind, ErrorKind::Member(_)));
    assert_eq!(
        msg,
        "--filter: how->nope: struct how has no member nope (it has: flags, mode, tag, type, \
         ready, next, label, p)\n  how->flags & 1 && how->nope == 3\n                    \
         ^^^^^^^^^"
    );
    // On the right of a literal too.
    let (_, msg) = refused("3 == how->nope");
    assert!(msg.ends_with("\n       ^^^^^^^^^"), "{msg}");
    let (_, msg) = refused("how->p");
    assert!(
        msg.contains("how->p: 16 bytes of a struct, not a scalar"),
        "{msg}"
    );
    let (_, msg) = refused("nohow->flags == 1");
    assert!(
        msg.contains("do_how has no parameter nohow (it has: how)"),
        "{msg}"
    );
    let (_, msg) = refused("how.flags == 1");
    assert!(msg.contains("a pointer: use ->"), "{msg}");
    // The member's type decides the comparison, as a parameter's does.
    let (kind, _) = refused("how->type == NOPE");
    assert!(matches!(kind, ErrorKind::UnknownEnumerator { .. }));
    let (_, msg) = refused(r#"how->flags == "x""#);
    assert!(
        msg.contains("a string '\"x\"' compared with a 64-bit unsigned integer"),
        "{msg}"
    );
    // --fields reads a `char *` member's pointer, not its string.
    let (_, msg) = refused(r#"how->label == "x""#);
    assert!(msg.contains("compared with a pointer"), "{msg}");
    let (_, msg) = refused("how->tag & 1");
    assert!(msg.contains("'&' tests bits of integers"), "{msg}");
}

#[test]
fn entry_tests_on_members_for_an_engine_that_reads_them() {
    let p = program(r#"how->flags & 0x40 && how->ready && how->tag == "x" && how->mode > 1"#);
    // A bit-field and a char array are left to the decoded calls.
    assert_eq!(
        p.entry_tests(true),
        [
            EntryTest {
                value: EntryValue::Member("how->flags".into()),
                size: 8,
                signed: false,
                mask: Some(0x40),
                cmp: None,
            },
            EntryTest {
                value: EntryValue::Member("how->mode".into()),
                size: 2,
                signed: false,
                mask: None,
                cmp: Some((CmpOp::Gt, 1)),
            },
        ]
    );
    assert!(p.entry_tests(false).is_empty());
}

fn record(id: u64, args: &[(&str, &str)]) -> CallRecord {
    let args: Vec<_> = args
        .iter()
        .map(|(n, v)| serde_json::json!({"name": n, "value": v}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "id": id, "parent": null, "func": "do_how", "module": null, "cpu": 0,
        "comm": "cat", "pid": 7, "depth": 0, "time_ns": null, "duration_ns": 10,
        "args": args, "ret": "0", "ret_raw": null, "error": false, "origin": null,
        "decoded": true,
    }))
    .unwrap()
}

#[test]
fn saved_calls_read_the_argument_named_by_the_path() {
    let r = record(
        1,
        &[
            ("how", "0x7ffc1000"),
            ("how->flags", "33345"),
            ("how->tag", "\"hello\""),
            ("how->type", "PIDTYPE_TGID"),
        ],
    );
    for (text, want) in [
        ("how->flags & 0x40", true),
        ("how->flags & 0x80", false),
        (r#"how->tag == "hello""#, true),
        (r#"how->tag ~ "h*o""#, true),
        ("how->type == PIDTYPE_TGID", true),
        // Not among the arguments: false, as a missing parameter's value.
        ("how->mode == 0", false),
        ("how->mode != 0", false),
    ] {
        assert_eq!(program(text).matches(&RecordValues(&r)), want, "{text}");
    }
}

#[test]
fn saved_calls_without_a_db_bind_paths_by_name() {
    let records = vec![
        record(1, &[("how", "0x1"), ("how->flags", "64")]),
        record(2, &[("how", "0x2"), ("how->flags", "0")]),
        record(3, &[("how", "0x3")]),
    ];
    let kept = select(records, &[parse("how->flags & 0x40").unwrap()], None, None).unwrap();
    assert_eq!(kept.iter().map(|r| r.id).collect::<Vec<_>>(), [1]);
    // A path whose parameter the records do not have is refused.
    let records = vec![record(1, &[("how", "0x1")])];
    let e = select(records, &[parse("c->port == 1").unwrap()], None, None).unwrap_err();
    assert!(matches!(e.error.kind, ErrorKind::UnknownName { .. }), "{e}");
}

#[test]
fn a_live_session_reads_the_members_its_filters_name() {
    use dcg_filter::saved::TreeFilter;
    let filters = vec![
        parse("how->mode == 1 && how->flags & 0x40").unwrap(),
        parse("how->flags != 0").unwrap(),
    ];
    let roots = [("do_how".to_string(), common::how_signature(&filters))];
    let t = TreeFilter::bound(filters, None, &roots, &|_| None, "nowhere").unwrap();
    let want = |p: &str| ("do_how".to_string(), p.to_string());
    assert_eq!(t.members(), [want("how->mode"), want("how->flags")]);
    assert_eq!(t.reads(), (true, false));
    assert_eq!(t.entry_tests("do_how", true).len(), 3);
    assert!(t.entry_tests("do_how", false).is_empty());
}
