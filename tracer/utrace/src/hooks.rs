//! How the in-process recorder can reach each function's entry, read off the binary:
//! the compiler's own hook (a `-pg` build calls `mcount`, or `__fentry__` with
//! `-mfentry`), a NOP pad of `-fpatchable-function-entry`, or whole instructions at the
//! entry that can move to a trampoline. What it cannot hook is said with the reason.

use std::collections::HashMap;

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, OpKind};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, ObjectSymbolTable as _};

use crate::plan::{file_offset, Segment};
use dcg_inproc::layout::{
    fflags, mode, CondTest, FetchOp, COND_EQ, COND_GE, COND_GT, COND_LE, COND_LT, COND_MASK,
    COND_NE, COND_SIGNED, COND_TRUTH,
};
use dcg_inproc::plan::{parse_fetch, PlanFunc};

use crate::error::{Result, UtraceError};
use crate::plan::{Probe, Target, COMM_FIELD};
use crate::Notice;

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
    No(Unhookable),
}

/// Why a function cannot be hooked in process (it is traced with uprobes instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unhookable {
    /// Its code is in no loadable segment.
    NoCode,
    /// Its mcount call returns too far from the entry for the plan's offset.
    McountTooFar,
    /// Its first instructions do not decode.
    Undecodable,
    /// It is shorter than the 5-byte jump (its size in bytes).
    TooShort(u64),
    /// A call (at this address) is among the first `bytes` bytes, which would move.
    CallInMoved {
        /// The call's address.
        at: u64,
        /// The bytes that would move.
        bytes: u64,
    },
    /// Code (at this address) jumps into the first `bytes` bytes.
    JumpIntoMoved {
        /// The jump's address.
        at: u64,
        /// The bytes that would move.
        bytes: u64,
    },
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
            return Hook::No(Unhookable::NoCode);
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
                        Err(_) => Hook::No(Unhookable::McountTooFar),
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
                return Hook::No(Unhookable::Undecodable);
            }
            n += i.len() as u64;
        }
        if n < 5 || n > size {
            return Hook::No(Unhookable::TooShort(size));
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
                return Hook::No(Unhookable::CallInMoved {
                    at: i.ip(),
                    bytes: n,
                });
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
                return Hook::No(Unhookable::JumpIntoMoved {
                    at: i.ip(),
                    bytes: n,
                });
            }
        }
        Hook::Plain(n as u8)
    }
}

/// Whether 5 bytes are a NOP pad the recorder patches: `nop` x 5 or `nopl 0(%rax,%rax)`.
pub fn is_nop_pad(b: &[u8]) -> bool {
    b == [0x90; 5] || b == [0x0f, 0x1f, 0x44, 0x00, 0x00]
}

/// The recorder's plan of each probe: how its entry is hooked and its fetches (for an
/// IFUNC, its resolver and each implementation it may choose); probes it cannot hook get
/// `None` and a note (uprobes trace them). An IFUNC's probe becomes one of the chosen
/// implementation, named by the IFUNC, its values raw (the implementations are assembly,
/// without DWARF).
pub fn recorder_plan<'a>(
    targets: &'a [Target],
    prototypes: &[&'a sigdb::Db],
    probes: &mut [Probe<'a>],
    notes: &mut Vec<Notice>,
) -> Result<Vec<Option<Vec<PlanFunc>>>> {
    let mut bytes = Vec::new();
    for t in targets {
        bytes.push(std::fs::read(&t.path).map_err(|e| UtraceError::Binary {
            path: t.path.display().to_string(),
            what: e.to_string(),
        })?);
    }
    let bins: Vec<Binary<'_>> = targets
        .iter()
        .zip(&bytes)
        .map(|(t, b)| Binary::new(b, &t.segments))
        .collect();
    let mut out = Vec::new();
    for p in probes.iter_mut() {
        let t = &targets[p.target];
        let bin = &bins[p.target];
        let ops = |fields: &[crate::plan::Field]| fetch_ops(t, fields);
        if let Some(names) = bin.ifunc_at(p.addr) {
            out.push(Some(ifunc_hooks(
                targets, prototypes, p, bin, names, notes,
            )?));
            continue;
        }
        let size = p
            .func
            .filter(|f| !f.is_declaration())
            .map(|f| u64::from(f.size()))
            .or_else(|| t.symbols.at(p.addr).iter().map(|s| s.size).max())
            .unwrap_or(0);
        let (mode, site_off, patch_len) = match bin.hook(p.addr, size) {
            Hook::Mcount(o) => (mode::MCOUNT, o, 0),
            Hook::Patchable(o) => (mode::PATCHABLE, o, 0),
            Hook::Plain(n) => (mode::PLAIN, 0, n),
            Hook::No(why) => {
                notes.push(Notice::ByUprobes {
                    symbol: p.symbol.clone(),
                    path: t.path.clone(),
                    why,
                });
                out.push(None);
                continue;
            }
        };
        let mut flags = 0;
        if p.jump.returns_twice() {
            flags |= fflags::NO_RET_HOOK;
        }
        if p.ret_fields.iter().any(|f| f.fetch.starts_with("%st0")) {
            flags |= fflags::RET_X87;
        }
        out.push(Some(vec![PlanFunc {
            target: p.target as u32,
            addr: p.addr,
            size: size as u32,
            mode,
            flags,
            site_off,
            patch_len,
            entry: ops(&p.entry_fields)?,
            ret: ops(&p.ret_fields)?,
            conds: Vec::new(),
            saved: Vec::new(),
        }]));
    }
    Ok(out)
}

/// The fetch operations of a probe's fields (the task name aside: the recorder knows it).
fn fetch_ops(t: &Target, fields: &[crate::plan::Field]) -> Result<Vec<FetchOp>> {
    fields
        .iter()
        .filter(|f| f.name != COMM_FIELD)
        .map(|f| {
            parse_fetch(&f.fetch).map_err(|e| UtraceError::Binary {
                path: t.path.display().to_string(),
                what: e.to_string(),
            })
        })
        .collect()
}

/// The plan of an IFUNC's probe (`names`: the IFUNC's symbols): its resolver and each
/// `__NAME_*` implementation the recorder can hook; the probe becomes the chosen
/// implementation's, typed by a caller's declaration or raw.
fn ifunc_hooks<'a>(
    targets: &'a [Target],
    prototypes: &[&'a sigdb::Db],
    p: &mut Probe<'a>,
    bin: &Binary<'_>,
    names: &[String],
    notes: &mut Vec<Notice>,
) -> Result<Vec<PlanFunc>> {
    let t = &targets[p.target];
    let base = |n: &str| n.split('@').next().unwrap_or(n).to_string();
    let name = names
        .iter()
        .map(|n| base(n))
        .find(|n| *n == p.symbol)
        .unwrap_or_else(|| base(&names[0]));
    let name = name.as_str();
    // The implementations: `__NAME_variant` (glibc's naming) for any of its
    // names, hookable.
    let prefixes: Vec<String> = names.iter().map(|n| format!("__{}_", base(n))).collect();
    let mut impls: Vec<(u64, u64)> = t
        .symbols
        .functions()
        .filter(|s| s.size > 0 && prefixes.iter().any(|x| s.name.starts_with(x)))
        .map(|s| (s.addr, s.size))
        .collect();
    impls.sort_unstable();
    impls.dedup();
    let mut funcs = vec![PlanFunc {
        target: p.target as u32,
        addr: p.addr,
        size: 0,
        mode: mode::IFUNC,
        flags: 0,
        site_off: 0,
        patch_len: 0,
        entry: Vec::new(),
        ret: Vec::new(),
        conds: Vec::new(),
        saved: Vec::new(),
    }];
    // Typed by the IFUNC's declaration where a caller's DWARF has one.
    let decl = crate::plan::prototype(targets, prototypes, p.target, name, p.addr);
    match decl {
        Some(d) => crate::plan::make_typed(p, d, name, crate::plan::Reads::IN_PROCESS),
        None => crate::plan::make_raw(p, name),
    }
    let entry = fetch_ops(t, &p.entry_fields)?;
    let ret = fetch_ops(t, &p.ret_fields)?;
    for (addr, size) in impls {
        if let Hook::Plain(n) = bin.hook(addr, size) {
            funcs.push(PlanFunc {
                target: p.target as u32,
                addr,
                size: size as u32,
                mode: mode::PLAIN,
                flags: fflags::IFUNC_IMPL,
                site_off: 0,
                patch_len: n,
                entry: entry.clone(),
                ret: ret.clone(),
                conds: Vec::new(),
                saved: Vec::new(),
            });
        }
    }
    if funcs.len() > 1 {
        let declared_in = decl.map(|d| d.module().map_or("?", |m| m.name()).to_string());
        notes.push(Notice::IfuncTraced {
            name: name.to_string(),
            path: t.path.clone(),
            impls: funcs.len() - 1,
            declared_in,
        });
        return Ok(funcs);
    }
    // Hooking the resolver would trace the binding, not the calls.
    notes.push(Notice::IfuncUntraced {
        name: name.to_string(),
        path: t.path.clone(),
    });
    Ok(funcs)
}

/// The recorder's entry tests of probe `p` for `tests` (`--filter` on a top-level call's
/// parameters and members, [`dcg_filter::saved::TreeFilter::entry_tests`]): each on the
/// one entry fetch that holds its value (a member: the word `--fields` reads); a
/// parameter fetched otherwise (two words, a string, a constant) is left to the decoded
/// calls.
pub fn entry_conds(p: &Probe<'_>, tests: &[dcg_filter::EntryTest]) -> Vec<CondTest> {
    use dcg_filter::{CmpOp, EntryValue};
    tests
        .iter()
        .filter_map(|t| {
            let w = match &t.value {
                EntryValue::Arg(i) => match &p.args.get(*i)?.1 {
                    crate::plan::ArgPlan::Fetched {
                        words,
                        string: None,
                    } if words.len() == 1 => words[0],
                    _ => return None,
                },
                EntryValue::Member(path) => {
                    p.fields
                        .iter()
                        .find(|f| f.name == *path && f.bits.is_none())?
                        .word
                }
            };
            let (cmp, value) = match t.cmp {
                None => (COND_TRUTH, 0),
                Some((op, v)) => (
                    match op {
                        CmpOp::Eq => COND_EQ,
                        CmpOp::Ne => COND_NE,
                        CmpOp::Lt => COND_LT,
                        CmpOp::Le => COND_LE,
                        CmpOp::Gt => COND_GT,
                        CmpOp::Ge => COND_GE,
                        // `~` never reaches entry tests.
                        CmpOp::Glob => return None,
                    },
                    v,
                ),
            };
            let mut flags = 0;
            if t.signed {
                flags |= COND_SIGNED;
            }
            if t.mask.is_some() {
                flags |= COND_MASK;
            }
            Some(CondTest {
                op: u16::try_from(w).ok()?,
                cmp,
                size: t.size as u8,
                flags,
                reserved: [0; 3],
                mask: t.mask.unwrap_or(0),
                value,
            })
        })
        .collect()
}

/// The recorder's entry fetches of each hooked probe again, from its entry fields (after
/// `--fields` or `--deref` added some), and the return fetches of its output parameters.
/// An IFUNC's implementations (no DWARF, no fields) are left.
pub fn refresh_entry_ops(
    targets: &[Target],
    probes: &[Probe<'_>],
    hooks: &mut [Option<Vec<PlanFunc>>],
) -> Result<()> {
    for (p, h) in probes.iter().zip(hooks.iter_mut()) {
        let more = !p.fields.is_empty() || !p.derefs.is_empty();
        if let (Some([f]), true) = (h.as_deref_mut(), more) {
            f.entry = fetch_ops(&targets[p.target], &p.entry_fields)?;
        }
        // Output parameters: the return reads through the pointers the call kept.
        if let (Some([f]), false) = (h.as_deref_mut(), p.out_fields.is_empty()) {
            f.ret.extend(fetch_ops(&targets[p.target], &p.out_fields)?);
            f.saved = p.saved.clone();
        }
    }
    Ok(())
}
