//! Merging unit results into the [`sigdb::DbBuilder`], in input and unit order.

use std::collections::{HashMap, HashSet};

use sigdb::{
    DbBuilder, FuncFlags, FuncId, FunctionDesc, InstanceDesc, ModuleId, ParamDesc, TypeDesc, TypeId,
};

use crate::units::{Callee, CuResult, Identity, LFunc};

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
    outlined: HashMap<(ModuleId, Identity), FuncId>,
    /// Inline-only functions, by (module, identity): their record (added at the end).
    pending: HashMap<(ModuleId, Identity), usize>,
    pending_funcs: Vec<((ModuleId, Identity), FunctionDesc)>,
    /// Edges whose callee is pending: (pending index, caller).
    pending_edges: Vec<(usize, FuncId)>,
    /// Whether to keep edges to callees that also have an out-of-line copy.
    pub all_edges: bool,
    /// Inline instances, added at the end (their callee may be pending); parents are
    /// indices into this list and precede their children.
    instances: Vec<(PendingCallee, Option<usize>, InstanceDesc)>,
    /// Names (and symbols) of the functions with code, by module.
    defined: HashSet<(ModuleId, String)>,
    /// One declaration per module and name, in order of appearance.
    decls: Vec<FunctionDesc>,
    decl_names: HashSet<(ModuleId, String)>,
}

impl Merger {
    /// A merger writing into `builder`.
    pub fn new(builder: DbBuilder) -> Merger {
        Merger {
            builder,
            outlined: HashMap::new(),
            pending: HashMap::new(),
            pending_funcs: Vec::new(),
            pending_edges: Vec::new(),
            all_edges: true,
            instances: Vec::new(),
            defined: HashSet::new(),
            decls: Vec::new(),
            decl_names: HashSet::new(),
        }
    }

    fn desc(module: ModuleId, f: &LFunc, map: &[TypeId]) -> FunctionDesc {
        FunctionDesc {
            module,
            addr: f.addr,
            size: f.size,
            name: f.name.clone(),
            symbol: f.symbol.clone(),
            ret: map[f.ret as usize],
            params: f
                .params
                .iter()
                .map(|p| ParamDesc {
                    name: p.name.clone(),
                    ty: map[p.ty as usize],
                    loc: p.loc,
                })
                .collect(),
            flags: f.flags,
        }
    }

    /// Merge one unit of `module`.
    pub fn merge_unit(&mut self, module: ModuleId, cu: &CuResult) {
        let mut map: Vec<TypeId> = Vec::with_capacity(cu.types.len());
        for t in &cu.types {
            let id = self.builder.add_type(TypeDesc {
                kind: t.kind,
                name: t.name.clone(),
                size: t.size,
                flags: t.flags,
                quals: t.quals,
                target: t.target.map(|i| map[i as usize]),
                count: t.count,
                enumerators: t.enumerators.clone(),
                params: t.params.iter().map(|&i| map[i as usize]).collect(),
            });
            map.push(id);
        }
        let ids: Vec<FuncId> = cu
            .funcs
            .iter()
            .map(|f| {
                let id = self.builder.add_function(Self::desc(module, f, &map));
                if let Some(ident) = &f.identity {
                    self.outlined.entry((module, ident.clone())).or_insert(id);
                }
                id
            })
            .collect();
        for f in &cu.funcs {
            self.defined.insert((module, f.name.clone()));
            if let Some(sym) = &f.symbol {
                self.defined.insert((module, sym.clone()));
            }
        }
        for d in &cu.decls {
            if self.decl_names.insert((module, d.name.clone())) {
                self.decls.push(Self::desc(module, d, &map));
            }
        }
        let inline_ids: Vec<usize> = cu
            .inline_only
            .iter()
            .map(|(ident, f)| {
                let key = (module, ident.clone());
                if let Some(&i) = self.pending.get(&key) {
                    return i;
                }
                let i = self.pending_funcs.len();
                self.pending_funcs
                    .push((key.clone(), Self::desc(module, f, &map)));
                self.pending.insert(key, i);
                i
            })
            .collect();
        for &(callee, caller) in &cu.edges {
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
        for inst in &cu.instances {
            let callee = match inst.callee {
                Callee::Local(f) => PendingCallee::Func(ids[f as usize]),
                Callee::Inline(i) => PendingCallee::Pending(inline_ids[i as usize]),
            };
            let caller = ids[inst.caller as usize];
            let desc = InstanceDesc {
                callee: caller, // replaced in `finish`
                caller,
                parent: None,
                ranges: inst.ranges.clone(),
                entry_pc: inst.entry_pc,
                call_file: inst.call_file.clone(),
                call_line: inst.call_line,
                params: inst.params.clone(),
            };
            let parent = inst.parent.map(|p| base + p as usize);
            self.instances.push((callee, parent, desc));
        }
    }

    /// Add the inline-only functions (those without an out-of-line copy in their module)
    /// and their edges, and the declarations of functions no unit defines; return the
    /// builder.
    pub fn finish(mut self) -> DbBuilder {
        for mut d in std::mem::take(&mut self.decls) {
            if !self.defined.contains(&(d.module, d.name.clone())) {
                // No code: a record of size 0 at the module's base.
                d.addr = self.builder.module_base(d.module);
                self.builder.add_function(d);
            }
        }
        let mut ids: Vec<Option<FuncId>> = Vec::with_capacity(self.pending_funcs.len());
        // The out-of-line copy of each pending function, for instances (which name their
        // callee even when edges to out-of-line callees are not kept).
        let outlined_ids: Vec<Option<FuncId>> = self
            .pending_funcs
            .iter()
            .map(|(key, _)| self.outlined.get(key).copied())
            .collect();
        for (key, desc) in std::mem::take(&mut self.pending_funcs) {
            match self.outlined.get(&key) {
                Some(&f) if self.all_edges => ids.push(Some(f)),
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
        let mut added = Vec::with_capacity(self.instances.len());
        for (callee, parent, mut desc) in std::mem::take(&mut self.instances) {
            desc.callee = match callee {
                PendingCallee::Func(f) => f,
                PendingCallee::Pending(p) => match ids[p].or_else(|| outlined_ids[p]) {
                    Some(f) => f,
                    None => {
                        added.push(None);
                        continue;
                    }
                },
            };
            desc.parent = match parent {
                Some(p) => match added.get(p).copied().flatten() {
                    Some(id) => Some(id),
                    None => {
                        added.push(None);
                        continue;
                    }
                },
                None => None,
            };
            added.push(Some(self.builder.add_instance(desc)));
        }
        self.builder
    }
}
