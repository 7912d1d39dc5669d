//! The vocabulary of the format: kinds, flags and locations, shared by builder and reader.

use bitflags::bitflags;

/// What a type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum TypeKind {
    /// `void`.
    Void = 0,
    /// `_Bool` / `bool`.
    Bool = 1,
    /// An integer; signedness in [`TypeFlags::SIGNED`], width in `size`.
    Int = 2,
    /// A character type (`char`, `signed char`, `unsigned char`).
    Char = 3,
    /// A floating-point type.
    Float = 4,
    /// A pointer to `target`.
    Pointer = 5,
    /// An enum with enumerators; signedness in [`TypeFlags::SIGNED`].
    Enum = 6,
    /// A struct: name, size and members ([`crate::Type::members`]).
    Struct = 7,
    /// A union: name, size and members ([`crate::Type::members`]).
    Union = 8,
    /// An array of `count` elements of `target` (count 0: unknown or flexible).
    Array = 9,
    /// A function prototype returning `target` (pointed to by function pointers).
    Func = 10,
    /// A typedef: `name` for display, `target` for decoding.
    Typedef = 11,
    /// `target` with the [`Qualifiers`] of the record.
    Qualified = 12,
}

impl TypeKind {
    /// Decode a kind code.
    pub fn from_code(code: u8) -> Option<TypeKind> {
        use TypeKind::*;
        Some(match code {
            0 => Void,
            1 => Bool,
            2 => Int,
            3 => Char,
            4 => Float,
            5 => Pointer,
            6 => Enum,
            7 => Struct,
            8 => Union,
            9 => Array,
            10 => Func,
            11 => Typedef,
            12 => Qualified,
            _ => return None,
        })
    }

    /// Whether records of this kind use `target`.
    pub fn has_target(self) -> bool {
        matches!(
            self,
            TypeKind::Pointer
                | TypeKind::Array
                | TypeKind::Func
                | TypeKind::Typedef
                | TypeKind::Qualified
        )
    }

    /// Lower-case name used in JSON output.
    pub fn as_str(self) -> &'static str {
        use TypeKind::*;
        match self {
            Void => "void",
            Bool => "bool",
            Int => "int",
            Char => "char",
            Float => "float",
            Pointer => "pointer",
            Enum => "enum",
            Struct => "struct",
            Union => "union",
            Array => "array",
            Func => "func",
            Typedef => "typedef",
            Qualified => "qualified",
        }
    }
}

bitflags! {
    /// Per-type flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
    pub struct TypeFlags: u8 {
        /// Signed integer, char or enum.
        const SIGNED = 1;
        /// Variadic function prototype.
        const VARIADIC = 2;
        /// Declaration only (incomplete struct/union/enum).
        const DECLARATION = 4;
        /// A struct/union of at most 16 bytes whose System V classes were computed from
        /// its members (the three flags below are meaningful).
        const CLASSIFIED = 8;
        /// Its first eightbyte is of class SSE (travels in an xmm register).
        const SSE_LO = 16;
        /// Its second eightbyte is of class SSE.
        const SSE_HI = 32;
        /// Of class MEMORY although small (unaligned members: `packed`).
        const MEMORY = 64;
    }
}

bitflags! {
    /// C type qualifiers of a [`TypeKind::Qualified`] type.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
    pub struct Qualifiers: u8 {
        /// `const`.
        const CONST = 1;
        /// `volatile`.
        const VOLATILE = 2;
        /// `restrict`.
        const RESTRICT = 4;
        /// `_Atomic`.
        const ATOMIC = 8;
    }
}

bitflags! {
    /// Per-function flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
    pub struct FuncFlags: u16 {
        /// Not externally visible (`static`, or a local ELF symbol).
        const STATIC = 1 << 0;
        /// A GCC IPA-SRA clone (`foo.isra.N`).
        const CLONE_ISRA = 1 << 1;
        /// A GCC constant-propagation clone (`foo.constprop.N`).
        const CLONE_CONSTPROP = 1 << 2;
        /// A partial-inlining piece (`foo.part.N`).
        const PART = 1 << 3;
        /// The cold part of a hot/cold split (`foo.cold`).
        const COLD = 1 << 4;
        /// Another compiler-made variant (`.lto_priv`, `.localalias`, `.llvm.N`, ...).
        const CLONE_OTHER = 1 << 5;
        /// Parameters are not where the System V AMD64 ABI puts them.
        const ABI_CHANGED = 1 << 6;
        /// `DW_CC_nocall`: the compiler may have changed the calling convention.
        const NOCALL = 1 << 7;
        /// Takes `...`.
        const VARIADIC = 1 << 8;
        /// Has no out-of-line code: only inlined copies exist.
        const INLINE_ONLY = 1 << 9;
        /// No ELF symbol starts at the function's address.
        const NO_SYMBOL = 1 << 10;
        /// The input lists ftrace call sites and this function has none.
        const NOTRACE = 1 << 11;
        /// Declared `inline` in the source.
        const DECLARED_INLINE = 1 << 12;
        /// Described by an assembly unit (`.S`): DWARF gives its name and code only; the
        /// return type and parameters are not known (shown as `void f(void)`).
        const NO_TYPES = 1 << 13;
    }
}

impl FuncFlags {
    /// The flag names used by `dcg dump` and `dcg sig`, in bit order.
    pub const NAMES: [(FuncFlags, &'static str); 14] = [
        (FuncFlags::STATIC, "static"),
        (FuncFlags::CLONE_ISRA, "clone:isra"),
        (FuncFlags::CLONE_CONSTPROP, "clone:constprop"),
        (FuncFlags::PART, "part"),
        (FuncFlags::COLD, "cold"),
        (FuncFlags::CLONE_OTHER, "clone:other"),
        (FuncFlags::ABI_CHANGED, "abi-changed"),
        (FuncFlags::NOCALL, "nocall"),
        (FuncFlags::VARIADIC, "variadic"),
        (FuncFlags::INLINE_ONLY, "inline-only"),
        (FuncFlags::NO_SYMBOL, "no-symbol"),
        (FuncFlags::NOTRACE, "notrace"),
        (FuncFlags::DECLARED_INLINE, "declared-inline"),
        (FuncFlags::NO_TYPES, "no-types"),
    ];

    /// The names of the set flags, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES
            .into_iter()
            .filter(move |(f, _)| self.contains(*f))
            .map(|(_, n)| n)
    }
}

bitflags! {
    /// Whole-database flags (header).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct DbFlags: u32 {
        /// The primary input is a Linux kernel image (or its modules alone).
        const KERNEL = 1;
        /// The db holds kernel modules only, to be used beside a base kernel db.
        const MODULES_ONLY = 2;
    }
}

/// What kind of ELF file a module came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum ModuleKind {
    /// The kernel image (`vmlinux`).
    Kernel = 0,
    /// A loadable kernel module.
    KernelModule = 1,
    /// An executable (static or PIE).
    Executable = 2,
    /// A shared library.
    SharedLibrary = 3,
    /// A relocatable object file.
    Object = 4,
}

impl ModuleKind {
    /// Decode a kind code.
    pub fn from_code(code: u32) -> Option<ModuleKind> {
        Some(match code {
            0 => ModuleKind::Kernel,
            1 => ModuleKind::KernelModule,
            2 => ModuleKind::Executable,
            3 => ModuleKind::SharedLibrary,
            4 => ModuleKind::Object,
            _ => return None,
        })
    }

    /// Lower-case name for display.
    pub fn as_str(self) -> &'static str {
        match self {
            ModuleKind::Kernel => "kernel",
            ModuleKind::KernelModule => "kernel-module",
            ModuleKind::Executable => "executable",
            ModuleKind::SharedLibrary => "shared-library",
            ModuleKind::Object => "object",
        }
    }
}

/// Where a parameter's value is at the function's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Location {
    /// Not known (no location, or an expression dcg does not model).
    Unknown,
    /// In a register (DWARF register number).
    Reg(u8),
    /// Split over two registers (low part first), e.g. a 16-byte struct.
    RegPair(u8, u8),
    /// In memory at CFA + offset (the CFA is the stack pointer at entry plus 8).
    Stack(i32),
    /// Optimized out: the value is not available at entry.
    OptimizedOut,
    /// A compile-time constant (constant-propagation clones).
    Const(i32),
    /// In memory at CFA + `off` once the prologue has run, `body` bytes after the entry
    /// (unoptimized code, `-O0`, which spills every parameter to its frame: the one place
    /// a probe can read values that arrive in registers it cannot fetch, such as xmm).
    Frame {
        /// Offset from the CFA.
        off: i16,
        /// Bytes from the function's entry to the first instruction after the prologue.
        body: u16,
    },
}

impl Location {
    /// Encode as (kind code, reg, reg2, offset).
    pub fn encode(self) -> (u8, u8, u8, i32) {
        match self {
            Location::Unknown => (0, 0, 0, 0),
            Location::Reg(r) => (1, r, 0, 0),
            Location::RegPair(a, b) => (2, a, b, 0),
            Location::Stack(o) => (3, 0, 0, o),
            Location::OptimizedOut => (4, 0, 0, 0),
            Location::Const(v) => (5, 0, 0, v),
            Location::Frame { off, body } => {
                (6, 0, 0, (off as u16 as u32 | u32::from(body) << 16) as i32)
            }
        }
    }

    /// Decode from (kind code, reg, reg2, offset).
    pub fn decode(kind: u8, reg: u8, reg2: u8, offset: i32) -> Option<Location> {
        Some(match kind {
            0 => Location::Unknown,
            1 => Location::Reg(reg),
            2 => Location::RegPair(reg, reg2),
            3 => Location::Stack(offset),
            4 => Location::OptimizedOut,
            5 => Location::Const(offset),
            6 => Location::Frame {
                off: offset as u16 as i16,
                body: (offset as u32 >> 16) as u16,
            },
            _ => return None,
        })
    }
}

/// The storage format of a floating-point type ([`TypeKind::Float`]), from its size and
/// DWARF name: what its bytes mean and how the System V ABI passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatFormat {
    /// IEEE single (`float`).
    Single,
    /// IEEE double (`double`, `_Float64`).
    Double,
    /// x87 80-bit extended in 16 bytes (`long double`): in memory as a parameter, on the
    /// x87 stack as a return.
    X87,
    /// IEEE quad (`_Float128`, `__float128`): one xmm register.
    Quad,
    /// A complex number of `size` bytes (two parts of the matching format).
    Complex(u32),
}

/// The format of a floating-point type of `size` bytes named `name`.
pub fn float_format(size: u32, name: &str) -> FloatFormat {
    if name.to_ascii_lowercase().contains("complex") {
        return FloatFormat::Complex(size);
    }
    match size {
        0..=4 => FloatFormat::Single,
        5..=8 => FloatFormat::Double,
        16 if name.contains("128") => FloatFormat::Quad,
        _ => FloatFormat::X87,
    }
}

/// x86-64 name of a DWARF register number (`rdi`, `xmm0`, ...), if it has one.
pub fn x86_64_reg_name(reg: u8) -> Option<&'static str> {
    crate::regs::reg(reg).map(|r| r.name)
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let reg = |r: u8| x86_64_reg_name(r).map_or_else(|| format!("reg{r}"), str::to_string);
        match *self {
            Location::Unknown => f.write_str("?"),
            Location::Reg(r) => f.write_str(&reg(r)),
            Location::RegPair(a, b) => write!(f, "{}:{}", reg(a), reg(b)),
            Location::Stack(o) => write!(f, "stack+{o}"),
            Location::OptimizedOut => f.write_str("optimized out"),
            Location::Const(v) => write!(f, "const {v}"),
            Location::Frame { off, body } => write!(f, "frame{off:+}@+{body:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_locations_round_trip() {
        for loc in [
            Location::Frame {
                off: -20,
                body: 0x12,
            },
            Location::Frame {
                off: i16::MIN,
                body: u16::MAX,
            },
            Location::Frame { off: 16, body: 0 },
        ] {
            let (kind, reg, reg2, value) = loc.encode();
            assert_eq!(kind, 6);
            assert_eq!(Location::decode(kind, reg, reg2, value), Some(loc));
        }
        assert_eq!(
            Location::Frame {
                off: -20,
                body: 0x12
            }
            .to_string(),
            "frame-20@+0x12"
        );
        assert_eq!(Location::decode(7, 0, 0, 0), None);
        assert!(FuncFlags::NO_TYPES.names().eq(["no-types"]));
    }
}
