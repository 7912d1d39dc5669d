//! Write → open → equal, on a hand-made db and on random ones (proptest).

mod common;

use common::*;
use proptest::prelude::*;
use sigdb::*;
use std::collections::HashMap;

fn modules_of(n: usize) -> Vec<ModuleDesc> {
    (0..n)
        .map(|i| ModuleDesc {
            name: format!("mod{i}"),
            kind: ModuleKind::KernelModule,
            build_id: vec![i as u8; 20],
            // A kernel-like, a zero and a user-space-like base.
            base: [0xffff_fffe_8100_0000, 0, 0x5555_5555_0000][i % 3],
        })
        .collect()
}

#[test]
fn sample_inline_instances() {
    let db = Db::from_bytes(sample_builder().finish().unwrap()).unwrap();
    assert_eq!(db.instance_count(), 2, "the duplicate is merged");
    let open = db.by_name("do_sys_openat2").next().unwrap();
    let inst: Vec<Instance> = open.inline_instances().collect();
    assert_eq!(inst.len(), 2);
    let (outer, inner) = (inst[0], inst[1]);
    assert_eq!(outer.callee().unwrap().name(), "getname_inline");
    assert_eq!(outer.caller().unwrap().index(), open.index());
    assert!(outer.parent().is_none());
    assert_eq!(outer.entry_pc(), 0xffff_ffff_8123_4584);
    assert_eq!(
        outer.ranges().collect::<Vec<_>>(),
        [
            (0xffff_ffff_8123_4580, 0xffff_ffff_8123_45a0),
            (0xffff_ffff_8123_4600, 0xffff_ffff_8123_4610)
        ]
    );
    assert_eq!((outer.call_file(), outer.call_line()), ("fs/open.c", 1400));
    let params: Vec<_> = outer.params().map(|(p, l)| (p.name(), l)).collect();
    assert_eq!(params, [("m", Location::Reg(3))]);
    assert_eq!(inner.parent().unwrap().index(), outer.index());
    assert_eq!(inner.entry_pc(), 0xffff_ffff_8123_4590);
    assert_eq!(inner.locations().collect::<Vec<_>>(), [Location::Const(4)]);
    assert_eq!(
        (inner.call_file(), inner.call_line()),
        ("include/linux/fs.h", 7)
    );
    let getname = db.by_name("getname_inline").next().unwrap();
    assert_eq!(db.instances_of(getname.index()).count(), 2);
    assert_eq!(getname.inline_instances().count(), 0);
}

#[test]
fn sample_round_trip_and_lookups() {
    let b = sample_builder();
    let db = Db::from_bytes(b.finish().unwrap()).unwrap();
    assert_eq!(db.version(), 7);
    assert_eq!(db.build_id(), &[0xab; 20]);
    assert!(db.flags().contains(DbFlags::KERNEL));
    assert_eq!(db.module_count(), 2);
    assert_eq!(db.function_count(), 5);

    let f = db.by_addr(0, 0xffff_ffff_8123_4570).unwrap();
    assert_eq!(f.name(), "do_sys_openat2");
    assert_eq!(f.ret().display(), "int");
    let decl: Vec<String> = f.params().map(|p| p.ty().declare(p.name())).collect();
    assert_eq!(
        decl,
        ["int dfd", "const char *filename", "struct file *how"]
    );
    assert_eq!(
        f.params().map(|p| p.loc().to_string()).collect::<Vec<_>>(),
        ["rdi", "rsi", "rdx"]
    );
    assert!(db.by_addr(0, 0xffff_ffff_8123_4560 + 0x120).is_none());
    assert!(
        db.by_addr(0, 0).is_none(),
        "inline-only functions have no address"
    );
    assert!(db.by_addr(7, 0x10).is_none());

    let clone = db.by_name("slab_free.isra.0").next().unwrap();
    assert_eq!(clone.name(), "slab_free");
    assert_eq!(clone.symbol(), "slab_free.isra.0");
    assert_eq!(db.by_name("slab_free").count(), 1);
    let cb = clone.params().nth(2).unwrap().ty();
    assert_eq!(cb.declare("cb"), "int (*cb)(struct file *, size_t, ...)");
    assert_eq!(
        clone.params().nth(1).unwrap().ty().resolve().display(),
        "long unsigned int"
    );
    let flags: Vec<&str> = clone.flags().names().collect();
    assert_eq!(flags, ["static", "clone:isra", "abi-changed"]);

    let both: Vec<_> = db
        .by_name("do_sys_openat2")
        .map(|f| f.module().unwrap().name())
        .collect();
    assert_eq!(both, ["vmlinux", "binfmt_misc"]);
    assert_eq!(db.by_name("nonexistent").count(), 0);

    let inl = db.by_name("getname_inline").next().unwrap();
    assert!(inl.flags().contains(FuncFlags::INLINE_ONLY));
    let into: Vec<_> = inl.inlined_into().map(|f| f.name()).collect();
    assert_eq!(into, ["do_sys_openat2"]);

    let bm = db.by_addr(1, 0x20).unwrap();
    assert_eq!(bm.name(), "bm_status_write");
    let en: Vec<_> = bm.ret().enumerators().collect();
    assert_eq!(en, [("MODE_NEG", -1), ("MODE_A", 0), ("MODE_B", 4)]);
    let locs: Vec<_> = bm.params().map(|p| p.loc()).collect();
    assert_eq!(
        locs,
        [
            Location::Stack(8),
            Location::RegPair(5, 4),
            Location::Const(3)
        ]
    );
    assert_eq!(
        bm.params().next().unwrap().ty().declare("buf"),
        "char buf[16]"
    );
}

#[test]
fn output_is_independent_of_insertion_order() {
    let a = sample_builder().finish().unwrap();
    // Same content, functions and types added in reverse order.
    let db = Db::from_bytes(a.clone()).unwrap();
    let mut b = DbBuilder::new(62);
    b.set_flags(db.flags());
    b.set_build_id(db.build_id());
    let mods: Vec<_> = db
        .modules()
        .map(|m| {
            b.add_module(ModuleDesc {
                name: m.name().into(),
                kind: m.kind(),
                build_id: m.build_id().to_vec(),
                base: m.base(),
            })
        })
        .collect();
    let funcs: Vec<_> = db.functions().collect();
    let mut ids = std::collections::HashMap::new();
    let mut memo = HashMap::new();
    for f in funcs.iter().rev() {
        let desc = copy_function(&mut b, *f, mods[f.module_index()], &mut memo);
        ids.insert(f.index(), b.add_function(desc));
    }
    for f in &funcs {
        for caller in f.inlined_into() {
            b.add_inline(ids[&f.index()], ids[&caller.index()]);
        }
    }
    // Instances: inner ones first where the parent allows it (parents must precede).
    let mut inst_ids = std::collections::HashMap::new();
    for i in db.instances() {
        let id = b.add_instance(InstanceDesc {
            callee: ids[&i.callee_index()],
            caller: ids[&i.caller().unwrap().index()],
            parent: i.parent().map(|p| inst_ids[&p.index()]),
            ranges: i.ranges().collect(),
            entry_pc: i.entry_pc(),
            call_file: i.call_file().into(),
            call_line: i.call_line(),
            params: i.locations().collect(),
        });
        inst_ids.insert(i.index(), id);
    }
    assert_eq!(b.finish().unwrap(), a);
}

/// Copy `t` into `b` with its members: an anonymous struct's in its description, a
/// named one's set once its id exists (`memo`: the types copied, by db index, which ends
/// the walk at a struct that points to itself).
fn copy_type(b: &mut DbBuilder, t: Type<'_>, memo: &mut HashMap<u32, TypeId>) -> TypeId {
    if let Some(&id) = memo.get(&t.index()) {
        return id;
    }
    let target = t.target().map(|c| copy_type(b, c, memo));
    let params = t.params().map(|p| copy_type(b, p, memo)).collect();
    let copy_members = |b: &mut DbBuilder, memo: &mut HashMap<u32, TypeId>| {
        t.members()
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                MemberDesc {
                    name: m.name().into(),
                    ty: copy_type(b, m.ty(), memo),
                    bit_offset: m.bit_offset().into(),
                    bit_size: m.bit_size() as u8,
                }
            })
            .collect::<Vec<_>>()
    };
    let anonymous = t.name().is_empty();
    let members = if anonymous {
        copy_members(b, memo)
    } else {
        Vec::new()
    };
    let id = b.add_type(TypeDesc {
        kind: t.kind(),
        name: t.name().into(),
        size: t.size(),
        flags: t.flags(),
        quals: t.qualifiers(),
        target,
        count: t.array_len(),
        enumerators: t.enumerators().map(|(n, v)| (n.into(), v)).collect(),
        params,
        members,
    });
    memo.insert(t.index(), id);
    if !anonymous && matches!(t.kind(), TypeKind::Struct | TypeKind::Union) {
        let members = copy_members(b, memo);
        b.set_members(id, members);
    }
    id
}

fn copy_function(
    b: &mut DbBuilder,
    f: Function<'_>,
    module: ModuleId,
    memo: &mut HashMap<u32, TypeId>,
) -> FunctionDesc {
    let ret = copy_type(b, f.ret(), memo);
    let params = f
        .params()
        .map(|p| ParamDesc {
            name: p.name().into(),
            ty: copy_type(b, p.ty(), memo),
            loc: p.loc(),
        })
        .collect();
    FunctionDesc {
        module,
        addr: f.addr(),
        size: f.size(),
        name: f.name().into(),
        symbol: (f.symbol() != f.name()).then(|| f.symbol().into()),
        ret,
        params,
        flags: f.flags(),
    }
}

/// A recipe for a random type, built over already-made types.
#[derive(Debug, Clone)]
enum TypeRecipe {
    Base(u8, String, u32, bool),
    Pointer(usize),
    Typedef(String, usize),
    Qual(u8, usize),
    Array(usize, u32),
    Enum(String, Vec<(String, i64)>),
    Aggregate(bool, String, u32),
    Func(usize, Vec<usize>, bool),
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_.]{0,12}"
}

fn type_recipe() -> impl Strategy<Value = TypeRecipe> {
    prop_oneof![
        (1u8..5, ident(), 0u32..16, any::<bool>())
            .prop_map(|(k, n, s, g)| TypeRecipe::Base(k, n, s, g)),
        any::<usize>().prop_map(TypeRecipe::Pointer),
        (ident(), any::<usize>()).prop_map(|(n, t)| TypeRecipe::Typedef(n, t)),
        (1u8..16, any::<usize>()).prop_map(|(q, t)| TypeRecipe::Qual(q, t)),
        (any::<usize>(), 0u32..64).prop_map(|(t, n)| TypeRecipe::Array(t, n)),
        (
            ident(),
            prop::collection::vec((ident(), any::<i64>()), 0..5)
        )
            .prop_map(|(n, e)| TypeRecipe::Enum(n, e)),
        (any::<bool>(), ident(), 0u32..4096).prop_map(|(u, n, s)| TypeRecipe::Aggregate(u, n, s)),
        (
            any::<usize>(),
            prop::collection::vec(any::<usize>(), 0..4),
            any::<bool>()
        )
            .prop_map(|(r, p, v)| TypeRecipe::Func(r, p, v)),
    ]
}

/// Name, type pick and encoded location of a random parameter.
type ParamRecipe = (String, usize, (u8, u8, u8, i32));

#[derive(Debug, Clone)]
struct FuncRecipe {
    module: usize,
    addr: u32,
    size: u32,
    name: String,
    symbol: Option<String>,
    ret: usize,
    params: Vec<ParamRecipe>,
    flags: u16,
}

fn func_recipe() -> impl Strategy<Value = FuncRecipe> {
    (
        0usize..3,
        prop_oneof![Just(0u32), 0u32..0x1000, 0u32..u32::MAX - 0x200],
        0u32..0x200,
        ident(),
        prop::option::of(ident()),
        any::<usize>(),
        prop::collection::vec(
            (
                ident(),
                any::<usize>(),
                (0u8..7, any::<u8>(), any::<u8>(), any::<i32>()),
            ),
            0..5,
        ),
        any::<u16>(),
    )
        .prop_map(
            |(module, addr, size, name, symbol, ret, params, flags)| FuncRecipe {
                module,
                addr,
                size,
                name,
                symbol,
                ret,
                params,
                flags,
            },
        )
}

fn build(
    types: &[TypeRecipe],
    funcs: &[FuncRecipe],
    inlines: &[(usize, usize)],
) -> (DbBuilder, Vec<ModuleDesc>, Vec<FunctionDesc>, Vec<FuncId>) {
    let mut b = DbBuilder::new(62);
    let modules = modules_of(3);
    let mod_ids: Vec<_> = modules.iter().map(|m| b.add_module(m.clone())).collect();
    let mut ids = vec![b.add_type(TypeDesc::void())];
    for r in types {
        let pick = |i: &usize| ids[i % ids.len()];
        let desc = match r {
            TypeRecipe::Base(k, n, s, g) => {
                TypeDesc::base(TypeKind::from_code(*k).unwrap(), n, *s, *g)
            }
            TypeRecipe::Pointer(t) => TypeDesc::pointer(pick(t), 8),
            TypeRecipe::Typedef(n, t) => TypeDesc::typedef(n, pick(t), 8),
            TypeRecipe::Qual(q, t) => {
                TypeDesc::qualified(Qualifiers::from_bits_truncate(*q), pick(t), 4)
            }
            TypeRecipe::Array(t, n) => TypeDesc::array(pick(t), *n, *n * 4),
            TypeRecipe::Enum(n, e) => {
                let mut d = TypeDesc::aggregate(TypeKind::Enum, n, 4);
                d.enumerators = e.clone();
                d
            }
            TypeRecipe::Aggregate(u, n, s) => TypeDesc::aggregate(
                if *u {
                    TypeKind::Union
                } else {
                    TypeKind::Struct
                },
                n,
                *s,
            ),
            TypeRecipe::Func(r, p, v) => {
                TypeDesc::function(pick(r), p.iter().map(pick).collect(), *v)
            }
        };
        ids.push(b.add_type(desc));
    }
    let mut descs = Vec::new();
    let mut fids = Vec::new();
    for f in funcs {
        let params = f
            .params
            .iter()
            .map(|(n, t, (k, r, r2, o))| ParamDesc {
                name: n.clone(),
                ty: ids[t % ids.len()],
                loc: Location::decode(*k, *r, *r2, *o).unwrap(),
            })
            .collect();
        // Addresses are within 4 GiB above their module's base; inline-only functions
        // have none.
        let flags = FuncFlags::from_bits_truncate(f.flags);
        let (addr, size) = if flags.contains(FuncFlags::INLINE_ONLY) {
            (0, 0)
        } else {
            (modules[f.module].base + u64::from(f.addr), f.size)
        };
        let desc = FunctionDesc {
            module: mod_ids[f.module],
            addr,
            size,
            name: f.name.clone(),
            symbol: f.symbol.clone(),
            ret: ids[f.ret % ids.len()],
            params,
            flags,
        };
        fids.push(b.add_function(desc.clone()));
        descs.push(desc);
    }
    if !fids.is_empty() {
        for &(a, c) in inlines {
            b.add_inline(fids[a % fids.len()], fids[c % fids.len()]);
        }
    }
    (b, modules, descs, fids)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_dbs_round_trip(
        types in prop::collection::vec(type_recipe(), 0..30),
        funcs in prop::collection::vec(func_recipe(), 0..40),
        inlines in prop::collection::vec((any::<usize>(), any::<usize>()), 0..120),
    ) {
        let (b, modules, descs, _) = build(&types, &funcs, &inlines);
        let bytes = b.finish().unwrap();
        let db = Db::from_bytes(bytes.clone()).unwrap();

        // The same set of functions (exact duplicates merge).
        let mut want: Vec<String> = descs.iter().map(|d| desc_function(&b, &modules, d)).collect();
        want.sort();
        want.dedup();
        let mut got: Vec<String> = db.functions().map(db_function).collect();
        got.sort();
        prop_assert_eq!(got, want);

        // The same inline edges, by function text.
        let mut want_edges: Vec<(String, String)> = Vec::new();
        if !descs.is_empty() {
            for &(a, c) in &inlines {
                want_edges.push((
                    desc_function(&b, &modules, &descs[a % descs.len()]),
                    desc_function(&b, &modules, &descs[c % descs.len()]),
                ));
            }
        }
        want_edges.sort();
        want_edges.dedup();
        let mut got_edges: Vec<(String, String)> = db
            .functions()
            .flat_map(|f| f.inlined_into().map(move |c| (db_function(f), db_function(c))))
            .collect();
        got_edges.sort();
        prop_assert_eq!(got_edges, want_edges);

        // Every function is found by its names and, when it has code, by an address in it.
        for f in db.functions() {
            prop_assert!(db.by_name(f.name()).any(|g| g.index() == f.index()));
            prop_assert!(db.by_name(f.symbol()).any(|g| g.index() == f.index()));
            if f.size() > 0 {
                let probe = f.addr().saturating_add(f.size() as u64 / 2);
                let hit = db.by_addr(f.module_index(), probe);
                if let Some(hit) = hit {
                    prop_assert!(hit.addr() <= probe && probe < hit.addr().saturating_add(hit.size() as u64));
                }
                // Ranges of a module are meant not to overlap (aliases share a start):
                // for such a function the lookup must succeed.
                let end = f.addr().saturating_add(f.size() as u64);
                let overlaps = db.functions().any(|g| {
                    g.index() != f.index()
                        && g.module_index() == f.module_index()
                        && g.addr() != f.addr()
                        && g.addr() < end
                        && f.addr() < g.addr().saturating_add(g.size() as u64)
                });
                if !overlaps {
                    prop_assert!(hit.is_some());
                }
            }
        }
        // Deterministic: building the same content again gives the same bytes.
        let (again, _, _, _) = build(&types, &funcs, &inlines);
        prop_assert_eq!(again.finish().unwrap(), bytes);
    }
}

/// A random inline instance: callee and caller picks, an optional parent pick among the
/// earlier instances of the same caller, ranges, entry pc, call site and locations.
type InstRecipe = (
    usize,
    usize,
    Option<usize>,
    Vec<(u64, u64)>,
    u64,
    String,
    u32,
    Vec<(u8, u8, u8, i32)>,
);

fn inst_recipe() -> impl Strategy<Value = InstRecipe> {
    (
        any::<usize>(),
        0usize..4,
        prop::option::of(any::<usize>()),
        prop::collection::vec((0u64..0x100, 0u64..0x100), 0..5),
        prop_oneof![0u64..0x200, any::<u64>()],
        prop_oneof![Just(String::new()), ident()],
        prop_oneof![0u32..100, any::<u32>()],
        prop::collection::vec((0u8..7, any::<u8>(), any::<u8>(), any::<i32>()), 0..10),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_instances_round_trip(
        funcs in prop::collection::vec(func_recipe(), 1..12),
        insts in prop::collection::vec(inst_recipe(), 0..70),
    ) {
        let (mut b, modules, descs, fids) = build(&[], &funcs, &[]);
        // Text of an instance and its ancestors, as added and as read back.
        let mut want = Vec::new();
        let mut added: Vec<(usize, String)> = Vec::new();
        let mut inst_ids: Vec<InstanceId> = Vec::new();
        for (callee, caller, parent, ranges, entry, file, line, locs) in &insts {
            let caller = caller % descs.len();
            let same: Vec<&(usize, String)> = added.iter().filter(|(c, _)| *c == caller).collect();
            let parent = parent.and_then(|p| (!same.is_empty()).then(|| same[p % same.len()].1.clone()));
            let parent_pos = parent.as_ref().and_then(|t| added.iter().position(|(_, s)| s == t));
            let ranges: Vec<(u64, u64)> = ranges.iter().map(|&(a, l)| (a, a + l)).collect();
            let locs: Vec<Location> = locs.iter().map(|&(k, r, r2, o)| Location::decode(k, r, r2, o).unwrap()).collect();
            let callee = callee % descs.len();
            let text = format!(
                "{} in {} parent [{}] {:?} {:#x} {}:{} {:?}",
                desc_function(&b, &modules, &descs[callee]),
                desc_function(&b, &modules, &descs[caller]),
                parent.clone().unwrap_or_default(),
                ranges, entry, file, line, locs
            );
            let id = b.add_instance(InstanceDesc {
                callee: fids[callee],
                caller: fids[caller],
                parent: parent_pos.map(|p| inst_ids[p]),
                ranges,
                entry_pc: *entry,
                call_file: file.clone(),
                call_line: *line,
                params: locs,
            });
            inst_ids.push(id);
            want.push(text.clone());
            added.push((caller, text));
        }
        let db = Db::from_bytes(b.finish().unwrap()).unwrap();
        fn text(i: &Instance<'_>) -> String {
            format!(
                "{} in {} parent [{}] {:?} {:#x} {}:{} {:?}",
                db_function(i.callee().unwrap()),
                db_function(i.caller().unwrap()),
                i.parent().map(|p| text(&p)).unwrap_or_default(),
                i.ranges().collect::<Vec<_>>(),
                i.entry_pc(),
                i.call_file(),
                i.call_line(),
                i.locations().collect::<Vec<_>>()
            )
        }
        let mut got: Vec<String> = db.instances().map(|i| text(&i)).collect();
        // Duplicate functions merge, so compare as sets.
        want.sort();
        want.dedup();
        got.sort();
        got.dedup();
        prop_assert_eq!(got, want);
        // Direct access and the per-caller search agree with the sequential walk.
        let all: Vec<String> = db.instances().map(|i| format!("{} {}", i.index(), text(&i))).collect();
        prop_assert_eq!(all.len(), db.instance_count());
        for (k, t) in all.iter().enumerate() {
            prop_assert_eq!(&format!("{} {}", k, text(&db.instance(k).unwrap())), t);
        }
        prop_assert!(db.instance(all.len()).is_none());
        for f in db.functions() {
            let inside: Vec<u32> = f.inline_instances().map(|i| i.index()).collect();
            let want: Vec<u32> = db
                .instances()
                .filter(|i| i.caller_index() == f.index())
                .map(|i| i.index())
                .collect();
            prop_assert_eq!(inside, want);
        }
        for i in db.instances() {
            prop_assert!(i.parent().is_none_or(|p| p.index() < i.index()));
            prop_assert!(db.function(i.caller().unwrap().index() as usize)
                .unwrap()
                .inline_instances()
                .any(|j| j.index() == i.index()));
        }
    }
}

/// A db large enough that its strings span several compressed frames and its parameter
/// and type records several LZ4 blocks (one list crossing a block boundary): every
/// name, parameter and type reads back, and every function is found by name.
#[test]
fn strings_params_and_types_across_frames_and_blocks() {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![1; 20],
        base: 0x1000,
    });
    let types: Vec<TypeId> = (0..300)
        .map(|i| {
            let s = b.add_type(TypeDesc::aggregate(TypeKind::Struct, &format!("s{i}"), 8));
            b.add_type(TypeDesc::pointer(s, 8))
        })
        .collect();
    let n = 6000;
    for i in 0..n {
        b.add_function(FunctionDesc {
            module: m,
            addr: 0x1000 + 64 * i as u64,
            size: 32,
            name: format!("function_with_a_rather_long_name_{i:05}"),
            symbol: None,
            ret: types[i % types.len()],
            params: (0..1 + i % 5)
                .map(|k| ParamDesc {
                    name: format!("p{i}_{k}"),
                    ty: types[(i + k) % types.len()],
                    loc: Location::Reg(SYSV_INT_ARG_REGS[k]),
                })
                .collect(),
            flags: FuncFlags::empty(),
        });
    }
    let bytes = b.finish().unwrap();
    let db = Db::from_bytes(bytes.clone()).unwrap();
    db.check_frames().unwrap();
    let (h, _) =
        <sigdb::layout::Header as zerocopy::FromBytes>::ref_from_prefix(&bytes[..]).unwrap();
    assert!(h.sections[19].count.get() >= 3, "several string frames");
    assert!(h.param_count.get() as usize > 4 * sigdb::layout::PARAM_BLOCK);
    assert!(h.type_count.get() as usize > 4 * sigdb::layout::TYPE_BLOCK);
    for i in 0..n {
        let f = db.by_addr(0, 0x1000 + 64 * i as u64 + 1).unwrap();
        assert_eq!(f.name(), format!("function_with_a_rather_long_name_{i:05}"));
        assert_eq!(db.by_name(f.name()).next().unwrap().index(), f.index());
        let decl: Vec<String> = f.params().map(|p| p.ty().declare(p.name())).collect();
        let want: Vec<String> = (0..1 + i % 5)
            .map(|k| format!("struct s{} *p{i}_{k}", (i + k) % types.len()))
            .collect();
        assert_eq!(decl, want);
        assert_eq!(f.ret().display(), format!("struct s{} *", i % types.len()));
    }
    assert_eq!(db.by_name("function_with_a_rather_long_name_9").count(), 0);
}

/// A string is read from any offset of the table without decoding it again: an offset
/// inside a multi-byte character reads as the empty string, one on a character boundary
/// as the rest of its string.
#[test]
fn strings_at_every_offset() {
    let mut b = sample_builder();
    let prog = b.add_module(ModuleDesc {
        name: "prog".into(),
        kind: ModuleKind::Executable,
        build_id: vec![0x34; 20],
        base: 0,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    b.add_function(FunctionDesc {
        module: prog,
        addr: 0x1000,
        size: 0x10,
        name: "größe".into(),
        symbol: None,
        ret: int,
        params: vec![],
        flags: FuncFlags::STATIC,
    });
    let db = Db::from_bytes(b.finish().unwrap()).unwrap();
    let f = db
        .by_name("größe")
        .next()
        .expect("the function by its name");
    assert_eq!(f.name(), "größe");
    let mut seen = std::collections::BTreeSet::new();
    for offset in 0..1 << 16 {
        let s = db.string(offset);
        if !s.is_empty() {
            seen.insert(s);
        }
    }
    // Every non-empty read is a suffix of a stored string starting on a character.
    assert!(seen.contains("größe") && seen.contains("ße") && seen.contains("e"));
    assert!(!seen.iter().any(|s| s.starts_with('\u{fffd}')));
    let names: Vec<&str> = seen
        .iter()
        .copied()
        .filter(|s| "größe".ends_with(s))
        .collect();
    assert_eq!(
        names.len(),
        5,
        "g r ö ß e: one string per character, {names:?}"
    );
}
