//! Compressed frames: the cold packed sections (inline caller lists, inline instances)
//! stored as independent zstd frames of [`BLOCKS_PER_FRAME`] blocks each, decompressed
//! on first use and cached, each frame validated when it is first decompressed.

use std::sync::OnceLock;

use crate::layout::{FrameRecord, MAX_FRAME_BYTES};
use crate::{Error, FormatError, FormatErrorKind};

/// The zstd level the writer compresses frames with: the output must be the same for
/// the same content, so this is part of what makes a db byte-identical. Level 3 (zstd's
/// default) compresses these frames about three times as fast as level 7 for 1.1 % more
/// db bytes (45 KB on the 6.12 vmlinux db, 62 KB on 7.2's; `BENCHMARKS.md`, "Scan and
/// write speed, second pass" and "third pass").
pub(crate) const LEVEL: i32 = 3;

/// A packed section cut into compressed frames.
pub(crate) struct Packed {
    /// Each block's start, relative to the start of its frame (decompressed).
    pub starts: Vec<u32>,
    pub frames: Vec<FrameRecord>,
    pub bytes: Vec<u8>,
}

/// Cut `data` into frames of `per_frame` blocks (block `b` starts at `starts[b]`,
/// ascending from 0) and compress each one on its own. Frames are compressed in
/// parallel; each is compressed alone, so the bytes are those of a sequential run.
pub(crate) fn pack(
    starts: &[u32],
    data: &[u8],
    per_frame: usize,
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
        .map(|frame| zstd::bulk::compress(frame, LEVEL))
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

/// The decompressed frames of one compressed section, filled on first use.
pub(crate) struct FrameCache {
    frames: Vec<OnceLock<Result<Box<[u8]>, FormatError>>>,
}

impl FrameCache {
    pub(crate) fn new(count: usize) -> FrameCache {
        FrameCache {
            frames: (0..count).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Frame `f`, decompressed and checked by `load` the first time.
    pub(crate) fn get(
        &self,
        f: usize,
        load: impl FnOnce() -> Result<Box<[u8]>, FormatError>,
    ) -> Result<&[u8], &FormatError> {
        match self.frames.get(f) {
            Some(cell) => cell.get_or_init(load).as_deref(),
            None => Ok(&[]),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }
}

/// The format error of frame (or block) `index` of section `name`, found at byte
/// `offset` of the file.
pub(crate) fn unit_error(
    name: &'static str,
    index: usize,
    offset: usize,
    what: &'static str,
) -> FormatError {
    FormatError {
        offset: offset as u64,
        kind: FormatErrorKind::BadRecord {
            section: name,
            index: index as u64,
            what,
        },
    }
}

/// Decompress frame `f` of a compressed section (`file_offset`: where the section is in
/// the file, for errors): exactly `raw_len` bytes or a format error.
pub(crate) fn decompress(
    frames: &[FrameRecord],
    section: &[u8],
    file_offset: usize,
    f: usize,
    name: &'static str,
) -> Result<Box<[u8]>, FormatError> {
    let bad = |at: usize, what| Err(unit_error(name, f, file_offset + at, what));
    let Some(frame) = frames.get(f) else {
        return bad(0, "frame out of bounds");
    };
    let start = frame.offset.get() as usize;
    let end = frames
        .get(f + 1)
        .map_or(section.len(), |n| n.offset.get() as usize);
    let Some(src) = section.get(start..end) else {
        return bad(start, "frame out of bounds");
    };
    let raw_len = frame.raw_len.get() as usize;
    match zstd::bulk::decompress(src, raw_len) {
        Ok(raw) if raw.len() == raw_len => Ok(raw.into_boxed_slice()),
        Ok(_) => bad(start, "frame decompresses to another length"),
        Err(_) => bad(start, "frame is not valid zstd"),
    }
}

/// The checks made on open: frames start at 0, ascend within the section, none is
/// larger than [`MAX_FRAME_BYTES`] decompressed, and there is one per
/// [`crate::layout::BLOCKS_PER_FRAME`] blocks.
pub(crate) fn check_table(
    frames: &[FrameRecord],
    section_len: usize,
    blocks: usize,
    per_frame: usize,
) -> Result<(), usize> {
    if frames.len() != blocks.div_ceil(per_frame) {
        return Err(0);
    }
    if frames.first().is_some_and(|f| f.offset.get() != 0)
        || (frames.is_empty() && section_len != 0)
    {
        return Err(0);
    }
    for (i, f) in frames.iter().enumerate() {
        let end = frames
            .get(i + 1)
            .map_or(section_len as u64, |n| u64::from(n.offset.get()));
        if u64::from(f.offset.get()) >= end
            || end > section_len as u64
            || f.raw_len.get() == 0
            || f.raw_len.get() > MAX_FRAME_BYTES
        {
            return Err(i);
        }
    }
    Ok(())
}
