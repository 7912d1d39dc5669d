//! Borrowed views of records: functions, parameters, types and modules.

use crate::layout::*;
use crate::model::*;
use crate::Db;

/// A function of an open [`Db`].
#[derive(Clone, Copy)]
pub struct Function<'a> {
    db: &'a Db,
    index: u32,
    module: u32,
    rec: &'a FunctionRecord,
    code: Option<&'a CodeRecord>,
}

impl std::fmt::Debug for Function<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Function({} {:#x}+{:#x})",
            self.symbol(),
            self.addr(),
            self.size()
        )
    }
}

impl<'a> Function<'a> {
    pub(crate) fn new(db: &'a Db, index: u32, rec: &'a FunctionRecord) -> Self {
        let (module, code) = db.locate(index);
        Function {
            db,
            index,
            module: module as u32,
            rec,
            code,
        }
    }

    /// Index in the function table.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Source-level name.
    pub fn name(&self) -> &'a str {
        self.db.string(self.rec.name.get())
    }

    /// The ELF symbol name: differs from [`name`](Self::name) for clones (`foo.isra.0`).
    pub fn symbol(&self) -> &'a str {
        match self.db.symbol_of(self.index) {
            0 => self.name(),
            s => self.db.string(s),
        }
    }

    /// Start address (ELF address in its module); 0 for inline-only functions.
    pub fn addr(&self) -> u64 {
        self.db.code_addr(self.module as usize, self.code)
    }

    /// A declaration: the prototype of a function whose own code no DWARF of the input
    /// describes (assembly, or built without `-g`), from a unit that calls it: a code
    /// record of size 0 at the module's base, not inline-only; its parameters are where
    /// the ABI passes them.
    pub fn is_declaration(&self) -> bool {
        self.code
            .is_some_and(|c| c.addr.get() == 0 && c.size.get() == 0)
            && !self.flags().contains(FuncFlags::INLINE_ONLY)
    }

    /// Size of the code in bytes.
    pub fn size(&self) -> u32 {
        self.code.map_or(0, |c| c.size.get())
    }

    /// Flags.
    pub fn flags(&self) -> FuncFlags {
        FuncFlags::from_bits_truncate(self.rec.flags())
    }

    /// Index of the module this function belongs to.
    pub fn module_index(&self) -> usize {
        self.module as usize
    }

    /// The module this function belongs to.
    pub fn module(&self) -> Option<Module<'a>> {
        self.db.module(self.module_index())
    }

    /// Return type.
    pub fn ret(&self) -> Type<'a> {
        self.db
            .type_at(self.rec.ret())
            .unwrap_or_else(|| Type::void(self.db))
    }

    /// Parameters in declaration order. Their records are read from the LZ4 block(s)
    /// holding them, decompressed on first use; a damaged block reads as unnamed
    /// parameters of unknown location and type void (see [`Db::check_frames`]).
    pub fn params(&self) -> impl ExactSizeIterator<Item = Param<'a>> + 'a {
        let first = self.rec.first_param();
        let db = self.db;
        // Validated on open: the range is within the parameter records.
        (first..first + self.rec.param_count()).map(move |index| Param {
            db,
            rec: db.param_record(index).unwrap_or(&UNKNOWN_PARAM),
            index,
        })
    }

    /// Functions this one was inlined into.
    pub fn inlined_into(&self) -> impl Iterator<Item = Function<'a>> + 'a {
        self.db.inlined_into(self.index)
    }

    /// The inlined copies of other functions inside this function's code.
    pub fn inline_instances(&self) -> impl Iterator<Item = crate::Instance<'a>> + 'a {
        self.db.instances_in(self.index)
    }

    /// The inlined copies that hold the call made before return address `ra` (an
    /// address in this function's code), innermost first: a stack frame at `ra` expanded.
    /// The return address is the byte after the call, which belongs to the copy that
    /// made it even when the call is that copy's last instruction.
    pub fn copies_at_return(&self, ra: u64) -> Vec<crate::Instance<'a>> {
        let call = ra.saturating_sub(1);
        let mut copies: Vec<crate::Instance<'a>> = self
            .inline_instances()
            .filter(|i| !i.is_self_copy() && i.ranges().any(|(s, e)| s <= call && call < e))
            .collect();
        copies.sort_by_key(|i| std::cmp::Reverse(i.nesting()));
        copies
    }

    /// The inlined copies of this function in other functions' code.
    pub fn inlined_copies(&self) -> impl Iterator<Item = crate::Instance<'a>> + 'a {
        self.db.instances_of(self.index)
    }
}

/// What a function record in a damaged block reads as: no name, no parameters, void.
pub(crate) static UNKNOWN_FUNCTION: FunctionRecord = FunctionRecord {
    name: zerocopy::little_endian::U32::ZERO,
    params: zerocopy::little_endian::U32::ZERO,
    ret_flags: zerocopy::little_endian::U32::ZERO,
};

/// What a parameter of a damaged block reads as: unnamed, void, location unknown.
static UNKNOWN_PARAM: ParamRecord = ParamRecord {
    name_loc: zerocopy::little_endian::U32::ZERO,
    ty_op: zerocopy::little_endian::U32::ZERO,
};

/// A parameter of a [`Function`].
#[derive(Clone, Copy)]
pub struct Param<'a> {
    db: &'a Db,
    rec: &'a ParamRecord,
    index: u32,
}

impl<'a> Param<'a> {
    /// Name (empty when unnamed).
    pub fn name(&self) -> &'a str {
        self.db.string(self.rec.name())
    }

    /// Type.
    pub fn ty(&self) -> Type<'a> {
        self.db
            .type_at(self.rec.ty())
            .unwrap_or_else(|| Type::void(self.db))
    }

    /// Where the value is at function entry.
    pub fn loc(&self) -> Location {
        let kind = self.rec.loc_kind();
        let (reg, reg2, value) = if self.rec.ext() {
            let v = self.db.param_value(self.index);
            (v as u8, (v >> 8) as u8, v as i32)
        } else {
            // 14 bits: a register, two 7-bit registers, or a signed value.
            let op = self.rec.short_op();
            match kind {
                1 => (op as u8, 0, 0),
                2 => ((op & 0x7f) as u8, (op >> 7) as u8, 0),
                _ => (0, 0, (op << 18) as i32 >> 18),
            }
        };
        Location::decode(kind, reg, reg2, value).unwrap_or(Location::Unknown)
    }
}

/// A type of an open [`Db`].
#[derive(Clone, Copy)]
pub struct Type<'a> {
    db: &'a Db,
    index: u32,
    rec: &'a TypeRecord,
}

impl std::fmt::Debug for Type<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Type#{}({})", self.index, self.display())
    }
}

static VOID: TypeRecord = TypeRecord {
    kind: 0,
    flags: 0,
    quals: 0,
    reserved: 0,
    size: zerocopy::little_endian::U32::ZERO,
    name: zerocopy::little_endian::U32::ZERO,
    target: zerocopy::little_endian::U32::ZERO,
    first: zerocopy::little_endian::U32::ZERO,
    count: zerocopy::little_endian::U32::ZERO,
};

impl<'a> Type<'a> {
    pub(crate) fn new(db: &'a Db, index: u32, rec: &'a TypeRecord) -> Self {
        Type { db, index, rec }
    }

    fn void(db: &'a Db) -> Self {
        db.type_at(0).unwrap_or(Type {
            db,
            index: 0,
            rec: &VOID,
        })
    }

    /// Index in the type table.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Kind.
    pub fn kind(&self) -> TypeKind {
        TypeKind::from_code(self.rec.kind).unwrap_or(TypeKind::Void)
    }

    /// Size in bytes.
    pub fn size(&self) -> u32 {
        self.rec.size.get()
    }

    /// Name (empty when anonymous or derived).
    pub fn name(&self) -> &'a str {
        self.db.string(self.rec.name.get())
    }

    /// Flags.
    pub fn flags(&self) -> TypeFlags {
        TypeFlags::from_bits_truncate(self.rec.flags)
    }

    /// Whether an integer, char or enum is signed.
    pub fn is_signed(&self) -> bool {
        self.flags().contains(TypeFlags::SIGNED)
    }

    /// Qualifiers of a qualified type.
    pub fn qualifiers(&self) -> Qualifiers {
        Qualifiers::from_bits_truncate(self.rec.quals)
    }

    /// Pointee, element, typedef/qualifier target or prototype return type.
    pub fn target(&self) -> Option<Type<'a>> {
        if self.kind().has_target() {
            self.db.type_at(self.rec.target.get())
        } else {
            None
        }
    }

    /// Array element count (0 when unknown).
    pub fn array_len(&self) -> u32 {
        if self.kind() == TypeKind::Array {
            self.rec.count.get()
        } else {
            0
        }
    }

    /// The type with typedefs and qualifiers peeled off: what decoding uses.
    pub fn resolve(&self) -> Type<'a> {
        let mut t = *self;
        // Targets always precede their referrer, so this terminates.
        while matches!(t.kind(), TypeKind::Typedef | TypeKind::Qualified) {
            match t.target() {
                Some(next) => t = next,
                None => break,
            }
        }
        t
    }

    /// Enumerators (name, value) of an enum.
    pub fn enumerators(&self) -> impl ExactSizeIterator<Item = (&'a str, i64)> + 'a {
        let recs = if self.kind() == TypeKind::Enum {
            let first = self.rec.first.get() as usize;
            self.db
                .enumerator_records()
                .get(first..first + self.rec.count.get() as usize)
                .unwrap_or(&[])
        } else {
            &[]
        };
        let db = self.db;
        recs.iter()
            .map(move |e| (db.string(e.name.get()), e.value.get()))
    }

    /// The members of a struct or union, in declaration order: none for other kinds and
    /// for declarations (an incomplete struct); [`crate::Error::MembersNotRecorded`] when
    /// the db predates members (format version 5). Their records are read from the
    /// LZ4 block(s) holding them, decompressed on first use.
    pub fn members(&self) -> Result<crate::Members<'a>, crate::Error> {
        crate::read::members::members_of(self.db, self, self.rec.first.get(), self.rec.count.get())
    }

    /// Parameter types of a function prototype.
    pub fn params(&self) -> impl ExactSizeIterator<Item = Type<'a>> + 'a {
        let recs = if self.kind() == TypeKind::Func {
            let first = self.rec.first.get() as usize;
            self.db
                .proto_params()
                .get(first..first + self.rec.count.get() as usize)
                .unwrap_or(&[])
        } else {
            &[]
        };
        let db = self.db;
        recs.iter()
            .map(move |p| db.type_at(p.get()).unwrap_or_else(|| Type::void(db)))
    }

    /// C spelling of the type: `const char *`, `struct file *`, `size_t`, `int (*)(int)`.
    pub fn display(&self) -> String {
        self.declare("")
    }

    /// A C declaration of `name` with this type: `char *const argv[4]`, `int (*cb)(void *)`.
    pub fn declare(&self, name: &str) -> String {
        let mut t = *self;
        let mut inner = name.to_string();
        loop {
            match t.kind() {
                TypeKind::Pointer => {
                    let Some(target) = t.target() else { break };
                    inner = if matches!(target.kind(), TypeKind::Func | TypeKind::Array) {
                        format!("(*{inner})")
                    } else {
                        format!("*{inner}")
                    };
                    t = target;
                }
                TypeKind::Qualified => {
                    let Some(target) = t.target() else { break };
                    let q = qual_words(t.qualifiers());
                    if target.kind() == TypeKind::Pointer {
                        inner = join(&q, &inner);
                        t = target;
                    } else {
                        return format!("{q} {}", target.declare(&inner));
                    }
                }
                TypeKind::Array => {
                    let Some(target) = t.target() else { break };
                    inner = match t.array_len() {
                        0 => format!("{inner}[]"),
                        n => format!("{inner}[{n}]"),
                    };
                    t = target;
                }
                TypeKind::Func => {
                    let mut params: Vec<String> = t.params().map(|p| p.display()).collect();
                    if t.flags().contains(TypeFlags::VARIADIC) {
                        params.push("...".into());
                    }
                    if params.is_empty() {
                        params.push("void".into());
                    }
                    inner = format!("{inner}({})", params.join(", "));
                    match t.target() {
                        Some(ret) => t = ret,
                        None => break,
                    }
                }
                _ => break,
            }
        }
        join(&t.base_name(), &inner)
    }

    /// The spelling of a named (non-derived) type: `int`, `struct file`, `size_t`.
    pub fn base_name(&self) -> String {
        let name = self.name();
        let tag = match self.kind() {
            TypeKind::Struct => "struct",
            TypeKind::Union => "union",
            TypeKind::Enum => "enum",
            TypeKind::Void if name.is_empty() => return "void".into(),
            _ => return name.to_string(),
        };
        if name.is_empty() {
            format!("{tag} <anon>")
        } else {
            format!("{tag} {name}")
        }
    }
}

fn qual_words(q: Qualifiers) -> String {
    let mut words = Vec::new();
    for (flag, word) in [
        (Qualifiers::CONST, "const"),
        (Qualifiers::VOLATILE, "volatile"),
        (Qualifiers::RESTRICT, "restrict"),
        (Qualifiers::ATOMIC, "_Atomic"),
    ] {
        if q.contains(flag) {
            words.push(word);
        }
    }
    words.join(" ")
}

/// Join a type spelling and a declarator with C spacing: `char` + `*p` → `char *p`.
fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_string()
    } else if base.is_empty() {
        inner.to_string()
    } else if inner.starts_with('*') && base.ends_with('*') {
        format!("{base}{inner}")
    } else {
        format!("{base} {inner}")
    }
}

/// A module of an open [`Db`].
#[derive(Clone, Copy)]
pub struct Module<'a> {
    db: &'a Db,
    index: u32,
    rec: &'a ModuleRecord,
}

impl<'a> Module<'a> {
    pub(crate) fn new(db: &'a Db, index: u32, rec: &'a ModuleRecord) -> Self {
        Module { db, index, rec }
    }

    /// Index in the module table.
    pub fn index(&self) -> usize {
        self.index as usize
    }

    /// Name: `vmlinux`, a kernel module name, or a file name.
    pub fn name(&self) -> &'a str {
        self.db.string(self.rec.name.get())
    }

    /// Kind.
    pub fn kind(&self) -> ModuleKind {
        ModuleKind::from_code(self.rec.kind.get()).unwrap_or(ModuleKind::Object)
    }

    /// Build-id of its ELF file (empty when unknown).
    pub fn build_id(&self) -> &'a [u8] {
        &self.rec.build_id[..(self.rec.build_id_len.get() as usize).min(MAX_BUILD_ID)]
    }

    /// Address bias (see [`ModuleRecord::base`]).
    pub fn base(&self) -> u64 {
        self.rec.base.get()
    }

    /// Number of functions.
    pub fn function_count(&self) -> usize {
        self.rec.function_count.get() as usize
    }

    /// The module's functions, in address order.
    pub fn functions(&self) -> impl Iterator<Item = Function<'a>> + 'a {
        let first = self.rec.first_function.get() as usize;
        let db = self.db;
        (first..first + self.function_count()).filter_map(move |i| db.function(i))
    }
}

/// Lower-case hex of a build-id.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
