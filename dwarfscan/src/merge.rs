//! Merging unit results into the [`sigdb::DbBuilder`], in input and unit order.

use std::collections::HashMap;

use sigdb::{DbBuilder, FuncFlags, FuncId, FunctionDesc, ModuleId, ParamDesc, TypeDesc, TypeId};

use crate::units::{Callee, CuResult, Identity, LFunc};

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
    }

    /// Add the inline-only functions (those without an out-of-line copy in their module)
    /// and their edges; return the builder.
    pub fn finish(mut self) -> DbBuilder {
        let mut ids: Vec<Option<FuncId>> = Vec::with_capacity(self.pending_funcs.len());
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
        self.builder
    }
}
