//! Inline caller lists: for each inlined function (callee), the out-of-line functions
//! holding a copy of it, packed as varint lists in blocks of [`CALLEE_BLOCK`] callees;
//! read and checked here, written by `write/callers.rs`.

use super::validate::Validator;
use crate::layout::{InlineBlock, SectionId, BLOCKS_PER_FRAME, CALLEE_BLOCK};
use crate::varint::Cursor;
use crate::{Db, FormatError};

/// Where block `b` of `index` ends in its decompressed frame of `frame_len` bytes: at the
/// next block of the same frame, else at the end of the frame.
fn block_end(index: &[InlineBlock], b: usize, frame_len: u64) -> u64 {
    match index.get(b + 1) {
        Some(next) if !(b + 1).is_multiple_of(BLOCKS_PER_FRAME) => next.offset.get().into(),
        _ => frame_len,
    }
}

/// One caller list: its callee, and a cursor on its callers.
#[derive(Clone, Debug)]
pub(crate) struct List<'a> {
    pub callee: u32,
    pub callers: Callers<'a>,
    /// The last (largest) caller; `None` for an empty list.
    pub last: Option<u32>,
}

/// Walks the lists of one block; `None` at its end or on malformed bytes.
pub(crate) struct Lists<'a> {
    c: Cursor<'a>,
    end: usize,
    next_callee: Option<u32>,
    prev: u32,
}

impl<'a> Lists<'a> {
    /// The lists of block `b` of `index`; `frame` is the decompressed frame holding it.
    pub(crate) fn block(index: &[InlineBlock], frame: &'a [u8], b: usize) -> Lists<'a> {
        let start = index
            .get(b)
            .map_or(frame.len(), |x| x.offset.get() as usize);
        let end = block_end(index, b, frame.len() as u64) as usize;
        Lists {
            c: Cursor::new(frame, start),
            end,
            next_callee: index.get(b).map(|x| x.callee.get()),
            prev: 0,
        }
    }
}

impl<'a> Iterator for Lists<'a> {
    type Item = List<'a>;

    fn next(&mut self) -> Option<List<'a>> {
        if self.c.pos >= self.end {
            return None;
        }
        let callee = match self.next_callee.take() {
            Some(first) => first,
            None => match self.c.u32()? {
                0 => return None,
                d => self.prev.checked_add(d)?,
            },
        };
        self.prev = callee;
        let count = self.c.u32()?;
        let callers = Callers {
            c: self.c,
            left: count,
            prev: None,
        };
        // Skip the callers to the next list.
        let mut skip = callers.clone();
        let mut last = None;
        while skip.left > 0 {
            last = Some(skip.step()?);
        }
        self.c = skip.c;
        Some(List {
            callee,
            callers,
            last,
        })
    }
}

/// The callers of one list, in ascending function index order.
#[derive(Clone, Debug)]
pub struct Callers<'a> {
    c: Cursor<'a>,
    left: u32,
    prev: Option<u32>,
}

impl Callers<'_> {
    /// The next caller; `None` at the end or on malformed bytes (a zero or overflowing
    /// delta).
    fn step(&mut self) -> Option<u32> {
        self.left = self.left.checked_sub(1)?;
        let v = self.c.u32()?;
        let caller = match self.prev {
            None => v,
            Some(_) if v == 0 => return None,
            Some(p) => p.checked_add(v)?,
        };
        self.prev = Some(caller);
        Some(caller)
    }
}

impl Iterator for Callers<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        self.step()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

impl Db {
    /// The caller lists of block `b` (none when its frame is bad).
    fn lists(&self, b: usize) -> Lists<'_> {
        Lists::block(
            self.inline_index(),
            self.inline_frame(b / BLOCKS_PER_FRAME),
            b,
        )
    }

    /// The callers of `callee` (empty when it was never inlined).
    pub(crate) fn callers_of(&self, callee: u32) -> Option<Callers<'_>> {
        let index = self.inline_index();
        let b = index
            .partition_point(|x| x.callee.get() <= callee)
            .checked_sub(1)?;
        self.lists(b)
            .take_while(|l| l.callee <= callee)
            .find(|l| l.callee == callee)
            .map(|l| l.callers)
    }

    /// Number of (callee, caller) edges.
    pub fn inline_count(&self) -> usize {
        (0..self.inline_index().len())
            .flat_map(|b| self.lists(b))
            .map(|l| l.callers.left as usize)
            .sum()
    }
}

/// Check the block index and the frame table of the caller lists (on open).
pub(crate) fn validate_index(v: &Validator<'_>, functions: usize) -> Result<(), FormatError> {
    use SectionId::*;
    let index: &[InlineBlock] = v.recs(InlineIndex);
    let frames = v.frame_table(InlineCallers, InlineFrames, index.len())?;
    for (b, x) in index.iter().enumerate() {
        if x.callee.get() as usize >= functions {
            return v.err(InlineIndex, b, "function out of bounds");
        }
        if b > 0 && index[b - 1].callee.get() >= x.callee.get() {
            return v.err(InlineIndex, b, "callees not sorted");
        }
        let frame_len = frames[b / BLOCKS_PER_FRAME].raw_len.get();
        let end = block_end(index, b, frame_len.into());
        let first_of_frame = b.is_multiple_of(BLOCKS_PER_FRAME);
        if (first_of_frame && x.offset.get() != 0) || u64::from(x.offset.get()) >= end {
            return v.err(InlineIndex, b, "block offsets out of order or bounds");
        }
    }
    Ok(())
}

/// Check the caller lists of frame `f`, decompressed (on its first use).
pub(crate) fn validate_frame(
    v: &Validator<'_>,
    f: usize,
    frame: &[u8],
    functions: usize,
) -> Result<(), FormatError> {
    use SectionId::*;
    let index: &[InlineBlock] = v.recs(InlineIndex);
    let blocks = f * BLOCKS_PER_FRAME..((f + 1) * BLOCKS_PER_FRAME).min(index.len());
    for b in blocks {
        let mut lists = Lists::block(index, frame, b);
        let mut prev_callee: Option<u32> = None;
        let mut n = 0;
        let bad = |what| v.err(InlineIndex, b, what);
        while lists.c.pos < lists.end {
            let Some(list) = lists.next() else {
                return bad("malformed caller list");
            };
            if lists.c.pos > lists.end {
                return bad("caller list runs into the next block");
            }
            if prev_callee.is_some_and(|p| p >= list.callee) {
                return bad("callees not sorted");
            }
            prev_callee = Some(list.callee);
            if list.callee as usize >= functions {
                return bad("function out of bounds");
            }
            // Callers ascend, so the last one bounds them all.
            match list.last {
                None => return bad("empty caller list"),
                Some(last) if last as usize >= functions => {
                    return bad("function out of bounds");
                }
                Some(_) => {}
            }
            n += 1;
        }
        if index
            .get(b + 1)
            .is_some_and(|next| prev_callee.is_none_or(|p| p >= next.callee.get()))
        {
            return bad("callees not sorted");
        }
        if n > CALLEE_BLOCK || (n < CALLEE_BLOCK && b + 1 < index.len()) {
            return bad("block does not hold 16 callees");
        }
    }
    Ok(())
}
