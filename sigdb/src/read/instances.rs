//! Inlined copies ("instances") as read: each packed record decoded relative to the
//! previous one of its block, the views of an open db's instances, and the checks made
//! on open and on a frame's first use (`write/instances.rs` encodes them; the record's
//! vocabulary is in `common.rs`).

use super::validate::Validator;
use super::view::{Function, Param};
use crate::common::{get_location, Context, HEAD_CALLER, HEAD_PARENT, HEAD_SAME_FILE};
use crate::layout::{InstanceBlock, SectionId, BLOCKS_PER_FRAME, INSTANCE_BLOCK};
use crate::model::Location;
use crate::varint::Cursor;
use crate::{Db, FormatError};

/// One packed instance record, decoded but for its ranges and locations, which stay
/// packed (their positions are kept).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Raw {
    pub caller: u32,
    pub callee: u32,
    /// Distance back to the parent instance (0: none).
    pub parent_back: u32,
    pub file: u32,
    pub line: u32,
    pub entry_pc: u64,
    pub range_count: u32,
    pub ranges_at: usize,
    pub loc_count: u32,
    pub locs_at: usize,
    /// No range ends past 2^64.
    pub ranges_ok: bool,
}

/// Decode the record at `c` in context `ctx` and advance both past it. `addr_of` gives
/// a function's address (entry pcs are stored relative to the caller's). `None` when the
/// bytes are malformed (which validation rules out).
#[inline]
pub(crate) fn decode_raw(
    c: &mut Cursor<'_>,
    ctx: &mut Context,
    addr_of: impl Fn(u32) -> u64,
) -> Option<Raw> {
    let head = c.byte()?;
    if head & HEAD_CALLER != 0 {
        let delta = c.u32()?;
        if delta == 0 {
            return None;
        }
        ctx.caller = ctx.caller.checked_add(delta)?;
        ctx.entry = addr_of(ctx.caller);
    }
    let callee = c.u32()?;
    let parent_back = if head & HEAD_PARENT != 0 {
        match c.u32()? {
            0 => return None,
            back => back,
        }
    } else {
        0
    };
    if head & HEAD_SAME_FILE == 0 {
        let file = c.u32()?;
        if file == ctx.file {
            return None;
        }
        ctx.file = file;
    }
    ctx.line = u32::try_from(i64::from(ctx.line).checked_add(c.int()?)?).ok()?;
    ctx.entry = ctx.entry.wrapping_add(c.int()? as u64);
    let range_count = match (head >> 3) & 3 {
        3 => c.u32().filter(|&n| n >= 3)?,
        n => u32::from(n),
    };
    let ranges_at = c.pos;
    let mut prev = ctx.entry;
    let mut ranges_ok = true;
    for _ in 0..range_count {
        let start = prev.wrapping_add(c.int()? as u64);
        match start.checked_add(c.uint()?) {
            Some(end) => prev = end,
            None => ranges_ok = false,
        }
    }
    let loc_count = match head >> 5 {
        7 => c.u32().filter(|&n| n >= 7)?,
        n => u32::from(n),
    };
    let locs_at = c.pos;
    for _ in 0..loc_count {
        get_location(c)?;
    }
    Some(Raw {
        caller: ctx.caller,
        callee,
        parent_back,
        file: ctx.file,
        line: ctx.line,
        entry_pc: ctx.entry,
        range_count,
        ranges_at,
        loc_count,
        locs_at,
        ranges_ok,
    })
}

/// An inline instance of an open [`Db`].
#[derive(Clone, Copy)]
pub struct Instance<'a> {
    db: &'a Db,
    /// The decompressed frame holding the record.
    data: &'a [u8],
    index: u32,
    raw: Raw,
    entry_pc: u64,
}

/// Two instances are the same when they are the same record of the same open db.
impl PartialEq for Instance<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.db, other.db) && self.index == other.index
    }
}

impl Eq for Instance<'_> {}

impl std::hash::Hash for Instance<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.db, state);
        self.index.hash(state);
    }
}

impl std::fmt::Debug for Instance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Instance#{}({} in {} at {:#x})",
            self.index,
            self.callee().map_or("?", |c| c.name()),
            self.caller().map_or("?", |c| c.name()),
            self.entry_pc()
        )
    }
}

impl<'a> Instance<'a> {
    pub(crate) fn new(db: &'a Db, data: &'a [u8], index: u32, raw: Raw) -> Self {
        Instance {
            db,
            data,
            index,
            raw,
            entry_pc: raw.entry_pc,
        }
    }

    /// Index in the instance table.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Function index of the inlined function.
    pub fn callee_index(&self) -> u32 {
        self.raw.callee
    }

    /// Function index of the out-of-line function whose code holds this copy.
    pub fn caller_index(&self) -> u32 {
        self.raw.caller
    }

    /// The inlined function.
    pub fn callee(&self) -> Option<Function<'a>> {
        self.db.function(self.raw.callee as usize)
    }

    /// The out-of-line function whose code holds this copy.
    pub fn caller(&self) -> Option<Function<'a>> {
        self.db.function(self.raw.caller as usize)
    }

    /// The enclosing inlined copy, for an inline inside an inline.
    pub fn parent(&self) -> Option<Instance<'a>> {
        match self.raw.parent_back {
            0 => None,
            back => self
                .db
                .instance(self.index.checked_sub(back)? as usize)
                // Checked here rather than on open when the parent is in another frame.
                .filter(|p| p.caller_index() == self.caller_index()),
        }
    }

    /// How deep the copy is nested in other inlined copies (0: directly in its
    /// out-of-line function).
    pub fn nesting(&self) -> usize {
        std::iter::successors(self.parent(), Instance::parent).count()
    }

    /// A copy of a function inlined into its own out-of-line body (a recursion the
    /// compiler inlined), directly or only inside such copies: running it is running
    /// the function it is already in, so tracers show no frame for it.
    pub fn is_self_copy(&self) -> bool {
        let mut at = Some(*self);
        while let Some(i) = at {
            if i.callee_index() != i.caller_index()
                && i.callee().map(|f| f.name()) != i.caller().map(|f| f.name())
            {
                return false;
            }
            at = i.parent();
        }
        true
    }

    /// First address executed in the copy.
    pub fn entry_pc(&self) -> u64 {
        self.entry_pc
    }

    /// Code ranges `[start, end)`.
    pub fn ranges(&self) -> Ranges<'a> {
        Ranges {
            c: Cursor::new(self.data, self.raw.ranges_at),
            left: self.raw.range_count,
            prev: self.entry_pc,
        }
    }

    /// File of the call site (empty when unknown).
    pub fn call_file(&self) -> &'a str {
        self.db.call_file(self.raw.file)
    }

    /// Line of the call site (0 when unknown).
    pub fn call_line(&self) -> u32 {
        self.raw.line
    }

    /// Where each parameter of the callee is at [`entry_pc`](Self::entry_pc), in the
    /// callee's parameter order.
    pub fn locations(&self) -> Locations<'a> {
        Locations {
            c: Cursor::new(self.data, self.raw.locs_at),
            left: self.raw.loc_count,
        }
    }

    /// The callee's parameters with their locations at entry to this copy.
    pub fn params(&self) -> impl Iterator<Item = (Param<'a>, Location)> + 'a {
        let params = self.callee().into_iter().flat_map(|c| c.params());
        params.zip(self.locations())
    }
}

/// The code ranges of an [`Instance`], decoded as they are read.
#[derive(Clone, Debug)]
pub struct Ranges<'a> {
    c: Cursor<'a>,
    left: u32,
    /// The entry pc, then the end of the previous range.
    prev: u64,
}

impl Iterator for Ranges<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        self.left = self.left.checked_sub(1)?;
        let start = self.prev.wrapping_add(self.c.int().unwrap_or(0) as u64);
        let end = start.wrapping_add(self.c.uint().unwrap_or(0));
        self.prev = end;
        Some((start, end))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Ranges<'_> {}

/// The parameter locations of an [`Instance`], decoded as they are read.
#[derive(Clone, Debug)]
pub struct Locations<'a> {
    c: Cursor<'a>,
    left: u32,
}

impl Iterator for Locations<'_> {
    type Item = Location;

    fn next(&mut self) -> Option<Location> {
        self.left = self.left.checked_sub(1)?;
        Some(get_location(&mut self.c).unwrap_or(Location::Unknown))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl ExactSizeIterator for Locations<'_> {}

/// Instances `[index, end)` decoded one after the other from the block holding `index`.
pub struct InstanceIter<'a> {
    db: &'a Db,
    c: Cursor<'a>,
    ctx: Context,
    index: u32,
    end: u32,
}

impl<'a> InstanceIter<'a> {
    /// Positioned on the first instance of block `block`, ending before `end`.
    pub(crate) fn at_block(db: &'a Db, block: usize, end: u32) -> Self {
        InstanceIter {
            db,
            c: Cursor::new(&[], 0),
            ctx: Context::default(),
            index: (block * INSTANCE_BLOCK).min(u32::MAX as usize) as u32,
            end,
        }
    }
}

impl<'a> Iterator for InstanceIter<'a> {
    type Item = Instance<'a>;

    fn next(&mut self) -> Option<Instance<'a>> {
        loop {
            if self.index >= self.end {
                return None;
            }
            if (self.index as usize).is_multiple_of(INSTANCE_BLOCK) {
                // Each block starts afresh from its index record.
                let block = self.index as usize / INSTANCE_BLOCK;
                let b = self.db.instance_index().get(block)?;
                let frame = self.db.instance_frame(block / BLOCKS_PER_FRAME);
                self.c = Cursor::new(frame, b.offset.get() as usize);
                self.ctx = Context::block(b.caller.get(), self.db.function_addr(b.caller.get()));
            }
            let db = self.db;
            match decode_raw(&mut self.c, &mut self.ctx, |f| db.function_addr(f)) {
                Some(raw) => {
                    let i = Instance::new(self.db, self.c.data, self.index, raw);
                    self.index += 1;
                    return Some(i);
                }
                // Only a frame that failed its check (read as empty) ends early: go on
                // with the next frame.
                None => {
                    let per_frame = (BLOCKS_PER_FRAME * INSTANCE_BLOCK) as u32;
                    self.index = (self.index / per_frame)
                        .saturating_add(1)
                        .saturating_mul(per_frame);
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Exact unless a frame failed its check.
        let n = self.end.saturating_sub(self.index) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for InstanceIter<'_> {}

/// Check the block index, the frame table and the call files (on open).
pub(crate) fn validate_index(
    v: &Validator<'_>,
    count: u32,
    functions: usize,
    string_ok: &dyn Fn(u32) -> bool,
) -> Result<(), FormatError> {
    use SectionId::*;
    let blocks: &[InstanceBlock] = v.recs(InstanceIndex);
    let files: &[zerocopy::little_endian::U32] = v.recs(CallFiles);
    for (i, f) in files.iter().enumerate() {
        if !string_ok(f.get()) {
            return v.err(CallFiles, i, "call file is not a string");
        }
    }
    if blocks.len() as u64 != (count as u64).div_ceil(INSTANCE_BLOCK as u64) {
        return v.err(
            InstanceIndex,
            0,
            "block count does not match the instance count",
        );
    }
    let frames = v.frame_table(InstanceData, InstanceFrames, blocks.len())?;
    for (k, b) in blocks.iter().enumerate() {
        if b.caller.get() as usize >= functions {
            return v.err(InstanceIndex, k, "function out of bounds");
        }
        if k > 0 && b.caller.get() < blocks[k - 1].caller.get() {
            return v.err(InstanceIndex, k, "not sorted by caller");
        }
        let frame = &frames[k / BLOCKS_PER_FRAME];
        if (k.is_multiple_of(BLOCKS_PER_FRAME) && b.offset.get() != 0)
            || b.offset.get() >= frame.raw_len.get()
        {
            return v.err(InstanceIndex, k, "offset is not where the block starts");
        }
    }
    Ok(())
}

/// Check the records of frame `f`, decompressed (on its first use). `addr_of` gives a
/// function's address. A parent in an earlier frame is checked when it is read
/// ([`Instance::parent`]).
pub(crate) fn validate_frame(
    v: &Validator<'_>,
    f: usize,
    frame: &[u8],
    count: u32,
    functions: usize,
    addr_of: &dyn Fn(u32) -> u64,
) -> Result<(), FormatError> {
    use SectionId::*;
    let blocks: &[InstanceBlock] = v.recs(InstanceIndex);
    let files = v.recs::<zerocopy::little_endian::U32>(CallFiles).len();
    let per_frame = (BLOCKS_PER_FRAME * INSTANCE_BLOCK) as u64;
    let first = (f as u64 * per_frame).min(u64::from(count)) as u32;
    let end = ((f as u64 + 1) * per_frame).min(u64::from(count)) as u32;
    let mut c = Cursor::new(frame, 0);
    let mut ctx = Context::default();
    // First index of the current caller's instances within this frame.
    let mut run_start = first;
    for i in first..end {
        let at = c.pos;
        let block = i as usize / INSTANCE_BLOCK;
        let bad = |what| v.err(InstanceIndex, block, what);
        if (i as usize).is_multiple_of(INSTANCE_BLOCK) {
            let b = &blocks[block];
            if b.offset.get() as usize != at {
                return bad("offset is not where the block starts");
            }
            if i == first || b.caller.get() != ctx.caller {
                run_start = i;
            }
            ctx = Context::block(b.caller.get(), addr_of(b.caller.get()));
        }
        let prev_caller = ctx.caller;
        let Some(raw) = decode_raw(&mut c, &mut ctx, |f| {
            if (f as usize) < functions {
                addr_of(f)
            } else {
                0
            }
        }) else {
            return bad("malformed instance record");
        };
        if raw.caller as usize >= functions || raw.callee as usize >= functions {
            return bad("function out of bounds");
        }
        if raw.caller != prev_caller {
            if (i as usize).is_multiple_of(INSTANCE_BLOCK) {
                return bad("first caller of a block differs from the block's");
            }
            run_start = i;
        }
        let parent_in_frame = i - first >= raw.parent_back;
        if raw.parent_back > i || (parent_in_frame && i - raw.parent_back < run_start) {
            return bad("parent does not precede it or has another caller");
        }
        if raw.file as usize >= files {
            return bad("call file out of bounds");
        }
        if !raw.ranges_ok {
            return bad("range ends past the address space");
        }
        if let Some(next) = blocks.get(block + 1) {
            if (i as usize + 1).is_multiple_of(INSTANCE_BLOCK) && next.caller.get() < ctx.caller {
                return bad("not sorted by caller");
            }
        }
    }
    if c.pos != frame.len() {
        return v.err(InstanceFrames, f, "bytes after the frame's last instance");
    }
    Ok(())
}
