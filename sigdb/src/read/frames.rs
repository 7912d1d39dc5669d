//! Compressed frames as read: the cold packed sections (inline caller lists, inline
//! instances, strings) stored as independent zstd frames, decompressed on first use and
//! cached, each frame validated when it is first decompressed (`write/frames.rs` cuts
//! and compresses them).

use std::sync::OnceLock;

use crate::layout::{FrameRecord, MAX_FRAME_BYTES};
use crate::{FormatError, FormatErrorKind};

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
