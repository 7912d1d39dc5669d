//! Compressed frames as written: a packed section (inline caller lists, inline
//! instances, strings) cut into groups of blocks, each compressed on its own as a zstd
//! frame (`read/frames.rs` decompresses and checks them).

use crate::layout::{FrameRecord, BLOCKS_PER_FRAME, MAX_FRAME_BYTES};
use crate::Error;

/// The zstd level the writer compresses the caller list and instance frames with: the
/// output must be the same for the same content, so this is part of what makes a db
/// byte-identical. Level 3 (zstd's default) compresses these frames about three times as
/// fast as level 7 for 1.1 % more db bytes (45 KB on the 6.12 vmlinux db, 62 KB on 7.2's;
/// `BENCHMARKS.md`, "Scan and write speed, second pass" and "third pass").
pub(super) const LEVEL: i32 = 3;

/// The zstd level of the string frames. Almost all of level 7's gain over level 3 is in
/// them (the 7.2 vmlinux db's strings: 681 KB instead of 738 KB; the caller lists and
/// instances gain 1 %), and they are compressed while the records are written, so the
/// extra 40 ms of one core is mostly hidden.
pub(super) const STRING_LEVEL: i32 = 7;

/// A packed section cut into compressed frames.
pub(super) struct Packed {
    /// Each block's start, relative to the start of its frame (decompressed).
    pub starts: Vec<u32>,
    pub frames: Vec<FrameRecord>,
    pub bytes: Vec<u8>,
}

/// Cut `data` into frames of `per_frame` blocks (block `b` starts at `starts[b]`,
/// ascending from 0) and compress each one on its own. Frames are compressed in
/// parallel; each is compressed alone, so the bytes are those of a sequential run.
pub(super) fn pack(
    starts: &[u32],
    data: &[u8],
    per_frame: usize,
    level: i32,
    what: &'static str,
) -> Result<Packed, Error> {
    use rayon::prelude::*;
    let raw: Vec<&[u8]> = (0..starts.len().div_ceil(per_frame))
        .map(|f| {
            let begin = starts[f * per_frame] as usize;
            let end = starts
                .get((f + 1) * per_frame)
                .map_or(data.len(), |&s| s as usize);
            &data[begin..end]
        })
        .collect();
    let compressed: Vec<Vec<u8>> = raw
        .par_iter()
        .map(|frame| zstd::bulk::compress(frame, level))
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Builder(format!("zstd compression of {what}: {e}")))?;
    let mut out = Packed {
        starts: Vec::with_capacity(starts.len()),
        frames: Vec::with_capacity(raw.len()),
        bytes: Vec::with_capacity(compressed.iter().map(Vec::len).sum()),
    };
    for (group, (frame, packed)) in starts.chunks(per_frame).zip(raw.iter().zip(&compressed)) {
        let raw_len = u32::try_from(frame.len())
            .ok()
            .filter(|&n| n <= MAX_FRAME_BYTES)
            .ok_or(Error::TooLarge(what))?;
        out.starts.extend(group.iter().map(|&s| s - group[0]));
        let offset = u32::try_from(out.bytes.len()).map_err(|_| Error::TooLarge(what))?;
        out.frames.push(FrameRecord {
            offset: offset.into(),
            raw_len: raw_len.into(),
        });
        out.bytes.extend_from_slice(packed);
    }
    Ok(out)
}

/// Cut a packed section into compressed frames of [`BLOCKS_PER_FRAME`] blocks; each
/// block's `offset` (in `data`) becomes its offset in its frame.
pub(super) fn compress_blocks<'o>(
    offsets: impl Iterator<Item = &'o mut zerocopy::little_endian::U32>,
    data: &[u8],
    what: &'static str,
) -> Result<Packed, Error> {
    let mut offsets: Vec<_> = offsets.collect();
    let starts: Vec<u32> = offsets.iter().map(|o| o.get()).collect();
    let packed = pack(&starts, data, BLOCKS_PER_FRAME, LEVEL, what)?;
    for (o, s) in offsets.iter_mut().zip(&packed.starts) {
        **o = (*s).into();
    }
    Ok(packed)
}
