//! Where a parameter is at the function's entry pc: DWARF expressions and location lists
//! evaluated just far enough to name a register, a stack slot or a constant.

use gimli::{AttributeValue, Operation};
use sigdb::Location;

use crate::dwarf::{FrameBase, Unit, R};

/// What DWARF says about a parameter at entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryLoc {
    /// A definite location.
    At(Location),
    /// A frame slot at CFA + offset, valid only after the prologue (`-O0`): at entry the
    /// value is where the ABI puts it.
    Frame(i64),
    /// A slot relative to a frame base dcg does not model: the value arrived where the
    /// ABI puts it.
    Abi,
}

/// DWARF register number of `rsp`.
const RSP: u16 = 7;

/// Evaluate a location attribute at `pc`.
pub fn at_entry<'s>(
    dwarf: &gimli::Dwarf<R<'s>>,
    unit: &Unit<'s>,
    value: &AttributeValue<R<'s>>,
    pc: u64,
    frame_base: FrameBase,
) -> EntryLoc {
    match value {
        AttributeValue::Exprloc(e) => expression(unit.encoding(), e, frame_base),
        _ => {
            let Ok(Some(mut iter)) = dwarf.attr_locations(unit, *value) else {
                return EntryLoc::At(Location::Unknown);
            };
            loop {
                match iter.next() {
                    Ok(Some(entry)) => {
                        if entry.range.begin <= pc && pc < entry.range.end {
                            return expression(unit.encoding(), &entry.data, frame_base);
                        }
                    }
                    Ok(None) => return EntryLoc::At(Location::OptimizedOut),
                    Err(_) => return EntryLoc::At(Location::Unknown),
                }
            }
        }
    }
}

/// Evaluate a single location expression at the entry pc.
pub fn expression(
    encoding: gimli::Encoding,
    expr: &gimli::Expression<R<'_>>,
    frame_base: FrameBase,
) -> EntryLoc {
    // Empty, or DW_OP_GNU_parameter_ref: the value is not passed to this copy.
    if expr.0.is_empty() || expr.0.slice()[0] == 0xfa {
        return EntryLoc::At(Location::OptimizedOut);
    }
    // No expression recognized below has more than four operations.
    let mut ops = Vec::with_capacity(4);
    let mut iter = (*expr).operations(encoding);
    loop {
        match iter.next() {
            Ok(Some(op)) => {
                if ops.len() == 4 {
                    return EntryLoc::At(Location::Unknown);
                }
                ops.push(op);
            }
            Ok(None) => break,
            Err(_) => return EntryLoc::At(Location::Unknown),
        }
    }
    EntryLoc::At(match ops.as_slice() {
        [Operation::Register { register }] => reg(register.0),
        [Operation::Register { register }, Operation::Piece { .. }] => reg(register.0),
        [Operation::Register { register: a }, Operation::Piece { .. }, Operation::Register { register: b }, Operation::Piece { .. }] => {
            match (u8::try_from(a.0), u8::try_from(b.0)) {
                (Ok(a), Ok(b)) => Location::RegPair(a, b),
                _ => Location::Unknown,
            }
        }
        [Operation::FrameOffset { offset }] => match frame_base {
            FrameBase::Cfa if *offset >= 0 => stack(*offset),
            FrameBase::Cfa => return EntryLoc::Frame(*offset),
            FrameBase::Rbp => return EntryLoc::Frame(*offset - 16),
            FrameBase::Other => return EntryLoc::Abi,
        },
        [Operation::RegisterOffset {
            register, offset, ..
        }] if register.0 == RSP => {
            // At entry the CFA is rsp + 8.
            stack(offset - 8)
        }
        [Operation::RegisterOffset {
            register, offset, ..
        }] if register.0 == 6 => return EntryLoc::Frame(*offset - 16),
        [Operation::EntryValue { expression }, Operation::StackValue] => {
            let mut inner = gimli::Expression(*expression).operations(encoding);
            match (inner.next(), inner.next()) {
                (Ok(Some(Operation::Register { register })), Ok(None)) => reg(register.0),
                _ => Location::Unknown,
            }
        }
        [Operation::UnsignedConstant { value }, Operation::StackValue] => {
            match i32::try_from(*value) {
                Ok(v) => Location::Const(v),
                Err(_) => Location::Unknown,
            }
        }
        [Operation::SignedConstant { value }, Operation::StackValue] => match i32::try_from(*value)
        {
            Ok(v) => Location::Const(v),
            Err(_) => Location::Unknown,
        },
        [Operation::ImplicitValue { data }] if data.len() <= 4 => {
            let mut b = [0u8; 4];
            b[..data.len()].copy_from_slice(data.slice());
            Location::Const(i32::from_le_bytes(b))
        }
        _ => Location::Unknown,
    })
}

fn reg(r: u16) -> Location {
    u8::try_from(r).map_or(Location::Unknown, Location::Reg)
}

fn stack(off: i64) -> Location {
    i32::try_from(off).map_or(Location::Unknown, Location::Stack)
}
