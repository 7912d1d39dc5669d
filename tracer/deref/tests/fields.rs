//! `--fields` paths on the test db: parsing, resolving (offsets through pointers, nested
//! structs, anonymous members, bit-fields), the errors, and rendering a value read.

use dcg_deref::*;
use dcg_render::Role;
use sigdb::Db;

mod common;
use common::*;

fn field<'a>(db: &'a Db, path: &str) -> Result<FieldPlan<'a>, FieldError> {
    let f = db.by_name("apply").next().unwrap();
    resolve(&f, &parse_path(path)?)
}

#[test]
fn parse() {
    let (f, p) = parse_fields_arg("./prog:apply:c->next->name, c->in.a,c").unwrap();
    assert_eq!(f, Some("./prog:apply"));
    let texts: Vec<&str> = p.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["c->next->name", "c->in.a", "c"]);
    assert_eq!(
        p[1].steps,
        [
            (Access::Arrow, "in".to_string()),
            (Access::Dot, "a".to_string())
        ]
    );
    assert_eq!(parse_fields_arg("how->flags").unwrap().0, None);
    for bad in ["", "c->", "c..a", "1c", "c->1", "c-a", "c->a b"] {
        assert!(
            matches!(parse_path(bad), Err(FieldError::Syntax(_))),
            "{bad}"
        );
    }
}

#[test]
fn resolved() {
    let db = db();
    let p = field(&db, "c->port").unwrap();
    assert_eq!((p.hops(), p.size, p.bits), (&[0][..], 4, None));
    let p = field(&db, "c->next->name").unwrap();
    assert_eq!((p.hops(), p.size), (&[32, 4][..], 8));
    assert_eq!(p.ty.display(), "char [8]");
    let p = field(&db, "c->in.tag").unwrap();
    assert_eq!((p.hops(), p.size), (&[20][..], 8));
    // A member of an anonymous union, and a bit-field.
    let p = field(&db, "c->count").unwrap();
    assert_eq!((p.hops(), p.size), (&[56][..], 8));
    let p = field(&db, "c->level").unwrap();
    assert_eq!((p.hops(), p.size, p.bits), (&[48][..], 1, Some((1, 3))));
    // The parameter itself.
    let p = field(&db, "c").unwrap();
    assert!(p.hops().is_empty());
}

#[test]
fn short_char_arrays_are_read_as_words() {
    let db = db();
    let p = field(&db, "c->in.tag").unwrap();
    assert!(p.is_string());
    assert_eq!(p.unreadable(), None);
    // A struct, a flexible array, a string behind a pointer are not.
    let p = field(&db, "c->in").unwrap();
    assert!(!p.is_string());
    assert_eq!(
        p.unreadable().as_deref(),
        Some("12 bytes of a struct, not a scalar (name one of its members)")
    );
    assert!(!field(&db, "c->data").unwrap().is_string());
    assert!(field(&db, "c->data").unwrap().unreadable().is_some());
    assert!(!field(&db, "c->label").unwrap().is_string());
}

#[test]
fn errors() {
    let db = db();
    let e = field(&db, "c->nope").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c->nope: struct conf has no member nope (it has: port, name, m, in, next, cb, \
         ready, level, count, free, u, label, data)"
    );
    let e = field(&db, "x->port").unwrap_err();
    assert_eq!(
        e.to_string(),
        "x->port: apply has no parameter x (it has: c)"
    );
    let e = field(&db, "c.port").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c.port: .port on struct conf *, a pointer: use ->"
    );
    let e = field(&db, "c->in->a").unwrap_err();
    assert_eq!(
        e.to_string(),
        "c->in->a: ->a on struct inner, not a pointer: use ."
    );
    let e = field(&db, "c->port.x").unwrap_err();
    assert_eq!(e.to_string(), "c->port.x: .x on int, not a struct or union");
    let e = field(&db, "c->label->x").unwrap_err();
    assert!(
        e.to_string()
            .contains("-> needs a pointer to a struct or union"),
        "{e}"
    );
}

#[test]
fn rendered() {
    let db = db();
    let bytes = conf(8080, b"dcg", 7, b"hello", 0x2000, 0x3000);
    let show = |path: &str, captured: &[u8]| {
        let p = field(&db, path).unwrap();
        let mut out = String::new();
        render_value(&mut out, p.ty, captured, p.size, p.bits, &Syms, Role::Plain);
        out
    };
    let at = |path: &str| {
        let p = field(&db, path).unwrap();
        let o = *p.hops().last().unwrap() as usize;
        bytes[o..o + p.size as usize].to_vec()
    };
    assert_eq!(show("c->port", &at("c->port")), "8080");
    assert_eq!(show("c->name", &at("c->name")), "\"dcg\"");
    assert_eq!(show("c->m", &at("c->m")), "MODE_FAST");
    assert_eq!(show("c->in", &at("c->in")), "{a=7, tag=\"hello\"}");
    assert_eq!(show("c->level", &at("c->level")), "-3");
    assert_eq!(show("c->cb", &at("c->cb")), "handler");
    assert_eq!(show("c->next", &at("c->next")), "0x2000");
    assert_eq!(show("c->port", &[]), "?");
    assert_eq!(show("c->in", &at("c->in")[..4]), "{a=7, tag=?}");
}

/// A typedef'd integer the engine names (kernel flags through dcg-kflags).
#[test]
fn typedef_text() {
    use sigdb::*;
    struct Flags;
    impl Symbols for Flags {
        fn pointer_text(&self, _: u64, _: bool) -> Option<String> {
            None
        }
        fn typedef_text(&self, names: &[&str], value: u64) -> Option<String> {
            (names == ["my_gfp", "gfp_t"]).then(|| format!("F{value:x}"))
        }
    }
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "p".into(),
        kind: ModuleKind::Executable,
        build_id: vec![],
        base: 0,
    });
    let uint = b.add_type(TypeDesc::base(TypeKind::Int, "unsigned int", 4, false));
    let gfp = b.add_type(TypeDesc::typedef("gfp_t", uint, 4));
    let mine = b.add_type(TypeDesc::typedef("my_gfp", gfp, 4));
    for (i, ty) in [mine, gfp].into_iter().enumerate() {
        b.add_function(FunctionDesc {
            module: m,
            addr: 0x1000 + i as u64 * 16,
            size: 16,
            name: format!("f{i}"),
            symbol: None,
            ret: ty,
            params: vec![],
            flags: FuncFlags::empty(),
        });
    }
    let db = Db::from_bytes(b.finish().unwrap()).unwrap();
    let show = |f: &str| {
        let ty = db.by_name(f).next().unwrap().ret();
        let mut out = String::new();
        render_value(
            &mut out,
            ty,
            &0xcc0u32.to_le_bytes(),
            4,
            None,
            &Flags,
            Role::Arg,
        );
        out
    };
    assert_eq!(show("f0"), "Fcc0");
    // Another chain: not the engine's, a number.
    assert_eq!(show("f1"), "3264");
}
