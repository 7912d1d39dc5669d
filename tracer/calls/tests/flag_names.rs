//! Kernel flags named in arguments as the kernel's trace events name them: a line of a
//! real `funcgraph-args` capture of the test kernel (`tests/data/captures/c.txt`,
//! `kmem_cache_alloc_noprof(s=…, gfpflags=0xcc0)`) decoded against a db holding the
//! function's signature (`gfp_t` a typedef of `unsigned int`), with the flag tables of a
//! real kmalloc event format (dcg-kflags' test data).

use std::path::PathBuf;
use std::rc::Rc;

use dcg_calls::decode::{Decoder, Options};
use dcg_calls::funcs::FlagTables;
use dcg_dbset::DbSet;
use sigdb::{
    Db, DbBuilder, FuncFlags, FunctionDesc, Location, ModuleDesc, ModuleKind, ParamDesc, TypeDesc,
    TypeKind,
};

fn data() -> PathBuf {
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
    let cache = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "kmem_cache", 8));
    let cache_ptr = b.add_type(TypeDesc::pointer(cache, 8));
    let uint = b.add_type(TypeDesc::base(TypeKind::Int, "unsigned int", 4, false));
    let gfp = b.add_type(TypeDesc::typedef("gfp_t", uint, 4));
    let p = |name: &str, ty, r| ParamDesc {
        name: name.into(),
        ty,
        loc: Location::Reg(r),
    };
    b.add_function(FunctionDesc {
        module: m,
        addr: 0xffffffff81300000,
        size: 0x80,
        name: "kmem_cache_alloc_noprof".into(),
        symbol: None,
        ret: cache_ptr,
        params: vec![p("s", cache_ptr, 5), p("gfpflags", gfp, 4)],
        flags: FuncFlags::empty(),
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

/// The first kmem_cache_alloc_noprof line of c.txt, decoded with or without the tables.
fn decode(tables: Option<Rc<FlagTables>>) -> String {
    let text = std::fs::read_to_string(data().join("c.txt")).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(" kmem_cache_alloc_noprof(s="))
        .expect("a kmem_cache_alloc_noprof line in c.txt");
    let set = DbSet::new(vec![db()]);
    let mut dec = Decoder::new(&set, Options::default());
    if let Some(t) = tables {
        dec.set_flag_tables(t);
    }
    let mut out = Vec::new();
    dec.decode_line(line, &mut out).unwrap();
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn gfp_t_arguments_are_named_as_the_kernel_names_them() {
    let format = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../kflags/tests/data/kmem-kmalloc.format"),
    )
    .unwrap();
    let tables = FlagTables::from_formats([("kmem/kmalloc", format.as_str())]);
    let named = decode(Some(Rc::new(tables)));
    assert!(named.contains(", gfpflags=GFP_KERNEL)"), "{named}");
    // Without the tables: the number, as before.
    let plain = decode(None);
    assert!(plain.contains(", gfpflags=3264)"), "{plain}");
}
