//! Shared helpers: a structural rendering of types and functions, computed the same
//! way from builder descriptions and from an opened db, so the two can be compared.

#![allow(dead_code)]

use sigdb::*;

/// A textual shape of a builder type, recursively.
pub fn desc_shape(b: &DbBuilder, id: TypeId) -> String {
    let t = b.type_desc(id);
    let children: Vec<String> = t
        .target
        .into_iter()
        .chain(t.params.iter().copied())
        .map(|c| desc_shape(b, c))
        .collect();
    let count = if t.kind == TypeKind::Array {
        t.count
    } else {
        0
    };
    let enums = if t.kind == TypeKind::Enum {
        t.enumerators.clone()
    } else {
        Vec::new()
    };
    let target_children = if t.kind.has_target() {
        children
    } else {
        Vec::new()
    };
    format!(
        "{:?}|{}|{}|{:?}|{:?}|{}|{:?}|({})",
        t.kind,
        t.name,
        t.size,
        t.flags,
        t.quals,
        count,
        enums,
        target_children.join(",")
    )
}

/// The same shape of a db type.
pub fn db_shape(t: Type<'_>) -> String {
    let children: Vec<String> = t
        .target()
        .into_iter()
        .chain(t.params())
        .map(db_shape)
        .collect();
    let enums: Vec<(String, i64)> = t.enumerators().map(|(n, v)| (n.to_string(), v)).collect();
    format!(
        "{:?}|{}|{}|{:?}|{:?}|{}|{:?}|({})",
        t.kind(),
        t.name(),
        t.size(),
        t.flags(),
        t.qualifiers(),
        t.array_len(),
        enums,
        children.join(",")
    )
}

/// A function as comparable text, from the builder side.
pub fn desc_function(b: &DbBuilder, modules: &[ModuleDesc], f: &FunctionDesc) -> String {
    let symbol = match &f.symbol {
        Some(s) => s.clone(),
        None => f.name.clone(),
    };
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| format!("{}:{}@{:?}", p.name, desc_shape(b, p.ty), p.loc))
        .collect();
    format!(
        "{} {:#x}+{} {} {} {:?} -> {} ({})",
        modules[f.module.index()].name,
        f.addr,
        f.size,
        f.name,
        symbol,
        f.flags,
        desc_shape(b, f.ret),
        params.join("; ")
    )
}

/// A function as comparable text, from the db side.
pub fn db_function(f: Function<'_>) -> String {
    let params: Vec<String> = f
        .params()
        .map(|p| format!("{}:{}@{:?}", p.name(), db_shape(p.ty()), p.loc()))
        .collect();
    format!(
        "{} {:#x}+{} {} {} {:?} -> {} ({})",
        f.module().map(|m| m.name()).unwrap_or("?"),
        f.addr(),
        f.size(),
        f.name(),
        f.symbol(),
        f.flags(),
        db_shape(f.ret()),
        params.join("; ")
    )
}

/// The members of `struct file` (232 bytes): a self pointer, bit-fields, an enum, a
/// function pointer, a char array, an anonymous union of two members, a flexible array.
fn add_file_members(b: &mut DbBuilder, [int, pfile, mode, pproto, arr, ch]: [TypeId; 6]) {
    let m = |name: &str, ty, bit_offset, bit_size| MemberDesc {
        name: name.into(),
        ty,
        bit_offset,
        bit_size,
    };
    let long = b.add_type(TypeDesc::base(TypeKind::Int, "long int", 8, true));
    let mut anon = TypeDesc::aggregate(TypeKind::Union, "", 8);
    anon.members = vec![m("count", long, 0, 0), m("next_free", pfile, 0, 0)];
    let anon = b.add_type(anon);
    let flex = b.add_type(TypeDesc::array(ch, 0, 0));
    let file = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "file", 232));
    b.set_members(
        file,
        vec![
            m("next", pfile, 0, 0),
            m("f_flags", int, 64, 0),
            m("ready", int, 96, 1),
            m("level", int, 97, 3),
            m("f_mode", mode, 128, 0),
            m("f_op", pproto, 192, 0),
            m("", anon, 256, 0),
            m("f_name", arr, 320, 0),
            m("f_data", flex, 232 * 8, 0),
        ],
    );
}

/// A small but complete db: two modules, every type kind, clones, inline edges.
pub fn sample_builder() -> DbBuilder {
    let mut b = DbBuilder::new(62);
    b.set_flags(DbFlags::KERNEL);
    b.set_build_id(&[0xab; 20]);
    let vmlinux = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![0xab; 20],
        base: 0xffff_ffff_8100_0000,
    });
    let modx = b.add_module(ModuleDesc {
        name: "binfmt_misc".into(),
        kind: ModuleKind::KernelModule,
        build_id: vec![0x12; 20],
        base: 0,
    });
    let void = b.add_type(TypeDesc::void());
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let boolean = b.add_type(TypeDesc::base(TypeKind::Bool, "_Bool", 1, false));
    let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
    let cch = b.add_type(TypeDesc::qualified(Qualifiers::CONST, ch, 1));
    let pcch = b.add_type(TypeDesc::pointer(cch, 8));
    let ulong = b.add_type(TypeDesc::base(TypeKind::Int, "long unsigned int", 8, false));
    let size_t = b.add_type(TypeDesc::typedef("size_t", ulong, 8));
    let file = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "file", 232));
    let pfile = b.add_type(TypeDesc::pointer(file, 8));
    let mut mode = TypeDesc::aggregate(TypeKind::Enum, "mode", 4);
    mode.flags = TypeFlags::SIGNED;
    mode.enumerators = vec![
        ("MODE_NEG".into(), -1),
        ("MODE_A".into(), 0),
        ("MODE_B".into(), 4),
    ];
    let mode = b.add_type(mode);
    let proto = b.add_type(TypeDesc::function(int, vec![pfile, size_t], true));
    let pproto = b.add_type(TypeDesc::pointer(proto, 8));
    let arr = b.add_type(TypeDesc::array(ch, 16, 16));
    add_file_members(&mut b, [int, pfile, mode, pproto, arr, ch]);
    let p = |name: &str, ty, loc| ParamDesc {
        name: name.into(),
        ty,
        loc,
    };
    let open = b.add_function(FunctionDesc {
        module: vmlinux,
        addr: 0xffff_ffff_8123_4560,
        size: 0x120,
        name: "do_sys_openat2".into(),
        symbol: None,
        ret: int,
        params: vec![
            p("dfd", int, Location::Reg(5)),
            p("filename", pcch, Location::Reg(4)),
            p("how", pfile, Location::Reg(1)),
        ],
        flags: FuncFlags::STATIC,
    });
    b.add_function(FunctionDesc {
        module: vmlinux,
        addr: 0xffff_ffff_8100_1000,
        size: 0x40,
        name: "slab_free".into(),
        symbol: Some("slab_free.isra.0".into()),
        ret: void,
        params: vec![
            p("s", pfile, Location::Reg(5)),
            p("cnt", size_t, Location::OptimizedOut),
            p("cb", pproto, Location::Reg(1)),
        ],
        flags: FuncFlags::STATIC | FuncFlags::CLONE_ISRA | FuncFlags::ABI_CHANGED,
    });
    let getname = b.add_function(FunctionDesc {
        module: vmlinux,
        addr: 0,
        size: 0,
        name: "getname_inline".into(),
        symbol: None,
        ret: boolean,
        params: vec![p("m", mode, Location::Unknown)],
        flags: FuncFlags::INLINE_ONLY | FuncFlags::DECLARED_INLINE,
    });
    b.add_inline(getname, open);
    // An inlined copy of getname_inline in do_sys_openat2, another copy nested inside it,
    // and an exact duplicate of the outer one (merged by the writer).
    let outer = InstanceDesc {
        callee: getname,
        caller: open,
        parent: None,
        ranges: vec![
            (0xffff_ffff_8123_4580, 0xffff_ffff_8123_45a0),
            (0xffff_ffff_8123_4600, 0xffff_ffff_8123_4610),
        ],
        entry_pc: 0xffff_ffff_8123_4584,
        call_file: "fs/open.c".into(),
        call_line: 1400,
        params: vec![Location::Reg(3)],
    };
    let outer_id = b.add_instance(outer.clone());
    b.add_instance(InstanceDesc {
        parent: Some(outer_id),
        ranges: vec![(0xffff_ffff_8123_4590, 0xffff_ffff_8123_4598)],
        entry_pc: 0xffff_ffff_8123_4590,
        call_file: "include/linux/fs.h".into(),
        call_line: 7,
        params: vec![Location::Const(4)],
        ..outer.clone()
    });
    b.add_instance(outer);
    b.add_function(FunctionDesc {
        module: modx,
        addr: 0x10,
        size: 0x80,
        name: "bm_status_write".into(),
        symbol: None,
        ret: mode,
        params: vec![
            p("buf", arr, Location::Stack(8)),
            p("pair", file, Location::RegPair(5, 4)),
            p("k", int, Location::Const(3)),
        ],
        flags: FuncFlags::empty(),
    });
    // A second static function with the same name in another place.
    b.add_function(FunctionDesc {
        module: modx,
        addr: 0x100,
        size: 0x8,
        name: "do_sys_openat2".into(),
        symbol: None,
        ret: void,
        params: vec![],
        flags: FuncFlags::STATIC,
    });
    b
}
