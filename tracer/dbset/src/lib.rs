//! Lookups across the open databases a command works with ([`DbSet`]: by name, by address,
//! what ftrace means by a name), the symbol tables by address ([`symbols`], [`kallsyms`]),
//! the inlined copies a trace shows ([`inlines`]) and the `--func` patterns ([`glob`]).
//! Where the dbs come from (files, sysfs, the store, DWARF, debuginfod) is `dcg-dbresolve`'s.

pub mod glob;
pub mod inlines;
pub mod kallsyms;
pub mod note;
pub mod symbols;

use sigdb::{Db, FuncFlags, Function};

/// One or more open databases, searched in order.
#[derive(Debug)]
pub struct DbSet {
    dbs: Vec<Db>,
    /// Set when the dbs came from debuginfod: where from and where kept.
    fetched: Option<note::DbNote>,
}

impl DbSet {
    /// Wrap already opened databases.
    pub fn new(dbs: Vec<Db>) -> DbSet {
        DbSet { dbs, fetched: None }
    }

    /// Databases fetched from debuginfod, with the note that says where from and where
    /// they are kept ([`DbSet::fetched`]).
    pub fn fetched_with(dbs: Vec<Db>, note: note::DbNote) -> DbSet {
        DbSet {
            dbs,
            fetched: Some(note),
        }
    }

    /// When the resolver fetched the db from debuginfod: a note saying so.
    pub fn fetched(&self) -> Option<&note::DbNote> {
        self.fetched.as_ref()
    }

    /// The databases.
    pub fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    /// Whether some db records inline instances (inlined copies of functions).
    pub fn has_inline_instances(&self) -> bool {
        self.dbs.iter().any(|d| d.instance_count() > 0)
    }

    /// Every function named `name` (source or symbol name), in db order.
    pub fn by_name<'a, 'n>(
        &'a self,
        name: &'n str,
    ) -> impl Iterator<Item = Function<'a>> + use<'a, 'n> {
        self.dbs.iter().flat_map(move |db| db.by_name(name))
    }

    /// Of the kernel symbols starting at `start`, the one this set has a function for.
    /// A section label shares its first function's address (`__lock_text_start` is
    /// `_raw_spin_trylock`'s), and `%ps` and function_graph print the label.
    pub fn known_symbol_at<'k>(&self, syms: &'k kallsyms::Kallsyms, start: u64) -> Option<&'k str> {
        syms.all_at(start)
            .map(|(n, _)| n)
            .find(|n| self.by_name(n).next().is_some())
    }

    /// The function containing `addr` in any module of any db.
    pub fn by_addr(&self, addr: u64) -> Option<Function<'_>> {
        self.dbs.iter().find_map(|db| db.by_addr_any(addr))
    }

    /// The function ftrace means by `name` (as kallsyms prints it, clones with their
    /// suffix) in `module` (`None`: the kernel image or the only module).
    ///
    /// Among several matches it prefers: the right module, an exact symbol match, code
    /// over inline-only records, then the first in db order.
    pub fn find(&self, name: &str, module: Option<&str>) -> Option<Function<'_>> {
        self.dbs
            .iter()
            .flat_map(|db| db.by_name(name))
            .max_by_key(|f| {
                let m = f.module().map(|m| m.name()).unwrap_or("");
                let module_ok = match module {
                    Some(want) => m == want,
                    None => f
                        .module()
                        .is_none_or(|m| m.kind() != sigdb::ModuleKind::KernelModule),
                };
                (
                    module_ok,
                    f.symbol() == name,
                    !f.flags().contains(FuncFlags::INLINE_ONLY),
                    std::cmp::Reverse((f.index(), 0)),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sigdb::{DbBuilder, FunctionDesc, ModuleDesc, ModuleKind, TypeDesc, TypeKind};

    #[test]
    fn a_section_label_gives_way_to_the_function_at_its_address() {
        let mut b = DbBuilder::new(62);
        let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
        let m = b.add_module(ModuleDesc {
            name: "vmlinux".into(),
            kind: ModuleKind::Kernel,
            build_id: vec![],
            base: 0xffffffff81000000,
        });
        b.add_function(FunctionDesc {
            module: m,
            addr: 0xffffffff81e00000,
            size: 64,
            name: "_raw_spin_trylock".into(),
            symbol: None,
            ret: int,
            params: vec![],
            flags: FuncFlags::empty(),
        });
        let set = DbSet::new(vec![Db::from_bytes(b.finish().unwrap()).unwrap()]);
        let syms = kallsyms::Kallsyms::parse(
            "ffffffff81e00000 T __lock_text_start\nffffffff81e00000 T _raw_spin_trylock\n\
             ffffffff81e00040 T _raw_spin_lock\n",
        );
        assert_eq!(
            set.known_symbol_at(&syms, 0xffffffff81e00000),
            Some("_raw_spin_trylock")
        );
        // No function the set knows there: nothing to prefer.
        assert_eq!(set.known_symbol_at(&syms, 0xffffffff81e00040), None);
    }
}
