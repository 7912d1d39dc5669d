//! How the in-process recorder can reach each function's entry, read off the binary:
//! the compiler's own hook (a `-pg` build calls `mcount`, or `__fentry__` with
//! `-mfentry`), a NOP pad of `-fpatchable-function-entry`, or whole instructions at the
//! entry that can move to a trampoline. What it cannot hook is said with the reason.

use std::collections::HashMap;

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, OpKind};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, ObjectSymbolTable as _};

use crate::plan::{file_offset, Segment};

/// How a function is hooked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hook {
    /// It calls `mcount`/`__fentry__`; the call returns at this offset.
    Mcount(u8),
    /// A 5-byte NOP pad at this offset.
    Patchable(u8),
    /// These first bytes (whole instructions) move to a trampoline.
    Plain(u8),
    /// It cannot be hooked in process: why.
    No(String),
}

/// What the hooks of one binary are found with: its bytes, its PLT (stub address →
/// imported name) and whether it has patchable entries.
pub struct Binary<'a> {
    bytes: &'a [u8],
    segments: &'a [Segment],
    plt: HashMap<u64, String>,
    /// IFUNC symbols by address (their resolvers): every name at that address.
    ifuncs: HashMap<u64, Vec<String>>,
    patchable: bool,
    /// Statically linked: no `LD_PRELOAD` reaches it.
    pub is_static: bool,
}

/// The compiler's entry hooks.
const HOOK_NAMES: [&str; 3] = ["mcount", "_mcount", "__fentry__"];

impl<'a> Binary<'a> {
    /// Read `bytes` (an ELF file with `segments`).
    pub fn new(bytes: &'a [u8], segments: &'a [Segment]) -> Binary<'a> {
        let mut plt = HashMap::new();
        let mut ifuncs = HashMap::new();
        let mut patchable = false;
        let mut is_static = true;
        if let Ok(file) = object::File::parse(bytes) {
            patchable = file
                .section_by_name("__patchable_function_entries")
                .is_some();
            for sym in file.dynamic_symbols().chain(file.symbols()) {
                let object::SymbolFlags::Elf { st_info, .. } = sym.flags() else {
                    continue;
                };
                if st_info & 0xf == object::elf::STT_GNU_IFUNC {
                    if let Ok(name) = sym.name().map(str::to_string) {
                        let names: &mut Vec<String> = ifuncs.entry(sym.address()).or_default();
                        if !name.is_empty() && !names.contains(&name) {
                            names.push(name);
                        }
                    }
                }
            }
            is_static = file.section_by_name(".interp").is_none()
                && file.section_by_name(".dynamic").is_none();
            // GOT slot → imported name.
            let mut got = HashMap::new();
            if let (Some(relocs), Some(dynsyms)) =
                (file.dynamic_relocations(), file.dynamic_symbol_table())
            {
                for (at, r) in relocs {
                    if let object::RelocationTarget::Symbol(i) = r.target() {
                        if let Some(name) =
                            dynsyms.symbol_by_index(i).ok().and_then(|s| s.name().ok())
                        {
                            got.insert(at, name.to_string());
                        }
                    }
                }
            }
            for s in file.sections() {
                let name = s.name().unwrap_or("");
                if !name.starts_with(".plt") {
                    continue;
                }
                let Ok(data) = s.data() else { continue };
                let mut dec = Decoder::with_ip(64, data, s.address(), DecoderOptions::NONE);
                for ins in &mut dec {
                    if ins.flow_control() == FlowControl::IndirectBranch
                        && ins.is_ip_rel_memory_operand()
                    {
                        if let Some(n) = got.get(&ins.ip_rel_memory_address()) {
                            plt.insert(ins.ip() & !15, n.clone());
                        }
                    }
                }
            }
            // `call *mcount@GOTPCREL(%rip)` goes through the GOT slot itself.
            for (at, n) in got {
                if HOOK_NAMES.contains(&n.as_str()) {
                    plt.insert(at, n);
                }
            }
        }
        Binary {
            bytes,
            segments,
            plt,
            ifuncs,
            patchable,
            is_static,
        }
    }

    /// The names of the IFUNC whose resolver is at `addr` (`expf`, `expf32`,
    /// `__ieee754_expf`, ...), if one is.
    pub fn ifunc_at(&self, addr: u64) -> Option<&[String]> {
        self.ifuncs
            .get(&addr)
            .map(Vec::as_slice)
            .filter(|n| !n.is_empty())
    }

    /// The code of the function at ELF address `addr` of `size` bytes.
    fn code(&self, addr: u64, size: u64) -> Option<&'a [u8]> {
        let off = file_offset(self.segments, addr)? as usize;
        self.bytes.get(off..off.checked_add(size as usize)?)
    }

    /// How the function at `addr` (`size` bytes) is hooked.
    pub fn hook(&self, addr: u64, size: u64) -> Hook {
        let Some(code) = self.code(addr, size.max(1)) else {
            return Hook::No("its code is in no loadable segment".into());
        };
        let ins: Vec<Instruction> = Decoder::with_ip(64, code, addr, DecoderOptions::NONE)
            .into_iter()
            .collect();
        // The compiler's hook: a call of mcount/__fentry__ among the first instructions.
        for i in ins.iter().take(8) {
            if !matches!(
                i.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            ) {
                continue;
            }
            let target = match i.op0_kind() {
                OpKind::NearBranch64 => Some(i.near_branch64()),
                OpKind::Memory if i.is_ip_rel_memory_operand() => Some(i.ip_rel_memory_address()),
                _ => None,
            };
            if let Some(n) = target.and_then(|t| self.plt.get(&t)) {
                if HOOK_NAMES.contains(&n.as_str()) {
                    return match u8::try_from(i.next_ip() - addr) {
                        Ok(off) => Hook::Mcount(off),
                        Err(_) => Hook::No("its mcount call is too far in".into()),
                    };
                }
            }
            break;
        }
        // A NOP pad (five 1-byte NOPs as gcc writes it, or one 5-byte NOP), maybe after
        // an endbr64.
        if self.patchable {
            let mut off = 0usize;
            if code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
                off = 4;
            }
            if code.get(off..off + 5).is_some_and(is_nop_pad) {
                return Hook::Patchable(off as u8);
            }
        }
        // Whole instructions covering 5 bytes, which nothing in the function jumps into.
        let mut n = 0u64;
        for i in &ins {
            if n >= 5 {
                break;
            }
            if i.is_invalid() {
                return Hook::No("its first instructions do not decode".into());
            }
            n += i.len() as u64;
        }
        if n < 5 || n > size {
            return Hook::No(format!("it is {size} bytes: too short for a 5-byte jump"));
        }
        // The moved bytes run from a trampoline: a call among them is made as from its
        // own place only when it ends them (and is direct or through a pointer).
        let moved: Vec<&Instruction> = ins.iter().take_while(|i| i.ip() < addr + n).collect();
        for (k, i) in moved.iter().enumerate() {
            if !matches!(
                i.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            ) {
                continue;
            }
            let direct = matches!(i.op0_kind(), OpKind::NearBranch64)
                || (i.op0_kind() == OpKind::Memory && i.is_ip_rel_memory_operand());
            if k + 1 != moved.len() || !direct {
                return Hook::No(format!(
                    "a call at {:#x} is among its first {n} bytes",
                    i.ip()
                ));
            }
        }
        for i in &ins {
            let target = match i.op0_kind() {
                OpKind::NearBranch64 => i.near_branch64(),
                _ => continue,
            };
            // Calls and jumps to the entry go through the hook: a new call.
            let is_call = i.flow_control() == FlowControl::Call;
            if !is_call && (addr + 1..addr + n).contains(&target) {
                return Hook::No(format!(
                    "code at {:#x} jumps into its first {n} bytes",
                    i.ip()
                ));
            }
        }
        Hook::Plain(n as u8)
    }
}

/// Whether 5 bytes are a NOP pad the recorder patches: `nop` x 5 or `nopl 0(%rax,%rax)`.
pub fn is_nop_pad(b: &[u8]) -> bool {
    b == [0x90; 5] || b == [0x0f, 0x1f, 0x44, 0x00, 0x00]
}
