//! LZ4 record blocks: a section of fixed-size records (functions, parameters, types,
//! members) stored as
//! independent LZ4 blocks of a fixed number of records, behind a table of `u32` block
//! offsets. A block is small (about 1 KiB decompressed), so decompressing it on first
//! use costs well under a microsecond; it is checked then and cached. This is the reading
//! side; `write/blocks.rs` compresses them.

use super::frames::unit_error;
use crate::FormatError;

/// `block` (whole records of `size` bytes) byte-transposed: byte *k* of record *i* of *n*
/// moves to *k* × *n* + *i*, so that the bytes of a field, alike from record to record
/// (high bytes of small numbers, zero reserved bytes), come in runs that LZ4 compresses.
pub(crate) fn transpose(block: &[u8], size: usize) -> Vec<u8> {
    let n = block.len() / size;
    let mut out = vec![0u8; block.len()];
    for (i, rec) in block.chunks_exact(size).enumerate() {
        for (k, &b) in rec.iter().enumerate() {
            out[k * n + i] = b;
        }
    }
    out
}

/// The inverse of [`transpose`].
pub(crate) fn untranspose(block: &[u8], size: usize) -> Box<[u8]> {
    let n = block.len() / size;
    let mut out = vec![0u8; block.len()].into_boxed_slice();
    for (k, plane) in block.chunks_exact(n.max(1)).enumerate().take(size) {
        for (dst, &b) in out[k..].iter_mut().step_by(size).zip(plane) {
            *dst = b;
        }
    }
    out
}

/// The number of records of block `b` of a section of `count` records.
pub(crate) fn records_in(b: usize, count: usize, per_block: usize) -> usize {
    count.saturating_sub(b * per_block).min(per_block)
}

/// The largest block decompressed on the stack before it is transposed back (64 type
/// records of 24 bytes).
const STACK_BLOCK: usize = 1536;

/// Decompress block `b` of an LZ4 record section into exactly `raw_len` bytes, or fail
/// with a format error (`file_offset`: where the section is in the file); `transposed`:
/// the record size of a byte-transposed block, transposed back.
pub(crate) fn decompress(
    offsets: &[zerocopy::little_endian::U32],
    section: &[u8],
    file_offset: usize,
    (b, raw_len): (usize, usize),
    transposed: Option<usize>,
    name: &'static str,
) -> Result<Box<[u8]>, FormatError> {
    let bad = |at: usize, what| unit_error(name, b, file_offset + at, what);
    let Some(start) = offsets.get(b).map(|o| o.get() as usize) else {
        return Err(bad(0, "block out of bounds"));
    };
    let end = offsets
        .get(b + 1)
        .map_or(section.len(), |n| n.get() as usize);
    let Some(src) = section.get(start..end) else {
        return Err(bad(start, "block out of bounds"));
    };
    let check = |r: Result<usize, _>| match r {
        Ok(n) if n == raw_len => Ok(()),
        Ok(_) => Err(bad(start, "block decompresses to another length")),
        Err(_) => Err(bad(start, "block is not valid LZ4")),
    };
    // A transposed block is decompressed on the stack, then transposed back into the
    // block kept: one allocation, no copy.
    let mut stack = [0u8; STACK_BLOCK];
    match (transposed, stack.get_mut(..raw_len)) {
        (Some(size), Some(buf)) => {
            check(lz4_flex::block::decompress_into(src, buf))?;
            Ok(untranspose(buf, size))
        }
        (transposed, _) => {
            let mut raw = vec![0u8; raw_len].into_boxed_slice();
            check(lz4_flex::block::decompress_into(src, &mut raw))?;
            Ok(match transposed {
                Some(size) => untranspose(&raw, size),
                None => raw,
            })
        }
    }
}

/// The checks made on open: one offset per block, the first 0, strictly ascending and
/// inside the section. On error, the index of the bad offset.
pub(crate) fn check_offsets(
    offsets: &[zerocopy::little_endian::U32],
    section_len: usize,
    blocks: usize,
) -> Result<(), usize> {
    if offsets.len() != blocks || (blocks == 0 && section_len != 0) {
        return Err(0);
    }
    if offsets.first().is_some_and(|o| o.get() != 0) {
        return Err(0);
    }
    for (i, o) in offsets.iter().enumerate() {
        let end = offsets
            .get(i + 1)
            .map_or(section_len as u64, |n| u64::from(n.get()));
        if u64::from(o.get()) >= end || end > section_len as u64 {
            return Err(i);
        }
    }
    Ok(())
}
