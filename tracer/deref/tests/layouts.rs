//! Arbitrary layouts: structs whose members have random types, offsets (overlapping,
//! past the end), bit-fields and nesting, rendered from random bytes at random depths
//! and caps; nothing may panic, and a plan never exceeds its cap.

use dcg_deref::*;
use dcg_render::Role;
use proptest::prelude::*;
use sigdb::*;

/// (type choice, bit offset, bit-field width) per member.
type Spec = Vec<(u8, u32, u8)>;

fn build(size: u32, outer: Spec, inner: Spec) -> Db {
    let mut b = DbBuilder::new(62);
    let m = b.add_module(ModuleDesc {
        name: "p".into(),
        kind: ModuleKind::Executable,
        build_id: vec![],
        base: 0,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let u64t = b.add_type(TypeDesc::base(TypeKind::Int, "long unsigned int", 8, false));
    let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
    let dbl = b.add_type(TypeDesc::base(TypeKind::Float, "double", 8, true));
    let boolean = b.add_type(TypeDesc::base(TypeKind::Bool, "_Bool", 1, false));
    let arr = b.add_type(TypeDesc::array(ch, 5, 5));
    let iarr = b.add_type(TypeDesc::array(int, 3, 12));
    let flex = b.add_type(TypeDesc::array(int, 0, 0));
    let pch = b.add_type(TypeDesc::pointer(ch, 8));
    let mut e = TypeDesc::aggregate(TypeKind::Enum, "e", 4);
    e.enumerators = vec![("A".into(), 1), ("B".into(), 2)];
    let en = b.add_type(e);
    let s = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "s", size));
    let ps = b.add_type(TypeDesc::pointer(s, 8));
    let parr = b.add_type(TypeDesc::array(ps, 2, 16));
    let t = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "t", 24));
    let pt = b.add_type(TypeDesc::pointer(t, 8));
    let kinds = [
        (int, 4),
        (u64t, 8),
        (ch, 1),
        (dbl, 8),
        (boolean, 1),
        (arr, 5),
        (iarr, 12),
        (flex, 0),
        (pch, 8),
        (en, 4),
        (ps, 8),
        (parr, 16),
        (pt, 8),
    ];
    // Members that fit their struct (the db refuses others); overlaps allowed.
    let members = |spec: &Spec, extra: Option<TypeId>, agg: u32| -> Vec<MemberDesc> {
        let mut out = Vec::new();
        for (i, &(k, off, bits)) in spec.iter().enumerate() {
            let pick = usize::from(k) % (kinds.len() + 1);
            let (ty, tsize) = match (pick, extra) {
                (p, Some(x)) if p == kinds.len() => (x, 8),
                (p, _) => kinds[p % kinds.len()],
            };
            if tsize > agg {
                continue;
            }
            let scalar = ty == int || ty == u64t || ty == en;
            let width = if scalar {
                u32::from(bits) % (tsize * 8 + 1)
            } else {
                0
            };
            let bit_offset = if width > 0 {
                off % (agg * 8 - width + 1)
            } else {
                (off / 8 % (agg - tsize + 1)) * 8
            };
            out.push(MemberDesc {
                name: if k % 11 == 0 {
                    String::new()
                } else {
                    format!("m{i}")
                },
                ty,
                bit_offset: u64::from(bit_offset),
                bit_size: width as u8,
            });
        }
        out
    };
    let mut anon = TypeDesc::aggregate(TypeKind::Union, "", 8);
    anon.members = members(&inner, None, 8);
    let anon = b.add_type(anon);
    b.set_members(t, members(&inner, None, 24));
    b.set_members(s, members(&outer, Some(anon), size));
    b.add_function(FunctionDesc {
        module: m,
        addr: 0x1000,
        size: 16,
        name: "f".into(),
        symbol: None,
        ret: int,
        params: vec![ParamDesc {
            name: "p".into(),
            ty: ps,
            loc: Location::Reg(5),
        }],
        flags: FuncFlags::empty(),
    });
    Db::from_bytes(b.finish().unwrap()).unwrap()
}

fn spec() -> impl Strategy<Value = Spec> {
    proptest::collection::vec((any::<u8>(), 0u32..1200, any::<u8>()), 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn arbitrary_layouts(
        size in 0u32..160,
        outer in spec(),
        inner in spec(),
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        depth in 0u32..4,
        cap in 0u32..700,
    ) {
        let db = build(size, outer, inner);
        let f = db.by_name("f").next().unwrap();
        let ty = f.params().next().unwrap().ty();
        let p = plan(ty, depth, cap);
        prop_assert!(p.bytes() <= u64::from(cap));
        // Every pointer in the image points back into it.
        let mem = Blocks(vec![(0x40, bytes.clone())]);
        let mut out = String::new();
        render_deref(&mut out, ty, 0x40, &p, &mem, &NoSymbols, Role::Arg);
        prop_assert!(!out.is_empty());
        for path in ["p->m0", "p->m1.m0", "p->m2->m1", "p->m3"] {
            if let Ok(fp) = resolve(&f, &parse_path(path).unwrap()) {
                let mut s = String::new();
                render_value(&mut s, fp.ty, &bytes, fp.size.min(64), fp.bits, &NoSymbols, Role::Arg);
            }
        }
    }
}
