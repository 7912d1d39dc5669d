//! The members of structs and unions: records in LZ4 blocks of [`MEMBER_BLOCK`] (the
//! cold section read only when a struct's members are asked for), their checks, and the
//! [`Members`] iterator a [`crate::Type`] hands out.

use zerocopy::FromBytes;

use super::validate::{BlockContext, Validator};
use crate::layout::*;
use crate::model::TypeKind;
use crate::{Db, Error, FormatError, Type};

/// A member of a struct or union: its name, type and where it is.
#[derive(Clone, Copy)]
pub struct Member<'a> {
    db: &'a Db,
    rec: &'a MemberRecord,
}

impl std::fmt::Debug for Member<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Member({} @{}",
            self.ty().declare(self.name()),
            self.offset()
        )?;
        if self.bit_size() != 0 {
            write!(f, " bits {}:{}", self.bit_offset() % 8, self.bit_size())?;
        }
        f.write_str(")")
    }
}

impl<'a> Member<'a> {
    /// Name; empty for an anonymous struct or union member (whose members are reached
    /// as if they were the outer struct's, at this member's offset plus theirs).
    pub fn name(&self) -> &'a str {
        self.db.string(self.rec.name.get())
    }

    /// Type (void when its record cannot be read).
    pub fn ty(&self) -> Type<'a> {
        let db = self.db;
        db.type_at(self.rec.ty())
            .or_else(|| db.type_at(0))
            .expect("type 0 (void) is validated on open")
    }

    /// Byte offset from the start of the struct (for a bit-field, of the byte holding its
    /// first bit). 0 for every member of a union.
    pub fn offset(&self) -> u32 {
        self.rec.bit_offset.get() / 8
    }

    /// Offset from the start of the struct in bits (`offset() * 8` but for bit-fields).
    pub fn bit_offset(&self) -> u32 {
        self.rec.bit_offset.get()
    }

    /// Width of a bit-field in bits; 0 when the member is not a bit-field.
    pub fn bit_size(&self) -> u32 {
        self.rec.bit_size()
    }

    /// Whether the member is a bit-field.
    pub fn is_bitfield(&self) -> bool {
        self.bit_size() != 0
    }
}

/// The members of a struct or union, in declaration order; read from the LZ4 block(s)
/// holding them, each decompressed on first use. A damaged block, or a member that
/// starts past its struct's end (or a bit-field that ends past it), ends the iteration
/// with its error; [`Db::verify`] also checks the members' types' sizes.
#[derive(Clone)]
pub struct Members<'a> {
    db: &'a Db,
    next: u32,
    end: u32,
    /// The struct's size in bits.
    bits: u64,
}

impl std::fmt::Debug for Members<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Members({}..{})", self.next, self.end)
    }
}

impl<'a> Members<'a> {
    /// The members `[first, first + count)` (validated to be in bounds on open) of a
    /// struct of `size` bytes.
    pub(crate) fn new(db: &'a Db, first: u32, count: u32, size: u32) -> Self {
        Members {
            db,
            next: first,
            end: first.saturating_add(count),
            bits: u64::from(size) * 8,
        }
    }

    /// The first member named `name` (anonymous members are not searched into).
    pub fn find(self, name: &str) -> Result<Option<Member<'a>>, Error> {
        for m in self {
            let m = m?;
            if m.name() == name {
                return Ok(Some(m));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for Members<'a> {
    type Item = Result<Member<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let index = self.next;
        self.next += 1;
        let error = match self.db.member_record(index) {
            Ok(Some(rec)) => {
                let start = u64::from(rec.bit_offset.get());
                if start <= self.bits && start + u64::from(rec.bit_size()) <= self.bits {
                    return Some(Ok(Member { db: self.db, rec }));
                }
                outside(self.db, index)
            }
            Ok(None) => return None,
            Err(error) => error.clone(),
        };
        self.next = self.end;
        Some(Err(Error::Format {
            path: self.db.path().to_path_buf(),
            error,
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.next) as usize;
        (0, Some(n))
    }
}

/// The members of `t`: none for a type that is not a struct or union, or a declaration;
/// [`Error::MembersNotRecorded`] for a db of format version 5, which has no members.
pub(crate) fn members_of<'a>(
    db: &'a Db,
    t: &Type<'a>,
    first: u32,
    count: u32,
) -> Result<Members<'a>, Error> {
    if db.version() == VERSION_5 {
        return Err(Error::MembersNotRecorded {
            path: db.path().to_path_buf(),
        });
    }
    if matches!(t.kind(), TypeKind::Struct | TypeKind::Union) {
        Ok(Members::new(db, first, count, t.size()))
    } else {
        Ok(Members::new(db, 0, 0, 0))
    }
}

/// The error of member record `k`, which is outside its struct.
fn outside(db: &Db, k: u32) -> FormatError {
    let offsets: &[zerocopy::little_endian::U32] = db.records(SectionId::MemberBlocks);
    let at = offsets
        .get(k as usize / MEMBER_BLOCK)
        .map_or(0, |o| o.get() as usize);
    FormatError {
        offset: (db.sections[SectionId::Members as usize].0 + at) as u64,
        kind: crate::FormatErrorKind::BadRecord {
            section: SECTION_NAMES[SectionId::Members as usize],
            index: k.into(),
            what: "member outside its struct",
        },
    }
}

/// The checks of a block of member records, the first of which is record `first`: names
/// in the strings, types in bounds. `at`: the block's offset in the section.
pub(crate) fn check_block(
    v: &Validator<'_>,
    cx: &BlockContext<'_>,
    first: u32,
    recs: &[MemberRecord],
    at: usize,
) -> Result<(), FormatError> {
    for (j, m) in recs.iter().enumerate() {
        let bad = |what| v.err_at(SectionId::Members, at, first + j as u32, what);
        if u64::from(m.name.get()) >= cx.strings_len {
            return bad("name is not a string");
        }
        if m.ty() >= cx.type_count {
            return bad("type out of bounds");
        }
    }
    Ok(())
}

/// The check of every type and member block, and of every struct's members against its
/// size ([`Db::verify`], [`Db::check_frames`]): a member starts within its struct and
/// ends within it (a bit-field: its last bit), but for one of size 0 (a flexible array),
/// which may start at its end. Reads every type and member block once, without keeping
/// them.
pub(crate) fn check_layout(db: &Db) -> Result<(), FormatError> {
    let blocks = |id: SectionId, n: usize| -> Result<Vec<Box<[u8]>>, FormatError> {
        (0..n.div_ceil(match id {
            SectionId::Members => MEMBER_BLOCK,
            _ => TYPE_BLOCK,
        }))
            .map(|b| db.decode_block(id, b))
            .collect()
    };
    let types = blocks(SectionId::Types, db.type_count())?;
    let members = blocks(SectionId::Members, db.member_count())?;
    if members.is_empty() {
        return Ok(());
    }
    let type_rec = |i: u32| {
        let i = i as usize;
        types
            .get(i / TYPE_BLOCK)
            .and_then(|b| <[TypeRecord]>::ref_from_bytes(b).ok())
            .and_then(|r| r.get(i % TYPE_BLOCK))
    };
    let member_rec = |i: u32| {
        let i = i as usize;
        members
            .get(i / MEMBER_BLOCK)
            .and_then(|b| <[MemberRecord]>::ref_from_bytes(b).ok())
            .and_then(|r| r.get(i % MEMBER_BLOCK))
    };
    for i in 0..db.type_count() as u32 {
        let Some(t) = type_rec(i) else { continue };
        if !matches!(
            TypeKind::from_code(t.kind),
            Some(TypeKind::Struct | TypeKind::Union)
        ) {
            continue;
        }
        let bits = u64::from(t.size.get()) * 8;
        for k in t.first.get()..t.first.get() + t.count.get() {
            let Some(m) = member_rec(k) else { continue };
            let start = u64::from(m.bit_offset.get());
            let len = match m.bit_size() {
                0 => type_rec(m.ty()).map_or(0, |mt| u64::from(mt.size.get()) * 8),
                n => u64::from(n),
            };
            if start > bits || start + len > bits {
                return Err(outside(db, k));
            }
        }
    }
    Ok(())
}
