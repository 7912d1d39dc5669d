//! Each rule of the layout on a hand-made `struct conf`: members, nested structs, char
//! arrays, enums, bit-fields, an anonymous union, a flexible array, a function pointer,
//! a linked list (depth), the byte cap (`…`) and bytes not captured (`?`).

use dcg_deref::*;
use dcg_render::Role;
use proptest::prelude::*;
use sigdb::*;

mod common;
use common::*;

fn memory() -> Blocks {
    Blocks(vec![
        (0x1000, conf(8080, b"dcg", 7, b"hello", 0x2000, 0x3000)),
        (0x2000, conf(1, b"two", 2, b"", 0, 0)),
        (0x3000, b"a label\0".to_vec()),
    ])
}

fn text(db: &Db, addr: u64, depth: u32, cap: u32, mem: &dyn Memory) -> String {
    let ty = db
        .by_name("apply")
        .next()
        .unwrap()
        .params()
        .next()
        .unwrap()
        .ty();
    let plan = plan(ty, depth, cap);
    let mut out = String::new();
    render_deref(&mut out, ty, addr, &plan, mem, &Syms, Role::Plain);
    out
}

const TAIL: &str = "cb=handler, ready=1, level=-3, count=5 /* union */, u={i=65 /* union */}";

#[test]
fn depth_one() {
    let db = db();
    assert_eq!(
        text(&db, 0x1000, 1, DEFAULT_CAP, &memory()),
        format!(
            "&table{{port=8080, name=\"dcg\", m=MODE_FAST, in={{a=7, tag=\"hello\"}}, \
             next=0x2000, {TAIL}, label=0x3000, data={{…}}}}"
        )
    );
    // Not on a symbol's start: the type and the address.
    let mem = Blocks(vec![(0x1008, conf(1, b"x", 0, b"", 0, 0))]);
    assert!(text(&db, 0x1008, 1, DEFAULT_CAP, &mem).starts_with(
        "(struct conf *)0x1008{port=1, name=\"x\", m=MODE_FAST, in={a=0, tag=\"\"}, next=NULL"
    ));
}

#[test]
fn depth_two_follows_the_list_and_strings() {
    let db = db();
    assert_eq!(
        text(&db, 0x1000, 2, DEFAULT_CAP, &memory()),
        format!(
            "&table{{port=8080, name=\"dcg\", m=MODE_FAST, in={{a=7, tag=\"hello\"}}, \
             next=(struct conf *)0x2000{{port=1, name=\"two\", m=MODE_FAST, in={{a=2, tag=\"\"}}, \
             next=NULL, {TAIL}, label=NULL, data={{…}}}}, {TAIL}, label=\"a label\", data={{…}}}}"
        )
    );
    let ty = db
        .by_name("apply")
        .next()
        .unwrap()
        .params()
        .next()
        .unwrap()
        .ty();
    let p = plan(ty, 2, DEFAULT_CAP);
    assert_eq!(
        p.reads,
        [
            Read {
                from: From::Arg,
                len: 80,
                kind: ReadKind::Struct,
                level: 1
            },
            Read {
                from: From::Pointer {
                    read: 0,
                    offset: 32
                },
                len: 80,
                kind: ReadKind::Struct,
                level: 2
            },
            Read {
                from: From::Pointer {
                    read: 0,
                    offset: 72
                },
                len: STRING_BYTES,
                kind: ReadKind::String,
                level: 2
            },
        ]
    );
    assert!(!p.capped);
    // The anonymous union's `free` is not followed: a union shows its first member.
    assert_eq!(plan(ty, 3, 10_000).reads.len(), 5);
}

#[test]
fn the_cap_cuts() {
    let db = db();
    assert_eq!(
        text(&db, 0x1000, 1, 20, &memory()),
        "&table{port=8080, name=\"dcg\", m=MODE_FAST, in={a=7, …}}"
    );
    assert_eq!(
        text(&db, 0x1000, 1, 18, &memory()),
        "&table{port=8080, name=\"dcg\", m=MODE_FAST, in={…}}"
    );
    assert_eq!(
        text(&db, 0x1000, 1, 6, &memory()),
        "&table{port=8080, name=\"dc\"…}"
    );
    // The budget is per argument: the second level gets what the first left.
    let ty = db
        .by_name("apply")
        .next()
        .unwrap()
        .params()
        .next()
        .unwrap()
        .ty();
    let p = plan(ty, 2, 100);
    assert_eq!(p.reads.iter().map(|r| r.len).collect::<Vec<_>>(), [80, 20]);
    assert!(p.capped);
    assert_eq!(p.bytes(), 100);
    assert!(text(&db, 0x1000, 2, 100, &memory()).contains(
        "next=(struct conf *)0x2000{port=1, name=\"two\", m=MODE_FAST, in={a=2, …}}, cb=handler"
    ));
    // A pointer the cap left unfollowed (the depth asked for it) is marked cut too.
    let t = text(&db, 0x1000, 2, 80, &memory());
    assert!(t.contains(", next=0x2000…, cb=handler"), "{t}");
    assert!(!text(&db, 0x1000, 1, 80, &memory()).contains("0x2000…"));
}

#[test]
fn bytes_not_captured() {
    let db = db();
    let full = conf(8080, b"dcg", 7, b"hello", 0, 0);
    let mem = Blocks(vec![(0x1000, full[..10].to_vec())]);
    assert_eq!(
        text(&db, 0x1000, 1, DEFAULT_CAP, &mem),
        "&table{port=8080, name=\"dcg\", m=?, in={a=?, tag=?}, next=?, cb=?, ready=?, level=?, \
         count=? /* union */, u={i=? /* union */}, label=?, data={…}}"
    );
    let mem = Blocks(vec![(0x1000, full[..6].to_vec())]);
    assert!(
        text(&db, 0x1000, 1, DEFAULT_CAP, &mem).starts_with("&table{port=8080, name=\"dc\"?, m=?")
    );
    // Nothing captured, NULL, an error value: the pointer alone.
    assert_eq!(
        text(&db, 0x1000, 1, DEFAULT_CAP, &Blocks::default()),
        "&table"
    );
    assert_eq!(
        text(&db, 0x7000, 1, DEFAULT_CAP, &Blocks::default()),
        "0x7000"
    );
    assert_eq!(text(&db, 0, 1, DEFAULT_CAP, &memory()), "NULL");
    assert_eq!(text(&db, 1, 0, DEFAULT_CAP, &memory()), "0x1");
}

#[test]
fn not_a_struct_pointer_has_no_plan() {
    let db = db();
    let f = db.by_name("apply").next().unwrap();
    assert!(plan(f.ret(), 1, DEFAULT_CAP).reads.is_empty());
    let c = f.params().next().unwrap().ty();
    assert!(plan(c, 0, DEFAULT_CAP).reads.is_empty());
    let p = plan(c, 1, 0);
    assert!(p.reads.is_empty() && p.capped);
}

proptest! {
    #[test]
    fn never_panics(
        blocks in proptest::collection::vec((0u64..0x4000, proptest::collection::vec(any::<u8>(), 0..200)), 0..4),
        addr in prop_oneof![Just(0x1000u64), 0u64..0x4000, any::<u64>()],
        depth in 0u32..5,
        cap in 0u32..600,
    ) {
        let db = db();
        let mem = Blocks(blocks);
        let s = text(&db, addr, depth, cap, &mem);
        prop_assert!(!s.is_empty());
        let ty = db.by_name("apply").next().unwrap().params().next().unwrap().ty();
        prop_assert!(plan(ty, depth, cap).bytes() <= u64::from(cap));
    }
}

#[test]
fn members_are_not_errnos() {
    let db = db();
    let ty = db
        .by_name("apply")
        .next()
        .unwrap()
        .params()
        .next()
        .unwrap()
        .ty();
    let p = plan(ty, 1, DEFAULT_CAP);
    let mem = Blocks(vec![(0x7000, conf(-2, b"", 0, b"", 0, 0))]);
    let mut out = String::new();
    render_deref(&mut out, ty, 0x7000, &p, &mem, &NoSymbols, Role::Return);
    assert!(out.starts_with("(struct conf *)0x7000{port=-2, "), "{out}");
    out.clear();
    render_deref(
        &mut out,
        ty,
        (-12i64) as u64,
        &p,
        &mem,
        &NoSymbols,
        Role::Return,
    );
    assert_eq!(out, "ERR_PTR(-ENOMEM)");
}
