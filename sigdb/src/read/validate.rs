//! Validation of a whole sigdb, once on open: header, section table, checksum, then every
//! record's references, codes and sort orders. After it, readers need no checks.

use zerocopy::FromBytes;

use crate::layout::*;
use crate::model::*;
use crate::{FormatError, FormatErrorKind};

pub(crate) fn fail<T>(offset: usize, kind: FormatErrorKind) -> Result<T, FormatError> {
    Err(FormatError {
        offset: offset as u64,
        kind,
    })
}

/// Check everything; return the header (a version 5 one converted to the current
/// layout, without members) and the (offset, length) of each section.
pub(crate) fn validate(
    bytes: &[u8],
) -> Result<(Header, [(usize, usize); SECTION_COUNT]), FormatError> {
    use FormatErrorKind::*;
    // A file that does not even start like a sigdb is "not a sigdb", whatever its size.
    let n = bytes.len().min(8);
    if bytes[..n] != MAGIC[..n] {
        return fail(0, BadMagic);
    }
    let truncated = |needed: usize| {
        fail(
            0,
            Truncated {
                needed: needed as u64,
                len: bytes.len() as u64,
            },
        )
    };
    if bytes.len() < 12 {
        return truncated(HEADER_SIZE);
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    // Versions 5 and 6 have shorter headers: fewer sections, functions in place.
    let (hsize, nsections, size_err, count_err) = match version {
        VERSION => (
            HEADER_SIZE,
            SECTION_COUNT,
            "header size is not 704",
            "section count is not 25",
        ),
        VERSION_6 => (
            HEADER_SIZE_6,
            SECTION_COUNT_6,
            "header size is not 680",
            "section count is not 24",
        ),
        VERSION_5 => (
            HEADER_SIZE_5,
            SECTION_COUNT_5,
            "header size is not 624",
            "section count is not 22",
        ),
        _ => return fail(8, UnsupportedVersion(version)),
    };
    let Some(prefix) = bytes.get(..hsize) else {
        return truncated(hsize);
    };
    let mut h = old_header(prefix, version);
    if h.header_size.get() as usize != hsize {
        return fail(12, BadHeader(size_err));
    }
    if h.section_count.get() as usize != nsections {
        return fail(20, BadHeader(count_err));
    }
    let file_size = h.file_size.get();
    if file_size > bytes.len() as u64 {
        return fail(
            bytes.len(),
            Truncated {
                needed: file_size,
                len: bytes.len() as u64,
            },
        );
    }
    if file_size < bytes.len() as u64 {
        return fail(
            file_size as usize,
            BadHeader("bytes after the recorded file size"),
        );
    }
    if h.build_id_len.get() as usize > MAX_BUILD_ID {
        return fail(36, BadHeader("build-id longer than 40 bytes"));
    }
    let mut sections = [(0usize, 0usize); SECTION_COUNT];
    let mut prev_end = hsize;
    let table_at = hsize - 24 * nsections;
    for (i, s) in h.sections.iter().enumerate().take(nsections) {
        let at = table_at + i * 24;
        let (off, len) = (s.offset.get(), s.length.get());
        let size = record_size(version, i);
        let ok = off % ALIGN as u64 == 0
            && off >= prev_end as u64
            && off
                .checked_add(len)
                .is_some_and(|e| e <= bytes.len() as u64)
            && s.record_size.get() as usize == size
            && (s.count.get() as u64).checked_mul(size as u64) == Some(len);
        if !ok {
            return fail(at, BadSection(SECTION_NAMES[i]));
        }
        sections[i] = (off as usize, len as usize);
        prev_end = (off + len) as usize;
    }
    if version != VERSION {
        // Function records in place: their count is the section's.
        h.function_count = h.sections[SectionId::Functions as usize].count;
    }
    let actual = crc32fast::hash(&bytes[hsize..]);
    if actual != h.body_crc32.get() {
        return fail(
            32,
            Checksum {
                expected: h.body_crc32.get(),
                actual,
            },
        );
    }
    Validator { bytes, sections }.run(&h)?;
    Ok((h, sections))
}

/// The record size of section `id` in a file of `version`: before version 7 the function
/// records were stored in place.
fn record_size(version: u32, id: usize) -> usize {
    if id == SectionId::Functions as usize && version != VERSION {
        core::mem::size_of::<FunctionRecord>()
    } else {
        RECORD_SIZES[id]
    }
}

/// A header (`prefix`: its bytes) in the current layout. A version 5 or 6 header has the
/// same fields up to `type_count` (5) or `member_count` (6), then its 22 or 24 section
/// entries: the missing sections are empty, and `function_count` is set from the
/// functions' section entry once it is checked.
fn old_header(prefix: &[u8], version: u32) -> Header {
    let mut bytes = [0u8; HEADER_SIZE];
    let fixed = HEADER_SIZE - 24 * SECTION_COUNT;
    let (head, entries) = match version {
        VERSION_5 => (96, SECTION_COUNT_5),
        VERSION_6 => (100, SECTION_COUNT_6),
        _ => (fixed, SECTION_COUNT),
    };
    let old_fixed = prefix.len() - 24 * entries;
    bytes[..head].copy_from_slice(&prefix[..head]);
    bytes[fixed..fixed + 24 * entries].copy_from_slice(&prefix[old_fixed..]);
    let (h, _) = Header::read_from_prefix(&bytes[..]).expect("a header's size");
    h
}

pub(crate) struct Validator<'a> {
    bytes: &'a [u8],
    sections: [(usize, usize); SECTION_COUNT],
}

impl<'a> Validator<'a> {
    /// The validator of a file already checked by [`validate`] (for the frames, which
    /// are checked on first use).
    pub(crate) fn new(bytes: &'a [u8], sections: [(usize, usize); SECTION_COUNT]) -> Self {
        Validator { bytes, sections }
    }

    fn sec(&self, id: SectionId) -> &'a [u8] {
        let (o, l) = self.sections[id as usize];
        &self.bytes[o..o + l]
    }

    /// A bad record of a packed section: `at` is its byte offset in the section.
    pub(crate) fn err_at<T>(
        &self,
        id: SectionId,
        at: usize,
        index: u32,
        what: &'static str,
    ) -> Result<T, FormatError> {
        let (o, _) = self.sections[id as usize];
        fail(
            o + at,
            FormatErrorKind::BadRecord {
                section: SECTION_NAMES[id as usize],
                index: index.into(),
                what,
            },
        )
    }

    pub(crate) fn recs<T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(
        &self,
        id: SectionId,
    ) -> &'a [T] {
        <[T]>::ref_from_bytes(self.sec(id)).unwrap_or(&[])
    }

    /// The frame table `table` of the compressed section `data`, checked against the
    /// `blocks` blocks it holds ([`super::frames::check_table`]).
    pub(crate) fn frame_table(
        &self,
        data: SectionId,
        table: SectionId,
        blocks: usize,
    ) -> Result<&'a [FrameRecord], FormatError> {
        let frames: &[FrameRecord] = self.recs(table);
        match super::frames::check_table(frames, self.sec(data).len(), blocks, BLOCKS_PER_FRAME) {
            Ok(()) => Ok(frames),
            Err(f) => self.err(table, f, "frame table does not match the blocks"),
        }
    }

    pub(crate) fn err<T>(
        &self,
        id: SectionId,
        index: usize,
        what: &'static str,
    ) -> Result<T, FormatError> {
        // Record counts are u32 (section entries), so the index fits.
        self.err_at(id, index * RECORD_SIZES[id as usize], index as u32, what)
    }

    /// The total decompressed length of the string frames, checked on open: at least one
    /// frame, the table as for every compressed section, and at most 2^32 bytes in all.
    pub(crate) fn strings_len(&self) -> Result<u64, FormatError> {
        use SectionId::*;
        let frames: &[FrameRecord] = self.recs(StringFrames);
        if frames.is_empty() {
            return self.err(StringFrames, 0, "no string frame");
        }
        let len = self.sec(Strings).len();
        if let Err(f) = super::frames::check_table(frames, len, frames.len(), 1) {
            return self.err(StringFrames, f, "frame table does not match the section");
        }
        let total: u64 = frames.iter().map(|f| u64::from(f.raw_len.get())).sum();
        if total > 1 << 32 {
            return self.err(StringFrames, 0, "strings past 4 GiB");
        }
        Ok(total)
    }

    /// The block offsets of the LZ4 record section `data` (`count` records of `per_block`).
    fn block_table(
        &self,
        data: SectionId,
        table: SectionId,
        count: u32,
        per_block: usize,
    ) -> Result<(), FormatError> {
        let offsets: &[zerocopy::little_endian::U32] = self.recs(table);
        let blocks = (count as usize).div_ceil(per_block);
        match super::blocks::check_offsets(offsets, self.sec(data).len(), blocks) {
            Ok(()) => Ok(()),
            Err(b) => self.err(table, b, "block table does not match the records"),
        }
    }

    fn run(&self, h: &Header) -> Result<(), FormatError> {
        use SectionId::*;
        let strings_len = self.strings_len()?;
        let string_ok = |off: u32| u64::from(off) < strings_len;
        let type_count = h.type_count.get();
        let param_count = h.param_count.get();
        if type_count == 0 {
            return fail(
                self.sections[Types as usize].0,
                FormatErrorKind::BadSection("types (type 0 must be void)"),
            );
        }
        self.block_table(Types, TypeBlocks, type_count, TYPE_BLOCK)?;
        self.block_table(Params, ParamBlocks, param_count, PARAM_BLOCK)?;
        self.block_table(Members, MemberBlocks, h.member_count.get(), MEMBER_BLOCK)?;
        let functions = h.function_count.get() as usize;
        let in_place = h.version.get() != VERSION;
        if !in_place {
            self.block_table(Functions, FunctionBlocks, functions as u32, FUNCTION_BLOCK)?;
        }
        // In this order, which decides the error a file with several defects gets.
        self.modules(&string_ok, functions)?;
        self.enumerators_and_prototypes(&string_ok, type_count)?;
        self.param_values(param_count)?;
        if in_place {
            // Before version 7 the function records are in place: checked now.
            let cx = FunctionContext {
                strings_len,
                type_count,
                param_count,
            };
            self.function_block(&cx, 0, self.recs(Functions), None)?;
        }
        self.code()?;
        self.symbols(&string_ok, functions)?;
        self.name_index(functions)?;
        super::callers::validate_index(self, functions)?;
        super::instances::validate_index(self, h.instance_count.get(), functions, &string_ok)?;
        Ok(())
    }

    /// The modules: names, kinds and build-ids; consecutive function and code ranges
    /// that cover the functions.
    fn modules(
        &self,
        string_ok: &impl Fn(u32) -> bool,
        functions: usize,
    ) -> Result<(), FormatError> {
        use SectionId::*;
        let modules: &[ModuleRecord] = self.recs(Modules);
        let code: &[CodeRecord] = self.recs(Code);
        let mut next = 0u64;
        for (i, m) in modules.iter().enumerate() {
            // Code records: consecutive per module, at most one per function.
            let code_end = modules
                .get(i + 1)
                .map_or(code.len() as u64, |n| n.first_code.get() as u64);
            let code_count = code_end.checked_sub(m.first_code.get() as u64);
            if (i == 0 && m.first_code.get() != 0)
                || code_count.is_none_or(|n| n > m.function_count.get() as u64)
                || code_end > code.len() as u64
            {
                return self.err(Modules, i, "code records do not follow the previous module");
            }
            if !string_ok(m.name.get()) {
                return self.err(Modules, i, "name is not a string");
            }
            if ModuleKind::from_code(m.kind.get()).is_none() {
                return self.err(Modules, i, "unknown module kind");
            }
            if m.build_id_len.get() as usize > MAX_BUILD_ID {
                return self.err(Modules, i, "build-id longer than 40 bytes");
            }
            if m.first_function.get() as u64 != next {
                return self.err(
                    Modules,
                    i,
                    "function range does not follow the previous module",
                );
            }
            next += m.function_count.get() as u64;
        }
        if next != functions as u64 || (modules.is_empty() && !code.is_empty()) {
            return fail(
                self.sections[Modules as usize].0,
                FormatErrorKind::BadSection("modules (function ranges do not cover the functions)"),
            );
        }
        Ok(())
    }

    /// The enumerators' names and the prototypes' parameter types.
    fn enumerators_and_prototypes(
        &self,
        string_ok: &impl Fn(u32) -> bool,
        type_count: u32,
    ) -> Result<(), FormatError> {
        use SectionId::*;
        let enumerators: &[EnumeratorRecord] = self.recs(Enumerators);
        let protos: &[zerocopy::little_endian::U32] = self.recs(ProtoParams);
        for (i, e) in enumerators.iter().enumerate() {
            if !string_ok(e.name.get()) {
                return self.err(Enumerators, i, "name is not a string");
            }
        }
        for (i, p) in protos.iter().enumerate() {
            if p.get() >= type_count {
                return self.err(ProtoParams, i, "type out of bounds");
            }
        }
        Ok(())
    }

    /// The out-of-line parameter operands: each names a parameter, sorted by it.
    fn param_values(&self, param_count: u32) -> Result<(), FormatError> {
        use SectionId::*;
        let values: &[ParamValue] = self.recs(ParamValues);
        for (i, v) in values.iter().enumerate() {
            if v.param.get() >= param_count {
                return self.err(ParamValues, i, "parameter out of bounds");
            }
            if i > 0 && values[i - 1].param.get() >= v.param.get() {
                return fail(
                    self.sections[ParamValues as usize].0 + i * 8,
                    FormatErrorKind::NotSorted("param_values"),
                );
            }
        }
        Ok(())
    }

    /// The function records `recs`, the first of which is function `first`: names are
    /// strings, return types and parameter ranges in bounds, and exactly the functions
    /// without code (the first ones of their module) inline-only. `at`: the block's
    /// offset in the section, for errors (`None`: the records are the section, in place).
    pub(crate) fn function_block(
        &self,
        cx: &FunctionContext,
        first: u32,
        recs: &[FunctionRecord],
        at: Option<usize>,
    ) -> Result<(), FormatError> {
        let within = |first: u32, count: u32, len: u32| (first as u64 + count as u64) <= len as u64;
        let modules: &[ModuleRecord] = self.recs(SectionId::Modules);
        let code: &[CodeRecord] = self.recs(SectionId::Code);
        for (j, f) in recs.iter().enumerate() {
            let i = first + j as u32;
            let bad = |what| match at {
                Some(at) => self.err_at(SectionId::Functions, at, i, what),
                None => self.err_at(SectionId::Functions, i as usize * 12, i, what),
            };
            if u64::from(f.name.get()) >= cx.strings_len {
                return bad("name is not a string");
            }
            if f.ret() >= cx.type_count {
                return bad("return type out of bounds");
            }
            if !within(f.first_param(), f.param_count(), cx.param_count) {
                return bad("parameter range out of bounds");
            }
            let inline_only =
                FuncFlags::from_bits_truncate(f.flags()).contains(FuncFlags::INLINE_ONLY);
            if inline_only != codeless(modules, code.len(), i) {
                return bad("inline-only flag does not match the function's code");
            }
        }
        Ok(())
    }

    /// Each module's code records: sorted by address, inside the address space, one per
    /// function but the inline-only ones, which come first.
    fn code(&self) -> Result<(), FormatError> {
        use SectionId::*;
        let modules: &[ModuleRecord] = self.recs(Modules);
        let code: &[CodeRecord] = self.recs(Code);
        for (mi, m) in modules.iter().enumerate() {
            let code_first = m.first_code.get() as usize;
            let code_end = modules
                .get(mi + 1)
                .map_or(code.len(), |n| n.first_code.get() as usize);
            let mcode = &code[code_first..code_end];
            if let Some(j) = mcode
                .windows(2)
                .position(|w| w[0].addr.get() > w[1].addr.get())
            {
                return self.err(Code, code_first + j + 1, "not sorted by address");
            }
            if let Some(j) = mcode.iter().position(|c| {
                m.base
                    .get()
                    .checked_add(u64::from(c.addr.get()) + u64::from(c.size.get()))
                    .is_none()
            }) {
                return self.err(
                    Code,
                    code_first + j,
                    "code range ends past the address space",
                );
            }
        }
        Ok(())
    }

    /// The symbol records: strings, functions in bounds, sorted by function.
    fn symbols(
        &self,
        string_ok: &impl Fn(u32) -> bool,
        functions: usize,
    ) -> Result<(), FormatError> {
        use SectionId::*;
        let symbols: &[SymbolRecord] = self.recs(Symbols);
        for (i, sym) in symbols.iter().enumerate() {
            if !string_ok(sym.symbol.get()) {
                return self.err(Symbols, i, "symbol is not a string");
            }
            if sym.function.get() as usize >= functions {
                return self.err(Symbols, i, "function out of bounds");
            }
            if i > 0 && symbols[i - 1].function.get() >= sym.function.get() {
                return fail(
                    self.sections[Symbols as usize].0 + i * 8,
                    FormatErrorKind::NotSorted("symbols"),
                );
            }
        }
        Ok(())
    }

    /// The name index: functions in bounds, and bucket starts (a power of two of them,
    /// plus one) ascending over the whole index.
    fn name_index(&self, functions: usize) -> Result<(), FormatError> {
        use SectionId::*;
        let names: &[NameRecord] = self.recs(Names);
        for (i, n) in names.iter().enumerate() {
            if n.function() as usize >= functions {
                return self.err(Names, i, "function out of bounds");
            }
        }
        let starts: &[zerocopy::little_endian::U32] = self.recs(NameBuckets);
        let buckets = starts.len().wrapping_sub(1);
        if starts.is_empty() || !buckets.is_power_of_two() || buckets > 1 << 24 {
            return fail(
                self.sections[NameBuckets as usize].0,
                FormatErrorKind::BadSection("name_buckets (not a power of two plus one)"),
            );
        }
        for (i, w) in starts.windows(2).enumerate() {
            if w[0].get() > w[1].get() {
                return fail(
                    self.sections[NameBuckets as usize].0 + (i + 1) * 4,
                    FormatErrorKind::NotSorted("name buckets"),
                );
            }
        }
        if starts[0].get() != 0 || starts[buckets].get() as usize != names.len() {
            return fail(
                self.sections[NameBuckets as usize].0,
                FormatErrorKind::BadSection("name_buckets (do not cover the name index)"),
            );
        }
        Ok(())
    }
}

/// Whether function `f` has no code: it is one of the first functions of its module,
/// which has fewer code records than functions (the modules were checked on open).
pub(crate) fn codeless(modules: &[ModuleRecord], code_len: usize, f: u32) -> bool {
    let m = modules.partition_point(|m| m.first_function.get() + m.function_count.get() <= f);
    let Some(rec) = modules.get(m) else {
        return false;
    };
    let code_end = modules
        .get(m + 1)
        .map_or(code_len as u32, |n| n.first_code.get());
    let with_code = code_end.saturating_sub(rec.first_code.get());
    f - rec.first_function.get() < rec.function_count.get().saturating_sub(with_code)
}

/// What the check of the function records needs to know of the rest of the file.
pub(crate) struct FunctionContext {
    pub strings_len: u64,
    pub type_count: u32,
    pub param_count: u32,
}

/// What the checks of a decompressed block need to know of the rest of the file.
pub(crate) struct BlockContext<'a> {
    pub strings_len: u64,
    pub type_count: u32,
    pub enumerators: usize,
    pub protos: &'a [zerocopy::little_endian::U32],
    pub values: &'a [ParamValue],
    pub members: u32,
}

impl Validator<'_> {
    /// Check the parameter records `recs`, the first of which is record `first`: names in
    /// the strings, types in bounds, known location kinds with their operand rules, and
    /// exactly the `EXT` ones having a parameter value record. `at`: the block's offset in
    /// the section, for errors.
    pub(crate) fn param_block(
        &self,
        cx: &BlockContext<'_>,
        first: u32,
        recs: &[ParamRecord],
        at: usize,
    ) -> Result<(), FormatError> {
        let bad = |i: usize, what| self.err_at(SectionId::Params, at, first + i as u32, what);
        let mut values = cx.values[cx.values.partition_point(|v| v.param.get() < first)..]
            .iter()
            .map(|v| v.param.get())
            .peekable();
        for (i, p) in recs.iter().enumerate() {
            let index = first + i as u32;
            if u64::from(p.name()) >= cx.strings_len {
                return bad(i, "name is not a string");
            }
            if p.ty() >= cx.type_count {
                return bad(i, "type out of bounds");
            }
            if p.name_loc.get() >> 28 != 0 || Location::decode(p.loc_kind(), 0, 0, 0).is_none() {
                return bad(i, "unknown location kind");
            }
            // A frame location's operand (32 bits) never fits the short one; unknown and
            // optimized-out locations have none.
            let ext_ok = match p.loc_kind() {
                0 | 4 => !p.ext() && p.short_op() == 0,
                6 => p.ext() && p.short_op() == 0,
                _ => !p.ext() || p.short_op() == 0,
            };
            if !ext_ok {
                return bad(i, "operand kind does not fit the location");
            }
            // Values are sorted by parameter (checked on open): each extended operand has
            // its value, and no other parameter has one.
            let has_value = values.next_if_eq(&index).is_some();
            if p.ext() != has_value {
                return bad(
                    i,
                    "extended operand without its value, or a value without one",
                );
            }
        }
        Ok(())
    }

    /// Check the type records `recs`, the first of which is type `first`: type 0 is
    /// void, kinds are known, names are strings, targets and prototype parameters
    /// precede their type, enumerator and prototype ranges are in bounds.
    pub(crate) fn type_block(
        &self,
        cx: &BlockContext<'_>,
        first: u32,
        recs: &[TypeRecord],
        at: usize,
    ) -> Result<(), FormatError> {
        let within =
            |first: u32, count: u32, len: usize| (first as u64 + count as u64) <= len as u64;
        for (j, t) in recs.iter().enumerate() {
            let i = first + j as u32;
            let bad = |what| self.err_at(SectionId::Types, at, i, what);
            let Some(kind) = TypeKind::from_code(t.kind) else {
                return bad("unknown type kind");
            };
            if i == 0 && kind != TypeKind::Void {
                return bad("type 0 must be void");
            }
            if u64::from(t.name.get()) >= cx.strings_len {
                return bad("name is not a string");
            }
            if kind.has_target() && t.target.get() >= i {
                return bad("refers to a type that does not precede it");
            }
            match kind {
                TypeKind::Enum if !within(t.first.get(), t.count.get(), cx.enumerators) => {
                    return bad("enumerator range out of bounds");
                }
                TypeKind::Struct | TypeKind::Union
                    if !within(t.first.get(), t.count.get(), cx.members as usize) =>
                {
                    return bad("member range out of bounds");
                }
                TypeKind::Func => {
                    if !within(t.first.get(), t.count.get(), cx.protos.len()) {
                        return bad("parameter range out of bounds");
                    }
                    let first = t.first.get() as usize;
                    for p in &cx.protos[first..first + t.count.get() as usize] {
                        if p.get() >= i {
                            return bad("parameter type does not precede it");
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}
