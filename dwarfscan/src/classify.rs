//! System V classes of the eightbytes of a small struct or union (≤ 16 bytes), from its
//! members: which eightbytes travel in SSE registers, and whether the aggregate goes in
//! memory (unaligned, `packed`, members). Recorded in the type's flags, so that a tracer
//! knows where a struct returned by value is (rax/rdx, xmm0/xmm1) without members.

use gimli::constants as dw;
use sigdb::TypeFlags;

use crate::dwarf::{read_with_children, Die, Units};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Unused,
    Integer,
    Sse,
}

/// The most nested members followed.
const MAX_DEPTH: u32 = 8;

/// Flags of the aggregate DIE `die` (its `children` read): `CLASSIFIED` with `SSE_LO`,
/// `SSE_HI`, or `MEMORY`; empty when it cannot be classified (bit-fields, x87 members,
/// unreadable DWARF).
pub fn aggregate_flags<'s>(
    units: &mut Units<'_, 's>,
    die: &Die<'s>,
    children: &[Die<'s>],
) -> TypeFlags {
    let size = die.byte_size.unwrap_or(0);
    if !(1..=16).contains(&size) {
        return TypeFlags::empty();
    }
    let mut eb = [Class::Unused; 2];
    match members(
        units,
        die.tag == dw::DW_TAG_union_type,
        children,
        0,
        &mut eb,
        0,
    ) {
        Some(true) => {}
        Some(false) => return TypeFlags::CLASSIFIED | TypeFlags::MEMORY,
        None => return TypeFlags::empty(),
    }
    let mut f = TypeFlags::CLASSIFIED;
    f.set(TypeFlags::SSE_LO, eb[0] == Class::Sse);
    f.set(TypeFlags::SSE_HI, size > 8 && eb[1] == Class::Sse);
    f
}

/// Merge the members' classes into `eb`; `Some(false)` when the aggregate goes in memory.
fn members<'s>(
    units: &mut Units<'_, 's>,
    union: bool,
    children: &[Die<'s>],
    base: u64,
    eb: &mut [Class; 2],
    depth: u32,
) -> Option<bool> {
    for m in children.iter().filter(|c| c.tag == dw::DW_TAG_member) {
        if m.bitfield {
            return None;
        }
        let off = base + if union { 0 } else { m.member_offset? };
        if !place(units, m.ty?, off, eb, depth)? {
            return Some(false);
        }
    }
    Some(true)
}

/// Classify the value of type DIE `ty` at byte `off`.
fn place<'s>(
    units: &mut Units<'_, 's>,
    ty: u64,
    off: u64,
    eb: &mut [Class; 2],
    depth: u32,
) -> Option<bool> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (die, children) = read_with_children(units, ty, |_| true).ok()?;
    match die.tag {
        dw::DW_TAG_typedef
        | dw::DW_TAG_const_type
        | dw::DW_TAG_volatile_type
        | dw::DW_TAG_restrict_type
        | dw::DW_TAG_atomic_type => place(units, die.ty?, off, eb, depth + 1),
        dw::DW_TAG_structure_type | dw::DW_TAG_class_type | dw::DW_TAG_union_type => members(
            units,
            die.tag == dw::DW_TAG_union_type,
            &children,
            off,
            eb,
            depth + 1,
        ),
        dw::DW_TAG_array_type => {
            let (elem, _) = read_with_children(units, die.ty?, |_| false).ok()?;
            let esize = resolved_size(units, elem, depth)?;
            let count = children
                .iter()
                .find(|c| c.tag == dw::DW_TAG_subrange_type)
                .and_then(|c| c.count)
                .unwrap_or(0);
            for k in 0..count.min(16) {
                if !place(units, die.ty?, off + k * esize, eb, depth + 1)? {
                    return Some(false);
                }
            }
            Some(true)
        }
        dw::DW_TAG_base_type
            if die.encoding.map(gimli::DwAte) == Some(dw::DW_ATE_complex_float) =>
        {
            // Two float parts: each eightbyte SSE (complex long double: x87, not
            // modelled).
            let size = die.byte_size?;
            if size > 16 || !off.is_multiple_of(size.min(16) / 2) {
                return if size > 16 { None } else { Some(false) };
            }
            for k in 0..size.div_ceil(8) {
                let slot = eb.get_mut(usize::try_from(off / 8 + k).ok()?)?;
                if *slot != Class::Integer {
                    *slot = Class::Sse;
                }
            }
            Some(true)
        }
        _ => {
            let size = resolved_size(units, die.clone(), depth)?;
            let class = if die.tag == dw::DW_TAG_base_type
                && die.encoding.map(gimli::DwAte) == Some(dw::DW_ATE_float)
            {
                if size > 8 {
                    // x87 long double: returned on the x87 stack, not modelled.
                    return None;
                }
                Class::Sse
            } else {
                Class::Integer
            };
            // An unaligned scalar, or one across an eightbyte: memory.
            if size == 0 || !off.is_multiple_of(size.min(8)) || off / 8 != (off + size - 1) / 8 {
                return Some(false);
            }
            let slot = eb.get_mut(usize::try_from(off / 8).ok()?)?;
            *slot = match (*slot, class) {
                (Class::Integer, _) | (_, Class::Integer) => Class::Integer,
                _ => Class::Sse,
            };
            Some(true)
        }
    }
}

/// The size of type DIE `die`, following typedefs and qualifiers.
fn resolved_size<'s>(units: &mut Units<'_, 's>, die: Die<'s>, depth: u32) -> Option<u64> {
    let mut d = die;
    for _ in depth..MAX_DEPTH * 2 {
        if let Some(s) = d.byte_size {
            return Some(s);
        }
        match d.tag {
            dw::DW_TAG_pointer_type => return Some(8),
            _ => d = read_with_children(units, d.ty?, |_| false).ok()?.0,
        }
    }
    None
}
