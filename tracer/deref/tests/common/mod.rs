//! The test db: a hand-made `struct conf` (every rule of the layout) and its bytes.
#![allow(dead_code)]

use dcg_deref::*;
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
pub fn db() -> Db {
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
pub fn conf(port: i32, name: &[u8], a: i32, tag: &[u8], next: u64, label: u64) -> Vec<u8> {
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

pub struct Syms;
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
