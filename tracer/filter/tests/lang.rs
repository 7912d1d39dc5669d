//! The language: lexing, parsing (the precedence of `&`), binding to a db signature, and
//! one test per class of refused expression with its caret message.

mod common;

use dcg_filter::{bind, parse, parse_duration, CmpOp, ErrorKind, Expr, OperandKind, Program};
use proptest::prelude::*;

fn program(text: &str) -> Program {
    let sig = common::signature();
    bind(&parse(text).unwrap(), &sig)
        .unwrap_or_else(|e| panic!("{}", e.caret_message("--filter", text)))
}

/// The caret message of a refused expression.
fn refused(text: &str) -> String {
    let sig = common::signature();
    let e = parse(text).and_then(|f| bind(&f, &sig)).unwrap_err();
    e.caret_message("--filter", text)
}

#[test]
fn bit_test_binds_tighter_than_comparisons() {
    let f = parse("flags & 0x40 != 0").unwrap();
    let Expr::Cmp { lhs, op, rhs, .. } = f.expr else {
        panic!("{:?}", f.expr)
    };
    assert_eq!(op, CmpOp::Ne);
    assert!(matches!(lhs.kind, OperandKind::Mask(..)));
    assert_eq!(lhs.span, 0..12);
    assert_eq!(rhs.kind, OperandKind::Int(0));
    // Alone, a bit test is true when nonzero.
    assert!(matches!(
        parse("flags & 0x40").unwrap().expr,
        Expr::Truth(_)
    ));
    // As C is written, with parentheses.
    assert!(matches!(
        parse("(flags & 0x40) != 0").unwrap().expr,
        Expr::Cmp { .. }
    ));
}

#[test]
fn and_binds_tighter_than_or_and_not_tightest() {
    let f = parse("!create || flags == 1 && mode == 2").unwrap();
    let Expr::Or(a, b) = f.expr else { panic!() };
    assert!(matches!(*a, Expr::Not(_)));
    assert!(matches!(*b, Expr::And(..)));
    let f = parse("(create || flags == 1) && mode == 2").unwrap();
    assert!(matches!(f.expr, Expr::And(..)));
}

#[test]
fn literals() {
    let rhs = |text: &str| match parse(text).unwrap().expr {
        Expr::Cmp { rhs, .. } => rhs.kind,
        e => panic!("{e:?}"),
    };
    assert_eq!(rhs("flags == -3"), OperandKind::Int(-3));
    assert_eq!(rhs("flags == 0x1F"), OperandKind::Int(31));
    assert_eq!(rhs("mode == 0644"), OperandKind::Int(0o644));
    assert_eq!(rhs("mode == 0"), OperandKind::Int(0));
    assert!(parse("mode == 0648").is_err());
    assert_eq!(rhs("duration > 10us"), OperandKind::Duration(10_000));
    assert_eq!(rhs("duration > 1.5ms"), OperandKind::Duration(1_500_000));
    assert_eq!(rhs("duration > 2s"), OperandKind::Duration(2_000_000_000));
    assert_eq!(rhs("duration > 300ns"), OperandKind::Duration(300));
    assert_eq!(
        rhs(r#"name == "a\"b\\c""#),
        OperandKind::Str("a\"b\\c".into())
    );
    assert_eq!(
        rhs("ret == -ENOENT"),
        OperandKind::Name {
            name: "ENOENT".into(),
            negated: true
        }
    );
    assert_eq!(parse_duration("1.5ms").unwrap(), 1_500_000);
    assert_eq!(parse_duration("10us").unwrap(), 10_000);
    assert!(parse_duration("10").is_err());
}

#[test]
fn function_prefix() {
    let f = parse("vfs_open: ret == -ENOENT").unwrap();
    assert_eq!(f.func, Some(("vfs_open".to_string(), 0..8)));
    // A user-space PATH:PATTERN name holds a colon followed by no space.
    let f = parse("/usr/bin/ls:main: argc == 1").unwrap();
    assert_eq!(f.func.unwrap().0, "/usr/bin/ls:main");
    // A colon and a space inside a string is not a prefix.
    let f = parse(r#"name == "a: b""#).unwrap();
    assert_eq!(f.func, None);
    // The expression's spans index the whole text.
    let e = refused("vfs_open: nmae == 1");
    assert!(e.contains("\n            ^^^^"), "{e}");
}

#[test]
fn binds_parameters_builtins_enumerators_and_errnos() {
    for text in [
        r#"name == "/etc/passwd""#,
        r#"name ~ "*.conf""#,
        "name != NULL",
        "flags & 0x40",
        "flags & 0x40 != 0",
        "mode == 0644",
        "type == PIDTYPE_TGID",
        "file == NULL || file == -ENOMEM",
        "create",
        "create == true",
        "ret == -ENOENT",
        "ret >= 0 && duration > 1.5ms",
        r#"comm == "cat" && pid == 10 && tid != 11 && cpu < 4"#,
        "0 < flags",
    ] {
        program(text);
    }
    assert!(program("flags == 1 && comm == \"x\"").entry_only());
    assert!(!program("flags == 1 && ret == 0").entry_only());
    assert_eq!(program("do_open: ret == 0").func(), Some("do_open"));
    use dcg_filter::Field;
    assert_eq!(
        program("type == PIDTYPE_PID && (ret < 0 || flags & 1) && !(type == 1)").fields(),
        [Field::Arg(3), Field::Ret, Field::Arg(1)]
    );
}

#[test]
fn error_syntax() {
    assert_eq!(
        refused(r#"name == "foo"#),
        "--filter: unterminated string\n  name == \"foo\n          ^^^^"
    );
    assert_eq!(
        refused("flags = 1"),
        "--filter: '=' is not an operator: compare with '=='\n  flags = 1\n        ^"
    );
    assert_eq!(
        refused("flags == "),
        "--filter: expected a name or a value at the end\n  flags == \n           ^"
    );
    assert_eq!(
        refused("(flags == 1"),
        "--filter: expected ')'\n  (flags == 1\n  ^"
    );
    assert_eq!(
        refused("flags == 1)"),
        "--filter: unmatched ')'\n  flags == 1)\n            ^"
    );
    assert_eq!(
        refused("0 < flags < 9"),
        "--filter: comparisons do not chain: join them with '&&'\n  0 < flags < 9\n            ^"
    );
    assert_eq!(
        refused("duration > 1.5"),
        "--filter: a fraction needs a duration unit (ns, us, ms, s): '1.5'\n  duration > 1.5\n             ^^^"
    );
}

#[test]
fn error_unknown_name() {
    assert_eq!(
        refused(r#"nmae == "foo""#),
        "--filter: unknown name 'nmae' (parameters: name, flags, mode, type, file, create, p)\n  \
         nmae == \"foo\"\n  ^^^^"
    );
}

#[test]
fn error_string_compared_with_int() {
    assert_eq!(
        refused(r#"flags == "x""#),
        "--filter: a string '\"x\"' compared with a 32-bit signed integer\n  flags == \"x\"\n           ^^^"
    );
    assert_eq!(
        refused("name == 3"),
        "--filter: a number '3' compared with a string\n  name == 3\n          ^"
    );
}

#[test]
fn error_glob_on_non_string() {
    assert_eq!(
        refused(r#"flags ~ "1*""#),
        "--filter: '~' matches strings; 'flags' is not one\n  flags ~ \"1*\"\n        ^"
    );
}

#[test]
fn error_enumerator_not_in_enum() {
    assert_eq!(
        refused("type == PIDTYPE_SID"),
        "--filter: 'PIDTYPE_SID' is not an enumerator of enum pid_type \
         (PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID)\n  type == PIDTYPE_SID\n          ^^^^^^^^^^^"
    );
}

#[test]
fn error_bit_test_on_pointer_or_string() {
    assert_eq!(
        refused("file & 1"),
        "--filter: '&' tests bits of integers; 'file' is a pointer\n  file & 1\n  ^^^^"
    );
    assert_eq!(
        refused("name & 1 == 0"),
        "--filter: '&' tests bits of integers; 'name' is a string\n  name & 1 == 0\n  ^^^^"
    );
}

#[test]
fn error_duration_compared_with_parameter() {
    assert_eq!(
        refused("flags > 10us"),
        "--filter: a duration '10us' compared with a 32-bit signed integer\n  flags > 10us\n          ^^^^"
    );
    assert_eq!(
        refused("duration > 10"),
        "--filter: duration is compared with a duration ('10us', '1.5ms')\n  duration > 10\n             ^^"
    );
}

#[test]
fn error_uncomparable_type() {
    assert_eq!(
        refused("p == 0"),
        "--filter: 'p' is struct path: no filter compares it\n  p == 0\n  ^"
    );
    assert_eq!(
        refused("ret == NULL"),
        "--filter: NULL 'NULL' compared with a 64-bit signed integer\n  ret == NULL\n         ^^^^"
    );
}

proptest! {
    #[test]
    fn parser_never_panics(text in "\\PC{0,60}") {
        let sig = common::signature();
        if let Ok(f) = parse(&text) {
            let _ = bind(&f, &sig);
        } else if let Err(e) = parse(&text) {
            let _ = e.caret_message("--filter", &text);
        }
    }

    #[test]
    fn parser_never_panics_on_its_own_tokens(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("name"), Just("flags"), Just("ret"), Just("duration"), Just("=="),
                Just("!="), Just("<="), Just("&"), Just("&&"), Just("||"), Just("!"),
                Just("("), Just(")"), Just("-"), Just("~"), Just("0x40"), Just("1.5ms"),
                Just("\"*.c\""), Just("ENOENT"), Just("NULL"), Just("f: "), Just("PIDTYPE_PID"),
            ],
            0..20,
        )
    ) {
        let text = parts.join(" ");
        let sig = common::signature();
        match parse(&text).and_then(|f| bind(&f, &sig)) {
            Ok(_) => {}
            Err(e) => {
                prop_assert!(e.span.end <= text.len());
                let _ = e.caret_message("--filter", &text);
            }
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let text = format!("{}create{}", "(".repeat(5000), ")".repeat(5000));
    assert!(matches!(
        parse(&text).unwrap_err().kind,
        ErrorKind::Syntax(_)
    ));
    let text = format!("{}create", "!".repeat(5000));
    assert!(parse(&text).is_err());
}
