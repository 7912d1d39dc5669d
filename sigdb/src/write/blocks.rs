//! LZ4 record blocks as written: a section of fixed-size records (functions, parameters,
//! types, members) compressed in independent blocks of a fixed number of records, each
//! byte-transposed first (`read/blocks.rs` decompresses and checks them).

use zerocopy::IntoBytes;

use crate::Error;

/// A record section cut into LZ4 blocks.
pub(super) struct Blocks {
    /// Where each block starts in `bytes`.
    pub offsets: Vec<u32>,
    pub bytes: Vec<u8>,
}

/// [`pack`] of fixed-size records, transposed (each block's bytes grouped by position in
/// the record before compression).
pub(super) fn pack_records<T: IntoBytes + zerocopy::Immutable>(
    records: &[T],
    per_block: usize,
    what: &'static str,
) -> Result<Blocks, Error> {
    pack(
        records.as_bytes(),
        core::mem::size_of::<T>(),
        per_block,
        true,
        what,
    )
}

/// Compress `data` (records of `record_size` bytes) in blocks of `per_block` records,
/// each on its own; `transposed`: each block's bytes reordered by
/// [`crate::read::blocks::transpose`] first.
pub(super) fn pack(
    data: &[u8],
    record_size: usize,
    per_block: usize,
    transposed: bool,
    what: &'static str,
) -> Result<Blocks, Error> {
    use rayon::prelude::*;
    let compressed: Vec<Vec<u8>> = data
        .par_chunks(record_size * per_block)
        .map(|block| {
            if transposed {
                lz4_flex::block::compress(&crate::read::blocks::transpose(block, record_size))
            } else {
                lz4_flex::block::compress(block)
            }
        })
        .collect();
    let mut out = Blocks {
        offsets: Vec::with_capacity(compressed.len()),
        bytes: Vec::with_capacity(compressed.iter().map(Vec::len).sum()),
    };
    for block in &compressed {
        out.offsets
            .push(u32::try_from(out.bytes.len()).map_err(|_| Error::TooLarge(what))?);
        out.bytes.extend_from_slice(block);
    }
    Ok(out)
}
