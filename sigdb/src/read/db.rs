//! Opening a sigdb: validate the header, the checksum and everything read in place once,
//! then read records in place; the packed sections' frames and blocks are decompressed
//! and checked on first use (the lookups are in `lookup.rs`).

use std::path::{Path, PathBuf};

use zerocopy::FromBytes;

use super::frames::FrameCache;
use super::validate::validate;
use crate::layout::*;
use crate::Error;

enum Storage {
    Mmap(memmap2::Mmap),
    Owned(Vec<u8>),
}

/// An open, validated signature database.
///
/// Construction checks the checksum and every bound, count, reference, string and sort
/// order of what is read in place, and the tables of the compressed frames and blocks;
/// each frame or block is checked when first decompressed ([`Db::verify`] checks them
/// all). Every accessor is a view that cannot panic.
pub struct Db {
    data: Storage,
    path: PathBuf,
    /// The header, a version 5 one converted to the current layout (no members).
    header: Header,
    pub(super) sections: [(usize, usize); SECTION_COUNT],
    /// The decompressed frames of `inline_callers`, filled on first use.
    inline_frames: FrameCache,
    /// The decompressed frames of `instance_data`, filled on first use.
    instance_frames: FrameCache,
    /// The decompressed frames of `strings`, filled on first use.
    string_frames: FrameCache,
    /// Where each string frame starts in the decompressed string table.
    string_starts: Vec<u32>,
    /// Length of the decompressed string table.
    strings_len: u64,
    /// The decompressed LZ4 blocks of `params`, filled on first use.
    param_blocks: FrameCache,
    /// The decompressed LZ4 blocks of `types`, filled on first use.
    type_blocks: FrameCache,
    /// The decompressed LZ4 blocks of `members`, filled on first use.
    member_blocks: FrameCache,
    /// The decompressed LZ4 blocks of `functions`, filled on first use (none before
    /// version 7, whose function records are in place).
    function_blocks: FrameCache,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.path)
            .field("functions", &self.function_count())
            .finish()
    }
}

impl Db {
    /// Map and validate a database file: its header, checksum, sections and the records
    /// read in place (about 1.5 ms for a 100,000-function kernel db). Its compressed
    /// frames and blocks are checked when first read; [`Db::verify`] checks them all (a
    /// frame damaged behind a good checksum is then an error naming the section, not data
    /// read as empty later), as `dwarfscan` does with what it writes and the store with
    /// what it installs.
    pub fn open(path: impl AsRef<Path>) -> Result<Db, Error> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        crate::filekind::require_regular(path, "a signature db").map_err(io)?;
        let file = std::fs::File::open(path).map_err(io)?;
        Db::from_file(&file, path)
    }

    /// Map and validate an already opened file (e.g. one opened with `O_NOFOLLOW`);
    /// `path` is used in messages.
    pub fn from_file(file: &std::fs::File, path: impl AsRef<Path>) -> Result<Db, Error> {
        let path = path.as_ref();
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let len = file.metadata().map_err(io)?.len();
        let data = if len == 0 {
            Storage::Owned(Vec::new())
        } else {
            // SAFETY: the mapping is read-only; like every mmap reader we rely on the file
            // not being truncated underneath us. The store installs files by rename, so
            // an installed db is never rewritten in place.
            Storage::Mmap(unsafe { memmap2::Mmap::map(file) }.map_err(io)?)
        };
        Db::with_storage(data, path.to_path_buf())
    }

    /// Validate an in-memory database.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Db, Error> {
        Db::with_storage(Storage::Owned(bytes), PathBuf::from("<memory>"))
    }

    fn with_storage(data: Storage, path: PathBuf) -> Result<Db, Error> {
        let bytes: &[u8] = match &data {
            Storage::Mmap(m) => m,
            Storage::Owned(v) => v,
        };
        match validate(bytes) {
            Ok((header, sections)) => {
                let frames =
                    |id: SectionId, size: usize| FrameCache::new(sections[id as usize].1 / size);
                let (off, len) = sections[SectionId::StringFrames as usize];
                let table = bytes
                    .get(off..off + len)
                    .and_then(|t| <[FrameRecord]>::ref_from_bytes(t).ok())
                    .unwrap_or(&[]);
                // Validated: the lengths add up to at most 2^32.
                let mut string_starts = Vec::with_capacity(table.len());
                let mut strings_len = 0u64;
                for f in table {
                    string_starts.push(strings_len as u32);
                    strings_len += u64::from(f.raw_len.get());
                }
                Ok(Db {
                    inline_frames: frames(SectionId::InlineFrames, 8),
                    instance_frames: frames(SectionId::InstanceFrames, 8),
                    string_frames: frames(SectionId::StringFrames, 8),
                    string_starts,
                    strings_len,
                    param_blocks: frames(SectionId::ParamBlocks, 4),
                    type_blocks: frames(SectionId::TypeBlocks, 4),
                    member_blocks: frames(SectionId::MemberBlocks, 4),
                    function_blocks: frames(SectionId::FunctionBlocks, 4),
                    header,
                    data,
                    path,
                    sections,
                })
            }
            Err(error) => Err(Error::Format { path, error }),
        }
    }

    /// The file this db was opened from (`<memory>` for buffers).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.data {
            Storage::Mmap(m) => m,
            Storage::Owned(v) => v,
        }
    }

    pub(super) fn header(&self) -> &Header {
        &self.header
    }

    fn section(&self, id: SectionId) -> &[u8] {
        let (off, len) = self.sections[id as usize];
        self.bytes().get(off..off + len).unwrap_or(&[])
    }

    pub(super) fn records<T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(
        &self,
        id: SectionId,
    ) -> &[T] {
        <[T]>::ref_from_bytes(self.section(id)).unwrap_or(&[])
    }

    pub(crate) fn module_records(&self) -> &[ModuleRecord] {
        self.records(SectionId::Modules)
    }
    pub(crate) fn enumerator_records(&self) -> &[EnumeratorRecord] {
        self.records(SectionId::Enumerators)
    }
    pub(crate) fn proto_params(&self) -> &[zerocopy::little_endian::U32] {
        self.records(SectionId::ProtoParams)
    }

    /// Function record `index` (`None` past the end or in a bad block).
    pub(crate) fn function_record(&self, index: u32) -> Option<&FunctionRecord> {
        let i = index as usize;
        if self.header.version.get() != VERSION {
            return self.records::<FunctionRecord>(SectionId::Functions).get(i);
        }
        let block = self
            .load_block(SectionId::Functions, i / FUNCTION_BLOCK)
            .ok()?;
        <[FunctionRecord]>::ref_from_bytes(block)
            .ok()?
            .get(i % FUNCTION_BLOCK)
    }

    /// Parameter record `index` (`None` past the end or in a bad block).
    pub(crate) fn param_record(&self, index: u32) -> Option<&ParamRecord> {
        let i = index as usize;
        let block = self.load_block(SectionId::Params, i / PARAM_BLOCK).ok()?;
        <[ParamRecord]>::ref_from_bytes(block)
            .ok()?
            .get(i % PARAM_BLOCK)
    }

    /// Type record `index` (`None` past the end or in a bad block).
    pub(super) fn type_record(&self, index: u32) -> Option<&TypeRecord> {
        let i = index as usize;
        let block = self.load_block(SectionId::Types, i / TYPE_BLOCK).ok()?;
        <[TypeRecord]>::ref_from_bytes(block)
            .ok()?
            .get(i % TYPE_BLOCK)
    }

    /// Member record `index` (an error in a bad block; `None` past the end).
    pub(super) fn member_record(
        &self,
        index: u32,
    ) -> Result<Option<&MemberRecord>, &crate::FormatError> {
        let i = index as usize;
        let block = self.load_block(SectionId::Members, i / MEMBER_BLOCK)?;
        Ok(<[MemberRecord]>::ref_from_bytes(block)
            .ok()
            .and_then(|r| r.get(i % MEMBER_BLOCK)))
    }

    /// Block `b` of the LZ4 record section `id` (params, types or members): decompressed
    /// and checked on first use, then cached.
    fn load_block(&self, id: SectionId, b: usize) -> Result<&[u8], &crate::FormatError> {
        let cache = match id {
            SectionId::Params => &self.param_blocks,
            SectionId::Members => &self.member_blocks,
            SectionId::Functions => &self.function_blocks,
            _ => &self.type_blocks,
        };
        cache.get(b, || self.decode_block(id, b))
    }

    /// Block `b` of the LZ4 record section `id` (params, types, members or functions),
    /// decompressed and checked, not cached.
    pub(super) fn decode_block(
        &self,
        id: SectionId,
        b: usize,
    ) -> Result<Box<[u8]>, crate::FormatError> {
        let h = self.header();
        let (table, count, per_block, size) = match id {
            SectionId::Params => (
                SectionId::ParamBlocks,
                h.param_count.get(),
                PARAM_BLOCK,
                core::mem::size_of::<ParamRecord>(),
            ),
            SectionId::Members => (
                SectionId::MemberBlocks,
                h.member_count.get(),
                MEMBER_BLOCK,
                core::mem::size_of::<MemberRecord>(),
            ),
            SectionId::Functions => (
                SectionId::FunctionBlocks,
                h.function_count.get(),
                FUNCTION_BLOCK,
                core::mem::size_of::<FunctionRecord>(),
            ),
            _ => (
                SectionId::TypeBlocks,
                h.type_count.get(),
                TYPE_BLOCK,
                core::mem::size_of::<TypeRecord>(),
            ),
        };
        let (offset, _) = self.sections[id as usize];
        let n = super::blocks::records_in(b, count as usize, per_block);
        let offsets = self.records(table);
        // Type and member blocks are stored byte-transposed since version 6, parameter
        // blocks since version 7 (function blocks exist only since then).
        let transposed = match h.version.get() {
            VERSION_5 => false,
            VERSION_6 => id != SectionId::Params,
            _ => true,
        };
        let raw = super::blocks::decompress(
            offsets,
            self.section(id),
            offset,
            (b, n * size),
            transposed.then_some(size),
            SECTION_NAMES[id as usize],
        )?;
        let v = super::validate::Validator::new(self.bytes(), self.sections);
        let cx = super::validate::BlockContext {
            strings_len: self.strings_len,
            type_count: h.type_count.get(),
            enumerators: self.enumerator_records().len(),
            protos: self.proto_params(),
            values: self.records(SectionId::ParamValues),
            members: h.member_count.get(),
        };
        let first = (b * per_block) as u32;
        let at = offsets.get(b).map_or(0, |o| o.get() as usize);
        match id {
            SectionId::Params => v.param_block(
                &cx,
                first,
                <[ParamRecord]>::ref_from_bytes(&raw).unwrap_or(&[]),
                at,
            )?,
            SectionId::Members => super::members::check_block(
                &v,
                &cx,
                first,
                <[MemberRecord]>::ref_from_bytes(&raw).unwrap_or(&[]),
                at,
            )?,
            SectionId::Functions => v.function_block(
                &super::validate::FunctionContext {
                    strings_len: self.strings_len,
                    type_count: h.type_count.get(),
                    param_count: h.param_count.get(),
                },
                first,
                <[FunctionRecord]>::ref_from_bytes(&raw).unwrap_or(&[]),
                Some(at),
            )?,
            _ => v.type_block(
                &cx,
                first,
                <[TypeRecord]>::ref_from_bytes(&raw).unwrap_or(&[]),
                at,
            )?,
        }
        Ok(raw)
    }

    /// The full operand of parameter record `index` (one with [`PARAM_EXT`]).
    pub(crate) fn param_value(&self, index: u32) -> u32 {
        let values: &[ParamValue] = self.records(SectionId::ParamValues);
        let i = values.partition_point(|v| v.param.get() < index);
        values
            .get(i)
            .filter(|v| v.param.get() == index)
            .map_or(0, |v| v.value.get())
    }
    pub(super) fn name_records(&self) -> &[NameRecord] {
        self.records(SectionId::Names)
    }
    fn symbol_records(&self) -> &[SymbolRecord] {
        self.records(SectionId::Symbols)
    }
    pub(crate) fn inline_index(&self) -> &[InlineBlock] {
        self.records(SectionId::InlineIndex)
    }
    pub(crate) fn instance_index(&self) -> &[InstanceBlock] {
        self.records(SectionId::InstanceIndex)
    }

    /// Frame `f` of `inline_callers`, decompressed (empty when it is bad: see
    /// [`Db::check_frames`]).
    pub(crate) fn inline_frame(&self, f: usize) -> &[u8] {
        self.load_frame(SectionId::InlineCallers, f).unwrap_or(&[])
    }

    /// Frame `f` of `instance_data`, decompressed (empty when it is bad: see
    /// [`Db::check_frames`]).
    pub(crate) fn instance_frame(&self, f: usize) -> &[u8] {
        self.load_frame(SectionId::InstanceData, f).unwrap_or(&[])
    }

    /// Frame `f` of the compressed section `id`: decompressed and checked on first use,
    /// then cached.
    fn load_frame(&self, id: SectionId, f: usize) -> Result<&[u8], &crate::FormatError> {
        let cache = match id {
            SectionId::InlineCallers => &self.inline_frames,
            SectionId::Strings => &self.string_frames,
            _ => &self.instance_frames,
        };
        cache.get(f, || self.decode_frame(id, f))
    }

    /// Frame `f` of the compressed section `id` (strings, inline callers or instances),
    /// decompressed and checked, not cached.
    fn decode_frame(&self, id: SectionId, f: usize) -> Result<Box<[u8]>, crate::FormatError> {
        let (table, name) = match id {
            SectionId::InlineCallers => (SectionId::InlineFrames, "inline_callers"),
            SectionId::Strings => (SectionId::StringFrames, "strings"),
            _ => (SectionId::InstanceFrames, "instance_data"),
        };
        let (offset, _) = self.sections[id as usize];
        let raw =
            super::frames::decompress(self.records(table), self.section(id), offset, f, name)?;
        let v = super::validate::Validator::new(self.bytes(), self.sections);
        let functions = self.function_count();
        match id {
            SectionId::Strings => check_string_frame(f, &raw, offset)?,
            SectionId::InlineCallers => super::callers::validate_frame(&v, f, &raw, functions)?,
            _ => super::instances::validate_frame(
                &v,
                f,
                &raw,
                self.instance_count() as u32,
                functions,
                &|f| self.function_addr(f),
            )?,
        }
        Ok(raw)
    }

    /// Decompress and check every compressed frame and block without keeping them, and
    /// every struct's members against its size: a damaged frame is an error naming the
    /// file and the section, never data read as empty later (about 20 ms for a
    /// 100,000-function kernel db). What a writer or an installer runs once; opening
    /// checks each frame and block only when it is first read.
    pub fn verify(&self) -> Result<(), Error> {
        self.verify_frames().map_err(|error| Error::Format {
            path: self.path.clone(),
            error,
        })
    }

    fn verify_frames(&self) -> Result<(), crate::FormatError> {
        use rayon::prelude::*;
        // Every frame and block is decoded once, on all cores (nothing is kept); the error
        // reported is the first in file order, as when they are decoded one by one.
        let frames = [
            (SectionId::Strings, self.string_frames.len()),
            (SectionId::InlineCallers, self.inline_frames.len()),
            (SectionId::InstanceData, self.instance_frames.len()),
        ];
        let blocks = [
            (SectionId::Params, self.param_blocks.len()),
            (SectionId::Functions, self.function_blocks.len()),
        ];
        let (decoded, layout) = rayon::join(
            || {
                let frames = frames.par_iter().flat_map(|&(id, n)| {
                    (0..n)
                        .into_par_iter()
                        .map(move |f| self.decode_frame(id, f).map(drop))
                });
                let blocks = blocks.par_iter().flat_map(|&(id, n)| {
                    (0..n)
                        .into_par_iter()
                        .map(move |b| self.decode_block(id, b).map(drop))
                });
                frames
                    .chain(blocks)
                    .find_first(Result::is_err)
                    .unwrap_or(Ok(()))
            },
            // The type and member blocks, each decompressed and checked once, and the
            // members against their structs.
            || super::members::check_layout(self),
        );
        decoded?;
        layout
    }

    /// Decompress and check every compressed frame and block, and keep them, then check
    /// every struct's members against its size. A frame or block that is bad reads as
    /// empty (empty strings, no caller lists, no instances; parameters and types unknown
    /// and void) and is reported here.
    pub fn check_frames(&self) -> Result<(), Error> {
        let fail = |error: &crate::FormatError| Error::Format {
            path: self.path.clone(),
            error: error.clone(),
        };
        for (id, cache) in [
            (SectionId::Strings, &self.string_frames),
            (SectionId::InlineCallers, &self.inline_frames),
            (SectionId::InstanceData, &self.instance_frames),
        ] {
            for f in 0..cache.len() {
                self.load_frame(id, f).map_err(fail)?;
            }
        }
        for (id, cache) in [
            (SectionId::Types, &self.type_blocks),
            (SectionId::Params, &self.param_blocks),
            (SectionId::Members, &self.member_blocks),
            (SectionId::Functions, &self.function_blocks),
        ] {
            for b in 0..cache.len() {
                self.load_block(id, b).map_err(fail)?;
            }
        }
        super::members::check_layout(self).map_err(|e| fail(&e))
    }

    /// The call file with index `index` in the call file table.
    pub(crate) fn call_file(&self, index: u32) -> &str {
        let files: &[zerocopy::little_endian::U32] = self.records(SectionId::CallFiles);
        files
            .get(index as usize)
            .map_or("", |f| self.string(f.get()))
    }

    /// Index of the module holding function `index`.
    pub(crate) fn module_of(&self, index: u32) -> usize {
        let mods = self.module_records();
        mods.partition_point(|m| m.first_function.get() + m.function_count.get() <= index)
    }

    pub(crate) fn code_records(&self) -> &[CodeRecord] {
        self.records(SectionId::Code)
    }

    /// The code records of module `module`: those of its functions that have code, the
    /// last ones of its range.
    pub(crate) fn module_code(&self, module: usize) -> &[CodeRecord] {
        let mods = self.module_records();
        let code = self.code_records();
        let Some(m) = mods.get(module) else {
            return &[];
        };
        let end = mods
            .get(module + 1)
            .map_or(code.len(), |n| n.first_code.get() as usize);
        code.get(m.first_code.get() as usize..end).unwrap_or(&[])
    }

    /// The module of function `index` and its code record (none for a function without
    /// code).
    pub(crate) fn locate(&self, index: u32) -> (usize, Option<&CodeRecord>) {
        let module = self.module_of(index);
        let Some(m) = self.module_records().get(module) else {
            return (module, None);
        };
        let code = self.module_code(module);
        // Validated: at most function_count code records, for the last functions.
        let codeless = (m.function_count.get() as usize).saturating_sub(code.len());
        let j = (index as usize).wrapping_sub(m.first_function.get() as usize);
        (module, j.checked_sub(codeless).and_then(|k| code.get(k)))
    }

    /// The address of function `index`: its module's base plus its relative address, or
    /// 0 for a function without code.
    pub(crate) fn function_addr(&self, index: u32) -> u64 {
        let (module, code) = self.locate(index);
        self.code_addr(module, code)
    }

    pub(crate) fn code_addr(&self, module: usize, code: Option<&CodeRecord>) -> u64 {
        match (code, self.module_records().get(module)) {
            (Some(c), Some(m)) => m.base.get().wrapping_add(u64::from(c.addr.get())),
            _ => 0,
        }
    }

    /// String offset of the ELF symbol of function `index` when it differs from the
    /// function's name, else 0.
    pub(crate) fn symbol_of(&self, index: u32) -> u32 {
        let syms = self.symbol_records();
        let i = syms.partition_point(|s| s.function.get() < index);
        match syms.get(i) {
            Some(s) if s.function.get() == index => s.symbol.get(),
            _ => 0,
        }
    }

    /// The bytes of the string table from `offset` to the end of its frame (empty when
    /// out of range or in a bad frame). The frame is decompressed on first use.
    pub(super) fn string_tail(&self, offset: u32) -> &[u8] {
        let f = self.string_starts.partition_point(|&s| s <= offset);
        let Some(&start) = f.checked_sub(1).and_then(|f| self.string_starts.get(f)) else {
            return &[];
        };
        match self.load_frame(SectionId::Strings, f - 1) {
            Ok(frame) => frame.get((offset - start) as usize..).unwrap_or(&[]),
            Err(_) => &[],
        }
    }

    /// The string at `offset` of the string table (empty when out of range, not on a
    /// character boundary, or in a bad frame: see [`Db::check_frames`]).
    pub fn string(&self, offset: u32) -> &str {
        let tail = self.string_tail(offset);
        // Inside a character (a UTF-8 continuation byte): no string starts here.
        if tail.first().is_some_and(|&b| b & 0xc0 == 0x80) {
            return "";
        }
        // Frames hold whole strings, each ending with a NUL (checked on decompression).
        let bytes = &tail[..tail.iter().position(|&b| b == 0).unwrap_or(0)];
        // SAFETY: a frame is handed out only once it was checked to be UTF-8
        // (`check_string_frame`); `bytes` starts on a character boundary (not a
        // continuation byte) and ends before a NUL, which is ASCII, so it is UTF-8 too.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// The checks of a decompressed string frame: UTF-8, ending with the NUL of its last
/// string; the first frame starts with the empty string.
fn check_string_frame(f: usize, raw: &[u8], file_offset: usize) -> Result<(), crate::FormatError> {
    let what = if std::str::from_utf8(raw).is_err() {
        "frame is not UTF-8"
    } else if raw.last() != Some(&0) {
        "frame does not end with a NUL"
    } else if f == 0 && raw.first() != Some(&0) {
        "first frame does not start with the empty string"
    } else {
        return Ok(());
    };
    Err(super::frames::unit_error("strings", f, file_offset, what))
}
