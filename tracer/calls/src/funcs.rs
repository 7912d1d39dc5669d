//! The functions of a stream, interned: what rendering needs to know about each function,
//! worked out once. A name (or a db function) is interned to a [`FuncInfo`]: its db entry
//! and how its return value and each parameter are rendered (`Render`). A small
//! direct-mapped cache of recent names spares most text lines even the hash lookup.

use std::rc::Rc;

use sigdb::{Function, Type, TypeKind};

use dcg_dbset::symbols::SymbolMap;
use dcg_dbset::DbSet;
use dcg_fgraph as fgraph;
use dcg_render::{
    aggregate_label, is_hex_of, pointer_is_hex, push_aggregate, render_resolved, Role,
};
use rustc_hash::FxHashMap;

/// Slots of the cache of interned names.
const RECENT: usize = 256;

/// The slot of `name` in the cache of interned names: a hash of its length and its
/// first and last 8 bytes.
fn recent_slot(name: &str) -> usize {
    let b = name.as_bytes();
    let n = b.len();
    let word = |at: usize| {
        b.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let edges = match n {
        8.. => word(0) ^ word(n - 8).rotate_left(29),
        1..8 => u64::from(b[0]) << 8 | u64::from(b[n - 1]),
        0 => 0,
    };
    let h = edges ^ n as u64;
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % RECENT
}

/// A parameter of a known function, resolved once.
struct ParamInfo<'a> {
    name: &'a str,
    render: Render<'a>,
    /// Where the value is at entry.
    loc: sigdb::Location,
    /// No earlier parameter has the same name (so a by-position match is the by-name one).
    first: bool,
}

/// Per-name lookup result, interned, with what rendering needs resolved once.
pub struct FuncInfo<'a> {
    /// The name as the stream gives it (`func`, or `func [module]` for module functions).
    pub name: String,
    /// Its db entry, when the db knows it.
    pub func: Option<Function<'a>>,
    /// The module saved calls name (user-space sources name their binary; kernel
    /// functions name their module, vmlinux none).
    pub module_label: Option<String>,
    /// Return type (`None`: function unknown).
    ret: Option<Render<'a>>,
    params: Vec<ParamInfo<'a>>,
    /// What saved calls name a db function by, looked up once (a record per call): its
    /// ELF symbol, and its module when it is a kernel module's.
    symbol: Option<&'a str>,
    kernel_module: Option<&'a str>,
    /// The symbol (or stream name) demangled, when it is a C++ or Rust one.
    demangled: Option<dcg_render::names::Demangled>,
    /// What the kernel's interrupt entry code makes of it (kernel functions only).
    entry_role: Option<crate::tree::EntryRole>,
    /// Where it runs, in a session tracing user and kernel functions together (issue
    /// 42); `None` in a session of one side.
    pub space: Option<crate::saved_format::Space>,
}

/// How a value of one type is rendered, worked out once per parameter or return type.
struct Render<'a> {
    ty: Type<'a>,
    /// `ty` with typedefs and qualifiers peeled off.
    resolved: Type<'a>,
    /// A pointer (or array or function): hex unless NULL or an error.
    pointer: bool,
    /// For a struct or union passed by value, its label.
    label: Option<String>,
    /// Names of what pointers land on (`&init_user_ns`, `filldir64`), when known.
    names: Option<&'a SymbolMap>,
    /// Whether a pointer of this type points to a function (`None`: not known from the
    /// type, e.g. `void *`): decides `name` against `&name`.
    to_func: Option<bool>,
    /// An integer typedef the kernel's flag tables name values of (`gfp_t`): the tables,
    /// the typedef chain, and the integer type.
    flags: Option<(Rc<FlagTables>, Vec<&'a str>, Type<'a>)>,
}

/// The kernel's flag tables (`dcg-kflags`), which name some typedefs' values.
pub use dcg_kflags::FlagTables;

/// What values are named by besides their types: pointers by the symbols they land on,
/// integer typedefs' values by the kernel's flag tables.
#[derive(Clone, Default)]
struct Namers<'a> {
    names: Option<&'a SymbolMap>,
    flags: Option<Rc<FlagTables>>,
}

impl dcg_deref::Symbols for &Namers<'_> {
    fn pointer_text(&self, addr: u64, to_func: bool) -> Option<String> {
        self.names?.pointer_text_as(addr, Some(to_func))
    }

    fn typedef_text(&self, names: &[&str], value: u64) -> Option<String> {
        self.flags.as_ref()?.render(names.iter().copied(), value)
    }
}

impl<'a> Render<'a> {
    fn new(ty: Type<'a>, namers: &Namers<'a>) -> Render<'a> {
        let resolved = ty.resolve();
        let names = namers.names;
        let flags = namers.flags.as_ref().and_then(|tables| {
            let (chain, int) = dcg_render::typedefs::int_typedef_chain(ty)?;
            tables
                .knows(&chain)
                .then(|| (Rc::clone(tables), chain, int))
        });
        Render {
            flags,
            ty,
            resolved,
            pointer: matches!(
                resolved.kind(),
                TypeKind::Pointer | TypeKind::Array | TypeKind::Func
            ),
            label: matches!(resolved.kind(), TypeKind::Struct | TypeKind::Union)
                .then(|| aggregate_label(ty, resolved)),
            names,
            to_func: match resolved.kind() {
                TypeKind::Func => Some(true),
                TypeKind::Pointer => resolved
                    .target()
                    .map(|t| t.resolve().kind())
                    .filter(|k| *k != TypeKind::Void)
                    .map(|k| k == TypeKind::Func),
                _ => None,
            },
        }
    }

    /// Append a value held in two words (`lo` first): a struct as `(struct s){0x1, 0x2}`,
    /// anything else (a 128-bit integer) as one hex number.
    fn push_pair(&self, out: &mut String, lo: u64, hi: u64) {
        match &self.label {
            Some(l) => {
                use std::fmt::Write as _;
                let _ = write!(out, "({l}){{{lo:#x}, {hi:#x}}}");
            }
            None => {
                let v = (u128::from(hi) << 64) | u128::from(lo);
                use std::fmt::Write as _;
                let _ = write!(out, "{v:#x}");
            }
        }
    }

    /// Append `raw` (printed as `text`) rendered by the type: what [`render_resolved`]
    /// writes; false (nothing appended) for void.
    // `always`: since this moved out of decode.rs the compiler no longer inlines it into
    // `push_arg` / `ret_into`, a call per rendered value (about 1% more instructions).
    #[inline(always)]
    fn push(&self, out: &mut String, text: &str, raw: u64, role: Role) -> bool {
        if let Some((tables, chain, int)) = &self.flags {
            let v = dcg_render::truncate(raw, int.size(), int.is_signed());
            if let Some(named) = tables.render(chain.iter().copied(), v) {
                out.push_str(&named);
                return true;
            }
        }
        if let (true, Some(names)) = (self.pointer && pointer_is_hex(raw), self.names) {
            if let Some(name) = names.pointer_text_as(raw, self.to_func) {
                out.push_str(&name);
                return true;
            }
        }
        if self.pointer && pointer_is_hex(raw) && is_hex_of(text, raw) {
            // Already printed the way it would be rendered.
            out.push_str(text);
            return true;
        }
        match &self.label {
            Some(l) => {
                push_aggregate(out, l, raw);
                true
            }
            None => render_resolved(out, self.ty, self.resolved, raw, role),
        }
    }
}

impl<'a> FuncInfo<'a> {
    fn new(name: String, func: Option<Function<'a>>, names: &Namers<'a>) -> FuncInfo<'a> {
        let ret = func.map(|f| Render::new(f.ret(), names));
        let mut params: Vec<ParamInfo<'a>> = Vec::new();
        for p in func.iter().flat_map(|f| f.params()) {
            let name = p.name();
            let first = !params.iter().any(|q| q.name == name);
            params.push(ParamInfo {
                name,
                render: Render::new(p.ty(), names),
                loc: p.loc(),
                first,
            });
        }
        let demangled = dcg_render::names::demangle(func.map_or(name.as_str(), |f| f.symbol()));
        let in_vmlinux = func.is_none_or(|f| {
            f.module()
                .is_none_or(|m| m.kind() == sigdb::ModuleKind::Kernel)
        });
        let entry_role = in_vmlinux
            .then(|| crate::tree::EntryRole::of(func.map_or(name.as_str(), |f| f.symbol())))
            .flatten();
        FuncInfo {
            entry_role,
            space: None,
            name,
            func,
            demangled,
            module_label: None,
            ret,
            params,
            symbol: func.map(|f| f.symbol()),
            kernel_module: func
                .and_then(|f| f.module())
                .filter(|m| m.kind() == sigdb::ModuleKind::KernelModule)
                .map(|m| m.name()),
        }
    }

    /// The function and module a saved call names: a db function by its ELF symbol and
    /// its module label, else its kernel module; a function the db does not know by its
    /// name in the stream, without module.
    pub fn saved_names(&self) -> (&str, Option<&str>) {
        match self.symbol {
            Some(symbol) => (symbol, self.module_label.as_deref().or(self.kernel_module)),
            None => (&self.name, None),
        }
    }

    /// What the kernel's interrupt entry code makes of it.
    pub(crate) fn entry_role(&self) -> Option<crate::tree::EntryRole> {
        self.entry_role
    }

    /// The name shown in call trees: demangled without parameters for C++ and Rust
    /// (`ns::get<int>`; the arguments follow it), else the name as the stream gives it.
    pub fn shown(&self) -> &str {
        self.demangled.as_ref().map_or(&self.name, |d| &d.short)
    }

    /// The demangled name in full (`int ns::get<int>(ns::Box<int>)`), for C++ and Rust
    /// symbols: saved calls keep it beside the symbol.
    pub fn demangled(&self) -> Option<&str> {
        self.demangled.as_ref().map(|d| d.full.as_str())
    }

    /// The first parameter named `name`; `i` is where it usually is (the argument's
    /// position), tried first.
    #[inline]
    fn param(&self, i: usize, name: &str) -> Option<&ParamInfo<'a>> {
        match self.params.get(i) {
            Some(p) if p.first && p.name == name => Some(p),
            _ => self.params.iter().find(|p| p.name == name),
        }
    }

    /// Append argument `name`'s `value` (argument number `i`) rendered by the type of the
    /// parameter of that name; false (nothing appended) when the function, parameter or
    /// number is unknown.
    pub fn push_arg(&self, out: &mut String, i: usize, name: &str, value: &str) -> bool {
        let Some(p) = self.param(i, name) else {
            return false;
        };
        // The first word of the value is the number (`3 [ENUM]`); `parse_number` stops at
        // the same place unless the value starts with blanks.
        let raw = if value
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_whitespace)
        {
            value
                .split_ascii_whitespace()
                .next()
                .and_then(fgraph::parse_number)
        } else {
            fgraph::parse_number(value)
        };
        let Some(raw) = raw else {
            return false;
        };
        p.render.push(out, value, raw, Role::Arg)
    }

    /// Each parameter passed in an argument register, rendered by its type from `regs`,
    /// the six integer argument registers at entry in System V order (what binary
    /// function_graph records carry): `(name, value)` pushed through `push`. A register
    /// with an entry in `strings` (read by the source) shows the string it points to; a
    /// parameter on the stack is read from `stack` (the words from the CFA up, when the
    /// source read them), one in a register pair from both registers. Parameters
    /// elsewhere (optimized out) are left out; a function the db does not know has none.
    pub fn reg_args(
        &self,
        regs: &[u64],
        strings: &[(usize, Option<String>)],
        stack: &[u64],
        mut push: impl FnMut(&str, &mut dyn FnMut(&mut String)),
    ) {
        for p in &self.params {
            let (raw, i) = match p.loc {
                sigdb::Location::Reg(r) => {
                    let Some(i) = sigdb::regs::sysv_arg_index(r) else {
                        continue;
                    };
                    let Some(&raw) = regs.get(i) else {
                        continue;
                    };
                    (raw, Some(i))
                }
                // Two registers (a 9- to 16-byte struct): rendered whole.
                sigdb::Location::RegPair(a, b) => {
                    let (Some(ia), Some(ib)) = (
                        sigdb::regs::sysv_arg_index(a),
                        sigdb::regs::sysv_arg_index(b),
                    ) else {
                        continue;
                    };
                    let (Some(&lo), Some(&hi)) = (regs.get(ia), regs.get(ib)) else {
                        continue;
                    };
                    push(p.name, &mut |out: &mut String| {
                        p.render.push_pair(out, lo, hi)
                    });
                    continue;
                }
                // One word on the stack, CFA-relative (the CFA is the stack pointer at
                // entry + 8, where the first stack word was read).
                sigdb::Location::Stack(off) if off >= 0 && off % 8 == 0 => {
                    let Some(&raw) = stack.get(off as usize / 8) else {
                        continue;
                    };
                    (raw, None)
                }
                _ => continue,
            };
            if let (true, Some(i)) = (raw != 0, i) {
                if let Some((_, Some(text))) = strings.iter().find(|(j, _)| *j == i) {
                    push(p.name, &mut |out: &mut String| {
                        out.push_str(&dcg_render::render_string(text))
                    });
                    continue;
                }
            }
            push(p.name, &mut |out: &mut String| {
                let mut buf = [0u8; 18];
                let text = dcg_render::hex_text(raw, &mut buf);
                if !p.render.push(out, text, raw, Role::Arg) {
                    out.push_str(text);
                }
            });
        }
    }

    /// Arguments where an inlined copy of this function has its parameters at its
    /// first instruction (`locs`, in parameter order): read from `regs` (general
    /// registers by DWARF number) and `stack` (words from the stack pointer up), or
    /// constants, rendered as `role` says. Parameters elsewhere are shown as `?`.
    pub fn located_args(
        &self,
        locs: impl Iterator<Item = sigdb::Location>,
        regs: &[u64],
        stack: &[u64],
        role: Role,
        mut push: impl FnMut(&str, &mut dyn FnMut(&mut String)),
    ) {
        use sigdb::Location;
        for (p, loc) in self.params.iter().zip(locs) {
            let raw = match loc {
                Location::Reg(r) => regs.get(usize::from(r)).copied(),
                Location::RegPair(a, b) => {
                    if let (Some(&lo), Some(&hi)) =
                        (regs.get(usize::from(a)), regs.get(usize::from(b)))
                    {
                        push(p.name, &mut |out: &mut String| {
                            p.render.push_pair(out, lo, hi)
                        });
                        continue;
                    }
                    None
                }
                // `DW_OP_breg7` inside a function: the stack pointer there (the db keeps
                // it as an offset from the stack pointer + 8).
                Location::Stack(off) if off >= -8 && (off + 8) % 8 == 0 => {
                    stack.get((off + 8) as usize / 8).copied()
                }
                Location::Const(v) => Some(i64::from(v) as u64),
                _ => None,
            };
            match raw {
                Some(raw) => push(p.name, &mut |out: &mut String| {
                    let mut buf = [0u8; 18];
                    let text = dcg_render::hex_text(raw, &mut buf);
                    if !p.render.push(out, text, raw, role) {
                        out.push_str(text);
                    }
                }),
                None => push(p.name, &mut |out: &mut String| out.push('?')),
            }
        }
    }

    /// How many return registers the return type takes: 0 (void or unknown), 1, or 2 (9
    /// to 16 bytes: rax and rdx).
    pub fn ret_words(&self) -> usize {
        match &self.ret {
            None => 0,
            Some(r) if r.resolved.kind() == TypeKind::Void => 0,
            Some(r) if (9..=16).contains(&r.resolved.size()) => 2,
            Some(_) => 1,
        }
    }

    /// Render a two-register return value (low word `lo` in rax, `hi` in rdx) into `buf`
    /// (cleared first); never an error.
    pub fn ret_pair_into(&self, lo: u64, hi: u64, buf: &mut String) -> Option<bool> {
        buf.clear();
        let r = self.ret.as_ref()?;
        r.push_pair(buf, lo, hi);
        Some(false)
    }

    /// Render the return value from `raw` into `buf` (cleared first): whether it is an
    /// error, `None` for void (nothing to show).
    pub fn ret_into(&self, raw_text: &str, raw: Option<u64>, buf: &mut String) -> Option<bool> {
        buf.clear();
        match (&self.ret, raw) {
            (Some(r), Some(v)) => {
                if !r.push(buf, raw_text, v, Role::Return) {
                    return None;
                }
                Some(buf.starts_with("-E") || buf.starts_with("ERR_PTR("))
            }
            _ => {
                buf.push_str(raw_text);
                buf.push_str(" (raw)");
                Some(false)
            }
        }
    }
}

/// Index of an interned function.
pub type FuncId = u32;

/// The interned functions of a stream, looked up in a [`DbSet`].
pub struct FuncTable<'a> {
    set: &'a DbSet,
    ids: FxHashMap<String, FuncId>,
    /// A direct-mapped cache of `ids` for names without a module (checked by name).
    recent: Box<[FuncId; RECENT]>,
    funcs: Vec<FuncInfo<'a>>,
    namers: Namers<'a>,
    /// A session tracing both sides (issue 42): the dbs of the kernel functions
    /// ([`FuncTable::intern_kernel`]); the functions of `set` are the user side's.
    kernel: Option<&'a DbSet>,
}

impl<'a> FuncTable<'a> {
    /// The dbs functions are looked up in.
    pub fn set(&self) -> &'a DbSet {
        self.set
    }

    /// An empty table over `set`.
    pub fn new(set: &'a DbSet) -> FuncTable<'a> {
        FuncTable {
            set,
            ids: FxHashMap::default(),
            recent: Box::new([FuncId::MAX; RECENT]),
            funcs: Vec::new(),
            namers: Namers::default(),
            kernel: None,
        }
    }

    /// Make this the table of a session tracing both sides (issue 42): the functions of
    /// `set` are the user side's, the kernel's are interned from `kernel` with
    /// [`FuncTable::intern_kernel`], and every function says which side it is on.
    pub fn set_kernel_set(&mut self, kernel: &'a DbSet) {
        self.kernel = Some(kernel);
        for f in &mut self.funcs {
            f.space.get_or_insert(crate::saved_format::Space::User);
        }
    }

    /// Intern kernel function `name` (of kernel module `module`; `None`: vmlinux), in a
    /// table made for both sides ([`FuncTable::set_kernel_set`]; without it, as
    /// [`FuncTable::intern`]). Kept apart from a user function of the same name.
    pub fn intern_kernel(&mut self, name: &str, module: Option<&str>) -> FuncId {
        let Some(kernel) = self.kernel else {
            return self.intern(name, module);
        };
        let key = match module {
            None => format!("{name}\u{1}kernel"),
            Some(m) => format!("{name} [{m}]\u{1}kernel"),
        };
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.funcs.len() as FuncId;
        let shown = match module {
            None => name.to_string(),
            Some(m) => format!("{name} [{m}]"),
        };
        let mut info = FuncInfo::new(shown, kernel.find(name, module), &self.namers);
        info.space = Some(crate::saved_format::Space::Kernel);
        self.funcs.push(info);
        self.ids.insert(key, id);
        id
    }

    /// The side a user function of this table is on (`None` unless it is made for both).
    fn user_space(&self) -> Option<crate::saved_format::Space> {
        self.kernel.map(|_| crate::saved_format::Space::User)
    }

    /// Name pointers that land on a symbol of `names` (kallsyms: `&init_user_ns`,
    /// `__d_free`) in the functions interned from now on.
    pub fn set_pointer_names(&mut self, names: &'a SymbolMap) {
        self.namers.names = Some(names);
    }

    /// The names pointers are given ([`FuncTable::set_pointer_names`]), if any.
    pub fn pointer_names(&self) -> Option<&'a SymbolMap> {
        self.namers.names
    }

    /// Name the values of the integer typedefs `tables` has (the kernel's `gfp_t`:
    /// `GFP_KERNEL|__GFP_ZERO`), as the kernel's trace events print them, in the
    /// functions' parameters and return values interned from now on.
    pub fn set_flag_tables(&mut self, tables: Rc<FlagTables>) {
        self.namers.flags = Some(tables);
    }

    /// The names this table gives values (pointers by symbol, integer typedefs by the
    /// kernel's flag tables), for `dcg-deref`'s members.
    pub fn symbols(&self) -> impl dcg_deref::Symbols + '_ {
        &self.namers
    }

    /// The function of `id`.
    #[inline]
    pub fn get(&self, id: FuncId) -> &FuncInfo<'a> {
        &self.funcs[id as usize]
    }

    /// Intern a db function directly (sources that know the function, e.g. probes), named
    /// by its symbol; saved calls name `module` as its module.
    pub fn intern_function(&mut self, func: Function<'a>, module: Option<&str>) -> FuncId {
        let key = func.symbol();
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = self.funcs.len() as FuncId;
        let mut info = FuncInfo::new(key.to_string(), Some(func), &self.namers);
        info.module_label = module.map(str::to_string);
        info.space = self.user_space();
        self.funcs.push(info);
        self.ids.insert(key.to_string(), id);
        id
    }

    /// Intern `name` (of `module`), looked up in the db once.
    pub fn intern(&mut self, name: &str, module: Option<&str>) -> FuncId {
        if module.is_some() {
            return self.intern_map(name, module);
        }
        let slot = recent_slot(name);
        let id = self.recent[slot];
        if self.funcs.get(id as usize).is_some_and(|f| f.name == name) {
            return id;
        }
        let id = self.intern_map(name, None);
        self.recent[slot] = id;
        id
    }

    fn intern_map(&mut self, name: &str, module: Option<&str>) -> u32 {
        let key_owned;
        let key = match module {
            None => name,
            Some(m) => {
                key_owned = format!("{name} [{m}]");
                &key_owned
            }
        };
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = self.funcs.len() as u32;
        let func = self.set.find(name, module);
        let mut info = FuncInfo::new(key.to_string(), func, &self.namers);
        info.space = self.user_space();
        self.funcs.push(info);
        self.ids.insert(key.to_string(), id);
        id
    }
}
