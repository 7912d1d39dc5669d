//! The signature of a function with code: its name, return type and parameters from the
//! chain of DIEs that describe it (concrete, abstract origin, specification), and where
//! each parameter is at the entry pc.

use gimli::constants as dw;
use sigdb::{FuncFlags, Location};

use crate::abi;
use crate::dwarf::{Die, FrameBase};
use crate::location::{self, EntryLoc};
use crate::types::{text, TypeGraph};
use crate::units::{Builder, Identity, LParam};

impl<'s> Builder<'_, 's, '_> {
    /// `idx` followed by its abstract origins and specifications.
    pub(crate) fn chain(&mut self, idx: usize) -> Vec<usize> {
        let mut chain = vec![idx];
        let mut cur = idx;
        for _ in 0..8 {
            let d = &self.sps[cur].die;
            let Some(next) = d.origin.or(d.spec) else {
                break;
            };
            let Some(n) = self.sp(next) else { break };
            if chain.contains(&n) {
                break;
            }
            chain.push(n);
            cur = n;
        }
        chain
    }

    pub(crate) fn file_name(&mut self, die_off: u64, file_idx: u64) -> String {
        let file = self.units.file;
        let Ok((unit, _)) = self.units.locate(die_off) else {
            return String::new();
        };
        let key = (
            unit.header
                .offset()
                .as_debug_info_offset()
                .map_or(0, |o| o.0 as u64),
            file_idx,
        );
        if let Some(s) = self.files.get(&key) {
            return s.clone();
        }
        let dwarf = &file.dwarf;
        let mut name = String::new();
        if let Some(lp) = &unit.line_program {
            let header = lp.header();
            if let Some(fe) = header.file(file_idx) {
                if let Some(dir) = fe.directory(header) {
                    if let Ok(d) = dwarf.attr_string(unit, dir) {
                        name.push_str(&String::from_utf8_lossy(d.slice()));
                        name.push('/');
                    }
                }
                if let Ok(n) = dwarf.attr_string(unit, fe.path_name()) {
                    name.push_str(&String::from_utf8_lossy(n.slice()));
                }
            }
        }
        self.files.insert(key, name.clone());
        name
    }

    /// Whether a DIE of the chain says the function was declared `inline`
    /// (`DW_INL_declared_not_inlined` or `DW_INL_declared_inlined`).
    pub(crate) fn declared_inline(&self, chain: &[usize]) -> bool {
        chain
            .iter()
            .any(|&i| matches!(self.sps[i].die.inline, Some(2 | 3)))
    }

    /// The function's name: the first of the chain's.
    pub(crate) fn name(&self, chain: &[usize]) -> Option<String> {
        chain
            .iter()
            .map(|&i| &self.sps[i].die)
            .find(|d| d.name.is_some())
            .map(|d| text(d.name))
    }

    pub(crate) fn identity(&mut self, chain: &[usize], name: &str) -> Option<Identity> {
        let d = chain
            .iter()
            .map(|&i| &self.sps[i].die)
            .find(|d| d.decl_file.is_some())?;
        let (off, file, line) = (d.off, d.decl_file?, d.decl_line.unwrap_or(0));
        let file = self.file_name(off, file);
        Some((name.to_string(), file, line))
    }

    /// Name, return type, parameters (name, type, concrete DIE) and flags common to the
    /// whole chain.
    pub(crate) fn signature(&mut self, chain: &[usize]) -> Signature {
        for &i in chain {
            self.read_params(i);
        }
        let name = self.name(chain);
        let ret_off = chain.iter().find_map(|&i| self.sps[i].die.ty);
        let mut flags = FuncFlags::empty();
        let external = chain.iter().any(|&i| self.sps[i].die.external);
        if chain.iter().any(|&i| self.sps[i].variadic) {
            flags |= FuncFlags::VARIADIC;
        }
        if self.declared_inline(chain) {
            flags |= FuncFlags::DECLARED_INLINE;
        }
        if chain
            .iter()
            .any(|&i| self.sps[i].die.cc == Some(dw::DW_CC_nocall.0))
        {
            flags |= FuncFlags::NOCALL;
        }
        let ret = self.types.convert(&mut self.units, ret_off);

        // Parameters: the abstract list (names, types, order) when there is one, with the
        // concrete parameters mapped onto it by their abstract origin.
        let concrete = chain[0];
        let abstract_idx = chain[1..]
            .iter()
            .copied()
            .find(|&i| !self.sps[i].params.is_empty());
        // (name, type, index of the concrete parameter in the concrete DIE's).
        let mut params = Vec::new();
        match abstract_idx {
            Some(a)
                if self.sps[concrete].die.origin.is_some()
                    || self.sps[concrete].params.is_empty() =>
            {
                let cparams = &self.sps[concrete].params;
                let mut used = vec![false; cparams.len()];
                for ap in &self.sps[a].params {
                    let c = cparams.iter().position(|cp| cp.origin == Some(ap.off));
                    if let Some(c) = c {
                        used[c] = true;
                    }
                    params.push((ap.name, ap.ty, c));
                }
                for (c, cp) in cparams.iter().enumerate() {
                    if !used[c] && cp.origin.is_none() {
                        params.push((cp.name, cp.ty, Some(c)));
                    }
                }
            }
            _ => {
                for c in 0..self.sps[concrete].params.len() {
                    let cp = &self.sps[concrete].params[c];
                    let (mut name, mut ty) = (cp.name, cp.ty);
                    if let Some(o) = cp.origin.filter(|_| name.is_none() || ty.is_none()) {
                        let file = self.units.file;
                        if let Ok((unit, uoff)) = self.units.locate(o) {
                            if let Ok(od) = Die::read(&file.dwarf, unit, uoff) {
                                name = name.or(od.name);
                                ty = ty.or(od.ty);
                            }
                        }
                    }
                    params.push((name, ty, Some(c)));
                }
            }
        }
        let params = params
            .into_iter()
            .map(|(name, ty, conc)| {
                let ty = self.types.convert(&mut self.units, ty);
                (text(name), ty, conc)
            })
            .collect();
        Signature {
            name,
            ret,
            params,
            concrete,
            flags,
            external,
        }
    }

    /// Entry locations of the parameters, and whether they depart from the ABI. With
    /// `abi_holds` (a global function's entry), a parameter DWARF leaves without a
    /// location at the entry is where the ABI puts it, when its class is known.
    pub(crate) fn locate_params(
        &mut self,
        sig: &Signature,
        (entry, hi): (u64, u64),
        frame_base: FrameBase,
        abi_only: bool,
        abi_holds: bool,
    ) -> (Vec<LParam>, bool) {
        let class_of = |types: &TypeGraph, t: u32| {
            let r = types.resolve(t);
            abi::classify(r.kind, r.size, r.flags, &r.name)
        };
        // Small aggregates whose members could not be classified: no ABI fallback.
        let class_known = |types: &TypeGraph, t: u32| {
            let r = types.resolve(t);
            !matches!(r.kind, sigdb::TypeKind::Struct | sigdb::TypeKind::Union)
                || r.size > 16
                || r.flags.contains(sigdb::TypeFlags::CLASSIFIED)
        };
        let known: Vec<bool> = sig
            .params
            .iter()
            .map(|(_, t, _)| class_known(&self.types, *t))
            .collect();
        let ret_class = {
            let r = self.types.resolve(sig.ret);
            abi::classify_ret(r.kind, r.size, r.flags, &r.name)
        };
        let classes: Vec<_> = sig
            .params
            .iter()
            .map(|(_, t, _)| class_of(&self.types, *t))
            .collect();
        let expected = abi::expected_locations(ret_class, &classes);
        let file = self.units.file;
        let dwarf = &file.dwarf;
        let unit = self.units.cur;
        let mut changed = false;
        let frame_slot = |b: &mut Self, off: i64| -> Option<Location> {
            let body = b.prologue_len(entry, hi)?;
            let off = i16::try_from(off).ok()?;
            Some(Location::Frame { off, body })
        };
        let mut located = Vec::with_capacity(sig.params.len());
        for (_, _, conc) in &sig.params {
            let at = match conc {
                Some(c) if !abi_only => self.sps[sig.concrete].params[*c]
                    .location
                    .as_ref()
                    .map(|v| location::at_entry(dwarf, unit, v, entry, frame_base)),
                _ => None,
            };
            located.push(at);
        }
        let located: Vec<Option<EntryLoc>> = located
            .into_iter()
            .map(|at| match at {
                Some(EntryLoc::Frame(off)) => {
                    Some(frame_slot(self, off).map_or(EntryLoc::Abi, EntryLoc::At))
                }
                other => other,
            })
            .collect();
        let cparams = &self.sps[sig.concrete].params;
        let params = sig
            .params
            .iter()
            .zip(expected)
            .zip(located)
            .zip(known)
            .map(|((((name, ty, conc), exp), at), known)| {
                let fallback = abi_holds && known && exp != Location::Unknown;
                let loc = match conc {
                    _ if abi_only => exp,
                    None if fallback => exp,
                    None => Location::OptimizedOut,
                    Some(c) => match at {
                        Some(EntryLoc::At(Location::OptimizedOut | Location::Unknown))
                            if fallback =>
                        {
                            exp
                        }
                        Some(EntryLoc::At(l)) => l,
                        Some(EntryLoc::Abi | EntryLoc::Frame(_)) => exp,
                        None => match cparams[*c].const_value {
                            Some((v, _)) => {
                                i32::try_from(v).map_or(Location::Unknown, Location::Const)
                            }
                            None if fallback => exp,
                            None => Location::OptimizedOut,
                        },
                    },
                };
                if !abi::agrees(loc, exp) {
                    changed = true;
                }
                LParam {
                    name: name.clone(),
                    ty: *ty,
                    loc,
                }
            })
            .collect();
        (params, changed)
    }
}

pub(crate) struct Signature {
    pub(crate) name: Option<String>,
    pub(crate) ret: u32,
    /// Name, type, and the index of the concrete parameter DIE in those of `concrete`.
    pub(crate) params: Vec<(String, u32, Option<usize>)>,
    /// The subprogram the signature is of (the first of its chain).
    pub(crate) concrete: usize,
    pub(crate) flags: FuncFlags,
    pub(crate) external: bool,
}
