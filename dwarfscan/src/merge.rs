//! Merging unit results into the [`sigdb::DbBuilder`], in input and unit order.

use std::collections::hash_map::Entry;

use rustc_hash::{FxHashMap, FxHashSet};

use sigdb::{
    DbBuilder, FuncFlags, FuncId, FunctionDesc, InstanceDesc, InstanceId, MemberDesc, ModuleId,
    ParamDesc, TypeDesc, TypeFlags, TypeId, TypeKind,
};

use crate::types::LMember;
use crate::units::{Callee, CuResult, Identity, LFunc};

/// The identities of the inline-only functions of the module being merged that the
/// merger holds a record of, shared with the units being scanned meanwhile.
pub type Merged = std::sync::RwLock<FxHashSet<Identity>>;

/// The named structs and unions the merger holds the members of, by name: (kind, size,
/// flags) of each, and the number of the unit that gave them (units count from 0 over
/// every file merged). A unit scanned while others are merged does not read those members
/// again: they are the ones a unit merged before it gave, which the db keeps (the first
/// unit's), so what it would read could change nothing but a count of conflicts — except
/// for a struct defined two ways whose skipped list alone reaches another struct also
/// defined two ways (which definition of the second is kept then depends on what was
/// skipped). So that what a unit skips, and the db, do not depend on timing or on the
/// number of threads, unit `u` of a file merged while it is scanned skips only the structs
/// of the units before `u - KNOWN_LAG` ([`KnownStructs::before`], which waits until those
/// are merged).
#[derive(Default)]
pub struct KnownStructs {
    by_name: std::sync::RwLock<FxHashMap<String, Vec<KnownStruct>>>,
    /// Units merged so far, and a wakeup for units waiting on that count.
    merged: std::sync::Mutex<u64>,
    more: std::sync::Condvar,
}

/// A struct's kind, size and flags, and the number of the unit that gave its members.
type KnownStruct = (TypeKind, u32, TypeFlags, u64);

/// How many units before a unit the structs it skips must come from (see
/// [`KnownStructs`]): a constant, not the number of threads, so that the db is the same
/// whatever `-j` is. Workers take units in order, so those are almost always merged by the
/// time a unit is done reading its own.
pub const KNOWN_LAG: u64 = 64;

impl KnownStructs {
    /// What unit number `unit` may skip: the structs of the units before it, less
    /// [`KNOWN_LAG`] (none of the file's own below that: `first` is its first unit's
    /// number). Waits until those units are merged.
    pub fn before(&self, first: u64, unit: u64) -> KnownView<'_> {
        let upto = first + unit.saturating_sub(KNOWN_LAG);
        let mut m = self.merged.lock().unwrap_or_else(|e| e.into_inner());
        while *m < upto {
            m = self.more.wait(m).unwrap_or_else(|e| e.into_inner());
        }
        KnownView { known: self, upto }
    }

    /// Every struct merged so far (for units scanned while nothing is merged).
    pub fn all(&self) -> KnownView<'_> {
        KnownView {
            known: self,
            upto: u64::MAX,
        }
    }

    /// Units merged so far.
    pub fn units_merged(&self) -> u64 {
        *self.merged.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One more unit is merged (or was skipped): units waiting on it may go on.
    pub fn unit_merged(&self) {
        *self.merged.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.more.notify_all();
    }

    fn add(&self, name: &str, key: (TypeKind, u32, TypeFlags)) {
        let unit = self.units_merged();
        if let Ok(mut k) = self.by_name.write() {
            k.entry(name.to_string())
                .or_default()
                .push((key.0, key.1, key.2, unit));
        }
    }
}

/// The structs one unit may skip ([`KnownStructs::before`]).
#[derive(Clone, Copy)]
pub struct KnownView<'k> {
    known: &'k KnownStructs,
    upto: u64,
}

impl KnownView<'_> {
    /// Whether it holds the struct or union of that kind, name, size and flags.
    pub fn holds(&self, kind: TypeKind, name: &str, size: u32, flags: TypeFlags) -> bool {
        self.known
            .by_name
            .read()
            .ok()
            .and_then(|k| {
                k.get(name).map(|v| {
                    v.iter()
                        .any(|&(k, s, f, u)| (k, s, f) == (kind, size, flags) && u < self.upto)
                })
            })
            .unwrap_or(false)
    }
}

/// The callee of an instance while inline-only functions are still pending.
enum PendingCallee {
    Func(FuncId),
    Pending(usize),
}

/// Accumulates unit results; inline-only functions are resolved at [`Merger::finish`].
pub struct Merger {
    /// The database being built.
    pub builder: DbBuilder,
    /// Out-of-line copies of inline functions, by (module, identity).
    outlined: FxHashMap<(ModuleId, Identity), FuncId>,
    /// Inline-only functions, by (module, identity): the index of their record in
    /// `pending_funcs` (added at the end).
    pending: FxHashMap<(ModuleId, Identity), usize>,
    pending_funcs: Vec<FunctionDesc>,
    /// Edges whose callee is pending: (pending index, caller).
    pending_edges: Vec<(usize, FuncId)>,
    /// Whether to keep edges to callees that also have an out-of-line copy.
    pub all_edges: bool,
    /// Inline instances, added at the end (their callee may be pending), and beside
    /// each its callee and its parent (an index into this list, before its child).
    instances: Vec<InstanceDesc>,
    instance_links: Vec<(PendingCallee, Option<usize>)>,
    /// Names (and symbols) of the functions with code of the module being merged.
    defined: FxHashSet<String>,
    /// One declaration per module and name, in order of appearance; those of the module
    /// being merged are checked against `defined` when it ends.
    decls: Vec<FunctionDesc>,
    /// The module being merged, and where it starts in `decls`.
    module: Option<ModuleId>,
    module_decls: usize,
    /// Names of the declarations of the module being merged.
    decl_names: FxHashSet<String>,
    /// The keys of `pending` of the module being merged.
    merged: std::sync::Arc<Merged>,
    /// Named structs a unit gave other members than the ones kept (the first unit's).
    pub member_conflicts: u64,
    /// The structs whose members are in the builder, for units being scanned.
    known_structs: std::sync::Arc<KnownStructs>,
}

impl Merger {
    /// A merger writing into `builder`.
    pub fn new(builder: DbBuilder) -> Merger {
        Merger {
            builder,
            outlined: FxHashMap::default(),
            pending: FxHashMap::default(),
            pending_funcs: Vec::new(),
            pending_edges: Vec::new(),
            all_edges: true,
            instances: Vec::new(),
            instance_links: Vec::new(),
            defined: FxHashSet::default(),
            decls: Vec::new(),
            module: None,
            module_decls: 0,
            decl_names: FxHashSet::default(),
            merged: std::sync::Arc::default(),
            member_conflicts: 0,
            known_structs: std::sync::Arc::default(),
        }
    }

    /// The identities of the inline-only functions of the module being merged (since
    /// [`Merger::start_module`]) it holds a record of: a unit scanned after they were
    /// merged may give such a function by identity alone.
    pub fn merged(&self) -> std::sync::Arc<Merged> {
        self.merged.clone()
    }

    /// The structs and unions whose members the builder holds (see [`KnownStructs`]).
    pub fn known_structs(&self) -> std::sync::Arc<KnownStructs> {
        self.known_structs.clone()
    }

    /// Merge the units of `module` from now on (they come together).
    pub fn start_module(&mut self, module: ModuleId) {
        if self.module != Some(module) {
            self.end_module();
            self.module = Some(module);
            if let Ok(mut m) = self.merged.write() {
                m.clear();
            }
        }
    }

    fn desc(module: ModuleId, f: LFunc, map: &[TypeId]) -> FunctionDesc {
        FunctionDesc {
            module,
            addr: f.addr,
            size: f.size,
            name: f.name,
            symbol: f.symbol,
            ret: map[f.ret as usize],
            params: f
                .params
                .into_iter()
                .map(|p| ParamDesc {
                    name: p.name,
                    ty: map[p.ty as usize],
                    loc: p.loc,
                })
                .collect(),
            flags: f.flags,
        }
    }

    /// The members of a unit's struct, their types as the builder numbers them.
    fn member_descs(members: &[LMember], map: &[TypeId]) -> Vec<MemberDesc> {
        members
            .iter()
            .map(|m| MemberDesc {
                name: m.name.clone(),
                ty: map[m.ty as usize],
                bit_offset: m.bit_offset,
                bit_size: m.bit_size,
            })
            .collect()
    }

    /// Merge one unit of `module` (its strings and lists move into the builder).
    pub fn merge_unit(&mut self, module: ModuleId, cu: CuResult) {
        self.start_module(module);
        let CuResult {
            types,
            funcs,
            inline_only,
            edges,
            instances,
            decls,
            stats: _,
        } = cu;
        let mut map: Vec<TypeId> = Vec::with_capacity(types.len());
        // A named struct's members may refer to later types: set once all are added.
        let mut named: Vec<(usize, Vec<LMember>)> = Vec::new();
        for t in types {
            let members = if t.name.is_empty() {
                Self::member_descs(&t.members, &map)
            } else {
                if !t.members.is_empty() {
                    named.push((map.len(), t.members));
                }
                Vec::new()
            };
            let id = self.builder.add_type(TypeDesc {
                kind: t.kind,
                name: t.name,
                size: t.size,
                flags: t.flags,
                quals: t.quals,
                target: t.target.map(|i| map[i as usize]),
                count: t.count,
                enumerators: t.enumerators,
                params: t.params.iter().map(|&i| map[i as usize]).collect(),
                members,
            });
            map.push(id);
        }
        for (i, members) in named {
            // Most structs come from headers every unit includes: compare in place.
            match self.builder.members(map[i]) {
                Some(kept) => {
                    let same = kept.len() == members.len()
                        && kept.iter().zip(&members).all(|(k, m)| {
                            k.name == m.name
                                && k.ty == map[m.ty as usize]
                                && k.bit_offset == m.bit_offset
                                && k.bit_size == m.bit_size
                        });
                    self.member_conflicts += u64::from(!same);
                }
                None => {
                    let members = Self::member_descs(&members, &map);
                    self.builder.set_members(map[i], members);
                    let t = self.builder.type_desc(map[i]);
                    self.known_structs.add(&t.name, (t.kind, t.size, t.flags));
                }
            }
        }
        let mut ids: Vec<FuncId> = Vec::with_capacity(funcs.len());
        for mut f in funcs {
            for name in std::iter::once(&f.name).chain(&f.symbol) {
                if !self.defined.contains(name.as_str()) {
                    self.defined.insert(name.clone());
                }
            }
            let identity = f.identity.take();
            let id = self.builder.add_function(Self::desc(module, f, &map));
            if let Some(ident) = identity {
                self.outlined.entry((module, ident)).or_insert(id);
            }
            ids.push(id);
        }
        for d in decls {
            if !self.decl_names.contains(d.name.as_str()) {
                self.decl_names.insert(d.name.clone());
                self.decls.push(Self::desc(module, d, &map));
            }
        }
        let mut merged = self.merged.write().ok();
        let inline_ids: Vec<usize> = inline_only
            .into_iter()
            .map(|(ident, f)| match self.pending.entry((module, ident)) {
                Entry::Occupied(e) => *e.get(),
                Entry::Vacant(e) => {
                    // A unit leaves out only the records of identities in `merged`, which
                    // are keys of `pending`.
                    let f = f.expect("an inline-only function the merger has no record of");
                    if let Some(m) = merged.as_mut() {
                        m.insert(e.key().1.clone());
                    }
                    let next = self.pending_funcs.len();
                    e.insert(next);
                    self.pending_funcs.push(Self::desc(module, f, &map));
                    next
                }
            })
            .collect();
        drop(merged);
        for (callee, caller) in edges {
            let caller = ids[caller as usize];
            match callee {
                Callee::Local(f) => {
                    if self.all_edges {
                        self.builder.add_inline(ids[f as usize], caller);
                    }
                }
                Callee::Inline(i) => self.pending_edges.push((inline_ids[i as usize], caller)),
            }
        }
        let base = self.instances.len();
        for inst in instances {
            let callee = match inst.callee {
                Callee::Local(f) => PendingCallee::Func(ids[f as usize]),
                Callee::Inline(i) => PendingCallee::Pending(inline_ids[i as usize]),
            };
            let caller = ids[inst.caller as usize];
            let desc = InstanceDesc {
                callee: caller, // replaced in `finish`
                caller,
                parent: None,
                ranges: inst.ranges,
                entry_pc: inst.entry_pc,
                call_file: inst.call_file,
                call_line: inst.call_line,
                params: inst.params,
            };
            let parent = inst.parent.map(|p| base + p as usize);
            self.instances.push(desc);
            self.instance_links.push((callee, parent));
        }
    }

    /// End the module whose units were merged last (the units of a module come
    /// together): keep its declarations of names none of its units defines.
    fn end_module(&mut self) {
        let defined = std::mem::take(&mut self.defined);
        let mut i = 0;
        self.decls.retain(|d| {
            i += 1;
            i <= self.module_decls || !defined.contains(d.name.as_str())
        });
        self.module_decls = self.decls.len();
        self.decl_names = FxHashSet::default();
    }

    /// Add the inline-only functions (those without an out-of-line copy in their module)
    /// and their edges, and the declarations of functions no unit defines; return the
    /// builder.
    pub fn finish(mut self) -> DbBuilder {
        self.end_module();
        for mut d in std::mem::take(&mut self.decls) {
            // No code: a record of size 0 at the module's base.
            d.addr = self.builder.module_base(d.module);
            self.builder.add_function(d);
        }
        let mut ids: Vec<Option<FuncId>> = Vec::with_capacity(self.pending_funcs.len());
        // The out-of-line copy of each pending function, for instances (which name their
        // callee even when edges to out-of-line callees are not kept).
        let mut outlined_ids: Vec<Option<FuncId>> = vec![None; self.pending_funcs.len()];
        for (key, &i) in &self.pending {
            outlined_ids[i] = self.outlined.get(key).copied();
        }
        // Freeing the identities, most allocated by the threads that scanned the units,
        // takes tens of milliseconds: another thread does it while the db is written (if
        // none can be started, they are freed here).
        let identities = (
            std::mem::take(&mut self.pending),
            std::mem::take(&mut self.outlined),
            std::mem::take(&mut self.merged),
        );
        let _ = std::thread::Builder::new()
            .name("free identities".into())
            .spawn(move || drop(identities));
        for (i, desc) in std::mem::take(&mut self.pending_funcs)
            .into_iter()
            .enumerate()
        {
            match outlined_ids[i] {
                Some(f) if self.all_edges => ids.push(Some(f)),
                Some(_) => ids.push(None),
                None => {
                    debug_assert!(desc.flags.contains(FuncFlags::INLINE_ONLY));
                    ids.push(Some(self.builder.add_function(desc)));
                }
            }
        }
        for (p, caller) in std::mem::take(&mut self.pending_edges) {
            if let Some(callee) = ids[p] {
                self.builder.add_inline(callee, caller);
            }
        }
        // Resolve each instance's callee and parent in place; drop those whose callee
        // has no record, and those inside a dropped one.
        let first = self.builder.next_instance_id().index();
        let mut added: Vec<Option<InstanceId>> = Vec::with_capacity(self.instances.len());
        let mut next = first;
        let links = std::mem::take(&mut self.instance_links);
        for (desc, (callee, parent)) in self.instances.iter_mut().zip(links) {
            let callee = match callee {
                PendingCallee::Func(f) => Some(f),
                PendingCallee::Pending(p) => ids[p].or(outlined_ids[p]),
            };
            let parent = match parent {
                Some(p) => added[p].map(Some),
                None => Some(None),
            };
            let id = match (callee, parent) {
                (Some(callee), Some(parent)) => {
                    desc.callee = callee;
                    desc.parent = parent;
                    next += 1;
                    Some(InstanceId::from_index(next - 1))
                }
                _ => None,
            };
            added.push(id);
        }
        let mut kept = added.iter().map(Option::is_some);
        let mut instances = std::mem::take(&mut self.instances);
        instances.retain(|_| kept.next().unwrap_or(false));
        self.builder.add_instances(instances);
        self.builder
    }
}
