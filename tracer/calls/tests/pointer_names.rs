//! Kernel pointers named by the symbol they land on: lines of a real `funcgraph-args`
//! capture of the test kernel (`tests/data/captures/c.txt`) decoded with that kernel's
//! `System.map` entries for the addresses in it (`c-symbols.map`), against a db holding
//! the two functions' real signatures.

use std::path::PathBuf;

use dcg_calls::decode::{Decoder, Options};
use dcg_dbset::symbols::SymbolMap;
use dcg_dbset::DbSet;
use sigdb::{
    Db, DbBuilder, FuncFlags, FunctionDesc, Location, ModuleDesc, ModuleKind, ParamDesc, TypeDesc,
    TypeKind,
};

fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/captures")
}

fn db() -> Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![],
        base: 0xffff_ffff_8100_0000,
    });
    let void = b.add_type(TypeDesc::void());
    let ptr = |b: &mut DbBuilder, name: &str| {
        let s = b.add_type(TypeDesc::aggregate(TypeKind::Struct, name, 8));
        b.add_type(TypeDesc::pointer(s, 8))
    };
    let idmap = ptr(&mut b, "mnt_idmap");
    let userns = ptr(&mut b, "user_namespace");
    let head = ptr(&mut b, "callback_head");
    let kuid = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "kuid_t", 4));
    let vfsuid = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "vfsuid_t", 4));
    let proto = b.add_type(TypeDesc::function(void, vec![head], false));
    let rcu_fn = b.add_type(TypeDesc::pointer(proto, 8));
    let p = |name: &str, ty, r| ParamDesc {
        name: name.into(),
        ty,
        loc: Location::Reg(r),
    };
    b.add_function(FunctionDesc {
        module: m,
        addr: 0xffffffff81490000,
        size: 0x40,
        name: "make_vfsuid".into(),
        symbol: None,
        ret: vfsuid,
        params: vec![
            p("idmap", idmap, 5),
            p("fs_userns", userns, 4),
            p("kuid", kuid, 1),
        ],
        flags: FuncFlags::empty(),
    });
    b.add_function(FunctionDesc {
        module: m,
        addr: 0xffffffff81100000,
        size: 0x80,
        name: "call_rcu".into(),
        symbol: None,
        ret: void,
        params: vec![p("head", head, 5), p("func", rcu_fn, 4)],
        flags: FuncFlags::empty(),
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

/// The first line of c.txt calling `func`, decoded with or without pointer names.
fn decode(func: &str, names: Option<&SymbolMap>) -> String {
    let text = std::fs::read_to_string(captures().join("c.txt")).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("| {func}(")) || l.contains(&format!(" {func}(")))
        .unwrap_or_else(|| panic!("no {func} line in c.txt"));
    let set = DbSet::new(vec![db()]);
    let mut dec = Decoder::new(&set, Options::default());
    if let Some(n) = names {
        dec.set_pointer_names(n);
    }
    let mut out = Vec::new();
    dec.decode_line(line, &mut out).unwrap();
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn kernel_pointers_by_symbol() {
    let map = SymbolMap::from_kallsyms(
        &std::fs::read_to_string(captures().join("c-symbols.map")).unwrap(),
    );
    let named = decode("make_vfsuid", Some(&map));
    assert!(
        named.contains("make_vfsuid(idmap=&nop_mnt_idmap, fs_userns=&init_user_ns, "),
        "{named}"
    );
    // Without the symbols: hex, as before.
    let plain = decode("make_vfsuid", None);
    assert!(
        plain.contains("idmap=0xffffffff81ccdea0, fs_userns=0xffffffff81c27940"),
        "{plain}"
    );
    // A function pointer is the function's name; a heap pointer stays hex.
    let rcu = decode("call_rcu", Some(&map));
    assert!(rcu.contains("call_rcu(head=0xff11"), "{rcu}");
    assert!(rcu.contains(", func=__d_free)"), "{rcu}");
}
