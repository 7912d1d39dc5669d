//! Static callee discovery: the direct `call`/`jmp rel32` targets in a function's machine
//! code, read from the live kernel through `/proc/kcore` (or, on kernels without it,
//! through a BPF program: [`dcg_bpf::KernelPeek`]) and resolved with `/proc/kallsyms`. Used to create exit probes before the first traced call (a command
//! may call the traced function once only). Indirect calls are not found; the stream
//! adds those callees lazily.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;

use dcg_dbset::kallsyms::Kallsyms;

/// Kernel text symbols (borrowed from a parsed `/proc/kallsyms`) and a reader of kernel
/// memory.
pub struct KernelText<'k> {
    /// The kernel image's `t`/`T` symbols by address: (address, name).
    syms: Vec<(u64, &'k str)>,
    by_name: HashMap<&'k str, u64>,
    kallsyms: &'k Kallsyms,
    memory: Memory,
}

/// Where kernel memory is read from.
enum Memory {
    /// `/proc/kcore` and the (vaddr, file offset, size) of its PT_LOAD segments.
    Kcore(File, Vec<(u64, u64, u64)>),
    /// A BPF program that copies it.
    Bpf(Box<dcg_bpf::KernelPeek>),
}

impl<'k> KernelText<'k> {
    /// The kernel's text symbols in `kallsyms` (`/proc/kallsyms` parsed) and a reader of
    /// its memory, `/proc/kcore` or the BPF reader; `None` when the addresses are hidden
    /// or no reader works.
    pub fn new(kallsyms: &'k Kallsyms) -> Option<KernelText<'k>> {
        let mut syms: Vec<(u64, &str)> = kallsyms.kernel_text().collect();
        // Among symbols at one address, the first by name.
        syms.sort();
        if syms.first().is_none_or(|s| s.0 == 0) {
            return None; // kptr_restrict: every address reads 0
        }
        let mut by_name = HashMap::with_capacity(syms.len());
        for &(a, n) in &syms {
            by_name.entry(n).or_insert(a);
        }
        let kcore = File::open("/proc/kcore").ok().and_then(|f| {
            let segs = load_segments(&f)?;
            Some(Memory::Kcore(f, segs))
        });
        let memory = match kcore {
            Some(m) => m,
            None => {
                // What `getppid` runs, to trigger the reader from this process.
                let trigger = ["__x64_sys_getppid", "__do_sys_getppid", "sys_getppid"]
                    .iter()
                    .find_map(|n| by_name.get(*n))?;
                match dcg_bpf::KernelPeek::open(*trigger) {
                    Ok(p) => Memory::Bpf(Box::new(p)),
                    Err(e) => {
                        log::debug!("no /proc/kcore and no BPF reader of kernel text: {e}");
                        return None;
                    }
                }
            }
        };
        Some(KernelText {
            syms,
            by_name,
            kallsyms,
            memory,
        })
    }

    fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        match &self.memory {
            Memory::Kcore(kcore, segs) => {
                let &(va, off, _) = segs
                    .iter()
                    .find(|(va, _, size)| addr >= *va && addr + len as u64 <= va + size)?;
                let mut buf = vec![0u8; len];
                kcore.read_exact_at(&mut buf, off + (addr - va)).ok()?;
                Some(buf)
            }
            Memory::Bpf(peek) => peek.read(addr, len),
        }
    }

    fn sym_at(&self, addr: u64) -> Option<&'k str> {
        let i = self.syms.partition_point(|(a, _)| *a < addr);
        let &(a, n) = self.syms.get(i)?;
        (a == addr).then_some(n)
    }

    /// The address of the text symbol `name`.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    /// The function starting at `addr` (not its `__pfx_` padding label).
    pub fn name_at(&self, addr: u64) -> Option<&'k str> {
        self.sym_at(addr)
            .map(|n| n.strip_prefix("__pfx_").unwrap_or(n))
    }

    /// The text symbols whose names satisfy `pick`.
    pub fn names_matching(&self, pick: &dyn Fn(&str) -> bool) -> Vec<String> {
        self.syms
            .iter()
            .filter(|(_, n)| pick(n))
            .map(|(_, n)| n.to_string())
            .collect()
    }

    /// The functions a table of function pointers points to: the kernel image's data
    /// symbol `table`, read word by word up to the next symbol, each word that is a
    /// function's start.
    pub fn functions_in_table(&self, table: &str) -> Vec<String> {
        let Some((start, next)) = self.kallsyms.data_symbol(table) else {
            return Vec::new();
        };
        let end = next.unwrap_or(start + 512).min(start + 4096);
        let Some(bytes) = self.read(start, (end - start) as usize & !7) else {
            return Vec::new();
        };
        let mut out: Vec<String> = bytes
            .chunks_exact(8)
            .filter_map(|w| self.name_at(u64::from_le_bytes(w.try_into().ok()?)))
            .map(str::to_string)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Direct call/jump targets of `func` that satisfy `keep`.
    pub fn callees(&self, func: &str, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
        let Some(&addr) = self.by_name.get(func) else {
            return Vec::new();
        };
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        let end = self.syms.get(i).map_or(addr + 4096, |(a, _)| *a);
        let len = (end - addr).min(64 * 1024) as usize;
        let Some(code) = self.read(addr, len) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for i in 0..code.len().saturating_sub(4) {
            if code[i] != 0xe8 && code[i] != 0xe9 {
                continue;
            }
            let rel = i32::from_le_bytes([code[i + 1], code[i + 2], code[i + 3], code[i + 4]]);
            let target = (addr + i as u64 + 5).wrapping_add(rel as i64 as u64);
            let name = match self.sym_at(target) {
                Some(n) => match n.strip_prefix("__pfx_") {
                    Some(real) => real,
                    None => n,
                },
                None => match self.sym_at(target.wrapping_sub(16)) {
                    // Call-depth tracking calls into the padding before a function.
                    Some(n) if n.starts_with("__pfx_") => &n[6..],
                    _ => continue,
                },
            };
            if name != func && keep(name) && seen.insert(name.to_string()) {
                out.push(name.to_string());
            }
        }
        out
    }

    /// Breadth-first callees of `roots` down to `depth` levels, at most `cap` functions.
    pub fn closure(
        &self,
        roots: &[String],
        depth: u32,
        cap: usize,
        keep: &dyn Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut seen: HashSet<String> = roots.iter().cloned().collect();
        let mut queue: VecDeque<(String, u32)> = roots.iter().map(|r| (r.clone(), 0)).collect();
        let mut out = Vec::new();
        while let Some((f, d)) = queue.pop_front() {
            if d >= depth {
                continue;
            }
            for c in self.callees(&f, keep) {
                if out.len() >= cap {
                    return out;
                }
                if seen.insert(c.clone()) {
                    out.push(c.clone());
                    queue.push_back((c, d + 1));
                }
            }
        }
        out
    }
}

/// PT_LOAD segments of an ELF64 little-endian core file.
fn load_segments(f: &File) -> Option<Vec<(u64, u64, u64)>> {
    let mut eh = [0u8; 64];
    f.read_exact_at(&mut eh, 0).ok()?;
    if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let u16at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let phoff = u64at(&eh, 32);
    let phentsize = u16at(&eh, 54) as usize;
    let phnum = u16at(&eh, 56) as usize;
    if phentsize < 56 || phnum == 0 || phnum > 4096 {
        return None;
    }
    let mut ph = vec![0u8; phentsize * phnum];
    f.read_exact_at(&mut ph, phoff).ok()?;
    let mut segs = Vec::new();
    for i in 0..phnum {
        let p = &ph[i * phentsize..];
        if u32at(p, 0) != 1 {
            continue;
        }
        segs.push((u64at(p, 16), u64at(p, 8), u64at(p, 32)));
    }
    Some(segs)
}
