//! Symbols by address: every name at a function's address (ELF `.symtab` and `.dynsym`
//! aliases: libc's `free` is `__libc_free` in DWARF), and the name of the object or
//! function a pointer lands on (`&static_var`, `&_IO_2_1_stdout_`, `filldir64`). One
//! table for user space (ELF symbols) and the kernel (kallsyms, `System.map`).

use object::{Object as _, ObjectSymbol as _, SymbolKind};

/// A symbol: start, size (0 when unknown), name, whether it is a function, whether it is
/// global.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Start address.
    pub addr: u64,
    /// Size in bytes (0: unknown).
    pub size: u64,
    /// Name.
    pub name: String,
    /// A function (else data).
    pub func: bool,
    /// Global (or weak) rather than local.
    pub global: bool,
}

/// Why an ELF file's symbols could not be read.
#[derive(Debug, thiserror::Error)]
#[error("not a valid ELF file: {0}")]
pub struct SymbolError(String);

/// Symbols sorted by address.
#[derive(Debug, Default, Clone)]
pub struct SymbolMap {
    syms: Vec<Symbol>,
}

impl SymbolMap {
    /// The defined function and data symbols of an ELF file, `.symtab` and `.dynsym`.
    pub fn from_elf(bytes: &[u8]) -> Result<SymbolMap, SymbolError> {
        let file = object::File::parse(bytes).map_err(|e| SymbolError(e.to_string()))?;
        let mut syms = Vec::new();
        for s in file.symbols().chain(file.dynamic_symbols()) {
            let func = match s.kind() {
                SymbolKind::Text => true,
                SymbolKind::Data | SymbolKind::Tls => false,
                _ => continue,
            };
            let Ok(name) = s.name() else { continue };
            if s.is_undefined() || s.address() == 0 || name.is_empty() {
                continue;
            }
            syms.push(Symbol {
                addr: s.address(),
                size: s.size(),
                name: name.to_string(),
                func,
                global: s.is_global(),
            });
        }
        Ok(SymbolMap::new(syms))
    }

    /// Symbols of kallsyms / `System.map` text: text (`t T w W`) as functions, data (`d D
    /// r R b B`) as data; sizes unknown ([`Kallsyms::symbol_map`](crate::kallsyms::Kallsyms::symbol_map)
    /// when the text is parsed anyway).
    pub fn from_kallsyms(text: &str) -> SymbolMap {
        crate::kallsyms::Kallsyms::parse(text).symbol_map()
    }

    pub(crate) fn new(mut syms: Vec<Symbol>) -> SymbolMap {
        syms.sort_by(|a, b| (a.addr, &a.name).cmp(&(b.addr, &b.name)));
        syms.dedup_by(|a, b| a.addr == b.addr && a.name == b.name);
        SymbolMap { syms }
    }

    /// Add the symbols of `other` (a separate debug file's `.symtab`).
    pub fn merge(&mut self, other: SymbolMap) {
        let mut all = std::mem::take(&mut self.syms);
        all.extend(other.syms);
        *self = SymbolMap::new(all);
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// Every symbol that starts at `addr`.
    pub fn at(&self, addr: u64) -> &[Symbol] {
        let a = self.syms.partition_point(|s| s.addr < addr);
        let b = self.syms.partition_point(|s| s.addr <= addr);
        &self.syms[a..b]
    }

    /// Every function symbol.
    pub fn functions(&self) -> impl Iterator<Item = &Symbol> {
        self.syms.iter().filter(|s| s.func)
    }

    /// The symbol `addr` lands on, and the offset into it: one starting there (the global
    /// name first, then the one with fewest leading underscores), else one whose known
    /// size covers it.
    pub fn lookup(&self, addr: u64) -> Option<(&Symbol, u64)> {
        fn preferred(syms: &[Symbol], addr: u64, covering: bool) -> Option<&Symbol> {
            syms.iter()
                .filter(|s| !covering || (s.size > 0 && addr - s.addr < s.size))
                .min_by_key(|s| {
                    (
                        !s.global,
                        s.name.len() - s.name.trim_start_matches('_').len(),
                        s.name.as_str(),
                    )
                })
        }
        // One search: the symbols starting at or below `addr`, those at `addr` last (a
        // value shown as a pointer is looked up, most often in vain).
        let end = self.syms.partition_point(|s| s.addr <= addr);
        let below = &self.syms[..end];
        let at = below.len() - below.iter().rev().take_while(|s| s.addr == addr).count();
        if let Some(best) = preferred(&below[at..], addr, false) {
            return Some((best, 0));
        }
        let start = below
            .iter()
            .rev()
            .take(64)
            .find(|s| s.size > 0 && addr - s.addr < s.size)?
            .addr;
        preferred(self.at(start), addr, true).map(|s| (s, addr - s.addr))
    }

    /// A pointer that lands on a symbol, as C would write it: `&name` (`&name+0x10`
    /// inside it) for data, `name` for a function's start.
    pub fn pointer_text(&self, addr: u64) -> Option<String> {
        self.pointer_text_as(addr, None)
    }

    /// [`SymbolMap::pointer_text`], with whether the pointer points to a function known
    /// from its type (`Some`), which wins over the symbol's own kind: kallsyms types are
    /// not reliable (Debian 7.2's marks `init_user_ns` and `nop_mnt_idmap` `T`).
    pub fn pointer_text_as(&self, addr: u64, to_func: Option<bool>) -> Option<String> {
        let (s, off) = self.lookup(addr)?;
        Some(match (to_func.unwrap_or(s.func), off) {
            (true, 0) => s.name.clone(),
            (_, 0) => format!("&{}", s.name),
            (_, off) => format!("&{}+{off:#x}", s.name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_pointers() {
        let m = SymbolMap::from_kallsyms(
            "ffffffff81000000 T _stext\nffffffff81200000 T filldir64\n\
             ffffffff82000000 D ext4_file_operations\nffffffff82000100 d local_table\n\
             ffffffffc0001000 t bm_status_write\t[binfmt_misc]\n",
        );
        assert_eq!(m.len(), 4);
        assert_eq!(
            m.pointer_text(0xffffffff82000000).as_deref(),
            Some("&ext4_file_operations")
        );
        assert_eq!(
            m.pointer_text(0xffffffff81200000).as_deref(),
            Some("filldir64")
        );
        // Sizes are unknown in kallsyms: only exact hits are named.
        assert_eq!(m.pointer_text(0xffffffff82000008), None);
        assert_eq!(m.pointer_text(0xffffffffc0001000), None);
    }

    #[test]
    fn preferred_alias() {
        let sym = |name: &str, global| Symbol {
            addr: 0x1000,
            size: 16,
            name: name.into(),
            func: false,
            global,
        };
        let m = SymbolMap::new(vec![
            sym("__x", true),
            sym("x_local", false),
            sym("_x", true),
        ]);
        assert_eq!(m.pointer_text(0x1000).as_deref(), Some("&_x"));
        assert_eq!(m.pointer_text(0x1004).as_deref(), Some("&_x+0x4"));
        assert_eq!(m.at(0x1000).len(), 3);
        assert_eq!(m.pointer_text(0x1010), None);
        // The pointer's type wins over the symbol's kind.
        assert_eq!(m.pointer_text_as(0x1000, Some(true)).as_deref(), Some("_x"));
    }
}
