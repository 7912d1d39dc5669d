//! Kernel symbols by address, from `/proc/kallsyms` or a `System.map` (`ffffffff81000000 T
//! _stext`, module symbols with `[module]`): what binary trace records name functions by.

/// One kallsyms / System.map line: (address, type letter, name, module).
pub fn parse_line(l: &str) -> Option<(u64, char, &str, Option<&str>)> {
    let mut it = l.split_whitespace();
    let addr = u64::from_str_radix(it.next()?, 16).ok()?;
    let mut kind = it.next()?.chars();
    let k = kind.next()?;
    if kind.next().is_some() {
        return None;
    }
    let name = it.next()?;
    let module = it
        .next()
        .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'));
    Some((addr, k, name, module))
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

/// Text symbols sorted by address.
#[derive(Debug, Default, Clone)]
pub struct Kallsyms {
    syms: Vec<(u64, String, Option<String>)>,
}

impl Kallsyms {
    /// Parse kallsyms / System.map text; keeps text symbols (`t`/`T`/`W`/`w`).
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms: Vec<(u64, String, Option<String>)> = text
            .lines()
            .filter_map(|l| {
                let (addr, kind, name, module) = parse_line(l)?;
                matches!(kind, 't' | 'T' | 'w' | 'W')
                    .then(|| (addr, name.to_string(), module.map(str::to_string)))
            })
            .collect();
        syms.sort_by_key(|s| s.0);
        Kallsyms { syms }
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
        Some((s.1.as_str(), s.2.as_deref()))
    }

    /// The function containing `addr` with its start: (start, name, module).
    pub fn locate(&self, addr: u64) -> Option<(u64, &str, Option<&str>)> {
        let s = &self.syms[self.index(addr)?];
        Some((s.0, s.1.as_str(), s.2.as_deref()))
    }

    /// The start of the function `name` (in `module`; `None`: the kernel image), the
    /// first one when several share the name.
    pub fn addr_of(&self, name: &str, module: Option<&str>) -> Option<u64> {
        self.syms
            .iter()
            .find(|s| s.1 == name && s.2.as_deref() == module)
            .map(|s| s.0)
    }

    /// `addr` as the kernel's `%pS` prints it: `caller+0x1c/0x90` (the size is the
    /// distance to the next symbol).
    pub fn describe(&self, addr: u64) -> Option<String> {
        let i = self.index(addr)?;
        let (start, name, _) = &self.syms[i];
        let size = self.syms.get(i + 1).map_or(0, |n| n.0 - start);
        Some(format!("{name}+{:#x}/{size:#x}", addr - start))
    }

    /// Every symbol that starts exactly at `addr` (a function and section labels can
    /// share an address): (name, module).
    pub fn all_at(&self, addr: u64) -> impl Iterator<Item = (&str, Option<&str>)> {
        let start = self.syms.partition_point(|s| s.0 < addr);
        self.syms[start..]
            .iter()
            .take_while(move |s| s.0 == addr)
            .map(|s| (s.1.as_str(), s.2.as_deref()))
    }

    fn index(&self, addr: u64) -> Option<usize> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        // Far past the symbol's start is not in a function (no sizes here: 1 MiB).
        (addr - self.syms[i].0 < 1 << 20).then_some(i)
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
}
