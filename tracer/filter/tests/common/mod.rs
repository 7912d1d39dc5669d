//! A db with one function of every kind of parameter, built with sigdb's builder:
//! `long do_open(const char *name, int flags, umode_t mode, enum pid_type type,
//! struct file *file, bool create, struct path p)`.

use sigdb::{
    DbBuilder, FuncFlags, FunctionDesc, Location, ModuleDesc, ModuleKind, ParamDesc, Qualifiers,
    TypeDesc, TypeKind,
};

use dcg_filter::Signature;

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
    sigdb::Db::from_bytes(b.finish().unwrap()).unwrap()
}

pub fn signature() -> Signature {
    let db = db();
    let f = db.by_name("do_open").next().unwrap();
    Signature::of(&f)
}
