//! Kernel symbols by address, from `/proc/kallsyms` or a `System.map` (`ffffffff81000000 T
//! _stext`, module symbols with `[module]`): what binary trace records name functions by.

/// One kallsyms / System.map line: (address, type letter, name, module).
pub fn parse_line(l: &str) -> Option<(u64, char, &str, Option<&str>)> {
    let mut it = l.split_ascii_whitespace();
    let addr = u64::from_str_radix(it.next()?, 16).ok()?;
    let kind = it.next()?;
    let &[k] = kind.as_bytes() else {
        return None;
    };
    let name = it.next()?;
    let module = it
        .next()
        .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'));
    Some((addr, char::from(k), name, module))
}

/// The address of the vmlinux symbol `name`, of any type (data too), in kallsyms / System.map
/// `text`: a search of the text for the one symbol, without parsing the rest.
pub fn vmlinux_symbol(text: &str, name: &str) -> Option<u64> {
    let pat = format!(" {name}\n");
    let mut from = 0;
    while let Some(i) = text[from..].find(&pat).map(|i| from + i) {
        from = i + pat.len();
        let start = text[..i].rfind('\n').map_or(0, |n| n + 1);
        match parse_line(&text[start..from]) {
            Some((addr, _, n, None)) if n == name && addr != 0 => return Some(addr),
            _ => {}
        }
    }
    None
}

/// The symbols of one kallsyms / System.map text, parsed once: its text symbols by
/// address, and the kernel image's data symbols (for [`SymbolMap`](crate::symbols::SymbolMap)'s
/// pointer names). Names live in one string: a session parses ~200,000 lines before it
/// starts (seconds under emulation when each name was its own allocation).
#[derive(Debug, Default, Clone)]
pub struct Kallsyms {
    /// Every kept name, one after another.
    names: String,
    /// Module names (a symbol's `module` - 1).
    modules: Vec<String>,
    /// Text symbols (`t T w W`), sorted by address (file order among equal ones).
    syms: Vec<Sym>,
    /// The kernel image's data symbols (`d D r R b B`), in file order.
    data: Vec<Sym>,
}

/// One symbol: its name is `names[name..name + len]`.
#[derive(Debug, Clone, Copy)]
struct Sym {
    addr: u64,
    name: u32,
    len: u16,
    /// 0: the kernel image; else the index in `modules` + 1.
    module: u16,
    /// The type letter.
    kind: u8,
}

impl Kallsyms {
    /// Parse kallsyms / System.map text; keeps text symbols (`t`/`T`/`W`/`w`) and the
    /// kernel image's data symbols.
    pub fn parse(text: &str) -> Kallsyms {
        let mut k = Kallsyms {
            names: String::with_capacity(text.len() / 2),
            ..Kallsyms::default()
        };
        for l in text.lines() {
            let Some((addr, kind, name, module)) = parse_line(l) else {
                continue;
            };
            let text_sym = matches!(kind, 't' | 'T' | 'w' | 'W');
            if !text_sym && (module.is_some() || !matches!(kind, 'd' | 'D' | 'r' | 'R' | 'b' | 'B'))
            {
                continue;
            }
            let (Ok(start), Ok(len)) = (u32::try_from(k.names.len()), u16::try_from(name.len()))
            else {
                continue;
            };
            let module = match module {
                None => 0,
                Some(m) => match k.modules.iter().rposition(|x| x == m) {
                    Some(i) => i + 1,
                    None => {
                        k.modules.push(m.to_string());
                        k.modules.len()
                    }
                },
            };
            let Ok(module) = u16::try_from(module) else {
                continue;
            };
            k.names.push_str(name);
            let sym = Sym {
                addr,
                name: start,
                len,
                module,
                kind: kind as u8,
            };
            if text_sym {
                k.syms.push(sym);
            } else {
                k.data.push(sym);
            }
        }
        // Stable: symbols sharing an address keep the file's order. Nearly sorted
        // already, which a merge sort takes in one pass.
        k.syms.sort_by_key(|s| s.addr);
        k
    }

    fn name(&self, s: &Sym) -> &str {
        &self.names[s.name as usize..s.name as usize + s.len as usize]
    }

    fn module(&self, s: &Sym) -> Option<&str> {
        (s.module > 0).then(|| self.modules[s.module as usize - 1].as_str())
    }

    /// The kernel image's `t`/`T` symbols, by address: (address, name).
    pub fn kernel_text(&self) -> impl Iterator<Item = (u64, &str)> {
        self.syms
            .iter()
            .filter(|s| s.module == 0 && matches!(s.kind, b't' | b'T'))
            .map(|s| (s.addr, self.name(s)))
    }

    /// The kernel image's symbols, text and data (nonzero addresses), as a
    /// [`SymbolMap`](crate::symbols::SymbolMap) (sizes unknown) for naming pointers.
    pub fn symbol_map(&self) -> crate::symbols::SymbolMap {
        let syms = self
            .syms
            .iter()
            .chain(&self.data)
            .filter(|s| s.module == 0 && s.addr != 0)
            .map(|s| crate::symbols::Symbol {
                addr: s.addr,
                size: 0,
                name: self.name(s).to_string(),
                func: matches!(s.kind, b't' | b'T' | b'w' | b'W'),
                global: s.kind.is_ascii_uppercase(),
            })
            .collect();
        crate::symbols::SymbolMap::new(syms)
    }

    /// The kernel image's data symbol `name`: its start and the start of the next symbol
    /// of the image after it (text or data), if any.
    pub fn data_symbol(&self, name: &str) -> Option<(u64, Option<u64>)> {
        let start = self
            .data
            .iter()
            .find(|s| s.module == 0 && self.name(s) == name)?
            .addr;
        let next = self
            .syms
            .iter()
            .chain(&self.data)
            .filter(|s| s.module == 0 && s.addr > start)
            .map(|s| s.addr)
            .min();
        Some((start, next))
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The function containing `addr`, as `%ps` names it: the symbol with the highest
    /// start not above it (function_graph records a function by its first traced
    /// instruction, after `endbr64` on IBT kernels): (name, module).
    pub fn at(&self, addr: u64) -> Option<(&str, Option<&str>)> {
        let s = &self.syms[self.index(addr)?];
        Some((self.name(s), self.module(s)))
    }

    /// The function containing `addr` with its start: (start, name, module).
    pub fn locate(&self, addr: u64) -> Option<(u64, &str, Option<&str>)> {
        let s = &self.syms[self.index(addr)?];
        Some((s.addr, self.name(s), self.module(s)))
    }

    /// The start of the function `name` (in `module`; `None`: the kernel image), the
    /// first one when several share the name.
    pub fn addr_of(&self, name: &str, module: Option<&str>) -> Option<u64> {
        self.syms
            .iter()
            .find(|s| self.name(s) == name && self.module(s) == module)
            .map(|s| s.addr)
    }

    /// `addr` as the kernel's `%pS` prints it: `caller+0x1c/0x90` (the size is the
    /// distance to the next symbol).
    pub fn describe(&self, addr: u64) -> Option<String> {
        let i = self.index(addr)?;
        let (start, name) = (self.syms[i].addr, self.name(&self.syms[i]));
        let size = self.syms.get(i + 1).map_or(0, |n| n.addr - start);
        Some(format!("{name}+{:#x}/{size:#x}", addr - start))
    }

    /// Every symbol that starts exactly at `addr` (a function and section labels can
    /// share an address): (name, module).
    pub fn all_at(&self, addr: u64) -> impl Iterator<Item = (&str, Option<&str>)> {
        let start = self.syms.partition_point(|s| s.addr < addr);
        self.syms[start..]
            .iter()
            .take_while(move |s| s.addr == addr)
            .map(|s| (self.name(s), self.module(s)))
    }

    fn index(&self, addr: u64) -> Option<usize> {
        let i = self
            .syms
            .partition_point(|s| s.addr <= addr)
            .checked_sub(1)?;
        // Far past the symbol's start is not in a function (no sizes here: 1 MiB).
        (addr - self.syms[i].addr < 1 << 20).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_symbol_of_any_type() {
        let text = "ffffffff81000000 T _stext\nffffffff82000000 D my__per_cpu_offset\n\
                    ffffffff82000100 D __per_cpu_offset_end\nffffffff82000200 R __per_cpu_offset\n\
                    ffffffffc0001000 d __per_cpu_offset\t[mod]\n";
        assert_eq!(
            vmlinux_symbol(text, "__per_cpu_offset"),
            Some(0xffffffff82000200)
        );
        assert_eq!(vmlinux_symbol(text, "_stext"), Some(0xffffffff81000000));
        assert_eq!(vmlinux_symbol(text, "missing"), None);
        // Unprivileged readers see zeros: no address.
        assert_eq!(vmlinux_symbol("0000000000000000 D x\n", "x"), None);
    }

    #[test]
    fn by_address() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000010 t helper\n\
             ffffffff82000000 D data\nffffffffc0001000 t bm_status_write\t[binfmt_misc]\n",
        );
        assert_eq!(k.len(), 3);
        assert_eq!(k.at(0xffffffff81000010), Some(("helper", None)));
        assert_eq!(
            k.locate(0xffffffff81000020),
            Some((0xffffffff81000010, "helper", None))
        );
        assert_eq!(k.addr_of("helper", None), Some(0xffffffff81000010));
        assert_eq!(k.addr_of("helper", Some("binfmt_misc")), None);
        assert_eq!(
            k.at(0xffffffffc0001000),
            Some(("bm_status_write", Some("binfmt_misc")))
        );
        // After `endbr64`: still the function.
        assert_eq!(k.at(0xffffffff81000014), Some(("helper", None)));
        assert_eq!(k.at(0xffffffff80ffffff), None);
        assert_eq!(
            k.all_at(0xffffffff81000010).collect::<Vec<_>>(),
            vec![("helper", None)]
        );
        assert_eq!(k.all_at(0xffffffff81000011).count(), 0);
        assert_eq!(k.at(0xffffffff91000000), None);
        assert_eq!(
            k.describe(0xffffffff81000004).as_deref(),
            Some("_stext+0x4/0x10")
        );
    }

    #[test]
    fn one_parse_serves_text_data_and_pointers() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000010 t helper\n\
             ffffffff81000010 t __alias\nffffffff81000020 W weak_fn\n\
             ffffffff82000000 D ops_table\nffffffff82000040 d next_data\n\
             ffffffff82000080 A abs_sym\nffffffffc0001000 t mod_fn\t[mod_a]\n\
             ffffffffc0002000 d mod_data\t[mod_a]\nffffffffc0003000 t other\t[mod_b]\n",
        );
        // The image's t/T symbols by address, file order among equal addresses.
        assert_eq!(
            k.kernel_text().collect::<Vec<_>>(),
            vec![
                (0xffffffff81000000, "_stext"),
                (0xffffffff81000010, "helper"),
                (0xffffffff81000010, "__alias")
            ]
        );
        assert_eq!(k.at(0xffffffffc0003004), Some(("other", Some("mod_b"))));
        assert_eq!(k.at(0xffffffffc0001000), Some(("mod_fn", Some("mod_a"))));
        // The next symbol of the image after a data symbol, of any kept kind.
        assert_eq!(
            k.data_symbol("ops_table"),
            Some((0xffffffff82000000, Some(0xffffffff82000040)))
        );
        assert_eq!(k.data_symbol("next_data"), Some((0xffffffff82000040, None)));
        assert_eq!(k.data_symbol("mod_data"), None, "a module's");
        assert_eq!(k.data_symbol("helper"), None, "text");
        // Pointer names: the image's text and data, not modules' nor absolute symbols.
        let m = k.symbol_map();
        assert_eq!(m.len(), 6);
        assert_eq!(
            m.pointer_text(0xffffffff82000004).as_deref(),
            None,
            "no sizes: only starts"
        );
        assert_eq!(
            m.pointer_text(0xffffffff82000000).as_deref(),
            Some("&ops_table")
        );
        assert_eq!(
            m.pointer_text(0xffffffff81000020).as_deref(),
            Some("weak_fn")
        );
        assert_eq!(m.pointer_text(0xffffffffc0001000), None);
    }
}
