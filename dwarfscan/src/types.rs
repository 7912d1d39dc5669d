//! DWARF types → a CU-local type graph (later interned into the [`sigdb::DbBuilder`]).
//!
//! Types are converted on demand (only those reachable from a signature, then from the
//! members of the structs and unions among them), cached by DIE offset, children before
//! parents. A named struct or union is pushed before its members are read, so they may
//! point back to it (`struct list_head`): its members are filled in afterwards
//! ([`TypeGraph::fill_members`]), and are the one place where an index may refer to a
//! later type. An anonymous one's members are read first (they are part of its identity).
//! A malformed cycle through pointers resolves to `void`.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use gimli::constants as dw;
use sigdb::{Qualifiers, TypeFlags, TypeKind};

use crate::dwarf::{read_with_children, Die, Units};

/// A type of a CU-local graph; `target` and `params` index the same graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LType {
    /// Kind.
    pub kind: TypeKind,
    /// Name (empty when anonymous).
    pub name: String,
    /// Size in bytes.
    pub size: u32,
    /// Type flags.
    pub flags: TypeFlags,
    /// Qualifiers.
    pub quals: Qualifiers,
    /// Target type.
    pub target: Option<u32>,
    /// Array count.
    pub count: u32,
    /// Enumerators.
    pub enumerators: Vec<(String, i64)>,
    /// Prototype parameters.
    pub params: Vec<u32>,
    /// Members of a struct or union (a named one's may refer to later types).
    pub members: Vec<LMember>,
}

/// A member of a CU-local struct or union; `ty` indexes the same graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LMember {
    /// Name (empty for an anonymous struct or union member).
    pub name: String,
    /// Type.
    pub ty: u32,
    /// Offset from the start of the struct in bits.
    pub bit_offset: u64,
    /// Width of a bit-field, 0 when not a bit-field.
    pub bit_size: u8,
}

impl LType {
    fn new(kind: TypeKind, name: &str, size: u32) -> LType {
        LType {
            kind,
            name: name.to_string(),
            size,
            flags: TypeFlags::empty(),
            quals: Qualifiers::empty(),
            target: None,
            count: 0,
            enumerators: Vec::new(),
            params: Vec::new(),
            members: Vec::new(),
        }
    }
}

/// Lossy UTF-8 of a DWARF string.
pub fn text(s: Option<&[u8]>) -> String {
    s.map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

const MAX_DEPTH: u32 = 64;

/// Converts DWARF types of one unit (and the units it refers to).
#[derive(Default)]
pub struct TypeGraph {
    /// The types, children first.
    pub types: Vec<LType>,
    cache: HashMap<u64, u32>,
    in_progress: HashSet<u64>,
    void: Option<u32>,
    /// References that could not be read.
    pub bad_refs: u64,
    /// Named structs and unions whose members are still to be read: (index, DIE offset).
    pending: Vec<(u32, u64)>,
    /// Structs and unions left without members: a member outside the struct, a bit-field
    /// wider than 255 bits, or an offset past 2^32 bits.
    pub members_dropped: u64,
}

impl TypeGraph {
    /// The local index of `void`.
    pub fn void(&mut self) -> u32 {
        if let Some(v) = self.void {
            return v;
        }
        let v = self.push(LType::new(TypeKind::Void, "void", 0));
        self.void = Some(v);
        v
    }

    fn push(&mut self, t: LType) -> u32 {
        self.types.push(t);
        self.types.len() as u32 - 1
    }

    /// The type at `idx`.
    pub fn get(&self, idx: u32) -> &LType {
        &self.types[idx as usize]
    }

    /// Follow typedefs and qualifiers.
    pub fn resolve(&self, mut idx: u32) -> &LType {
        for _ in 0..MAX_DEPTH {
            let t = self.get(idx);
            match (t.kind, t.target) {
                (TypeKind::Typedef | TypeKind::Qualified, Some(n)) => idx = n,
                _ => return t,
            }
        }
        self.get(idx)
    }

    /// Convert the type DIE at global offset `off` (`None`: void).
    pub fn convert(&mut self, units: &mut Units<'_, '_>, off: Option<u64>) -> u32 {
        self.convert_depth(units, off, 0)
    }

    fn convert_depth(&mut self, units: &mut Units<'_, '_>, off: Option<u64>, depth: u32) -> u32 {
        let Some(off) = off else { return self.void() };
        if let Some(&i) = self.cache.get(&off) {
            return i;
        }
        if depth > MAX_DEPTH || !self.in_progress.insert(off) {
            return self.void();
        }
        let t = match self.build(units, off, depth) {
            Some(t) => t,
            None => {
                self.bad_refs += 1;
                LType::new(TypeKind::Void, "void", 0)
            }
        };
        self.in_progress.remove(&off);
        let named_aggregate = matches!(t.kind, TypeKind::Struct | TypeKind::Union)
            && !t.name.is_empty()
            && !t.flags.contains(TypeFlags::DECLARATION);
        let idx = if t.kind == TypeKind::Void && t.name == "void" {
            self.void()
        } else {
            self.push(t)
        };
        if named_aggregate {
            self.pending.push((idx, off));
        }
        self.cache.insert(off, idx);
        idx
    }

    /// The type of the DIE at `off`, its referenced types converted first (`None`: the
    /// DIE cannot be read or is not a type).
    fn build(&mut self, units: &mut Units<'_, '_>, off: u64, depth: u32) -> Option<LType> {
        let (die, children) = read_type_die(units, off)?;
        let name = text(die.name);
        let size = die.byte_size.unwrap_or(0).min(u64::from(u32::MAX)) as u32;
        let t = match die.tag {
            dw::DW_TAG_base_type => base_type(&die, &name, size),
            dw::DW_TAG_pointer_type
            | dw::DW_TAG_reference_type
            | dw::DW_TAG_rvalue_reference_type
            | dw::DW_TAG_ptr_to_member_type => {
                let target = self.sub(units, die.ty, depth);
                let mut t = LType::new(TypeKind::Pointer, "", if size == 0 { 8 } else { size });
                t.target = Some(target);
                t
            }
            dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_atomic_type => {
                let q = match die.tag {
                    dw::DW_TAG_const_type => Qualifiers::CONST,
                    dw::DW_TAG_volatile_type => Qualifiers::VOLATILE,
                    dw::DW_TAG_restrict_type => Qualifiers::RESTRICT,
                    _ => Qualifiers::ATOMIC,
                };
                let target = self.sub(units, die.ty, depth);
                let mut t = LType::new(TypeKind::Qualified, "", self.get(target).size);
                t.quals = q;
                t.target = Some(target);
                t
            }
            dw::DW_TAG_typedef => {
                let target = self.sub(units, die.ty, depth);
                let mut t = LType::new(TypeKind::Typedef, &name, self.get(target).size);
                t.target = Some(target);
                t
            }
            dw::DW_TAG_structure_type | dw::DW_TAG_class_type | dw::DW_TAG_union_type => {
                let kind = if die.tag == dw::DW_TAG_union_type {
                    TypeKind::Union
                } else {
                    TypeKind::Struct
                };
                let mut t = LType::new(kind, &name, size);
                t.flags.set(TypeFlags::DECLARATION, die.declaration);
                if small_aggregate(&die) {
                    t.flags |= crate::classify::aggregate_flags(units, &die, &children);
                }
                if name.is_empty() && !die.declaration && die.has_children {
                    match self.member_list(units, off, kind, size, depth) {
                        Some(m) => t.members = m,
                        None => self.members_dropped += 1,
                    }
                }
                t
            }
            dw::DW_TAG_enumeration_type => {
                self.enumeration(units, &die, &children, &name, size, depth)
            }
            dw::DW_TAG_array_type => self.array(units, &die, &children, size, depth)?,
            dw::DW_TAG_subroutine_type => self.subroutine(units, &die, &children, depth),
            dw::DW_TAG_unspecified_type => LType::new(TypeKind::Void, &name, 0),
            _ => return None,
        };
        Some(t)
    }

    /// Convert a type referred to by a type being built at `depth`.
    fn sub(&mut self, units: &mut Units<'_, '_>, off: Option<u64>, depth: u32) -> u32 {
        self.convert_depth(units, off, depth + 1)
    }

    /// An enumeration: signed when its underlying type is or a value came negative, the
    /// values of a signed one sign-extended from its size.
    fn enumeration(
        &mut self,
        units: &mut Units<'_, '_>,
        die: &Die<'_>,
        children: &[Die<'_>],
        name: &str,
        size: u32,
        depth: u32,
    ) -> LType {
        let mut signed = match die.ty {
            Some(_) => {
                let u = self.sub(units, die.ty, depth);
                self.resolve(u).flags.contains(TypeFlags::SIGNED)
            }
            None => false,
        };
        let size = if size == 0 { 4 } else { size };
        let mut values = Vec::new();
        for c in children.iter().filter(|c| c.tag == dw::DW_TAG_enumerator) {
            let (v, came_signed) = c.const_value.unwrap_or((0, false));
            if came_signed && v < 0 {
                signed = true;
            }
            values.push((text(c.name), v, came_signed));
        }
        let mut t = LType::new(TypeKind::Enum, name, size);
        t.flags.set(TypeFlags::SIGNED, signed);
        t.flags.set(TypeFlags::DECLARATION, die.declaration);
        let bits = size.min(8) * 8;
        t.enumerators = values
            .into_iter()
            .map(|(n, v, came_signed)| {
                // Data forms are zero-extended; sign-extend them for signed enums.
                let v = if signed && !came_signed && bits < 64 && (v >> (bits - 1)) & 1 == 1 {
                    v | (-1i64 << bits)
                } else {
                    v
                };
                (n, v)
            })
            .collect();
        t
    }

    /// An array: one array type per dimension, built inside out (`int a[2][3]` is an
    /// array of 2 arrays of 3 ints); the inner ones are pushed, the outer one returned.
    fn array(
        &mut self,
        units: &mut Units<'_, '_>,
        die: &Die<'_>,
        children: &[Die<'_>],
        size: u32,
        depth: u32,
    ) -> Option<LType> {
        let elem = self.sub(units, die.ty, depth);
        let dims: Vec<u64> = children
            .iter()
            .filter(|c| c.tag == dw::DW_TAG_subrange_type)
            .map(|c| c.count.unwrap_or(0))
            .collect();
        let dims = if dims.is_empty() { vec![0] } else { dims };
        let mut inner = elem;
        let mut t = None;
        for (i, &n) in dims.iter().enumerate().rev() {
            let esize = self.get(inner).size;
            let n32 = n.min(u64::from(u32::MAX)) as u32;
            let mut a = LType::new(TypeKind::Array, "", esize.saturating_mul(n32));
            a.target = Some(inner);
            a.count = n32;
            if i == 0 {
                if size != 0 {
                    a.size = size;
                }
                t = Some(a);
            } else {
                inner = self.push(a);
            }
        }
        t
    }

    /// A function prototype: its return type, parameter types and whether it is variadic.
    fn subroutine(
        &mut self,
        units: &mut Units<'_, '_>,
        die: &Die<'_>,
        children: &[Die<'_>],
        depth: u32,
    ) -> LType {
        let ret = self.sub(units, die.ty, depth);
        let mut params = Vec::new();
        let mut variadic = false;
        for c in children {
            match c.tag {
                dw::DW_TAG_formal_parameter => params.push(self.sub(units, c.ty, depth)),
                dw::DW_TAG_unspecified_parameters => variadic = true,
                _ => {}
            }
        }
        let mut t = LType::new(TypeKind::Func, "", 0);
        t.target = Some(ret);
        t.params = params;
        t.flags.set(TypeFlags::VARIADIC, variadic);
        t
    }
}

impl TypeGraph {
    /// Read the members of the named structs and unions converted so far, and of those
    /// their members reach, until none is left; not those of the structs in `known`,
    /// whose members the db has already.
    pub fn fill_members(
        &mut self,
        units: &mut Units<'_, '_>,
        known: Option<crate::merge::KnownView<'_>>,
    ) {
        let mut i = 0;
        while let Some(&(idx, off)) = self.pending.get(i) {
            i += 1;
            let t = self.get(idx);
            let (kind, size) = (t.kind, t.size);
            if known.is_some_and(|k| k.holds(kind, &t.name, size, t.flags)) {
                continue;
            }
            match self.member_list(units, off, kind, size, 0) {
                Some(m) => self.types[idx as usize].members = m,
                None => self.members_dropped += 1,
            }
        }
        self.pending.clear();
    }

    /// The members of the struct or union DIE at `off` (of `size` bytes), their types
    /// converted; `None` when one does not fit in it (the validator's rule: its last bit
    /// within the struct), which leaves the struct without members.
    fn member_list(
        &mut self,
        units: &mut Units<'_, '_>,
        off: u64,
        kind: TypeKind,
        size: u32,
        depth: u32,
    ) -> Option<Vec<LMember>> {
        let (_, children) = read_with_children(units, off, |t| t == dw::DW_TAG_member).ok()?;
        let mut out = Vec::with_capacity(children.len());
        for c in children.iter().filter(|c| c.tag == dw::DW_TAG_member) {
            // C++ static members are declarations; they take no room in the object.
            if c.declaration || c.external {
                continue;
            }
            let ty = self.sub(units, c.ty, depth);
            let bit_size = c.bit_size.unwrap_or(0);
            let base = if kind == TypeKind::Union {
                0
            } else {
                c.member_offset.unwrap_or(0).checked_mul(8)?
            };
            let bit_offset = match (c.data_bit_offset, c.bit_offset_msb) {
                (Some(b), _) => b,
                // DWARF 2/3 numbers the bits of the storage unit from its most
                // significant one; on a little-endian machine, the first bit is at
                // storage bits - msb offset - width.
                (None, Some(msb)) if bit_size > 0 => {
                    let unit = c.byte_size.unwrap_or(u64::from(self.get(ty).size)) * 8;
                    (base + unit).checked_sub(msb + bit_size)?
                }
                _ => base,
            };
            let len = match bit_size {
                0 => u64::from(self.get(ty).size) * 8,
                n => n,
            };
            if bit_size > 255
                || bit_offset > sigdb::layout::MAX_MEMBER_BIT_OFFSET
                || bit_offset + len > u64::from(size) * 8
            {
                return None;
            }
            out.push(LMember {
                name: text(c.name),
                ty,
                bit_offset,
                bit_size: bit_size as u8,
            });
        }
        Some(out)
    }
}

/// A small aggregate (1 to 16 bytes, defined here): its members give its ABI classes.
fn small_aggregate(d: &Die<'_>) -> bool {
    matches!(
        d.tag,
        dw::DW_TAG_structure_type | dw::DW_TAG_class_type | dw::DW_TAG_union_type
    ) && !d.declaration
        && d.byte_size.is_some_and(|s| (1..=16).contains(&s))
}

/// The type DIE at global offset `off`, with its children when its conversion reads them
/// (enumerators, array dimensions, prototype parameters, a small aggregate's members).
fn read_type_die<'s>(units: &mut Units<'_, 's>, off: u64) -> Option<(Die<'s>, Vec<Die<'s>>)> {
    let needs_children = |tag| {
        matches!(
            tag,
            dw::DW_TAG_enumeration_type | dw::DW_TAG_array_type | dw::DW_TAG_subroutine_type
        )
    };
    let file = units.file;
    let (unit, uoff) = units.locate(off).ok()?;
    let die = Die::read(&file.dwarf, unit, uoff).ok()?;
    if (needs_children(die.tag) || small_aggregate(&die)) && die.has_children {
        read_with_children(units, off, |_| true).ok()
    } else {
        Some((die, Vec::new()))
    }
}

/// A base type: its kind and signedness from its encoding.
fn base_type(die: &Die<'_>, name: &str, size: u32) -> LType {
    let enc = die.encoding.map(gimli::DwAte).unwrap_or(dw::DW_ATE_signed);
    let (kind, signed) = match enc {
        dw::DW_ATE_boolean => (TypeKind::Bool, false),
        dw::DW_ATE_signed_char => (TypeKind::Char, true),
        dw::DW_ATE_unsigned_char | dw::DW_ATE_UTF => (TypeKind::Char, false),
        dw::DW_ATE_signed => (TypeKind::Int, true),
        dw::DW_ATE_unsigned => (TypeKind::Int, false),
        dw::DW_ATE_float | dw::DW_ATE_complex_float | dw::DW_ATE_decimal_float => {
            (TypeKind::Float, true)
        }
        _ => (TypeKind::Int, false),
    };
    let mut t = LType::new(kind, name, size);
    t.flags.set(TypeFlags::SIGNED, signed);
    t
}
