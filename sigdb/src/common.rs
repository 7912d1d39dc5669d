//! What the writing half (`write/`) and the reading half (`read/`) share beyond the
//! on-disk records of `layout.rs`: the ids a builder hands out, and the vocabulary of
//! a packed inline instance (its head bits, the context it is stored relative to, and
//! how a parameter location is packed), so that the encoder and the decoder are written
//! against one definition.

use crate::model::Location;
use crate::varint::{self, Cursor};

/// A type added to a [`crate::DbBuilder`] (valid only for that builder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub(crate) u32);

/// A module added to a [`crate::DbBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(pub(crate) u32);

/// A function added to a [`crate::DbBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub(crate) u32);

macro_rules! id_index {
    ($($t:ident),*) => {$(
        impl $t {
            /// Position in the order of addition (0, 1, 2, ...).
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}
id_index!(TypeId, ModuleId, FuncId);

/// An inline instance added to a [`crate::DbBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(pub(crate) u32);

impl InstanceId {
    /// Position in the order of addition (0, 1, 2, ...).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of the instance added `index`-th (0, 1, 2, ...), for lists added at once
    /// ([`crate::DbBuilder::add_instances`]).
    pub fn from_index(index: usize) -> InstanceId {
        InstanceId(index as u32)
    }
}

/// Head byte of a packed instance: the caller differs from the previous instance's.
pub(crate) const HEAD_CALLER: u8 = 1;
/// Head byte: the instance has a parent.
pub(crate) const HEAD_PARENT: u8 = 2;
/// Head byte: the call file is the previous instance's.
pub(crate) const HEAD_SAME_FILE: u8 = 4;

/// What a packed instance is stored relative to: the previous instance of its block.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Context {
    pub caller: u32,
    pub file: u32,
    pub line: u32,
    pub entry: u64,
}

impl Context {
    /// The context at the start of a block whose first caller is `caller` at `addr`.
    pub(crate) fn block(caller: u32, addr: u64) -> Self {
        Context {
            caller,
            file: 0,
            line: 0,
            entry: addr,
        }
    }
}

/// Register numbers below this are packed into a location's kind byte.
const INLINE_REG: u8 = 31;

/// A location as packed in `instance_data`: a byte with the kind in bits 0..3 (and, for
/// a register below 31, the register in bits 3..8), then the operand.
pub(crate) fn put_location(out: &mut Vec<u8>, loc: Location) {
    let (kind, reg, reg2, value) = loc.encode();
    match kind {
        1 if reg < INLINE_REG => out.push(kind | reg << 3),
        1 => out.extend([kind | INLINE_REG << 3, reg]),
        2 => out.extend([kind, reg, reg2]),
        3 | 5 | 6 => {
            out.push(kind);
            varint::put_signed(out, i64::from(value));
        }
        _ => out.push(kind),
    }
}

/// Read a packed location; `None` when malformed.
#[inline]
pub(crate) fn get_location(c: &mut Cursor<'_>) -> Option<Location> {
    let b = c.byte()?;
    let (kind, high) = (b & 7, b >> 3);
    let (reg, reg2, value) = match kind {
        1 if high < INLINE_REG => (high, 0, 0),
        1 => (c.byte()?, 0, 0),
        _ if high != 0 => return None,
        2 => (c.byte()?, c.byte()?, 0),
        3 | 5 | 6 => (0, 0, c.i32()?),
        _ => (0, 0, 0),
    };
    Location::decode(kind, reg, reg2, value)
}
