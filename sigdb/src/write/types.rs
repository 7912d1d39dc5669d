//! The type records: each type the functions reach written once, children first, in
//! the order the functions reach them (so the numbering is canonical), then the members
//! of the structs and unions among them in type order, with the types those reach
//! (appended as they come); type 0 is void. A struct or union declared only where
//! another unit defines it is written as that definition.

use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

use super::desc::TypeDesc;
use super::writer::Writer;
use crate::common::TypeId;
use crate::layout::{EnumeratorRecord, MemberRecord, TypeRecord, MAX_MEMBER_TYPE};
use crate::model::{TypeFlags, TypeKind};
use crate::Error;

/// The struct and union declarations (`struct foo;`, no size, no members) whose name
/// has exactly one complete definition of the same kind among `types`, each mapped to
/// it: a unit that only declares a struct another unit defines refers to the
/// definition in the db, as in BTF. A name defined more than one way (two structs of
/// that name, of different sizes) keeps its declarations.
pub(super) fn completions(types: &[TypeDesc]) -> FxHashMap<TypeId, TypeId> {
    let named_aggregate =
        |t: &TypeDesc| matches!(t.kind, TypeKind::Struct | TypeKind::Union) && !t.name.is_empty();
    // (kind, name) → the one definition, or None when there are several.
    let mut defined: FxHashMap<(TypeKind, &str), Option<TypeId>> = FxHashMap::default();
    for (i, t) in types.iter().enumerate() {
        if named_aggregate(t) && !t.flags.contains(TypeFlags::DECLARATION) {
            defined
                .entry((t.kind, t.name.as_str()))
                .and_modify(|d| *d = None)
                .or_insert(Some(TypeId(i as u32)));
        }
    }
    types
        .iter()
        .enumerate()
        .filter(|(_, t)| named_aggregate(t) && t.flags.contains(TypeFlags::DECLARATION))
        .filter_map(|(i, t)| {
            let full = (*defined.get(&(t.kind, t.name.as_str()))?)?;
            Some((TypeId(i as u32), full))
        })
        .collect()
}

impl Writer<'_, '_> {
    /// Emit `id` and everything it refers to, children first; return its output index.
    pub(super) fn emit_type(&mut self, id: TypeId) -> Result<u32, Error> {
        let mut stack = vec![(id, false)];
        while let Some((t, children_done)) = stack.pop() {
            if self.type_index[t.0 as usize] != u32::MAX {
                continue;
            }
            // A declaration with a definition elsewhere: the definition, written first.
            if let Some(&full) = self.complete.get(&t) {
                match self.type_index[full.0 as usize] {
                    u32::MAX => stack.extend([(t, false), (full, false)]),
                    out => self.type_index[t.0 as usize] = out,
                }
                continue;
            }
            let desc = &self.b.types[t.0 as usize];
            if !children_done {
                stack.push((t, true));
                for c in desc.children().collect::<Vec<_>>().into_iter().rev() {
                    if self.type_index[c.0 as usize] == u32::MAX {
                        stack.push((c, false));
                    }
                }
                continue;
            }
            let idx = |w: &Self, c: TypeId| w.type_index[c.0 as usize];
            let (first, count) = match desc.kind {
                TypeKind::Enum => {
                    let first = self.enumerators.len() as u32;
                    for (name, value) in &desc.enumerators {
                        let name = self.strings.add(name)?;
                        self.enumerators.push(EnumeratorRecord {
                            name: name.into(),
                            value: (*value).into(),
                        });
                    }
                    (first, desc.enumerators.len() as u32)
                }
                TypeKind::Func => {
                    let first = self.proto_params.len() as u32;
                    for &p in &desc.params {
                        self.proto_params.push(idx(self, p));
                    }
                    (first, desc.params.len() as u32)
                }
                TypeKind::Array => (0, desc.count),
                _ => (0, 0),
            };
            let name = self.strings.add(&desc.name)?;
            let target = if desc.kind.has_target() {
                desc.target.map_or(0, |c| idx(self, c))
            } else {
                0
            };
            let out = u32::try_from(self.types.len()).map_err(|_| Error::TooLarge("types"))?;
            self.type_ids.push(Some(t));
            self.types.push(TypeRecord {
                kind: desc.kind as u8,
                flags: desc.flags.bits(),
                quals: desc.quals.bits(),
                reserved: 0,
                size: desc.size.into(),
                name: name.into(),
                target: target.into(),
                first: first.into(),
                count: count.into(),
            });
            self.type_index[t.0 as usize] = out;
        }
        Ok(self.type_index[id.0 as usize])
    }

    /// Type 0 is always void.
    pub(super) fn emit_void(&mut self) -> Result<(), Error> {
        let void = TypeDesc::void();
        if let Some(v) = self.b.find_type(FxBuildHasher.hash_one(&void), &void) {
            self.emit_type(v)?;
            return Ok(());
        }
        self.strings.add("void")?;
        self.type_ids.push(None);
        self.types.push(TypeRecord {
            kind: TypeKind::Void as u8,
            flags: 0,
            quals: 0,
            reserved: 0,
            size: 0.into(),
            name: self.strings.add("void")?.into(),
            target: 0.into(),
            first: 0.into(),
            count: 0.into(),
        });
        Ok(())
    }

    /// The members of every struct and union written so far and of those their members
    /// reach, in type order: each one's member records, its `first` and `count` set.
    pub(super) fn emit_members(&mut self) -> Result<(), Error> {
        let mut i = 0;
        while i < self.types.len() {
            let Some(id) = self.type_ids[i] else {
                i += 1;
                continue;
            };
            let members = self.b.members_of(id);
            if !members.is_empty() {
                let first =
                    u32::try_from(self.members.len()).map_err(|_| Error::TooLarge("members"))?;
                for m in members {
                    let ty = self.emit_type(m.ty)?;
                    if ty > MAX_MEMBER_TYPE {
                        return Err(Error::TooLarge("types (members refer to them)"));
                    }
                    let bit_offset = u32::try_from(m.bit_offset)
                        .map_err(|_| Error::TooLarge("member offsets"))?;
                    let name = self.strings.add(&m.name)?;
                    self.members.push(MemberRecord {
                        name: name.into(),
                        ty_bits: (ty | u32::from(m.bit_size) << 24).into(),
                        bit_offset: bit_offset.into(),
                    });
                }
                self.types[i].first = first.into();
                self.types[i].count = (members.len() as u32).into();
            }
            i += 1;
        }
        Ok(())
    }
}
