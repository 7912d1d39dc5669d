//! Each rule of the layout on a hand-made `struct conf`: members, nested structs, char
//! arrays, enums, bit-fields, an anonymous union, a flexible array, a function pointer,
//! a linked list (depth), the byte cap (`…`) and bytes not captured (`?`).

use dcg_deref::*;
use dcg_render::Role;
use proptest::prelude::*;
use sigdb::*;

/// ```c
/// enum mode { MODE_SLOW, MODE_FAST };
/// struct inner { int a; char tag[8]; };                          // 12 bytes
/// struct conf {
///     int port; char name[8]; enum mode m; struct inner in;      // 0, 4, 12, 16
///     struct conf *next; int (*cb)(int);                         // 32, 40
///     unsigned ready:1; int level:3;                             // bits 384, 385
///     union { long count; struct conf *free; };                  // 56
///     union { int i; char c; } u;                                // 64
///     const char *label;                                         // 72
///     char data[];                                               // 80
/// };
/// ```
fn db() -> Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "prog".into(),
        kind: ModuleKind::Executable,
        build_id: vec![],
        base: 0,
    });
    let mem = |name: &str, ty, bit_offset, bit_size| MemberDesc {
        name: name.into(),
        ty,
        bit_offset,
        bit_size,
    };
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let uint = b.add_type(TypeDesc::base(TypeKind::Int, "unsigned int", 4, false));
    let long = b.add_type(TypeDesc::base(TypeKind::Int, "long int", 8, true));
    let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
    let cch = b.add_type(TypeDesc::qualified(Qualifiers::CONST, ch, 1));
    let pcch = b.add_type(TypeDesc::pointer(cch, 8));
    let arr8 = b.add_type(TypeDesc::array(ch, 8, 8));
    let flex = b.add_type(TypeDesc::array(ch, 0, 0));
    let mut e = TypeDesc::aggregate(TypeKind::Enum, "mode", 4);
    e.enumerators = vec![("MODE_SLOW".into(), 0), ("MODE_FAST".into(), 1)];
    let mode = b.add_type(e);
    let inner = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "inner", 12));
    b.set_members(inner, vec![mem("a", int, 0, 0), mem("tag", arr8, 32, 0)]);
    let conf = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "conf", 80));
    let pconf = b.add_type(TypeDesc::pointer(conf, 8));
    let proto = b.add_type(TypeDesc::function(int, vec![int], false));
    let pproto = b.add_type(TypeDesc::pointer(proto, 8));
    let mut anon = TypeDesc::aggregate(TypeKind::Union, "", 8);
    anon.members = vec![mem("count", long, 0, 0), mem("free", pconf, 0, 0)];
    let anon = b.add_type(anon);
    let mut u = TypeDesc::aggregate(TypeKind::Union, "", 4);
    u.members = vec![mem("i", int, 0, 0), mem("c", ch, 0, 0)];
    let u = b.add_type(u);
    b.set_members(
        conf,
        vec![
            mem("port", int, 0, 0),
            mem("name", arr8, 32, 0),
            mem("m", mode, 96, 0),
            mem("in", inner, 128, 0),
            mem("next", pconf, 256, 0),
            mem("cb", pproto, 320, 0),
            mem("ready", uint, 384, 1),
            mem("level", int, 385, 3),
            mem("", anon, 448, 0),
            mem("u", u, 512, 0),
            mem("label", pcch, 576, 0),
            mem("data", flex, 640, 0),
        ],
    );
    b.add_function(FunctionDesc {
        module: m,
        addr: 0x1000,
        size: 16,
        name: "apply".into(),
        symbol: None,
        ret: int,
        params: vec![ParamDesc {
            name: "c".into(),
            ty: pconf,
            loc: Location::Reg(5),
        }],
        flags: FuncFlags::empty(),
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

/// The bytes of a `struct conf`.
#[allow(clippy::too_many_arguments)]
fn conf(port: i32, name: &[u8], a: i32, tag: &[u8], next: u64, label: u64) -> Vec<u8> {
    let mut v = vec![0u8; 80];
    v[0..4].copy_from_slice(&port.to_le_bytes());
    v[4..4 + name.len()].copy_from_slice(name);
    v[12..16].copy_from_slice(&1u32.to_le_bytes());
    v[16..20].copy_from_slice(&a.to_le_bytes());
    v[20..20 + tag.len()].copy_from_slice(tag);
    v[32..40].copy_from_slice(&next.to_le_bytes());
    v[40..48].copy_from_slice(&0x5000u64.to_le_bytes());
    // ready = 1, level = -3 (0b101): bits 0 and 1..3 of byte 48.
    v[48] = 1 | (0b101 << 1);
    v[56..64].copy_from_slice(&5u64.to_le_bytes());
    v[64..68].copy_from_slice(&0x41i32.to_le_bytes());
    v[72..80].copy_from_slice(&label.to_le_bytes());
    v
}

struct Syms;
impl Symbols for Syms {
    fn pointer_text(&self, addr: u64, to_func: bool) -> Option<String> {
        match (addr, to_func) {
            (0x1000, _) => Some("&table".into()),
            (0x1008, _) => Some("&table+0x8".into()),
            (0x5000, true) => Some("handler".into()),
            _ => None,
        }
    }
}

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
