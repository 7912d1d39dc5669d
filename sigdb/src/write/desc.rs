//! What a [`crate::DbBuilder`] is given: descriptions of types, modules, parameters,
//! functions and inlined copies, independent of the file's encoding.

use crate::common::{FuncId, InstanceId, ModuleId, TypeId};
use crate::model::*;

/// A type, described structurally; equal descriptions are stored once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypeDesc {
    /// What it is.
    pub kind: TypeKind,
    /// Name: `int`, `size_t` (typedef), `file` (struct), enum tag; empty when anonymous.
    pub name: String,
    /// Size in bytes.
    pub size: u32,
    /// Signedness, variadic prototypes, incomplete declarations.
    pub flags: TypeFlags,
    /// Qualifiers of a [`TypeKind::Qualified`] type.
    pub quals: Qualifiers,
    /// Pointee, element, typedef/qualifier target or prototype return type.
    pub target: Option<TypeId>,
    /// Array element count (0 when unknown).
    pub count: u32,
    /// Enumerators of an enum: name and value (bit pattern for unsigned enums).
    pub enumerators: Vec<(String, i64)>,
    /// Parameter types of a function prototype.
    pub params: Vec<TypeId>,
    /// Members of an anonymous struct or union, part of its identity (two anonymous
    /// structs differ by their members). A named one is identified by its name, size and
    /// flags, as a pointer to it may be among its members: its members are given apart,
    /// with [`crate::DbBuilder::set_members`], once its id exists.
    pub members: Vec<MemberDesc>,
}

/// A member of a struct or union.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemberDesc {
    /// Name (empty for an anonymous struct or union member).
    pub name: String,
    /// Type.
    pub ty: TypeId,
    /// Offset from the start of the struct, in bits (below 2^32).
    pub bit_offset: u64,
    /// Width of a bit-field (1 to 255), 0 when not a bit-field.
    pub bit_size: u8,
}

impl TypeDesc {
    fn new(kind: TypeKind, name: &str, size: u32) -> TypeDesc {
        TypeDesc {
            kind,
            name: name.to_string(),
            size,
            flags: TypeFlags::empty(),
            quals: Qualifiers::empty(),
            target: None,
            count: 0,
            enumerators: Vec::new(),
            params: Vec::new(),
            members: Vec::new(),
        }
    }

    /// `void`.
    pub fn void() -> TypeDesc {
        TypeDesc::new(TypeKind::Void, "void", 0)
    }

    /// A base type of the given kind (`Bool`, `Int`, `Char`, `Float`).
    pub fn base(kind: TypeKind, name: &str, size: u32, signed: bool) -> TypeDesc {
        let mut t = TypeDesc::new(kind, name, size);
        t.flags.set(TypeFlags::SIGNED, signed);
        t
    }

    /// A pointer to `target`.
    pub fn pointer(target: TypeId, size: u32) -> TypeDesc {
        let mut t = TypeDesc::new(TypeKind::Pointer, "", size);
        t.target = Some(target);
        t
    }

    /// A struct, union or enum reference by name and size (enumerators added separately).
    pub fn aggregate(kind: TypeKind, name: &str, size: u32) -> TypeDesc {
        TypeDesc::new(kind, name, size)
    }

    /// A typedef `name` of `target`.
    pub fn typedef(name: &str, target: TypeId, size: u32) -> TypeDesc {
        let mut t = TypeDesc::new(TypeKind::Typedef, name, size);
        t.target = Some(target);
        t
    }

    /// `target` with qualifiers.
    pub fn qualified(quals: Qualifiers, target: TypeId, size: u32) -> TypeDesc {
        let mut t = TypeDesc::new(TypeKind::Qualified, "", size);
        t.quals = quals;
        t.target = Some(target);
        t
    }

    /// An array of `count` elements.
    pub fn array(element: TypeId, count: u32, size: u32) -> TypeDesc {
        let mut t = TypeDesc::new(TypeKind::Array, "", size);
        t.target = Some(element);
        t.count = count;
        t
    }

    /// A function prototype.
    pub fn function(ret: TypeId, params: Vec<TypeId>, variadic: bool) -> TypeDesc {
        let mut t = TypeDesc::new(TypeKind::Func, "", 0);
        t.target = Some(ret);
        t.params = params;
        t.flags.set(TypeFlags::VARIADIC, variadic);
        t
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = TypeId> + '_ {
        self.target.into_iter().chain(self.params.iter().copied())
    }
}

/// A module (an ELF file) the functions come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleDesc {
    /// `vmlinux`, a kernel module name, or a file name.
    pub name: String,
    /// What it is.
    pub kind: ModuleKind,
    /// GNU build-id of the file (may be empty).
    pub build_id: Vec<u8>,
    /// Address bias (see [`crate::layout::ModuleRecord::base`]).
    pub base: u64,
}

/// A parameter of a function being added.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamDesc {
    /// Name (empty when unnamed).
    pub name: String,
    /// Type.
    pub ty: TypeId,
    /// Where the value is at entry.
    pub loc: Location,
}

/// A function being added.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionDesc {
    /// The module it belongs to.
    pub module: ModuleId,
    /// Start address (0 for inline-only functions).
    pub addr: u64,
    /// Code size (0 for inline-only functions).
    pub size: u32,
    /// Source-level name.
    pub name: String,
    /// ELF symbol name when it differs from `name` (clones: `foo.isra.0`).
    pub symbol: Option<String>,
    /// Return type.
    pub ret: TypeId,
    /// Parameters in declaration order.
    pub params: Vec<ParamDesc>,
    /// Flags.
    pub flags: FuncFlags,
}

/// One inlined copy of a function (a `DW_TAG_inlined_subroutine`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceDesc {
    /// The inlined function.
    pub callee: FuncId,
    /// The out-of-line function whose code holds the copy.
    pub caller: FuncId,
    /// The enclosing instance when the copy sits inside another inlined copy; it must
    /// have been added before this one and have the same caller.
    pub parent: Option<InstanceId>,
    /// Code ranges `[start, end)`, in DWARF order.
    pub ranges: Vec<(u64, u64)>,
    /// First address executed in the copy.
    pub entry_pc: u64,
    /// File of the call site (empty when unknown).
    pub call_file: String,
    /// Line of the call site (0 when unknown).
    pub call_line: u32,
    /// Where each parameter of the callee is at `entry_pc`, in the callee's order.
    pub params: Vec<Location>,
}
