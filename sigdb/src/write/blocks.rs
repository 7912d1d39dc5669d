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

/// Compress `records` in blocks of `per_block` records, each on its own, its bytes
/// reordered by [`crate::read::blocks::transpose`] first.
pub(super) fn pack_records<T: IntoBytes + zerocopy::Immutable>(
    records: &[T],
    per_block: usize,
    what: &'static str,
) -> Result<Blocks, Error> {
    use rayon::prelude::*;
    let record_size = core::mem::size_of::<T>();
    let compressed: Vec<Vec<u8>> = records
        .as_bytes()
        .par_chunks(record_size * per_block)
        .map(|block| lz4_flex::block::compress(&crate::read::blocks::transpose(block, record_size)))
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
