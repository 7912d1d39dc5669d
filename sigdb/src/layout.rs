//! The on-disk records of sigdb version 7 (and how the headers of versions 5 and 6
//! differ), exactly as `FORMAT.md` describes them.
//!
//! Every integer is little-endian and stored with the unaligned `zerocopy` byte-order
//! types, so a record can be viewed in place from any byte buffer (an mmap or a `Vec`).

use zerocopy::little_endian::{I64, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// File magic: the first 8 bytes of every sigdb.
pub const MAGIC: [u8; 8] = *b"DCGSIGDB";
/// The format version this crate writes (and reads, with [`VERSION_6`] and [`VERSION_5`]).
pub const VERSION: u32 = 7;
/// An older version this crate still reads: function records in place, parameter blocks
/// not transposed, a 680-byte header.
pub const VERSION_6: u32 = 6;
/// The oldest version this crate still reads: as version 6, without the member sections,
/// a 624-byte header.
pub const VERSION_5: u32 = 5;
/// Longest build-id a header or module record holds.
pub const MAX_BUILD_ID: usize = 40;
/// Section alignment inside the file.
pub const ALIGN: usize = 8;

/// The sections, in the fixed order of the header's section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum SectionId {
    /// NUL-terminated UTF-8 strings (offset 0 is the empty string), in compressed
    /// frames of about [`STRING_FRAME_BYTES`] (bytes).
    Strings = 0,
    /// [`ModuleRecord`]s.
    Modules = 1,
    /// [`TypeRecord`]s in LZ4 blocks of [`TYPE_BLOCK`] records (bytes).
    Types = 2,
    /// [`EnumeratorRecord`]s, referenced by enum types.
    Enumerators = 3,
    /// `u32` type indices: parameter types of function prototypes.
    ProtoParams = 4,
    /// [`FunctionRecord`]s sorted by (module, module-relative address, ...), in LZ4
    /// blocks of [`FUNCTION_BLOCK`] records (bytes; records in place before version 7).
    Functions = 5,
    /// [`SymbolRecord`]s: ELF symbols that differ from the function name, by function.
    Symbols = 6,
    /// [`ParamRecord`]s, referenced by functions, in LZ4 blocks of [`PARAM_BLOCK`]
    /// records (bytes).
    Params = 7,
    /// [`NameRecord`]s sorted by (name hash, name bytes, function index).
    Names = 8,
    /// [`InlineBlock`]s: where each block of [`CALLEE_BLOCK`] caller lists starts.
    InlineIndex = 9,
    /// The packed caller lists of the inlined functions, sorted by callee, in compressed
    /// frames of [`BLOCKS_PER_FRAME`] blocks (bytes).
    InlineCallers = 10,
    /// [`InstanceBlock`]s: where each block of [`INSTANCE_BLOCK`] inline instances starts.
    InstanceIndex = 11,
    /// The packed inline instance records, sorted by (caller, depth, entry pc, ...), in
    /// compressed frames of [`BLOCKS_PER_FRAME`] blocks (bytes).
    InstanceData = 12,
    /// `u32` string offsets: the source files of inline call sites.
    CallFiles = 13,
    /// [`ParamValue`]s: location operands too wide for their parameter record.
    ParamValues = 14,
    /// `u32` name index positions: where each hash bucket of the name index starts.
    NameBuckets = 15,
    /// [`CodeRecord`]s: address and size of every function that has code.
    Code = 16,
    /// [`FrameRecord`]s: where each compressed frame of `inline_callers` starts.
    InlineFrames = 17,
    /// [`FrameRecord`]s: where each compressed frame of `instance_data` starts.
    InstanceFrames = 18,
    /// [`FrameRecord`]s: where each compressed frame of `strings` starts.
    StringFrames = 19,
    /// `u32` offsets: where each LZ4 block of `params` starts.
    ParamBlocks = 20,
    /// `u32` offsets: where each LZ4 block of `types` starts.
    TypeBlocks = 21,
    /// [`MemberRecord`]s of structs and unions, in LZ4 blocks of [`MEMBER_BLOCK`]
    /// records (bytes).
    Members = 22,
    /// `u32` offsets: where each LZ4 block of `members` starts.
    MemberBlocks = 23,
    /// `u32` offsets: where each LZ4 block of `functions` starts.
    FunctionBlocks = 24,
}

/// Number of sections in version 7.
pub const SECTION_COUNT: usize = 25;
/// Number of sections in version 6 (the first 24, functions in place).
pub const SECTION_COUNT_6: usize = 24;
/// Size of a version 6 header (its section table has [`SECTION_COUNT_6`] entries).
pub const HEADER_SIZE_6: usize = 680;
/// Number of sections in version 5 (the first 22, without the members).
pub const SECTION_COUNT_5: usize = 22;
/// Size of a version 5 header (its section table has [`SECTION_COUNT_5`] entries).
pub const HEADER_SIZE_5: usize = 624;

/// Size of the header, section table included.
pub const HEADER_SIZE: usize = core::mem::size_of::<Header>();

/// Record size of each section, indexed by [`SectionId`]; 1 for the byte-string section.
pub const RECORD_SIZES: [usize; SECTION_COUNT] = [
    1,
    core::mem::size_of::<ModuleRecord>(),
    1,
    core::mem::size_of::<EnumeratorRecord>(),
    4,
    1,
    core::mem::size_of::<SymbolRecord>(),
    1,
    core::mem::size_of::<NameRecord>(),
    core::mem::size_of::<InlineBlock>(),
    1,
    core::mem::size_of::<InstanceBlock>(),
    1,
    4,
    core::mem::size_of::<ParamValue>(),
    4,
    core::mem::size_of::<CodeRecord>(),
    core::mem::size_of::<FrameRecord>(),
    core::mem::size_of::<FrameRecord>(),
    core::mem::size_of::<FrameRecord>(),
    4,
    4,
    1,
    4,
    4,
];

/// Human-readable section names, for error messages.
pub const SECTION_NAMES: [&str; SECTION_COUNT] = [
    "strings",
    "modules",
    "types",
    "enumerators",
    "proto_params",
    "functions",
    "symbols",
    "params",
    "names",
    "inline_index",
    "inline_callers",
    "instance_index",
    "instance_data",
    "call_files",
    "param_values",
    "name_buckets",
    "code",
    "inline_frames",
    "instance_frames",
    "string_frames",
    "param_blocks",
    "type_blocks",
    "members",
    "member_blocks",
    "function_blocks",
];

/// One entry of the header's section table (24 bytes).
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SectionEntry {
    /// Byte offset of the section from the start of the file (multiple of 8).
    pub offset: U64,
    /// Length of the section in bytes.
    pub length: U64,
    /// Number of records (for strings: the number of bytes).
    pub count: U32,
    /// Size of one record in bytes.
    pub record_size: U32,
}

/// The file header (704 bytes), at offset 0.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`VERSION`].
    pub version: U32,
    /// Size of this header, section table included: 704.
    pub header_size: U32,
    /// [`crate::DbFlags`] bits.
    pub flags: U32,
    /// Number of section table entries: 25.
    pub section_count: U32,
    /// Total file size in bytes.
    pub file_size: U64,
    /// CRC-32 (IEEE, as zlib's `crc32`) of every byte after the header.
    pub body_crc32: U32,
    /// Number of meaningful bytes in `build_id`.
    pub build_id_len: U32,
    /// Build-id of the primary input (vmlinux or the binary), zero-padded.
    pub build_id: [u8; MAX_BUILD_ID],
    /// ELF machine of the inputs (62 = x86-64).
    pub machine: U32,
    /// Number of inline instances packed in the `instance_data` frames.
    pub instance_count: U32,
    /// Number of parameter records packed in the `params` blocks.
    pub param_count: U32,
    /// Number of type records packed in the `types` blocks.
    pub type_count: U32,
    /// Number of member records packed in the `members` blocks.
    pub member_count: U32,
    /// Number of function records packed in the `functions` blocks.
    pub function_count: U32,
    /// The section table, indexed by [`SectionId`].
    pub sections: [SectionEntry; SECTION_COUNT],
}

/// A module: the kernel image, a kernel module, an executable or a library (72 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ModuleRecord {
    /// String offset of the module name (`vmlinux`, `binfmt_misc`, a file name).
    pub name: U32,
    /// [`crate::ModuleKind`] code.
    pub kind: U32,
    /// Index of the module's first function record.
    pub first_function: U32,
    /// Number of consecutive function records of this module.
    pub function_count: U32,
    /// Number of meaningful bytes in `build_id`.
    pub build_id_len: U32,
    /// Index of the module's first code record. The module's functions without code
    /// come first; each of the others has one code record, in function order.
    pub first_code: U32,
    /// Build-id of the module's ELF file, zero-padded.
    pub build_id: [u8; MAX_BUILD_ID],
    /// Address bias: function addresses are ELF addresses; add the load address minus
    /// this base to get a runtime address.
    pub base: U64,
}

/// A type (24 bytes). Every type index a type refers to is smaller than its own index.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct TypeRecord {
    /// [`crate::TypeKind`] code.
    pub kind: u8,
    /// [`crate::TypeFlags`] bits.
    pub flags: u8,
    /// [`crate::Qualifiers`] bits, for qualified types.
    pub quals: u8,
    /// Reserved, zero.
    pub reserved: u8,
    /// Size in bytes (0 when unknown or void).
    pub size: U32,
    /// String offset of the name (0: anonymous).
    pub name: U32,
    /// Referenced type: pointee, array element, typedef or qualifier target, function
    /// return type. Meaningful only for those kinds.
    pub target: U32,
    /// First enumerator (enum), first proto param (function) or first member (struct,
    /// union).
    pub first: U32,
    /// Enumerator count (enum), parameter count (function), element count (array),
    /// member count (struct, union).
    pub count: U32,
}

/// A member of a struct or union (12 bytes), in declaration order.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct MemberRecord {
    /// String offset of the name (0: an anonymous struct or union member).
    pub name: U32,
    /// Type index (bits 0..24) and the bit-field width (bits 24..32; 0: not a bit-field).
    pub ty_bits: U32,
    /// Offset of the member from the start of its struct, in bits.
    pub bit_offset: U32,
}

/// Largest type index a member record can hold.
pub const MAX_MEMBER_TYPE: u32 = (1 << 24) - 1;
/// Largest bit offset a member record can hold (a member at 512 MiB or more is not
/// recorded: its struct gets none).
pub const MAX_MEMBER_BIT_OFFSET: u64 = u32::MAX as u64;

impl MemberRecord {
    /// Type index.
    pub fn ty(&self) -> u32 {
        self.ty_bits.get() & MAX_MEMBER_TYPE
    }

    /// Width of a bit-field in bits (0: not a bit-field).
    pub fn bit_size(&self) -> u32 {
        self.ty_bits.get() >> 24
    }
}

/// Number of member records per LZ4 block of the `members` section (768 bytes).
pub const MEMBER_BLOCK: usize = 64;

/// One enumerator of an enum (12 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct EnumeratorRecord {
    /// String offset of the enumerator's name.
    pub name: U32,
    /// Value; unsigned enums store the bit pattern.
    pub value: I64,
}

/// A function with its signature (12 bytes, in LZ4 blocks of [`FUNCTION_BLOCK`]); its
/// code, if any, is a [`CodeRecord`].
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FunctionRecord {
    /// String offset of the source-level name.
    pub name: U32,
    /// Index of the first parameter record (bits 0..24) and the number of parameter
    /// records (bits 24..32).
    pub params: U32,
    /// Type index of the return type (bits 0..18) and [`crate::FuncFlags`] (bits 18..32).
    pub ret_flags: U32,
}

/// Where a function's code is (8 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CodeRecord {
    /// Start address relative to the module's `base`.
    pub addr: U32,
    /// Size of the code in bytes.
    pub size: U32,
}

/// Largest index of a function's first parameter record.
pub const MAX_PARAM_INDEX: u32 = (1 << 24) - 1;
/// Most parameters a function record can hold.
pub const MAX_PARAM_COUNT: usize = 255;
/// Largest type index a function's return type can have.
pub const MAX_RET_TYPE: u32 = (1 << 18) - 1;

impl FunctionRecord {
    /// Index of the first parameter record.
    pub fn first_param(&self) -> u32 {
        self.params.get() & MAX_PARAM_INDEX
    }

    /// Number of parameter records.
    pub fn param_count(&self) -> u32 {
        self.params.get() >> 24
    }

    /// Type index of the return type.
    pub fn ret(&self) -> u32 {
        self.ret_flags.get() & MAX_RET_TYPE
    }

    /// [`crate::FuncFlags`] bits.
    pub fn flags(&self) -> u16 {
        (self.ret_flags.get() >> 18) as u16
    }
}

/// The ELF symbol of a function whose symbol differs from its name (8 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SymbolRecord {
    /// Function index.
    pub function: U32,
    /// String offset of the symbol name.
    pub symbol: U32,
}

/// A parameter of a function (8 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ParamRecord {
    /// String offset of the name (bits 0..24), location kind (bits 24..27),
    /// [`PARAM_EXT`] (bit 27); bits 28..32 are zero.
    pub name_loc: U32,
    /// Type index (bits 0..18) and the location's short operand (bits 18..32).
    pub ty_op: U32,
}

/// Largest string offset a parameter record can hold.
pub const MAX_PARAM_NAME: u32 = (1 << 24) - 1;
/// Largest type index a parameter record can hold.
pub const MAX_PARAM_TYPE: u32 = (1 << 18) - 1;
/// Bit of `name_loc`: the location's operand is in the `param_values` section.
pub const PARAM_EXT: u32 = 1 << 27;

impl ParamRecord {
    /// String offset of the name.
    pub fn name(&self) -> u32 {
        self.name_loc.get() & MAX_PARAM_NAME
    }

    /// Type index.
    pub fn ty(&self) -> u32 {
        self.ty_op.get() & MAX_PARAM_TYPE
    }

    /// Location kind code.
    pub fn loc_kind(&self) -> u8 {
        (self.name_loc.get() >> 24 & 7) as u8
    }

    /// Whether the operand is in the `param_values` section.
    pub fn ext(&self) -> bool {
        self.name_loc.get() & PARAM_EXT != 0
    }

    /// The 14-bit short operand.
    pub fn short_op(&self) -> u32 {
        self.ty_op.get() >> 18
    }
}

/// The full 32-bit location operand of a parameter whose record has [`PARAM_EXT`] (8 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ParamValue {
    /// Index of the parameter record.
    pub param: U32,
    /// The operand, as the `value` of [`crate::Location::encode`] packs it.
    pub value: U32,
}

/// A name-index entry (4 bytes): function index (bits 0..24) and the low 8 bits of the
/// key's [`name_hash`] (bits 24..32).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct NameRecord {
    /// Function index and hash tag.
    pub entry: U32,
}

/// Largest function index the name index can hold.
pub const MAX_NAME_FUNCTION: u32 = (1 << 24) - 1;

impl NameRecord {
    /// Function index.
    pub fn function(&self) -> u32 {
        self.entry.get() & MAX_NAME_FUNCTION
    }

    /// Low 8 bits of the key's hash.
    pub fn tag(&self) -> u8 {
        (self.entry.get() >> 24) as u8
    }
}

/// The hash of the name index: 32-bit FNV-1a over the name's bytes (offset basis
/// 2166136261, prime 16777619).
pub fn name_hash(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// log2 of the number of name buckets for `entries` name index entries: the smallest
/// `k` with `2^k * 8 >= entries` (at most 24).
pub fn name_bucket_bits(entries: usize) -> u32 {
    let mut k = 0;
    while k < 24 && (8usize << k) < entries {
        k += 1;
    }
    k
}

/// The bucket of a name hash among `2^bits` buckets: its top `bits` bits.
pub fn name_bucket(hash: u32, bits: u32) -> u32 {
    if bits == 0 {
        0
    } else {
        hash >> (32 - bits)
    }
}

/// Number of caller lists per block of the `inline_callers` section.
pub const CALLEE_BLOCK: usize = 16;

/// Where a block of [`CALLEE_BLOCK`] caller lists starts (8 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct InlineBlock {
    /// Function index of the callee of the block's first list.
    pub callee: U32,
    /// Byte offset of the block's first list in its frame, decompressed.
    pub offset: U32,
}

/// Number of inline instances per block of the `instance_data` section.
pub const INSTANCE_BLOCK: usize = 16;

/// Where a block of [`INSTANCE_BLOCK`] inline instances starts (8 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct InstanceBlock {
    /// Function index of the caller of the block's first instance.
    pub caller: U32,
    /// Byte offset of the block's first instance in its frame, decompressed.
    pub offset: U32,
}

/// Number of blocks (of caller lists or of inline instances) per compressed frame.
pub const BLOCKS_PER_FRAME: usize = 64;

/// Largest decompressed frame a reader accepts (and a writer writes).
pub const MAX_FRAME_BYTES: u32 = 16 << 20;

/// A string frame holds whole strings; the writer ends one after the first string that
/// reaches this many bytes (so a frame is at most this plus one string long).
pub const STRING_FRAME_BYTES: usize = 64 << 10;

/// Number of parameter records per LZ4 block of the `params` section (1 KiB).
pub const PARAM_BLOCK: usize = 64;

/// Number of type records per LZ4 block of the `types` section (1.5 KiB).
pub const TYPE_BLOCK: usize = 64;

/// Number of function records per LZ4 block of the `functions` section (768 bytes).
pub const FUNCTION_BLOCK: usize = 64;

/// Where a compressed frame starts (8 bytes): frame `f` of a compressed section runs
/// from its `offset` to the next frame's (the last one to the end of the section).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FrameRecord {
    /// Byte offset of the frame in its compressed section.
    pub offset: U32,
    /// Length of the frame once decompressed.
    pub raw_len: U32,
}

const _: () = {
    assert!(core::mem::size_of::<SectionEntry>() == 24);
    assert!(core::mem::size_of::<Header>() == 704);
    assert!(core::mem::size_of::<MemberRecord>() == 12);
    assert!(core::mem::size_of::<FrameRecord>() == 8);
    assert!(core::mem::size_of::<InstanceBlock>() == 8);
    assert!(core::mem::size_of::<ModuleRecord>() == 72);
    assert!(core::mem::size_of::<TypeRecord>() == 24);
    assert!(core::mem::size_of::<EnumeratorRecord>() == 12);
    assert!(core::mem::size_of::<FunctionRecord>() == 12);
    assert!(core::mem::size_of::<CodeRecord>() == 8);
    assert!(core::mem::size_of::<SymbolRecord>() == 8);
    assert!(core::mem::size_of::<ParamRecord>() == 8);
    assert!(core::mem::size_of::<ParamValue>() == 8);
    assert!(core::mem::size_of::<NameRecord>() == 4);
    assert!(core::mem::size_of::<InlineBlock>() == 8);
};
