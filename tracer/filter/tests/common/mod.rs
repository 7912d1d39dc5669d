//! A db with one function of every kind of parameter, built with sigdb's builder:
//! `long do_open(const char *name, int flags, umode_t mode, enum pid_type type,
//! struct file *file, bool create, struct path p)`, and one taking a struct pointer,
//! `int do_how(struct how *how)`:
//!
//! ```c
//! struct how {
//!     unsigned long long flags; umode_t mode; char tag[8];   // 0, 8, 10
//!     enum pid_type type; unsigned ready:1;                   // 20, bit 192
//!     struct how *next; const char *label; struct path p;     // 32, 40, 48
//! };
//! ```
#![allow(dead_code)]

use sigdb::{
    DbBuilder, FuncFlags, FunctionDesc, Location, MemberDesc, ModuleDesc, ModuleKind, ParamDesc,
    Qualifiers, TypeDesc, TypeKind,
};

use dcg_filter::{Filter, Signature};

pub fn db() -> sigdb::Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![],
        base: 0,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let long = b.add_type(TypeDesc::base(TypeKind::Int, "long int", 8, true));
    let ushort = b.add_type(TypeDesc::base(
        TypeKind::Int,
        "short unsigned int",
        2,
        false,
    ));
    let umode = b.add_type(TypeDesc::typedef("umode_t", ushort, 2));
    let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
    let cch = b.add_type(TypeDesc::qualified(Qualifiers::CONST, ch, 1));
    let str_t = b.add_type(TypeDesc::pointer(cch, 8));
    let mut e = TypeDesc::aggregate(TypeKind::Enum, "pid_type", 4);
    e.enumerators = vec![
        ("PIDTYPE_PID".into(), 0),
        ("PIDTYPE_TGID".into(), 1),
        ("PIDTYPE_PGID".into(), 2),
    ];
    let en = b.add_type(e);
    let file = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "file", 64));
    let pfile = b.add_type(TypeDesc::pointer(file, 8));
    let boolean = b.add_type(TypeDesc::base(TypeKind::Bool, "_Bool", 1, false));
    let path = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "path", 16));
    let params = [
        ("name", str_t),
        ("flags", int),
        ("mode", umode),
        ("type", en),
        ("file", pfile),
        ("create", boolean),
        ("p", path),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (name, ty))| ParamDesc {
        name: name.into(),
        ty,
        loc: Location::Reg(i as u8),
    })
    .collect();
    b.add_function(FunctionDesc {
        module: m,
        addr: 0x1000,
        size: 16,
        name: "do_open".into(),
        symbol: None,
        ret: long,
        params,
        flags: FuncFlags::empty(),
    });
    let ull = b.add_type(TypeDesc::base(
        TypeKind::Int,
        "long long unsigned int",
        8,
        false,
    ));
    let uint = b.add_type(TypeDesc::base(TypeKind::Int, "unsigned int", 4, false));
    let tag = b.add_type(TypeDesc::array(ch, 8, 8));
    let how = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "how", 64));
    let phow = b.add_type(TypeDesc::pointer(how, 8));
    let mem = |name: &str, ty, bit_offset, bit_size| MemberDesc {
        name: name.into(),
        ty,
        bit_offset,
        bit_size,
    };
    b.set_members(
        how,
        vec![
            mem("flags", ull, 0, 0),
            mem("mode", umode, 64, 0),
            mem("tag", tag, 80, 0),
            mem("type", en, 160, 0),
            mem("ready", uint, 192, 1),
            mem("next", phow, 256, 0),
            mem("label", str_t, 320, 0),
            mem("p", path, 384, 0),
        ],
    );
    b.add_function(FunctionDesc {
        module: m,
        addr: 0x2000,
        size: 16,
        name: "do_how".into(),
        symbol: None,
        ret: int,
        params: vec![ParamDesc {
            name: "how".into(),
            ty: phow,
            loc: Location::Reg(5),
        }],
        flags: FuncFlags::empty(),
    });
    sigdb::Db::from_bytes(b.finish().unwrap()).unwrap()
}

/// `do_how`'s signature, with the member paths `filters` name.
pub fn how_signature(filters: &[Filter]) -> Signature {
    let db = db();
    let f = db.by_name("do_how").next().unwrap();
    Signature::of(&f, filters)
}

pub fn signature() -> Signature {
    let db = db();
    let f = db.by_name("do_open").next().unwrap();
    Signature::of(&f, &[])
}
