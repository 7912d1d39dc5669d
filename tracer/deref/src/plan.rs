//! The read plan: what an engine copies at the call so that a pointer argument can be
//! shown with the data behind it.

use sigdb::{Qualifiers, Type, TypeKind};

/// How many bytes a `char *` member is read for (a string, up to its NUL).
pub const STRING_BYTES: u32 = 64;

/// How deep nested structs and arrays are walked (a damaged db cannot loop).
pub(crate) const MAX_NEST: u32 = 32;

/// Where a read's address comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum From {
    /// The argument's own value (the pointer passed).
    Arg,
    /// The pointer stored at byte `offset` of the bytes of read number `read` (an index
    /// into [`ReadPlan::reads`], always earlier than this read): known only once that
    /// read is done, and skipped when the pointer is `NULL` or an error value.
    Pointer {
        /// Index of the read holding the pointer.
        read: u32,
        /// Byte offset of the pointer in that read's bytes.
        offset: u32,
    },
}

/// What a read is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadKind {
    /// A struct or union: `len` bytes from the address.
    Struct,
    /// A C string: up to `len` bytes, the engine may stop at the first NUL.
    String,
}

/// One copy an engine makes at the call: `len` bytes at the address [`From`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Read {
    /// Where the address comes from.
    pub from: From,
    /// How many bytes to copy (the type's size, capped by what is left of the budget).
    pub len: u32,
    /// What the bytes are.
    pub kind: ReadKind,
    /// Pointer level: 1 for the argument's pointee, 2 for what its members point to…
    pub level: u32,
}

/// Every copy one pointer argument needs, in the order to make them (breadth first: the
/// argument's own struct before what its members point to; a read's source always
/// precedes it). The sum of `len` is at most the byte cap given to [`plan`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadPlan {
    /// The reads; empty when the type is not a pointer to something shown by members.
    pub reads: Vec<Read>,
    /// Whether the cap left out reads the depth asked for.
    pub capped: bool,
    /// The levels of pointers asked for.
    pub depth: u32,
}

impl ReadPlan {
    /// Total bytes the plan copies.
    pub fn bytes(&self) -> u64 {
        self.reads.iter().map(|r| u64::from(r.len)).sum()
    }

    /// The read whose address is the pointer at `offset` in read `read`'s bytes.
    pub fn child(&self, read: usize, offset: u32) -> Option<usize> {
        let from = From::Pointer {
            read: read as u32,
            offset,
        };
        self.reads.iter().position(|r| r.from == from)
    }
}

/// What a pointer of type `ptr` (resolved or not) is followed for: its pointee's size and
/// the kind of read; `None` when it is not followed (not a pointer, a pointer to a
/// scalar, to an incomplete struct, to a function).
pub fn follow(ptr: Type<'_>) -> Option<(u32, ReadKind)> {
    let p = ptr.resolve();
    if p.kind() != TypeKind::Pointer {
        return None;
    }
    let t = p.target()?.resolve();
    match t.kind() {
        TypeKind::Struct | TypeKind::Union if t.size() > 0 => Some((t.size(), ReadKind::Struct)),
        TypeKind::Char if t.size() == 1 => Some((STRING_BYTES, ReadKind::String)),
        _ => None,
    }
}

/// The plan for a pointer argument of type `ptr`: `depth` levels of pointers followed
/// (1: the argument's struct only), at most `cap` bytes in all. Empty unless `ptr` is a
/// pointer to a struct or union.
pub fn plan(ptr: Type<'_>, depth: u32, cap: u32) -> ReadPlan {
    let mut plan = ReadPlan {
        depth,
        ..ReadPlan::default()
    };
    let Some((size, ReadKind::Struct)) = follow(ptr) else {
        return plan;
    };
    if depth == 0 || cap == 0 {
        plan.capped = cap == 0 && depth > 0;
        return plan;
    }
    let mut types = vec![ptr.resolve().target().map(|t| t.resolve())];
    plan.reads.push(Read {
        from: From::Arg,
        len: size.min(cap),
        kind: ReadKind::Struct,
        level: 1,
    });
    let mut budget = cap - size.min(cap);
    let mut i = 0;
    while i < plan.reads.len() {
        let r = plan.reads[i];
        let ty = types[i];
        i += 1;
        let (Some(ty), ReadKind::Struct) = (ty, r.kind) else {
            continue;
        };
        if r.level >= depth {
            continue;
        }
        let mut slots = Vec::new();
        pointer_slots(ty, 0, r.len, 0, &mut slots);
        for (offset, p) in slots {
            let Some((size, kind)) = follow(p) else {
                continue;
            };
            if budget == 0 {
                plan.capped = true;
                break;
            }
            let len = size.min(budget);
            budget -= len;
            plan.reads.push(Read {
                from: From::Pointer {
                    read: (i - 1) as u32,
                    offset,
                },
                len,
                kind,
                level: r.level + 1,
            });
            types.push(p.resolve().target().map(|t| t.resolve()));
        }
    }
    plan
}

/// The pointers the renderer shows in `t`'s bytes at `base` within the first `len` bytes
/// of a read: members (a union's first only, as it is shown), nested structs, array
/// elements; each as (offset, pointer type).
fn pointer_slots<'a>(t: Type<'a>, base: u32, len: u32, nest: u32, out: &mut Vec<(u32, Type<'a>)>) {
    if nest > MAX_NEST || base >= len {
        return;
    }
    let r = t.resolve();
    match r.kind() {
        TypeKind::Struct | TypeKind::Union => {
            let Ok(members) = r.members() else { return };
            for m in members {
                let Ok(m) = m else { return };
                if !m.is_bitfield() {
                    let off = base.saturating_add(m.offset());
                    pointer_slots(m.ty(), off, len, nest + 1, out);
                }
                if r.kind() == TypeKind::Union {
                    break;
                }
            }
        }
        TypeKind::Array => {
            let Some(elem) = r.target() else { return };
            let esize = elem.resolve().size();
            if esize == 0 {
                return;
            }
            for i in 0..r.array_len() {
                let off = base.saturating_add(i.saturating_mul(esize));
                if off >= len {
                    break;
                }
                pointer_slots(elem, off, len, nest + 1, out);
            }
        }
        TypeKind::Pointer if base.saturating_add(r.size()) <= len => out.push((base, t)),
        _ => {}
    }
}

/// What an output parameter points to ([`output`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A scalar of 1 to 8 bytes: an integer, bool, enum, float or pointer.
    Scalar,
    /// A struct or union.
    Struct,
}

/// Whether a parameter of type `ptr` is an output parameter, one the call may write
/// through (its value is read again at the return): a pointer to a non-const scalar or
/// struct. Not `void *`, a `char` buffer, a function or a const pointee.
pub fn output(ptr: Type<'_>) -> Option<Output> {
    let p = ptr.resolve();
    if p.kind() != TypeKind::Pointer || points_to_const(p) {
        return None;
    }
    let t = p.target()?.resolve();
    match t.kind() {
        TypeKind::Struct | TypeKind::Union if t.size() > 0 => Some(Output::Struct),
        TypeKind::Bool | TypeKind::Int | TypeKind::Enum | TypeKind::Float | TypeKind::Pointer
            if (1..=8).contains(&t.size()) =>
        {
            Some(Output::Scalar)
        }
        _ => None,
    }
}

/// Whether pointer `p` points to a const-qualified type (through typedefs).
fn points_to_const(p: Type<'_>) -> bool {
    let mut t = match p.target() {
        Some(t) => t,
        None => return true,
    };
    loop {
        match t.kind() {
            TypeKind::Qualified if t.qualifiers().contains(Qualifiers::CONST) => return true,
            TypeKind::Qualified | TypeKind::Typedef => match t.target() {
                Some(n) => t = n,
                None => return true,
            },
            _ => return false,
        }
    }
}
