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

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use super::callers::caller_lists;
use super::desc::{FunctionDesc, InstanceDesc, MemberDesc, ModuleDesc, TypeDesc};
use super::functions::canonical_order;
use super::strings::StringTable;
use super::writer::Writer;
use crate::common::{FuncId, InstanceId, ModuleId, TypeId};
use crate::layout::MAX_BUILD_ID;
use crate::model::{DbFlags, TypeFlags, TypeKind};
use crate::Error;

/// Collects a database and writes it.
#[derive(Debug, Default)]
pub struct DbBuilder {
    pub(super) flags: DbFlags,
    pub(super) build_id: Vec<u8>,
    pub(super) machine: u32,
    pub(super) modules: Vec<ModuleDesc>,
    pub(super) types: Vec<TypeDesc>,
    /// The types by content: (hash of the description, id); each description is
    /// stored once, in `types`.
    pub(super) type_ids: hashbrown::HashTable<(u64, TypeId)>,
    /// The members of named structs and unions: the first list given for each.
    pub(super) members: FxHashMap<TypeId, Vec<MemberDesc>>,
    /// How many lists [`DbBuilder::set_members`] was given that differ from the kept one.
    pub(super) member_conflicts: u64,
    pub(super) functions: Vec<FunctionDesc>,
    pub(super) inlines: Vec<(FuncId, FuncId)>,
    pub(super) instances: Vec<InstanceDesc>,
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
    pub(super) fn find_type(&self, hash: u64, desc: &TypeDesc) -> Option<TypeId> {
        self.type_ids
            .find(hash, |&(h, id)| {
                h == hash && self.types[id.index()] == *desc
            })
            .map(|&(_, id)| id)
    }

    /// Give the members of the named struct or union `id` (a declaration's are ignored).
    /// The same struct defined in many units is one type: the first list given is kept
    /// (a producer that adds units in a fixed order keeps its output deterministic); a
    /// different one later is counted in [`Self::member_conflicts`].
    pub fn set_members(&mut self, id: TypeId, members: Vec<MemberDesc>) {
        match self.members.entry(id) {
            std::collections::hash_map::Entry::Occupied(e) => {
                if *e.get() != members {
                    self.member_conflicts += 1;
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(members);
            }
        }
    }

    /// The members set for the named struct or union `id`, if any.
    pub fn members(&self, id: TypeId) -> Option<&[MemberDesc]> {
        self.members.get(&id).map(Vec::as_slice)
    }

    /// How many member lists differed from the one kept for their struct.
    pub fn member_conflicts(&self) -> u64 {
        self.member_conflicts
    }

    /// The members of type `id`: those of its description (anonymous), else those set.
    pub(super) fn members_of(&self, id: TypeId) -> &[MemberDesc] {
        let desc = &self.types[id.index()];
        if !matches!(desc.kind, TypeKind::Struct | TypeKind::Union)
            || desc.flags.contains(TypeFlags::DECLARATION)
        {
            return &[];
        }
        if !desc.members.is_empty() {
            return &desc.members;
        }
        self.members.get(&id).map_or(&[], Vec::as_slice)
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
        let complete = super::types::completions(&self.types);
        let (order, strings) = rayon::join(
            || {
                let order = canonical_order(self)?;
                let callers = caller_lists(self, &order.1)?;
                Ok::<_, Error>((order, callers))
            },
            || StringTable::laid_out(self.strings_written(&complete).into_iter()),
        );
        let ((order, callers), strings) = (order?, strings?);
        Writer::new(self, &strings, complete).write(&order, callers)
    }

    /// Every string the writer will store: the names of the modules, the functions, their
    /// symbols and parameters, of the types they reach (through members too) and of
    /// those types' enumerators and members, and the instances' call files. A declaration
    /// in `complete` is written as its definition.
    fn strings_written(&self, complete: &FxHashMap<TypeId, TypeId>) -> FxHashSet<&str> {
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
                if let Some(&full) = complete.get(&t) {
                    stack.push(full);
                    continue;
                }
                let desc = &self.types[t.0 as usize];
                out.insert(&desc.name);
                out.extend(desc.enumerators.iter().map(|(n, _)| n.as_str()));
                stack.extend(desc.children());
                for m in self.members_of(t) {
                    out.insert(&m.name);
                    stack.push(m.ty);
                }
            }
        }
        out.extend(self.modules.iter().map(|m| m.name.as_str()));
        out.extend(self.instances.iter().map(|x| x.call_file.as_str()));
        out
    }

    /// A structural fingerprint of a type, independent of insertion order.
    pub(super) fn fingerprints(&self) -> Vec<u64> {
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
            // An anonymous struct's members (added before it) are its identity.
            for m in &t.members {
                (&m.name, m.bit_offset, m.bit_size, fp[m.ty.0 as usize]).hash(&mut h);
            }
            fp[i] = h.finish();
        }
        fp
    }
}
