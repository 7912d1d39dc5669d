//! Building a sigdb: collect modules, types and functions in any order, then write a
//! canonical, byte-identical file.
//!
//! Canonical means the output depends only on *what* was added, not on the order:
//! functions are sorted, exact duplicates merged, types renumbered depth-first from the
//! sorted functions, parameter lists deduplicated in that same walk, and the string
//! section laid out from the set of strings alone. So a parallel producer gets the same
//! bytes for any thread count.

use std::collections::hash_map::DefaultHasher;
use std::hash::{BuildHasher, Hash, Hasher};
use std::path::Path;

use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap, FxHashSet};
use zerocopy::IntoBytes;

pub use crate::desc::{FunctionDesc, ModuleDesc, ParamDesc, TypeDesc};
use crate::instances::{self, InstanceDesc, InstanceId};
use crate::layout::*;
use crate::model::*;
use crate::Error;

/// A type added to a [`DbBuilder`] (valid only for that builder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(u32);

/// A module added to a [`DbBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(u32);

/// A function added to a [`DbBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub(crate) u32);

macro_rules! id_index {
    ($($t:ident),*) => {$(
        impl $t {
            /// Position in the order of addition (0, 1, 2, ...).
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    )*};
}
id_index!(TypeId, ModuleId, FuncId);

/// Collects a database and writes it.
#[derive(Debug, Default)]
pub struct DbBuilder {
    flags: DbFlags,
    build_id: Vec<u8>,
    machine: u32,
    modules: Vec<ModuleDesc>,
    types: Vec<TypeDesc>,
    /// The types by content: (hash of the description, id); each description is
    /// stored once, in `types`.
    type_ids: hashbrown::HashTable<(u64, TypeId)>,
    functions: Vec<FunctionDesc>,
    inlines: Vec<(FuncId, FuncId)>,
    instances: Vec<InstanceDesc>,
}

impl DbBuilder {
    /// An empty builder for inputs of the given ELF machine (62 for x86-64).
    pub fn new(machine: u32) -> DbBuilder {
        DbBuilder {
            machine,
            ..DbBuilder::default()
        }
    }

    /// Set the header flags.
    pub fn set_flags(&mut self, flags: DbFlags) {
        self.flags = flags;
    }

    /// Set the primary build-id (kernel image or binary); at most 40 bytes are kept.
    pub fn set_build_id(&mut self, id: &[u8]) {
        self.build_id = id[..id.len().min(MAX_BUILD_ID)].to_vec();
    }

    /// Add a module; functions refer to it by the returned id.
    pub fn add_module(&mut self, mut module: ModuleDesc) -> ModuleId {
        module.build_id.truncate(MAX_BUILD_ID);
        self.modules.push(module);
        ModuleId(self.modules.len() as u32 - 1)
    }

    /// The base address of module `id` (0 for an unknown id).
    pub fn module_base(&self, id: ModuleId) -> u64 {
        self.modules.get(id.0 as usize).map_or(0, |m| m.base)
    }

    /// Add (or find) a type. Types it refers to must have been added first.
    pub fn add_type(&mut self, desc: TypeDesc) -> TypeId {
        let hash = FxBuildHasher.hash_one(&desc);
        if let Some(id) = self.find_type(hash, &desc) {
            return id;
        }
        let id = TypeId(self.types.len() as u32);
        self.types.push(desc);
        self.type_ids.insert_unique(hash, (hash, id), |&(h, _)| h);
        id
    }

    /// The id of a type already added with the description `desc` (of hash `hash`).
    fn find_type(&self, hash: u64, desc: &TypeDesc) -> Option<TypeId> {
        self.type_ids
            .find(hash, |&(h, id)| {
                h == hash && self.types[id.index()] == *desc
            })
            .map(|&(_, id)| id)
    }

    /// The description of an added type.
    pub fn type_desc(&self, id: TypeId) -> &TypeDesc {
        &self.types[id.0 as usize]
    }

    /// Add a function.
    pub fn add_function(&mut self, func: FunctionDesc) -> FuncId {
        self.functions.push(func);
        FuncId(self.functions.len() as u32 - 1)
    }

    /// Record that `callee` was inlined into `caller`.
    pub fn add_inline(&mut self, callee: FuncId, caller: FuncId) {
        self.inlines.push((callee, caller));
    }

    /// Record an inlined copy of a function. Its parent (if any) must already be added.
    pub fn add_instance(&mut self, instance: InstanceDesc) -> InstanceId {
        self.instances.push(instance);
        InstanceId(self.instances.len() as u32 - 1)
    }

    /// The id the next instance added gets.
    pub fn next_instance_id(&self) -> InstanceId {
        InstanceId(self.instances.len() as u32)
    }

    /// Record inlined copies, in order: they get the ids from [`Self::next_instance_id`]
    /// on. The list becomes the builder's own when none was added before (no copy).
    pub fn add_instances(&mut self, instances: Vec<InstanceDesc>) {
        if self.instances.is_empty() {
            self.instances = instances;
        } else {
            self.instances.extend(instances);
        }
    }

    /// Number of functions added so far.
    pub fn function_count(&self) -> usize {
        self.functions.len()
    }

    /// Write the database to `path` as every output is written ([`dcg_outfile`]: a
    /// regular file is replaced atomically, a device or FIFO written in place).
    pub fn write_to(&self, path: &Path) -> Result<(), Error> {
        let bytes = self.finish()?;
        Ok(dcg_outfile::write(path, &bytes)?)
    }

    /// Serialize to bytes.
    pub fn finish(&self) -> Result<Vec<u8>, Error> {
        // The strings are laid out while the functions are sorted and the caller lists,
        // which need the order alone, encoded: an exact duplicate the sort merges has the
        // strings of the function written in its place.
        let (order, strings) = rayon::join(
            || {
                let order = canonical_order(self)?;
                let callers = caller_lists(self, &order.1)?;
                Ok::<_, Error>((order, callers))
            },
            || StringTable::laid_out(self.strings_written().into_iter()),
        );
        let ((order, callers), strings) = (order?, strings?);
        Writer::new(self, &strings).write(&order, callers)
    }

    /// Every string the writer will store: the names of the modules, the functions, their
    /// symbols and parameters, of the types they reach and of those types' enumerators,
    /// and the instances' call files.
    fn strings_written(&self) -> FxHashSet<&str> {
        // About one distinct string per function (most parameter and type names repeat).
        let mut out: FxHashSet<&str> =
            FxHashSet::with_capacity_and_hasher(self.functions.len() * 2, FxBuildHasher);
        out.extend(["", "void"]);
        let mut seen = vec![false; self.types.len()];
        let mut stack = Vec::new();
        for f in &self.functions {
            out.insert(&f.name);
            if let Some(s) = &f.symbol {
                out.insert(s);
            }
            stack.push(f.ret);
            for p in &f.params {
                out.insert(&p.name);
                stack.push(p.ty);
            }
            while let Some(t) = stack.pop() {
                if std::mem::replace(&mut seen[t.0 as usize], true) {
                    continue;
                }
                let desc = &self.types[t.0 as usize];
                out.insert(&desc.name);
                out.extend(desc.enumerators.iter().map(|(n, _)| n.as_str()));
                stack.extend(desc.children());
            }
        }
        out.extend(self.modules.iter().map(|m| m.name.as_str()));
        out.extend(self.instances.iter().map(|x| x.call_file.as_str()));
        out
    }

    /// A structural fingerprint of a type, independent of insertion order.
    fn fingerprints(&self) -> Vec<u64> {
        let mut fp = vec![0u64; self.types.len()];
        // Children always precede their parents, so one forward pass suffices.
        for (i, t) in self.types.iter().enumerate() {
            let mut h = DefaultHasher::new();
            (
                t.kind,
                &t.name,
                t.size,
                t.flags,
                t.quals,
                t.count,
                &t.enumerators,
            )
                .hash(&mut h);
            for c in t.children() {
                fp[c.0 as usize].hash(&mut h);
            }
            fp[i] = h.finish();
        }
        fp
    }
}

/// The string section, laid out before the writer runs from the set of strings it will
/// store ([`DbBuilder::strings_written`]): each string that ends another one is stored as
/// that one's tail (suffix sharing). The writer then only looks strings up; the table
/// borrows them from the builder.
pub(crate) struct StringTable<'s> {
    bytes: Vec<u8>,
    /// Where each compressed frame starts in `bytes` (the first at 0): a frame holds
    /// whole strings, ending after the first one that reaches [`STRING_FRAME_BYTES`].
    frames: Vec<u32>,
    offsets: HashMap<&'s str, u32>,
}

impl<'s> StringTable<'s> {
    /// The final layout of `strings`, which depends on the set alone. Sorted by their
    /// reversed bytes, a string that is a suffix of the next one in that order is not
    /// stored but points into it; the strings stored are laid out in byte order (which
    /// compresses better: neighbours share prefixes), cut into frames of whole strings.
    fn laid_out(strings: impl Iterator<Item = &'s str>) -> Result<StringTable<'s>, Error> {
        // Interior NULs cannot be represented; strings keep the part before the first one.
        let strings: Vec<&'s str> = strings
            .map(|s| s.split('\0').next().unwrap_or(""))
            .filter(|s| !s.is_empty())
            .collect();
        // Sorted by their reversed bytes, kept reversed side by side so that two strings
        // compare as two byte slices (one memcmp) rather than byte by byte.
        let mut reversed = Vec::with_capacity(strings.iter().map(|s| s.len()).sum());
        for s in &strings {
            reversed.extend(s.bytes().rev());
        }
        let mut keyed: Vec<(&[u8], &'s str)> = Vec::with_capacity(strings.len());
        let mut at = 0;
        for s in strings {
            keyed.push((&reversed[at..at + s.len()], s));
            at += s.len();
        }
        // Equal strings are the same bytes: which copy the unstable sort puts first cannot
        // show in the output.
        keyed.par_sort_unstable_by(|a, b| a.0.cmp(b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        let sorted: Vec<&'s str> = keyed.into_iter().map(|(_, s)| s).collect();
        // Each string's (stored string holding it, offset in that one). Longest first
        // within each chain of suffixes: walk from the end.
        let mut home = vec![(0usize, 0usize); sorted.len()];
        let mut stored = Vec::new();
        for i in (0..sorted.len()).rev() {
            home[i] = match sorted.get(i + 1) {
                Some(next) if next.ends_with(sorted[i]) => {
                    let (root, at) = home[i + 1];
                    (root, at + next.len() - sorted[i].len())
                }
                _ => {
                    stored.push(i);
                    (i, 0)
                }
            };
        }
        stored.par_sort_unstable_by_key(|&i| sorted[i]);
        let mut start = vec![0u32; sorted.len()];
        let mut bytes = vec![0];
        let mut frames = vec![0];
        let mut frame_start = 0;
        for &i in &stored {
            if bytes.len() - frame_start >= STRING_FRAME_BYTES {
                frame_start = bytes.len();
                frames.push(frame_start as u32);
            }
            start[i] = u32::try_from(bytes.len()).map_err(|_| Error::TooLarge("strings"))?;
            bytes.extend_from_slice(sorted[i].as_bytes());
            bytes.push(0);
        }
        u32::try_from(bytes.len()).map_err(|_| Error::TooLarge("strings"))?;
        let mut offsets = HashMap::with_capacity_and_hasher(sorted.len() + 1, FxBuildHasher);
        offsets.insert("", 0);
        offsets.extend(
            sorted
                .into_iter()
                .zip(home)
                .map(|(s, (root, at))| (s, start[root] + at as u32)),
        );
        Ok(StringTable {
            bytes,
            frames,
            offsets,
        })
    }

    /// The offset of `s`, which the layout must hold.
    pub(crate) fn add(&self, s: &str) -> Result<u32, Error> {
        if let Some(&o) = self.offsets.get(s) {
            return Ok(o);
        }
        // Interior NULs cannot be represented; the layout holds the part before the first
        // one.
        let s = s.split('\0').next().unwrap_or("");
        match self.offsets.get(s) {
            Some(&o) => Ok(o),
            None => Err(Error::Builder(format!(
                "string {s:?} is not in the string layout"
            ))),
        }
    }
}

/// The sections [`Writer::body`] builds.
struct Body {
    functions: Vec<FunctionRecord>,
    code: Vec<CodeRecord>,
    symbols: Vec<SymbolRecord>,
    names: Vec<NameRecord>,
    buckets: Vec<u32>,
    inline_index: Vec<InlineBlock>,
    inline: crate::frames::Packed,
    inst: instances::Encoded,
    inst_data: crate::frames::Packed,
    modules: Vec<ModuleRecord>,
    params: crate::blocks::Blocks,
    types: crate::blocks::Blocks,
}

/// A parameter as written: (name string, type index, encoded location).
type EncodedParam = (u32, u32, (u8, u8, u8, i32));

struct Writer<'b, 't> {
    b: &'b DbBuilder,
    strings: &'t StringTable<'b>,
    /// builder TypeId → output index (u32::MAX: not yet emitted).
    type_index: Vec<u32>,
    types: Vec<TypeRecord>,
    enumerators: Vec<EnumeratorRecord>,
    proto_params: Vec<u32>,
    params: Vec<ParamRecord>,
    param_values: Vec<ParamValue>,
    param_lists: HashMap<Vec<EncodedParam>, u32>,
    /// The parameter list [`Writer::emit_params`] is building.
    param_list: Vec<EncodedParam>,
}

impl<'b, 't> Writer<'b, 't> {
    fn new(b: &'b DbBuilder, strings: &'t StringTable<'b>) -> Writer<'b, 't> {
        Writer {
            b,
            strings,
            type_index: vec![u32::MAX; b.types.len()],
            types: Vec::new(),
            enumerators: Vec::new(),
            proto_params: Vec::new(),
            params: Vec::new(),
            param_values: Vec::new(),
            param_lists: HashMap::default(),
            param_list: Vec::new(),
        }
    }

    /// Emit `id` and everything it refers to, children first; return its output index.
    fn emit_type(&mut self, id: TypeId) -> Result<u32, Error> {
        let mut stack = vec![(id, false)];
        while let Some((t, children_done)) = stack.pop() {
            if self.type_index[t.0 as usize] != u32::MAX {
                continue;
            }
            let desc = &self.b.types[t.0 as usize];
            if !children_done {
                stack.push((t, true));
                for c in desc.children().collect::<Vec<_>>().into_iter().rev() {
                    if self.type_index[c.0 as usize] == u32::MAX {
                        stack.push((c, false));
                    }
                }
                continue;
            }
            let idx = |w: &Self, c: TypeId| w.type_index[c.0 as usize];
            let (first, count) = match desc.kind {
                TypeKind::Enum => {
                    let first = self.enumerators.len() as u32;
                    for (name, value) in &desc.enumerators {
                        let name = self.strings.add(name)?;
                        self.enumerators.push(EnumeratorRecord {
                            name: name.into(),
                            value: (*value).into(),
                        });
                    }
                    (first, desc.enumerators.len() as u32)
                }
                TypeKind::Func => {
                    let first = self.proto_params.len() as u32;
                    for &p in &desc.params {
                        self.proto_params.push(idx(self, p));
                    }
                    (first, desc.params.len() as u32)
                }
                TypeKind::Array => (0, desc.count),
                _ => (0, 0),
            };
            let name = self.strings.add(&desc.name)?;
            let target = if desc.kind.has_target() {
                desc.target.map_or(0, |c| idx(self, c))
            } else {
                0
            };
            let out = u32::try_from(self.types.len()).map_err(|_| Error::TooLarge("types"))?;
            self.types.push(TypeRecord {
                kind: desc.kind as u8,
                flags: desc.flags.bits(),
                quals: desc.quals.bits(),
                reserved: 0,
                size: desc.size.into(),
                name: name.into(),
                target: target.into(),
                first: first.into(),
                count: count.into(),
            });
            self.type_index[t.0 as usize] = out;
        }
        Ok(self.type_index[id.0 as usize])
    }

    /// The whole db: types from void on, functions in canonical order with their
    /// parameter lists, the name index, inline edges and instances, modules. Strings are
    /// interned in this order, which makes the output deterministic. The string frames are
    /// compressed while the records are written, and the parts that only read the
    /// records written before them (name index, instances, modules, LZ4 blocks) are built
    /// at the same time; the caller lists (`callers`) were encoded with the order. Each
    /// part's bytes depend on its inputs alone.
    fn write(
        mut self,
        order: &(Vec<usize>, Vec<u32>),
        callers: (Vec<InlineBlock>, crate::frames::Packed),
    ) -> Result<Vec<u8>, Error> {
        let b = self.b;
        let table = self.strings;
        let (strings, body) = rayon::join(
            || {
                crate::frames::pack(
                    &table.frames,
                    &table.bytes,
                    1,
                    "strings (a frame past 16 MiB)",
                )
            },
            || self.body(order, callers),
        );
        let strings = strings?;
        let Body {
            functions,
            code,
            symbols,
            names,
            buckets,
            inline_index,
            inline,
            inst,
            inst_data,
            modules,
            params,
            types,
        } = body?;

        let sections: [&[u8]; SECTION_COUNT] = [
            &strings.bytes,
            modules.as_bytes(),
            &types.bytes,
            self.enumerators.as_bytes(),
            self.proto_params.as_bytes(),
            functions.as_bytes(),
            symbols.as_bytes(),
            &params.bytes,
            names.as_bytes(),
            inline_index.as_bytes(),
            &inline.bytes,
            inst.index.as_bytes(),
            &inst_data.bytes,
            inst.files.as_bytes(),
            self.param_values.as_bytes(),
            buckets.as_bytes(),
            code.as_bytes(),
            inline.frames.as_bytes(),
            inst_data.frames.as_bytes(),
            strings.frames.as_bytes(),
            params.offsets.as_bytes(),
            types.offsets.as_bytes(),
        ];
        let counts = [
            strings.bytes.len(),
            modules.len(),
            types.bytes.len(),
            self.enumerators.len(),
            self.proto_params.len(),
            functions.len(),
            symbols.len(),
            params.bytes.len(),
            names.len(),
            inline_index.len(),
            inline.bytes.len(),
            inst.index.len(),
            inst_data.bytes.len(),
            inst.files.len(),
            self.param_values.len(),
            buckets.len(),
            code.len(),
            inline.frames.len(),
            inst_data.frames.len(),
            strings.frames.len(),
            params.offsets.len(),
            types.offsets.len(),
        ];
        let records = Records {
            instances: inst.count,
            params: u32::try_from(self.params.len())
                .map_err(|_| Error::TooLarge("parameter records"))?,
            types: u32::try_from(self.types.len()).map_err(|_| Error::TooLarge("types"))?,
        };
        assemble(b, &sections, &counts, &records)
    }

    /// Everything but the string frames: the records, then (in parallel) the parts built
    /// from them; the caller lists come encoded.
    fn body(
        &mut self,
        order: &(Vec<usize>, Vec<u32>),
        (inline_index, inline): (Vec<InlineBlock>, crate::frames::Packed),
    ) -> Result<Body, Error> {
        let b = self.b;
        self.check_modules()?;
        self.emit_void()?;
        let (unique, new_index) = order;
        let (functions, code, symbols, names, addrs) = self.emit_functions(unique)?;
        let this = &*self;
        let strings = this.strings;
        let (names, (instances, rest)) = rayon::join(
            || name_index(&strings.bytes, names),
            || {
                rayon::join(
                    || {
                        let mut inst = instances::encode(&b.instances, new_index, &addrs, strings)?;
                        let packed = compress_blocks(
                            inst.index.iter_mut().map(|b| &mut b.offset),
                            &inst.data,
                            "inline instances (a frame past 16 MiB)",
                        )?;
                        Ok::<_, Error>((inst, packed))
                    },
                    || {
                        let modules = this.module_records(unique)?;
                        let params = crate::blocks::pack(
                            this.params.as_bytes(),
                            core::mem::size_of::<ParamRecord>(),
                            PARAM_BLOCK,
                            "parameter records",
                        )?;
                        let types = crate::blocks::pack(
                            this.types.as_bytes(),
                            core::mem::size_of::<TypeRecord>(),
                            TYPE_BLOCK,
                            "type records",
                        )?;
                        Ok::<_, Error>((modules, params, types))
                    },
                )
            },
        );
        let (names, buckets) = names?;
        let (inst, inst_data) = instances?;
        let (modules, params, types) = rest?;
        Ok(Body {
            functions,
            code,
            symbols,
            names,
            buckets,
            inline_index,
            inline,
            inst,
            inst_data,
            modules,
            params,
            types,
        })
    }

    /// Every function's module exists.
    fn check_modules(&self) -> Result<(), Error> {
        let b = self.b;
        for f in &b.functions {
            if f.module.0 as usize >= b.modules.len() {
                return Err(Error::Builder(format!(
                    "function {} refers to module {} of {}",
                    f.name,
                    f.module.0,
                    b.modules.len()
                )));
            }
        }
        Ok(())
    }

    /// Type 0 is always void.
    fn emit_void(&mut self) -> Result<(), Error> {
        let void = TypeDesc::void();
        if let Some(v) = self.b.find_type(FxBuildHasher.hash_one(&void), &void) {
            self.emit_type(v)?;
            return Ok(());
        }
        self.strings.add("void")?;
        self.types.push(TypeRecord {
            kind: TypeKind::Void as u8,
            flags: 0,
            quals: 0,
            reserved: 0,
            size: 0.into(),
            name: self.strings.add("void")?.into(),
            target: 0.into(),
            first: 0.into(),
            count: 0.into(),
        });
        Ok(())
    }

    /// The function records of `unique` (builder indices in output order), their symbol
    /// records, and (name string, function) pairs for the name index.
    #[allow(clippy::type_complexity)]
    fn emit_functions(
        &mut self,
        unique: &[usize],
    ) -> Result<
        (
            Vec<FunctionRecord>,
            Vec<CodeRecord>,
            Vec<SymbolRecord>,
            Vec<(u32, u32)>,
            Vec<u64>,
        ),
        Error,
    > {
        let b = self.b;
        let mut functions = Vec::with_capacity(unique.len());
        let mut code = Vec::with_capacity(unique.len());
        let mut addrs = Vec::with_capacity(unique.len());
        let mut symbols: Vec<SymbolRecord> = Vec::new();
        let mut names: Vec<(u32, u32)> = Vec::new();
        // The functions' strings are looked up on all cores first; the records, whose
        // types and parameter lists are numbered in order, are then written one by one.
        let strings = self.strings;
        let (own, param_names) = rayon::join(
            || {
                unique
                    .par_iter()
                    .map(|&i| {
                        let f = &b.functions[i];
                        let symbol = match &f.symbol {
                            Some(s) if *s != f.name => strings.add(s)?,
                            _ => 0,
                        };
                        Ok((strings.add(&f.name)?, symbol))
                    })
                    .collect::<Result<Vec<(u32, u32)>, Error>>()
            },
            || {
                unique
                    .par_iter()
                    .flat_map_iter(|&i| b.functions[i].params.iter())
                    .map(|p| strings.add(&p.name))
                    .collect::<Result<Vec<u32>, Error>>()
            },
        );
        let (own, param_names) = (own?, param_names?);
        let mut next_param = 0;
        for (out, (&i, &(name, symbol))) in unique.iter().zip(&own).enumerate() {
            let f = &b.functions[i];
            let ret = self.emit_type(f.ret)?;
            let names_of_params = &param_names[next_param..next_param + f.params.len()];
            next_param += f.params.len();
            let (params, param_count) = self.emit_params(f, names_of_params)?;
            if ret > MAX_RET_TYPE {
                return Err(Error::TooLarge("types referenced by return types"));
            }
            if params > MAX_PARAM_INDEX {
                return Err(Error::TooLarge("parameter records"));
            }
            let inline_only = f.flags.contains(FuncFlags::INLINE_ONLY);
            let base = b.modules[f.module.0 as usize].base;
            let rel = match f.addr.checked_sub(base).map(u32::try_from) {
                _ if inline_only && f.addr == 0 => 0,
                Some(Ok(rel))
                    if u64::from(rel) + u64::from(f.size) <= u64::from(u32::MAX) + 1
                        && f.addr.checked_add(u64::from(f.size)).is_some() =>
                {
                    rel
                }
                _ => {
                    return Err(Error::Builder(format!(
                    "function {} at {:#x} is not within 4 GiB above its module's base {base:#x}",
                    f.name, f.addr
                )))
                }
            };
            if inline_only && (f.addr != 0 || f.size != 0) {
                return Err(Error::Builder(format!(
                    "inline-only function {} has code ({:#x}+{:#x})",
                    f.name, f.addr, f.size
                )));
            }
            if !inline_only {
                code.push(CodeRecord {
                    addr: rel.into(),
                    size: f.size.into(),
                });
            }
            functions.push(FunctionRecord {
                name: name.into(),
                params: (params | u32::from(param_count) << 24).into(),
                ret_flags: (ret | u32::from(f.flags.bits()) << 18).into(),
            });
            addrs.push(f.addr);
            names.push((name, out as u32));
            if symbol != 0 {
                names.push((symbol, out as u32));
                symbols.push(SymbolRecord {
                    function: (out as u32).into(),
                    symbol: symbol.into(),
                });
            }
        }
        Ok((functions, code, symbols, names, addrs))
    }

    /// `f`'s parameter list, whose names are at `names` in the string table: (index of its
    /// first record, count). Identical lists share their records.
    fn emit_params(&mut self, f: &FunctionDesc, names: &[u32]) -> Result<(u32, u8), Error> {
        // Built in a buffer kept across calls; only a new list is copied into the map.
        let mut list = std::mem::take(&mut self.param_list);
        list.clear();
        for (p, &pname) in f.params.iter().zip(names) {
            let ty = self.emit_type(p.ty)?;
            list.push((pname, ty, p.loc.encode()));
        }
        let count = u8::try_from(list.len())
            .map_err(|_| Error::TooLarge("parameters of one function (255 at most)"))?;
        let known = self.param_lists.get(list.as_slice()).copied();
        if list.is_empty() || known.is_some() {
            self.param_list = list;
            return Ok((known.unwrap_or(0), count));
        }
        let first = self.params.len() as u32;
        for &(name, ty, (kind, reg, reg2, offset)) in &list {
            if ty > MAX_PARAM_TYPE {
                return Err(Error::TooLarge("types referenced by parameters"));
            }
            if name > MAX_PARAM_NAME {
                return Err(Error::TooLarge("strings (parameter names past 16 MiB)"));
            }
            // The operand in 14 bits when it fits, else in the param_values section.
            let short = match kind {
                1 => Some(u32::from(reg)),
                2 if reg < 128 && reg2 < 128 => Some(u32::from(reg) | u32::from(reg2) << 7),
                3 | 5 if (-8192..8192).contains(&offset) => Some(offset as u32 & 0x3fff),
                0 | 4 => Some(0),
                _ => None,
            };
            let index = self.params.len() as u32;
            let mut name_loc = name | u32::from(kind) << 24;
            if short.is_none() {
                name_loc |= PARAM_EXT;
                let value = match kind {
                    2 => u32::from(reg) | u32::from(reg2) << 8,
                    _ => offset as u32,
                };
                self.param_values.push(ParamValue {
                    param: index.into(),
                    value: value.into(),
                });
            }
            self.params.push(ParamRecord {
                name_loc: name_loc.into(),
                ty_op: (ty | short.unwrap_or(0) << 18).into(),
            });
        }
        self.param_lists.insert(list.clone(), first);
        self.param_list = list;
        Ok((first, count))
    }

    /// Module records with their function ranges (functions are sorted by module first).
    fn module_records(&self, unique: &[usize]) -> Result<Vec<ModuleRecord>, Error> {
        let b = self.b;
        let mut modules = Vec::with_capacity(b.modules.len());
        let mut next = 0usize;
        let mut next_code = 0usize;
        for (mi, m) in b.modules.iter().enumerate() {
            let (first, first_code) = (next, next_code);
            while next < unique.len() && b.functions[unique[next]].module.0 as usize == mi {
                if !b.functions[unique[next]]
                    .flags
                    .contains(FuncFlags::INLINE_ONLY)
                {
                    next_code += 1;
                }
                next += 1;
            }
            let mut build_id = [0u8; MAX_BUILD_ID];
            build_id[..m.build_id.len()].copy_from_slice(&m.build_id);
            modules.push(ModuleRecord {
                name: self.strings.add(&m.name)?.into(),
                kind: (m.kind as u32).into(),
                first_function: (first as u32).into(),
                function_count: ((next - first) as u32).into(),
                build_id_len: (m.build_id.len() as u32).into(),
                first_code: (first_code as u32).into(),
                build_id,
                base: m.base.into(),
            });
        }
        Ok(modules)
    }
}

/// Canonical function order; exact duplicates merge. Returns the builder indices of the
/// output functions in order, and each builder function's output index.
fn canonical_order(b: &DbBuilder) -> Result<(Vec<usize>, Vec<u32>), Error> {
    let fp = b.fingerprints();
    // Compared field by field in place: no key is built (and no string copied) per
    // function.
    let cmp = |x: &FunctionDesc, y: &FunctionDesc| {
        let head = |f: &FunctionDesc| {
            (
                f.module,
                // Functions without code first in their module.
                !f.flags.contains(FuncFlags::INLINE_ONLY),
                f.addr,
                f.size,
            )
        };
        fn params<'f>(
            f: &'f FunctionDesc,
            fp: &'f [u64],
        ) -> impl Iterator<Item = (&'f str, u64, Location)> + 'f {
            f.params
                .iter()
                .map(|p| (p.name.as_str(), fp[p.ty.0 as usize], p.loc))
        }
        head(x)
            .cmp(&head(y))
            .then_with(|| x.name.cmp(&y.name))
            .then_with(|| x.symbol.cmp(&y.symbol))
            .then_with(|| x.flags.cmp(&y.flags))
            .then_with(|| fp[x.ret.0 as usize].cmp(&fp[y.ret.0 as usize]))
            .then_with(|| params(x, &fp).cmp(params(y, &fp)))
    };
    let mut order: Vec<usize> = (0..b.functions.len()).collect();
    // Stable: equal functions keep their order of addition, as sequentially.
    order.par_sort_by(|&x, &y| cmp(&b.functions[x], &b.functions[y]));
    let mut new_index = vec![0u32; b.functions.len()];
    let mut unique: Vec<usize> = Vec::with_capacity(order.len());
    for &i in &order {
        if let Some(&last) = unique.last() {
            if cmp(&b.functions[last], &b.functions[i]).is_eq() {
                new_index[i] = unique.len() as u32 - 1;
                continue;
            }
        }
        new_index[i] = u32::try_from(unique.len()).map_err(|_| Error::TooLarge("functions"))?;
        unique.push(i);
    }
    Ok((unique, new_index))
}

/// The name index: one entry per (key, function), sorted by (FNV-1a hash of the key, key
/// bytes, function), and the start of each hash bucket (a power of two of them, about
/// one per eight entries, chosen by the hash's top bits).
fn name_index(
    strings: &[u8],
    names: Vec<(u32, u32)>,
) -> Result<(Vec<NameRecord>, Vec<u32>), Error> {
    let str_at = |off: u32| -> &[u8] {
        let s = &strings[off as usize..];
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    };
    let mut keyed: Vec<(u32, &[u8], u32)> = names
        .into_iter()
        .map(|(n, f)| {
            let bytes = str_at(n);
            (name_hash(bytes), bytes, f)
        })
        .collect();
    keyed.sort_unstable();
    keyed.dedup();
    let mut names: Vec<(u32, u32)> = keyed.into_iter().map(|(h, _, f)| (h, f)).collect();
    // A name and a symbol of one function with the same hash need one entry.
    let mut seen = FxHashSet::default();
    names.retain(|&e| seen.insert(e));
    let bits = name_bucket_bits(names.len());
    let mut buckets = Vec::with_capacity((1 << bits) + 1);
    let mut records = Vec::with_capacity(names.len());
    for (i, &(h, f)) in names.iter().enumerate() {
        if f > MAX_NAME_FUNCTION {
            return Err(Error::TooLarge("functions (name index)"));
        }
        while buckets.len() <= name_bucket(h, bits) as usize {
            buckets.push(i as u32);
        }
        records.push(NameRecord {
            entry: (f | (h & 0xff) << 24).into(),
        });
    }
    while buckets.len() <= 1 << bits {
        buckets.push(names.len() as u32);
    }
    Ok((records, buckets))
}

/// The caller lists of the inline edges in output order (`new_index`), encoded and cut
/// into compressed frames.
fn caller_lists(
    b: &DbBuilder,
    new_index: &[u32],
) -> Result<(Vec<InlineBlock>, crate::frames::Packed), Error> {
    let (mut index, lists) = crate::callers::encode(&inline_edges(b, new_index))?;
    let packed = compress_blocks(
        index.iter_mut().map(|b| &mut b.offset),
        &lists,
        "inline caller lists (a frame past 16 MiB)",
    )?;
    Ok((index, packed))
}

/// Inline edges in output indices, sorted and deduplicated.
fn inline_edges(b: &DbBuilder, new_index: &[u32]) -> Vec<(u32, u32)> {
    let mut inlines: Vec<(u32, u32)> = b
        .inlines
        .iter()
        .map(|&(callee, caller)| (new_index[callee.0 as usize], new_index[caller.0 as usize]))
        .collect();
    inlines.sort_unstable();
    inlines.dedup();
    inlines
}

/// Cut a packed section into compressed frames of [`BLOCKS_PER_FRAME`] blocks; each
/// block's `offset` (in `data`) becomes its offset in its frame.
fn compress_blocks<'o>(
    offsets: impl Iterator<Item = &'o mut zerocopy::little_endian::U32>,
    data: &[u8],
    what: &'static str,
) -> Result<crate::frames::Packed, Error> {
    let mut offsets: Vec<_> = offsets.collect();
    let starts: Vec<u32> = offsets.iter().map(|o| o.get()).collect();
    let packed = crate::frames::pack(&starts, data, BLOCKS_PER_FRAME, what)?;
    for (o, s) in offsets.iter_mut().zip(&packed.starts) {
        **o = (*s).into();
    }
    Ok(packed)
}

/// The record counts of the packed sections, kept in the header.
struct Records {
    instances: u32,
    params: u32,
    types: u32,
}

fn assemble(
    b: &DbBuilder,
    sections: &[&[u8]; SECTION_COUNT],
    counts: &[usize; SECTION_COUNT],
    records: &Records,
) -> Result<Vec<u8>, Error> {
    let header_size = core::mem::size_of::<Header>();
    let total = sections
        .iter()
        .fold(header_size, |at, s| at.next_multiple_of(ALIGN) + s.len());
    let mut out = Vec::with_capacity(total.next_multiple_of(ALIGN));
    out.resize(header_size, 0);
    let mut table = [SectionEntry::default(); SECTION_COUNT];
    for (i, bytes) in sections.iter().enumerate() {
        while !out.len().is_multiple_of(ALIGN) {
            out.push(0);
        }
        let count = u32::try_from(counts[i]).map_err(|_| Error::TooLarge(SECTION_NAMES[i]))?;
        table[i] = SectionEntry {
            offset: (out.len() as u64).into(),
            length: (bytes.len() as u64).into(),
            count: count.into(),
            record_size: (RECORD_SIZES[i] as u32).into(),
        };
        out.extend_from_slice(bytes);
    }
    while !out.len().is_multiple_of(ALIGN) {
        out.push(0);
    }
    let mut build_id = [0u8; MAX_BUILD_ID];
    build_id[..b.build_id.len()].copy_from_slice(&b.build_id);
    let header = Header {
        magic: MAGIC,
        version: VERSION.into(),
        header_size: (header_size as u32).into(),
        flags: b.flags.bits().into(),
        section_count: (SECTION_COUNT as u32).into(),
        file_size: (out.len() as u64).into(),
        body_crc32: crc32fast::hash(&out[header_size..]).into(),
        build_id_len: (b.build_id.len() as u32).into(),
        build_id,
        machine: b.machine.into(),
        instance_count: records.instances.into(),
        param_count: records.params.into(),
        type_count: records.types.into(),
        sections: table,
    };
    out[..header_size].copy_from_slice(header.as_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_share_suffixes_whatever_the_order() {
        let words = [
            "__x64_sys_open",
            "sys_open",
            "open",
            "pen",
            "close",
            "ö",
            "aö",
        ];
        let a = StringTable::laid_out(words.iter().copied()).unwrap();
        let b = StringTable::laid_out(words.iter().rev().copied()).unwrap();
        assert_eq!(a.bytes, b.bytes);
        // Stored: the empty string, "__x64_sys_open", "close", "aö".
        assert_eq!(a.bytes.len(), 1 + 15 + 6 + 4);
        for w in words {
            let off = a.offsets[w] as usize;
            let tail = &a.bytes[off..];
            let end = tail.iter().position(|&c| c == 0).unwrap();
            assert_eq!(&tail[..end], w.as_bytes());
        }
        let table = a;
        assert_eq!(table.add("open").unwrap(), table.offsets["open"]);
        assert!(table.add("unseen").is_err());
    }
}
