//! Tables read from real format files (`tests/data/README.md`: where they came from).

use dcg_kflags::*;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn tables() -> FlagTables {
    let files = [
        ("kmem/kmalloc", data("kmem-kmalloc.format")),
        ("kmem/mm_page_alloc", data("kmem-mm_page_alloc.format")),
        (
            "writeback/writeback_dirty_inode",
            data("writeback-writeback_dirty_inode.format"),
        ),
    ];
    FlagTables::from_formats(files.iter().map(|(e, t)| (*e, t.as_str())))
}

#[test]
fn gfp_t_from_kmalloc() {
    let t = tables();
    // The field is an `unsigned long`: the table is gfp_t's by its casts.
    let f = parse_format("kmem/kmalloc", &data("kmem-kmalloc.format"));
    let gfp = f.fields.iter().find(|f| f.name == "gfp_flags").unwrap();
    assert_eq!(gfp.ty, "unsigned long");
    let g = t.table("gfp_t").expect("a gfp_t table");
    assert_eq!(g.event, "kmem/kmalloc");
    assert!(matches!(&g.kind, TableKind::Flags { delim } if delim == "|"));
    // __GFP_RECLAIM | __GFP_IO | __GFP_FS, each as the table itself gives it.
    let v = |n| g.value_of(n).unwrap();
    assert_eq!(
        v("GFP_KERNEL"),
        v("__GFP_RECLAIM") | v("__GFP_IO") | v("__GFP_FS")
    );
    assert_eq!(
        v("__GFP_RECLAIM"),
        v("__GFP_DIRECT_RECLAIM") | v("__GFP_KSWAPD_RECLAIM")
    );
    assert_eq!(
        v("GFP_KERNEL"),
        3264,
        "the issue's kmem_cache_alloc_noprof gfpflags"
    );
    assert_eq!(v("__GFP_ZERO"), 1 << 8);
    assert_eq!(v("GFP_ATOMIC"), v("__GFP_HIGH") | v("__GFP_KSWAPD_RECLAIM"));
    // Composite names first, the rest in hex, as the kernel prints them.
    assert_eq!(g.render(3264), "GFP_KERNEL");
    assert_eq!(g.render(3264 | 1 << 8), "GFP_KERNEL|__GFP_ZERO");
    assert_eq!(g.render(v("GFP_KERNEL_ACCOUNT")), "GFP_KERNEL_ACCOUNT");
    assert_eq!(g.render(1 << 40 | 1 << 8), "__GFP_ZERO|0x10000000000");
    assert_eq!(g.render(0), "0");
    for x in [
        3264,
        3264 | 1 << 8,
        1 << 40 | 1 << 8,
        v("GFP_TRANSHUGE"),
        0,
        0x2a,
    ] {
        assert_eq!(g.parse(&g.render(x)), Some(x), "{}", g.render(x));
    }
    assert_eq!(g.parse("GFP_KERNEL|__GFP_ZERO"), Some(3264 | 256));
    assert_eq!(g.parse("NOPE"), None);
    // mm_page_alloc prints the same table: one per typedef.
    let page = parse_format("kmem/mm_page_alloc", &data("kmem-mm_page_alloc.format"));
    assert_eq!(page.tables.len(), 1);
    assert_eq!(page.tables[0].table.entries, g.entries);
}

#[test]
fn a_type_no_event_prints_has_no_table() {
    let t = tables();
    assert!(t.table("umode_t").is_none());
    assert!(t.table("unsigned long").is_none());
    assert_eq!(t.types(), ["gfp_t"], "{:?}", t.skipped);
}

#[test]
fn unexpanded_enum_constants_are_skipped() {
    // This kernel's writeback events name `I_DIRTY_SYNC` and friends, enum constants the
    // format leaves unexpanded (no TRACE_DEFINE_ENUM): no value, so no table, and why.
    let f = parse_format(
        "writeback/writeback_dirty_inode",
        &data("writeback-writeback_dirty_inode.format"),
    );
    assert!(f.tables.is_empty());
    let fields: Vec<&str> = f.skipped.iter().map(|s| s.field.as_str()).collect();
    assert_eq!(fields, ["state", "flags"]);
    assert!(
        f.skipped[0].error.to_string().contains("I_DIRTY_SYNC"),
        "{}",
        f.skipped[0].error
    );
}

#[test]
fn expressions_and_symbols() {
    let text = "name: t\nID: 1\nformat:\n\tfield:fmode_t mode;\toffset:8;\tsize:4;\tsigned:0;\n\
        \tfield:int how;\toffset:12;\tsize:4;\tsigned:1;\n\n\
        print fmt: \"mode=%s how=%s\", __print_flags(REC->mode, \"|\", { (( fmode_t)(1 << 0)), \"FMODE_READ\" }, \
        { 0x2UL, \"FMODE_WRITE\" }, { ~(~0U << 2) & 3, \"FMODE_RW\" }), \
        __print_symbolic(REC->how, { 0, \"SEEK_SET\" }, { 010, \"EIGHT\" }, { -1, NULL }), \
        __print_symbolic((REC->how >> 2) & 1, { 0, \"X\" }), \
        __print_flags(REC->how, \"|\", { UNEXPANDED, \"U\" })\n";
    let f = parse_format("t/t", text);
    assert_eq!(f.tables.len(), 2);
    assert_eq!(f.skipped.len(), 1);
    assert!(matches!(f.skipped[0].error, Error::Expr(_)));
    let mode = &f.tables[0];
    assert_eq!(mode.typedef(&f.fields).as_deref(), Some("fmode_t"));
    assert_eq!(mode.table.entries[2], (3, "FMODE_RW".into()));
    // Order matters: FMODE_READ is walked first, so 3 is READ|WRITE.
    assert_eq!(mode.table.render(3), "FMODE_READ|FMODE_WRITE");
    let how = &f.tables[1];
    assert_eq!(how.typedef(&f.fields), None, "int is no typedef");
    assert_eq!(how.table.render(8), "EIGHT");
    assert_eq!(how.table.render(9), "0x9");
}

#[test]
fn by_typedef_chain() {
    let t = tables();
    assert_eq!(
        t.render(["gfp_t"], 3264 | 256).as_deref(),
        Some("GFP_KERNEL|__GFP_ZERO")
    );
    // A typedef of gfp_t finds gfp_t's table further down its chain.
    assert_eq!(
        t.render(["my_gfp", "gfp_t"], 3264).as_deref(),
        Some("GFP_KERNEL")
    );
    assert_eq!(t.render(["umode_t"], 0o644).as_deref(), Some("0644"));
    assert_eq!(t.render(["size_t"], 12), None);
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let text = format!("name: t\nID: 1\nformat:\n\tfield:gfp_t g;\toffset:8;\tsize:4;\tsigned:0;\n\nprint fmt: \"%s\", __print_flags(REC->g, \"|\", {{ {deep}, \"A\" }})\n");
    let f = parse_format("t/t", &text);
    assert!(f.tables.is_empty());
    assert!(f.skipped[0].error.to_string().contains("nested too deep"));
}

proptest::proptest! {
    #[test]
    fn never_panics(tail in "[-+~!()|&^<>{}, 0-9a-zA-Z_\"xuUlL*/%]{0,200}") {
        let text = format!("name: t\nID: 1\nformat:\n\tfield:gfp_t g;\toffset:8;\tsize:4;\tsigned:0;\n\nprint fmt: \"%s\", __print_flags(REC->g, \"|\", {tail}\n");
        let f = parse_format("t/t", &text);
        for t in f.tables {
            let _ = t.table.render(0x1234_5678);
        }
    }
}

/// The running kernel's formats, when this host lets them be read (skipped otherwise):
/// the tables found, and gfp_t's as the copied kmalloc file has it.
#[test]
fn host_tracefs() {
    let dir = std::path::Path::new("/sys/kernel/tracing/events");
    let Ok(t) = FlagTables::read_events(dir) else {
        eprintln!("skipped: {} unreadable", dir.display());
        return;
    };
    eprintln!(
        "typedefs with a table: {:?}; skipped: {}",
        t.types(),
        t.skipped.len()
    );
    if let Some(g) = t.table("gfp_t") {
        assert_eq!(g.value_of("GFP_KERNEL"), Some(3264));
    }
    assert!(t.table("uint").is_none(), "a generic integer has no table");
}
