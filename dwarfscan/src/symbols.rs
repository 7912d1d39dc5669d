//! ELF function symbols: the traceable name at an address and the clone kind its suffix
//! tells (`foo.isra.0`, `foo.constprop.0`, `foo.part.0`, `foo.cold`).

use sigdb::FuncFlags;

/// A function symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Name.
    pub name: &'a str,
    /// Address (laid out by dwarfscan for relocatable files).
    pub addr: u64,
    /// Size.
    pub size: u64,
    /// `STB_LOCAL`.
    pub local: bool,
}

/// Function symbols sorted by address.
#[derive(Debug, Default)]
pub struct Symbols<'a> {
    syms: Vec<Symbol<'a>>,
    /// `syms`' addresses, searched instead of the 40-byte records (a kernel's symbols
    /// take 1 MiB this way instead of 5: fewer cache misses per search).
    addrs: Vec<u64>,
    by_name: rustc_hash::FxHashMap<&'a str, Vec<u32>>,
}

impl<'a> Symbols<'a> {
    /// Index the symbols.
    pub fn new(mut syms: Vec<Symbol<'a>>) -> Symbols<'a> {
        syms.sort_by(|a, b| (a.addr, a.local, a.name).cmp(&(b.addr, b.local, b.name)));
        syms.dedup_by(|a, b| a.addr == b.addr && a.name == b.name);
        let mut by_name: rustc_hash::FxHashMap<&'a str, Vec<u32>> = Default::default();
        for (i, s) in syms.iter().enumerate() {
            by_name.entry(s.name).or_default().push(i as u32);
        }
        let addrs = syms.iter().map(|s| s.addr).collect();
        Symbols {
            syms,
            addrs,
            by_name,
        }
    }

    /// All symbols called `name`.
    pub fn named(&self, name: &str) -> Vec<&Symbol<'a>> {
        self.by_name
            .get(name)
            .map(|v| v.iter().map(|&i| &self.syms[i as usize]).collect())
            .unwrap_or_default()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// All symbols starting at `addr`.
    pub fn at(&self, addr: u64) -> &[Symbol<'a>] {
        let lo = self.addrs.partition_point(|&a| a < addr);
        let hi = lo + self.addrs[lo..].partition_point(|&a| a == addr);
        &self.syms[lo..hi]
    }

    /// The symbol that names the function `name` at `addr`: the same name, else a clone
    /// of it (`name.` prefix), else a global symbol, else any.
    pub fn best(&self, addr: u64, name: &str) -> Option<&Symbol<'a>> {
        let here = self.at(addr);
        here.iter()
            .find(|s| s.name == name)
            .or_else(|| {
                here.iter().find(|s| {
                    s.name.len() > name.len()
                        && s.name.starts_with(name)
                        && s.name.as_bytes()[name.len()] == b'.'
                })
            })
            .or_else(|| here.iter().find(|s| !s.local))
            .or_else(|| here.first())
    }
}

/// Clone and split flags from a symbol's suffixes (`.isra.0`, `.constprop.0`, `.part.0`,
/// `.cold`, `.lto_priv.0`, `.localalias`, `.llvm.123`); they combine (`foo.isra.0.cold`).
pub fn suffix_flags(symbol: &str) -> FuncFlags {
    let mut flags = FuncFlags::empty();
    let mut parts = symbol.split('.');
    parts.next();
    for p in parts {
        match p {
            "isra" => flags |= FuncFlags::CLONE_ISRA,
            "constprop" => flags |= FuncFlags::CLONE_CONSTPROP,
            "part" => flags |= FuncFlags::PART,
            "cold" => flags |= FuncFlags::COLD,
            "lto_priv" | "localalias" | "llvm" | "specialized" | "clone" => {
                flags |= FuncFlags::CLONE_OTHER
            }
            _ => {}
        }
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes() {
        assert_eq!(suffix_flags("foo"), FuncFlags::empty());
        assert_eq!(suffix_flags("foo.isra.0"), FuncFlags::CLONE_ISRA);
        assert_eq!(suffix_flags("foo.constprop.3"), FuncFlags::CLONE_CONSTPROP);
        assert_eq!(suffix_flags("foo.part.0"), FuncFlags::PART);
        assert_eq!(suffix_flags("foo.cold"), FuncFlags::COLD);
        assert_eq!(
            suffix_flags("foo.isra.0.cold"),
            FuncFlags::CLONE_ISRA | FuncFlags::COLD
        );
        assert_eq!(suffix_flags("foo.llvm.12345"), FuncFlags::CLONE_OTHER);
    }

    #[test]
    fn best_symbol() {
        let s = Symbols::new(vec![
            Symbol {
                name: "a_alias",
                addr: 16,
                size: 4,
                local: false,
            },
            Symbol {
                name: "a.isra.0",
                addr: 16,
                size: 4,
                local: true,
            },
            Symbol {
                name: "b",
                addr: 32,
                size: 4,
                local: false,
            },
        ]);
        assert_eq!(s.best(16, "a").unwrap().name, "a.isra.0");
        assert_eq!(s.best(32, "b").unwrap().name, "b");
        assert_eq!(s.best(16, "zz").unwrap().name, "a_alias");
        assert!(s.best(8, "a").is_none());
    }
}
