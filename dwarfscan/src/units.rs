//! One compilation unit: walk its DIEs, collect subprograms, parameters and inlined
//! instances, then assemble function records with CU-local types.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use gimli::constants as dw;
use sigdb::{FuncFlags, Location};

use crate::dwarf::{read_die, read_with_children, Die, FileDwarf, FrameBase, Units};
use crate::elf::ElfKind;
use crate::inlines::{LInstance, RawInstance};
pub use crate::walk::scan_unit;

use crate::signature::Signature;
use crate::stats::{SkipReason, Stats};
use crate::symbols::{suffix_flags, Symbol, Symbols};
use crate::types::TypeGraph;

/// Identity of an inline function across units: name, declaring file, line.
pub type Identity = (String, String, u64);

/// A parameter of a CU-local function record.
#[derive(Clone, Debug)]
pub struct LParam {
    /// Name.
    pub name: String,
    /// Local type index.
    pub ty: u32,
    /// Entry location.
    pub loc: Location,
}

/// A CU-local function record.
#[derive(Clone, Debug)]
pub struct LFunc {
    /// Entry address (0 for inline-only).
    pub addr: u64,
    /// Code size.
    pub size: u32,
    /// Source name.
    pub name: String,
    /// ELF symbol when it differs from the name.
    pub symbol: Option<String>,
    /// Local return type.
    pub ret: u32,
    /// Parameters.
    pub params: Vec<LParam>,
    /// Flags.
    pub flags: FuncFlags,
    /// Identity of the inline function this is an out-of-line copy of.
    pub identity: Option<Identity>,
}

/// The callee of an inline edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    /// An out-of-line function of this unit (index into `funcs`).
    Local(u32),
    /// An inline-only function (index into `inline_only`).
    Inline(u32),
}

/// What one unit contributes.
#[derive(Default)]
pub struct CuResult {
    /// Local types, children first.
    pub types: Vec<crate::types::LType>,
    /// Functions with code.
    pub funcs: Vec<LFunc>,
    /// Functions seen only inlined in this unit, with their identity; no record for those
    /// the merger already held when the unit was scanned ([`FileCtx::merged`]).
    pub inline_only: Vec<(Identity, Option<LFunc>)>,
    /// Inline edges: callee → caller (index into `funcs`).
    pub edges: Vec<(Callee, u32)>,
    /// Inlined copies, parents before their children.
    pub instances: Vec<LInstance>,
    /// Declarations of external functions (user space): prototypes of functions the unit
    /// calls, for those whose own code has no DWARF (assembly, or built without -g).
    pub decls: Vec<LFunc>,
    /// Counters.
    pub stats: Stats,
}

/// What a unit scan needs from its file.
pub struct FileCtx<'a, 's> {
    /// The DWARF.
    pub dwarf: &'a FileDwarf<'s>,
    /// Function symbols.
    pub symbols: &'a Symbols<'a>,
    /// ftrace call sites.
    pub mcount: Option<&'a [u64]>,
    /// Kind of file.
    pub kind: ElfKind,
    /// Which inline instances to collect.
    pub instances: crate::InlineInstances,
    /// The file, for its code bytes (frame-pointer prologues).
    pub elf: &'s crate::elf::ElfInfo<'s>,
    /// The identities of the inline-only functions of this file the merger holds a
    /// record of already ([`crate::merge::Merger::merged`]), when units are merged while
    /// others are scanned: a unit names those by identity and skips their signature.
    pub merged: Option<&'a crate::merge::Merged>,
    /// The structs and unions whose members the merger holds already (from units merged
    /// before this file's, or before this unit): a unit does not read them again.
    pub known_structs: Option<&'a crate::merge::KnownStructs>,
    /// The number of this file's first unit when its units are merged while others are
    /// scanned ([`crate::merge::KnownStructs::before`]); `None`: nothing is merged while
    /// the file is scanned (every struct known then may be skipped).
    pub first_unit: Option<u64>,
}

/// Why a unit could not be scanned.
#[derive(Debug)]
pub enum UnitError {
    /// Split DWARF: the unit's DIEs are in a `.dwo` file.
    SplitDwarf(String),
    /// Malformed DWARF.
    Dwarf(gimli::Error),
}

impl From<gimli::Error> for UnitError {
    fn from(e: gimli::Error) -> Self {
        UnitError::Dwarf(e)
    }
}

pub(crate) struct Sp<'s> {
    pub(crate) die: Die<'s>,
    pub(crate) params: Vec<Die<'s>>,
    pub(crate) variadic: bool,
    /// A definition without code, inline attribute or declaration flag: GCC emits these
    /// for functions whose body became an alias of another (identical code folding);
    /// the ELF symbol of the same name gives the address.
    pub(crate) orphan: bool,
    /// Whether `params` and `variadic` are known (the walk collects them; a subprogram
    /// read on demand has them read when first needed, [`Builder::read_params`]).
    pub(crate) params_read: bool,
}

pub(crate) struct Builder<'a, 's, 'c> {
    pub(crate) ctx: &'c FileCtx<'a, 's>,
    pub(crate) units: Units<'c, 's>,
    pub(crate) sps: Vec<Sp<'s>>,
    pub(crate) sp_index: HashMap<u64, usize>,
    pub(crate) types: TypeGraph,
    pub(crate) files: HashMap<(u64, u64), String>,
    pub(crate) res: CuResult,
    /// The unit's line rows, read when a function needs its prologue's end.
    pub(crate) line_rows: Option<Vec<(u64, bool)>>,
    /// The unit is assembly (its functions have no types).
    pub(crate) asm_unit: bool,
}

impl<'s> Builder<'_, 's, '_> {
    /// The subprogram at global offset `off`, read on demand when the walk did not collect
    /// it (without its parameters: [`Builder::read_params`]).
    pub(crate) fn sp(&mut self, off: u64) -> Option<usize> {
        if let Some(&i) = self.sp_index.get(&off) {
            return Some(i);
        }
        let die = read_die(&mut self.units, off).ok()?;
        let i = self.sps.len();
        self.sps.push(Sp {
            die,
            params: Vec::new(),
            variadic: false,
            orphan: false,
            params_read: false,
        });
        self.sp_index.insert(off, i);
        Some(i)
    }

    /// Read the parameters of subprogram `idx` if [`Builder::sp`] left them unread.
    pub(crate) fn read_params(&mut self, idx: usize) {
        if std::mem::replace(&mut self.sps[idx].params_read, true) {
            return;
        }
        let Ok((_, mut params)) = read_with_children(&mut self.units, self.sps[idx].die.off, |t| {
            t == dw::DW_TAG_formal_parameter || t == dw::DW_TAG_unspecified_parameters
        }) else {
            return;
        };
        // The parameters stay where they were read.
        let sp = &mut self.sps[idx];
        sp.variadic = params
            .iter()
            .any(|c| c.tag == dw::DW_TAG_unspecified_parameters);
        params.retain(|c| c.tag == dw::DW_TAG_formal_parameter);
        sp.params = params;
    }

    pub(crate) fn assemble(&mut self, inlined: &[(u64, usize)], raw_instances: &[RawInstance]) {
        let mut func_of_sp: HashMap<usize, u32> = HashMap::default();
        let mut by_origin: HashMap<u64, u32> = HashMap::default();
        for idx in 0..self.sps.len() {
            let Some(fi) = self.function(idx) else {
                continue;
            };
            func_of_sp.insert(idx, fi);
            if let Some(o) = self.sps[idx].die.origin {
                by_origin.entry(o).or_insert(fi);
            }
            by_origin.entry(self.sps[idx].die.off).or_insert(fi);
        }
        let mut inline_of: HashMap<u64, Option<u32>> = HashMap::default();
        self.edges(inlined, &func_of_sp, &by_origin, &mut inline_of);
        self.assemble_instances(raw_instances, &func_of_sp, &by_origin, &mut inline_of);
    }

    /// Records of the external function declarations at `offs` (prototypes: no address,
    /// every parameter where the ABI puts it at the entry).
    pub(crate) fn declarations(&mut self, offs: &[u64]) {
        for &off in offs {
            let Some(idx) = self.sp(off) else { continue };
            let chain = self.chain(idx);
            let sig = self.signature(&chain);
            let Some(name) = sig.name.clone() else {
                continue;
            };
            if !sig.external {
                continue;
            }
            let (params, _) = self.locate_params(&sig, (0, 0), FrameBase::Cfa, true, true);
            self.res.decls.push(LFunc {
                addr: 0,
                size: 0,
                name,
                symbol: None,
                ret: sig.ret,
                params,
                flags: sig.flags | FuncFlags::NO_SYMBOL,
                identity: None,
            });
        }
    }

    /// The function record(s) of subprogram `idx` (and of its cold parts); the index of
    /// its main record, or None when it is skipped (counted in the stats).
    fn function(&mut self, idx: usize) -> Option<u32> {
        let ctx = self.ctx;
        let orphan = self.sps[idx].orphan;
        let ranges = self.code_ranges(idx)?;
        let (entry, (lo, hi)) = entry_range(self.sps[idx].die.entry_pc, &ranges)?;
        if entry == 0 && !ctx.kind.is_relocatable() {
            self.res.stats.skip(SkipReason::Discarded);
            return None;
        }
        let origin = self.sps[idx].die.origin;
        let chain = self.chain(idx);
        let sig = self.signature(&chain);
        let sym = ctx.symbols.best(entry, sig.name.as_deref().unwrap_or(""));
        let Some(name) = sig.name.clone().or_else(|| sym.map(|s| s.name.to_string())) else {
            self.res.stats.skip(SkipReason::NoName);
            return None;
        };
        let mut flags = self.function_flags(&sig, sym, entry, hi - lo);
        let frame_base = self.sps[idx].die.frame_base.unwrap_or(FrameBase::Cfa);
        // At the entry of a function other code can call (global, not a clone), every
        // parameter is where the ABI puts it, whatever DWARF says of later code.
        let abi_holds = !ctx.kind.is_kernel()
            && !flags.intersects(
                FuncFlags::STATIC
                    | FuncFlags::CLONE_ISRA
                    | FuncFlags::CLONE_CONSTPROP
                    | FuncFlags::PART
                    | FuncFlags::CLONE_OTHER
                    | FuncFlags::NOCALL,
            );
        let (params, abi_changed) =
            self.locate_params(&sig, (entry, hi), frame_base, orphan, abi_holds);
        if abi_changed {
            flags |= FuncFlags::ABI_CHANGED;
        }
        let identity = if origin.is_some() {
            self.identity(&chain, &name)
        } else {
            None
        };
        let symbol = sym.map(|s| s.name.to_string()).filter(|s| *s != name);
        let func = LFunc {
            addr: entry,
            size: (hi - lo).min(u64::from(u32::MAX)) as u32,
            name,
            symbol,
            ret: sig.ret,
            params,
            flags,
            identity,
        };
        self.res.stats.count_function(flags);
        let fi = self.res.funcs.len() as u32;
        self.res.funcs.push(func);
        self.cold_parts(fi as usize, &ranges, lo);
        Some(fi)
    }

    /// The code ranges of subprogram `idx` (never empty): its DWARF ranges, or for an
    /// orphan those of the unique ELF symbol of its name. None when it is a declaration
    /// or has no code (counted in the stats).
    fn code_ranges(&mut self, idx: usize) -> Option<Vec<(u64, u64)>> {
        let ctx = self.ctx;
        let die = &self.sps[idx].die;
        if die.declaration {
            self.res.stats.skip(SkipReason::Declaration);
            return None;
        }
        let ranges = if self.sps[idx].orphan {
            // The address comes from the unique ELF symbol of that name.
            let name = die.name.map(|n| String::from_utf8_lossy(n).into_owned());
            let syms = name
                .as_deref()
                .map(|n| ctx.symbols.named(n))
                .unwrap_or_default();
            match syms.as_slice() {
                [s] if s.addr != 0 => vec![(s.addr, s.addr + s.size.max(1))],
                _ => {
                    self.res.stats.skip(SkipReason::NoCode);
                    return None;
                }
            }
        } else if !die.has_code() {
            self.res.stats.skip(SkipReason::NoCode);
            return None;
        } else {
            self.ranges(idx)
        };
        if ranges.is_empty() {
            self.res.stats.skip(SkipReason::BadDwarf);
            return None;
        }
        Some(ranges)
    }

    /// The flags of a function entered at `entry` with `size` bytes in its entry range:
    /// its signature's, those its symbol's name and binding give (or its lack of one),
    /// and `NOTRACE` when ftrace lists no call site in its first 16 bytes.
    fn function_flags(
        &self,
        sig: &Signature,
        sym: Option<&Symbol<'_>>,
        entry: u64,
        size: u64,
    ) -> FuncFlags {
        let mut flags = sig.flags;
        if self.asm_unit {
            flags |= FuncFlags::NO_TYPES;
        }
        match sym {
            Some(s) => {
                flags |= suffix_flags(s.name);
                if s.local {
                    flags |= FuncFlags::STATIC;
                }
            }
            None => {
                flags |= FuncFlags::NO_SYMBOL;
                if !sig.external {
                    flags |= FuncFlags::STATIC;
                }
            }
        }
        if let Some(mc) = self.ctx.mcount {
            let end = entry + size.min(16);
            let i = mc.partition_point(|&a| a < entry);
            if mc.get(i).is_none_or(|&a| a >= end) {
                flags |= FuncFlags::NOTRACE;
            }
        }
        flags
    }

    /// Records for the cold (and other) parts of function record `main` that carry their
    /// own symbol: the ranges other than its entry range (`lo`) that start at a `.cold`
    /// symbol, with its signature but no parameter locations.
    fn cold_parts(&mut self, main: usize, ranges: &[(u64, u64)], lo: u64) {
        let ctx = self.ctx;
        for &(a, b) in ranges {
            if a == lo {
                continue;
            }
            let Some(s) = ctx.symbols.at(a).iter().find(|s| s.name.contains(".cold")) else {
                continue;
            };
            let f = &self.res.funcs[main];
            let flags = f.flags;
            let mut cflags = (flags - FuncFlags::ABI_CHANGED - FuncFlags::NOTRACE)
                | suffix_flags(s.name)
                | FuncFlags::COLD;
            cflags.set(
                FuncFlags::STATIC,
                s.local || flags.contains(FuncFlags::STATIC),
            );
            let cparams = f
                .params
                .iter()
                .map(|p| LParam {
                    loc: Location::Unknown,
                    ..p.clone()
                })
                .collect();
            let cold = LFunc {
                addr: a,
                size: (b - a).min(u64::from(u32::MAX)) as u32,
                name: f.name.clone(),
                symbol: Some(s.name.to_string()),
                ret: f.ret,
                params: cparams,
                flags: cflags,
                identity: None,
            };
            self.res.stats.count_function(cflags);
            self.res.funcs.push(cold);
        }
    }

    /// Inline edges (callee, caller), each once.
    fn edges(
        &mut self,
        inlined: &[(u64, usize)],
        func_of_sp: &HashMap<usize, u32>,
        by_origin: &HashMap<u64, u32>,
        inline_of: &mut HashMap<u64, Option<u32>>,
    ) {
        let mut seen: HashSet<(Callee, u32)> = HashSet::default();
        for &(origin, owner) in inlined {
            let Some(&caller) = func_of_sp.get(&owner) else {
                continue;
            };
            let Some(callee) = self.callee(origin, by_origin, inline_of) else {
                continue;
            };
            if seen.insert((callee, caller)) {
                self.res.edges.push((callee, caller));
            }
        }
        self.res.stats.inline_edges += self.res.edges.len() as u64;
    }

    /// The callee of an inlined copy whose abstract origin is at `origin`: a function of
    /// this unit, or an inline-only record (made on first use).
    pub(crate) fn callee(
        &mut self,
        origin: u64,
        by_origin: &HashMap<u64, u32>,
        inline_of: &mut HashMap<u64, Option<u32>>,
    ) -> Option<Callee> {
        if let Some(&f) = by_origin.get(&origin) {
            return Some(Callee::Local(f));
        }
        let slot = match inline_of.get(&origin) {
            Some(&s) => s,
            None => {
                let s = self.inline_only(origin);
                inline_of.insert(origin, s);
                s
            }
        };
        slot.map(Callee::Inline)
    }

    /// An inline-only record for the abstract subprogram at `origin`.
    pub(crate) fn inline_only(&mut self, origin: u64) -> Option<u32> {
        let idx = self.sp(origin)?;
        let chain = self.chain(idx);
        let name = self.name(&chain)?;
        let identity = self
            .identity(&chain, &name)
            .unwrap_or((name.clone(), String::new(), 0));
        let i = self.res.inline_only.len() as u32;
        let known = self
            .ctx
            .merged
            .is_some_and(|m| m.read().is_ok_and(|m| m.contains(&identity)));
        if known {
            self.res.inline_only.push((identity, None));
            return Some(i);
        }
        let sig = self.signature(&chain);
        let mut flags = sig.flags | FuncFlags::INLINE_ONLY;
        if !sig.external {
            flags |= FuncFlags::STATIC;
        }
        let params = sig
            .params
            .iter()
            .map(|(n, ty, _)| LParam {
                name: n.clone(),
                ty: *ty,
                loc: Location::Unknown,
            })
            .collect();
        self.res.inline_only.push((
            identity,
            Some(LFunc {
                addr: 0,
                size: 0,
                name,
                symbol: None,
                ret: sig.ret,
                params,
                flags,
                identity: None,
            }),
        ));
        Some(i)
    }

    /// The code ranges of subprogram `idx`, in DWARF order, empty ones dropped.
    fn ranges(&mut self, idx: usize) -> Vec<(u64, u64)> {
        code_ranges(&self.units, &self.sps[idx].die)
    }
}

/// The code ranges of a DIE (`DW_AT_ranges` or low/high pc), in DWARF order, empty ones
/// dropped.
pub(crate) fn code_ranges(units: &Units<'_, '_>, die: &Die<'_>) -> Vec<(u64, u64)> {
    let dwarf = &units.file.dwarf;
    let unit = units.cur;
    let mut out = Vec::new();

    if let Some(r) = die.ranges {
        if let Ok(mut it) = dwarf.ranges(unit, r) {
            while let Ok(Some(r)) = it.next() {
                if r.end > r.begin {
                    out.push((r.begin, r.end));
                }
            }
        }
    } else if let Some(lo) = die.low_pc {
        let hi = match die.high_pc {
            crate::dwarf::HighPc::Addr(a) => a,
            crate::dwarf::HighPc::Size(s) => lo.wrapping_add(s),
            crate::dwarf::HighPc::None => lo,
        };
        if hi > lo {
            out.push((lo, hi));
        } else if hi == lo {
            out.push((lo, lo + 1));
        }
    }
    out
}

/// The entry pc of a function with code `ranges` (never empty): its DWARF entry pc when
/// one of the ranges holds it, else the first range's start; and the range holding it.
fn entry_range(entry_pc: Option<u64>, ranges: &[(u64, u64)]) -> Option<(u64, (u64, u64))> {
    let &(lo, hi) = ranges.first()?;
    let entry = entry_pc
        .filter(|&e| ranges.iter().any(|&(a, b)| a <= e && e < b))
        .unwrap_or(lo);
    let range = ranges
        .iter()
        .copied()
        .find(|&(a, b)| a <= entry && entry < b)
        .unwrap_or((lo, hi));
    Some((entry, range))
}
