//! The on-disk records of sigdb version 1, exactly as `FORMAT.md` describes them.
//!
//! Every integer is little-endian and stored with the unaligned `zerocopy` byte-order
//! types, so a record can be viewed in place from any byte buffer (an mmap or a `Vec`).

use zerocopy::little_endian::{I32, I64, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// File magic: the first 8 bytes of every sigdb.
pub const MAGIC: [u8; 8] = *b"DCGSIGDB";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// Longest build-id a header or module record holds.
pub const MAX_BUILD_ID: usize = 40;
/// Section alignment inside the file.
pub const ALIGN: usize = 8;

/// The sections, in the fixed order of the header's section table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum SectionId {
    /// NUL-terminated UTF-8 strings; offset 0 is the empty string.
    Strings = 0,
    /// [`ModuleRecord`]s.
    Modules = 1,
    /// [`TypeRecord`]s.
    Types = 2,
    /// [`EnumeratorRecord`]s, referenced by enum types.
    Enumerators = 3,
    /// `u32` type indices: parameter types of function prototypes.
    ProtoParams = 4,
    /// [`FunctionRecord`]s sorted by (module, address, name, symbol).
    Functions = 5,
    /// [`ParamRecord`]s, referenced by functions.
    Params = 6,
    /// [`NameRecord`]s sorted by (name hash, name bytes, function index).
    Names = 7,
    /// [`InlineRecord`]s sorted by (callee, caller).
    Inlines = 8,
}

/// Number of sections in version 1.
pub const SECTION_COUNT: usize = 9;

/// Record size of each section, indexed by [`SectionId`]; 1 for the byte-string section.
pub const RECORD_SIZES: [usize; SECTION_COUNT] = [
    1,
    core::mem::size_of::<ModuleRecord>(),
    core::mem::size_of::<TypeRecord>(),
    core::mem::size_of::<EnumeratorRecord>(),
    4,
    core::mem::size_of::<FunctionRecord>(),
    core::mem::size_of::<ParamRecord>(),
    core::mem::size_of::<NameRecord>(),
    core::mem::size_of::<InlineRecord>(),
];

/// Human-readable section names, for error messages.
pub const SECTION_NAMES: [&str; SECTION_COUNT] = [
    "strings",
    "modules",
    "types",
    "enumerators",
    "proto_params",
    "functions",
    "params",
    "names",
    "inlines",
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

/// The file header (304 bytes), at offset 0.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`VERSION`].
    pub version: U32,
    /// Size of this header, section table included: 304.
    pub header_size: U32,
    /// [`crate::DbFlags`] bits.
    pub flags: U32,
    /// Number of section table entries: 9.
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
    /// Reserved, zero.
    pub reserved: U32,
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
    /// Reserved, zero.
    pub reserved: U32,
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
    /// First enumerator (enum) or first proto param (function).
    pub first: U32,
    /// Enumerator count (enum), parameter count (function), element count (array).
    pub count: U32,
}

/// One enumerator of an enum (16 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct EnumeratorRecord {
    /// String offset of the enumerator's name.
    pub name: U32,
    /// Reserved, zero.
    pub reserved: U32,
    /// Value; unsigned enums store the bit pattern.
    pub value: I64,
}

/// A function with its signature (32 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct FunctionRecord {
    /// Start address (ELF address in the module); 0 for inline-only functions.
    pub addr: U64,
    /// Size of the code range in bytes; 0 for inline-only functions.
    pub size: U32,
    /// String offset of the source-level name.
    pub name: U32,
    /// String offset of the ELF symbol name when it differs from `name`, else 0.
    pub symbol: U32,
    /// Type index of the return type.
    pub ret: U32,
    /// Index of the first parameter record.
    pub params: U32,
    /// Number of parameter records.
    pub param_count: U16,
    /// [`crate::FuncFlags`] bits.
    pub flags: U16,
}

/// A parameter of a function (16 bytes).
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct ParamRecord {
    /// String offset of the name (0: unnamed).
    pub name: U32,
    /// Type index.
    pub ty: U32,
    /// [`crate::LocKind`] code: where the value is at function entry.
    pub loc_kind: u8,
    /// DWARF register number (x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp,
    /// 7 rsp, 8..15 r8..r15, 17..32 xmm0..xmm15) for register locations.
    pub reg: u8,
    /// Second register of a register pair.
    pub reg2: u8,
    /// Reserved, zero.
    pub reserved: u8,
    /// Stack offset from the CFA (stack pointer at entry + 8) or a constant value.
    pub offset: I32,
}

/// A name-index entry (12 bytes): `name` is a function's name or its symbol name.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct NameRecord {
    /// [`name_hash`] of the name's bytes.
    pub hash: U32,
    /// String offset of the name.
    pub name: U32,
    /// Function index.
    pub function: U32,
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

/// An inline edge (8 bytes): `callee` was inlined into `caller`.
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct InlineRecord {
    /// Function index of the inlined function.
    pub callee: U32,
    /// Function index of the function containing the inlined copy.
    pub caller: U32,
}

const _: () = {
    assert!(core::mem::size_of::<SectionEntry>() == 24);
    assert!(core::mem::size_of::<Header>() == 304);
    assert!(core::mem::size_of::<ModuleRecord>() == 72);
    assert!(core::mem::size_of::<TypeRecord>() == 24);
    assert!(core::mem::size_of::<EnumeratorRecord>() == 16);
    assert!(core::mem::size_of::<FunctionRecord>() == 32);
    assert!(core::mem::size_of::<ParamRecord>() == 16);
    assert!(core::mem::size_of::<NameRecord>() == 12);
    assert!(core::mem::size_of::<InlineRecord>() == 8);
};
