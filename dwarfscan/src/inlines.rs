//! Inline instances: each `DW_TAG_inlined_subroutine` inside a function with code, with
//! its code ranges, entry pc, call site and where the inlined function's parameters are
//! at that entry pc.

use rustc_hash::FxHashMap as HashMap;

use sigdb::Location;

use crate::dwarf::{read_with_children, Die, FrameBase};
use crate::location::{self, EntryLoc};
use crate::units::{code_ranges, Builder, Callee};

/// An inlined subroutine as found by the DIE walk: only where it is and what it is a copy
/// of. Its other attributes and its parameters are read when it is recorded (by default
/// most copies are not: they are copies of header `inline` functions).
pub(crate) struct RawInstance {
    /// Global `.debug_info` offset of the `DW_TAG_inlined_subroutine` DIE.
    pub off: u64,
    /// Its `DW_AT_abstract_origin` (global offset).
    pub origin: Option<u64>,
    /// The subprogram with code that holds it (arena index).
    pub owner: usize,
    /// The enclosing instance (index into the raw instances), for nested inlining.
    pub parent: Option<usize>,
}

/// An inlined copy, as a unit contributes it.
#[derive(Clone, Debug)]
pub struct LInstance {
    /// The inlined function.
    pub callee: Callee,
    /// The function holding the copy (index into the unit's functions).
    pub caller: u32,
    /// The enclosing copy (index into the unit's instances, always smaller).
    pub parent: Option<u32>,
    /// Code ranges.
    pub ranges: Vec<(u64, u64)>,
    /// First address executed.
    pub entry_pc: u64,
    /// Call site file.
    pub call_file: String,
    /// Call site line.
    pub call_line: u32,
    /// Where each parameter of the inlined function's abstract list is at `entry_pc`.
    pub params: Vec<Location>,
}

impl<'s> Builder<'_, 's, '_> {
    /// Turn the raw instances into [`LInstance`]s; instances whose caller or callee has
    /// no record are dropped together with everything nested in them. Copies of
    /// functions not worth tracing (see [`crate::InlineInstances::Traceable`]) are left
    /// out, and the copies nested in them hang from the nearest kept enclosing copy.
    pub(crate) fn assemble_instances(
        &mut self,
        raw: &[RawInstance],
        func_of_sp: &HashMap<usize, u32>,
        by_origin: &HashMap<u64, u32>,
        inline_of: &mut HashMap<u64, Option<u32>>,
    ) {
        /// What became of a raw instance, for the ones nested in it.
        #[derive(Clone, Copy)]
        enum Slot {
            /// Recorded as this instance.
            Kept(u32),
            /// Left out; its children take this parent.
            Through(Option<u32>),
            /// Dropped with its subtree.
            Dropped,
        }
        let all = self.ctx.instances == crate::InlineInstances::All;
        let mut worth: HashMap<u64, bool> = HashMap::default();
        let mut slots: Vec<Slot> = Vec::with_capacity(raw.len());
        for r in raw {
            let parent = match r.parent.map(|p| slots[p]) {
                None => None,
                Some(Slot::Kept(k)) => Some(k),
                Some(Slot::Through(p)) => p,
                Some(Slot::Dropped) => {
                    slots.push(Slot::Dropped);
                    continue;
                }
            };
            if !all {
                if let Some(origin) = r.origin {
                    let keep = match worth.get(&origin) {
                        Some(&k) => k,
                        None => {
                            let k = self.worth_tracing(origin);
                            worth.insert(origin, k);
                            k
                        }
                    };
                    if !keep {
                        slots.push(Slot::Through(parent));
                        continue;
                    }
                }
            }
            let instance = self.instance(r, parent, func_of_sp, by_origin, inline_of);
            slots.push(instance.map_or(Slot::Dropped, |i| {
                self.res.instances.push(i);
                Slot::Kept(self.res.instances.len() as u32 - 1)
            }));
        }
    }

    /// Whether the copies of the abstract subprogram at `origin` are worth recording:
    /// all but those of a function declared `inline` in a header file.
    fn worth_tracing(&mut self, origin: u64) -> bool {
        let Some(sp) = self.sp(origin) else {
            return true;
        };
        let chain = self.chain(sp);
        if !self.declared_inline(&chain) {
            return true;
        }
        // The declaring file, as the function's identity has it.
        self.identity(&chain, "")
            .is_none_or(|(_, file, _)| !is_header(&file))
    }

    fn instance(
        &mut self,
        r: &RawInstance,
        parent: Option<u32>,
        func_of_sp: &HashMap<usize, u32>,
        by_origin: &HashMap<u64, u32>,
        inline_of: &mut HashMap<u64, Option<u32>>,
    ) -> Option<LInstance> {
        let caller = *func_of_sp.get(&r.owner)?;
        let origin = r.origin?;
        let callee = self.callee(origin, by_origin, inline_of)?;
        // The walk read this DIE already, so it reads again.
        let (die, params) = read_with_children(&mut self.units, r.off, |t| {
            t == gimli::DW_TAG_formal_parameter
        })
        .ok()?;
        let ranges = code_ranges(&self.units, &die);
        let first = ranges.first().map(|&(lo, _)| lo)?;
        let entry_pc = die
            .entry_pc
            .or_else(|| die.entry_pc_offset.map(|o| first.wrapping_add(o)))
            .unwrap_or(first);
        let call_file = match die.call_file {
            Some(f) => self.file_name(die.off, f),
            None => String::new(),
        };
        let frame_base = self.sps[r.owner].die.frame_base.unwrap_or(FrameBase::Cfa);
        let params = self.instance_params(origin, &params, entry_pc, frame_base);
        Some(LInstance {
            callee,
            caller,
            parent,
            ranges,
            entry_pc,
            call_file,
            call_line: die.call_line.unwrap_or(0).min(u64::from(u32::MAX)) as u32,
            params,
        })
    }

    /// For each formal parameter of the abstract function at `origin`, its location at
    /// `pc` from the instance's own parameter DIE (of `own`; optimized out when it has
    /// none).
    fn instance_params(
        &mut self,
        origin: u64,
        own: &[Die<'s>],
        pc: u64,
        frame_base: FrameBase,
    ) -> Vec<Location> {
        let Some(sp) = self.sp(origin) else {
            return Vec::new();
        };
        self.read_params(sp);
        let abstract_params: Vec<u64> = self.sps[sp].params.iter().map(|p| p.off).collect();
        let dwarf = &self.units.file.dwarf;
        let unit = self.units.cur;
        abstract_params
            .iter()
            .map(|&ap| {
                let Some(c) = own.iter().find(|c| c.origin == Some(ap)) else {
                    return Location::OptimizedOut;
                };
                match (&c.location, c.const_value) {
                    (Some(v), _) => match location::at_entry(dwarf, unit, v, pc, frame_base) {
                        EntryLoc::At(l) => l,
                        EntryLoc::Abi | EntryLoc::Frame(_) => Location::Unknown,
                    },
                    (None, Some((v, _))) => {
                        i32::try_from(v).map_or(Location::Unknown, Location::Const)
                    }
                    (None, None) => Location::OptimizedOut,
                }
            })
            .collect()
    }
}

/// Whether a source path names a header: `.h`, `.hh`, `.hpp`, `.hxx`, `.inc`, or no
/// extension at all (C++ standard headers such as `vector`).
fn is_header(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once('.') {
        Some((_, ext)) => matches!(ext, "h" | "hh" | "hpp" | "hxx" | "inc" | "H"),
        None => !file.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn headers() {
        for h in [
            "include/linux/list.h",
            "x.hpp",
            "/usr/include/c++/14/vector",
            "a.inc",
        ] {
            assert!(super::is_header(h), "{h}");
        }
        for c in ["kernel/pid.c", "x.cc", "lib/a.cpp", ""] {
            assert!(!super::is_header(c), "{c}");
        }
    }
}
