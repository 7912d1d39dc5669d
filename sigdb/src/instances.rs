//! Inlined copies ("instances") of functions: what the builder collects and how the
//! writer orders and encodes them.

use std::collections::HashMap;

use crate::builder::{FuncId, StringTable};
use crate::layout::{InstanceRecord, LocRecord, RangeRecord, SectionId, NO_PARENT};
use crate::model::Location;
use crate::validate::Validator;
use crate::view::{Function, Param};
use crate::{Db, Error, FormatError};

/// An inline instance added to a [`crate::DbBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(pub(crate) u32);

impl InstanceId {
    /// Position in the order of addition (0, 1, 2, ...).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One inlined copy of a function (a `DW_TAG_inlined_subroutine`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceDesc {
    /// The inlined function.
    pub callee: FuncId,
    /// The out-of-line function whose code holds the copy.
    pub caller: FuncId,
    /// The enclosing instance when the copy sits inside another inlined copy; it must
    /// have been added before this one and have the same caller.
    pub parent: Option<InstanceId>,
    /// Code ranges `[start, end)`, in DWARF order.
    pub ranges: Vec<(u64, u64)>,
    /// First address executed in the copy.
    pub entry_pc: u64,
    /// File of the call site (empty when unknown).
    pub call_file: String,
    /// Line of the call site (0 when unknown).
    pub call_line: u32,
    /// Where each parameter of the callee is at `entry_pc`, in the callee's order.
    pub params: Vec<Location>,
}

/// The encoded instance sections.
#[derive(Default)]
pub(crate) struct Encoded {
    pub instances: Vec<InstanceRecord>,
    pub ranges: Vec<RangeRecord>,
    pub locs: Vec<LocRecord>,
}

/// Everything of an instance but its parent, with function indices already renumbered.
type Key = (u32, u64, Vec<(u64, u64)>, u32, String, u32, Vec<Location>);

/// Order instances canonically — by (caller, nesting depth, entry pc, ranges, callee, call
/// site, locations, parent) — merge exact duplicates, and encode them.
pub(crate) fn encode(
    all: &[InstanceDesc],
    new_index: &[u32],
    strings: &mut StringTable,
) -> Result<Encoded, Error> {
    let depth = depths(all, new_index.len())?;
    let max_depth = depth.iter().copied().max().unwrap_or(0);
    // rank[i]: canonical position of instance i among the unique instances of its depth.
    let mut rank = vec![0u32; all.len()];
    // (caller, depth, rank) → the representative instance.
    let mut unique: Vec<((u32, u32, u32), usize)> = Vec::new();
    for d in 0..=max_depth {
        let level: Vec<usize> = (0..all.len()).filter(|&i| depth[i] == d).collect();
        let key = |i: usize| -> (Key, u32) {
            let x = &all[i];
            let parent = x.parent.map_or(NO_PARENT, |p| rank[p.0 as usize]);
            (
                (
                    new_index[x.caller.0 as usize],
                    x.entry_pc,
                    x.ranges.clone(),
                    new_index[x.callee.0 as usize],
                    x.call_file.clone(),
                    x.call_line,
                    x.params.clone(),
                ),
                parent,
            )
        };
        let mut keyed: Vec<((Key, u32), usize)> = level.iter().map(|&i| (key(i), i)).collect();
        keyed.sort();
        let mut r = 0u32;
        for j in 0..keyed.len() {
            if j > 0 && keyed[j].0 != keyed[j - 1].0 {
                r += 1;
            }
            let i = keyed[j].1;
            rank[i] = r;
            if j == 0 || keyed[j].0 != keyed[j - 1].0 {
                unique.push(((keyed[j].0 .0 .0, d, r), i));
            }
        }
    }
    unique.sort_unstable();
    let final_of: HashMap<(u32, u32), u32> = unique
        .iter()
        .enumerate()
        .map(|(k, &((_, d, r), _))| ((d, r), k as u32))
        .collect();
    let mut out = Encoded::default();
    for &((caller, d, _), i) in &unique {
        let x = &all[i];
        let parent = match x.parent {
            Some(p) => final_of[&(d - 1, rank[p.0 as usize])],
            None => NO_PARENT,
        };
        let too_many = |what| Error::TooLarge(what);
        let first_range = u32::try_from(out.ranges.len()).map_err(|_| too_many("ranges"))?;
        for &(start, end) in &x.ranges {
            out.ranges.push(RangeRecord {
                start: start.into(),
                end: end.into(),
            });
        }
        let first_loc = u32::try_from(out.locs.len()).map_err(|_| too_many("locations"))?;
        for loc in &x.params {
            let (kind, reg, reg2, value) = loc.encode();
            out.locs.push(LocRecord {
                kind,
                reg,
                reg2,
                reserved: 0,
                value: value.into(),
            });
        }
        out.instances.push(InstanceRecord {
            caller: caller.into(),
            callee: new_index[x.callee.0 as usize].into(),
            parent: parent.into(),
            call_file: strings.add(&x.call_file)?.into(),
            call_line: x.call_line.into(),
            entry_pc: x.entry_pc.into(),
            ranges: first_range.into(),
            range_count: u16::try_from(x.ranges.len())
                .map_err(|_| too_many("ranges of one instance"))?
                .into(),
            loc_count: u16::try_from(x.params.len())
                .map_err(|_| too_many("parameters of one instance"))?
                .into(),
            locs: first_loc.into(),
        });
    }
    Ok(out)
}

/// Nesting depth of every instance (0: directly in its caller); parents must precede.
fn depths(all: &[InstanceDesc], functions: usize) -> Result<Vec<u32>, Error> {
    let mut depth = vec![0u32; all.len()];
    for (i, x) in all.iter().enumerate() {
        if x.callee.0 as usize >= functions || x.caller.0 as usize >= functions {
            return Err(Error::Builder(format!(
                "inline instance {i} refers to a function that was not added"
            )));
        }
        if let Some(p) = x.parent {
            let p = p.0 as usize;
            if p >= i || all[p].caller != x.caller {
                return Err(Error::Builder(format!(
                    "inline instance {i}: parent {p} was not added before it or has \
                     another caller"
                )));
            }
            depth[i] = depth[p] + 1;
        }
    }
    Ok(depth)
}

/// An inline instance of an open [`Db`].
#[derive(Clone, Copy)]
pub struct Instance<'a> {
    db: &'a Db,
    index: u32,
    rec: &'a InstanceRecord,
}

impl std::fmt::Debug for Instance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Instance#{}({} in {} at {:#x})",
            self.index,
            self.callee().map_or("?", |c| c.name()),
            self.caller().map_or("?", |c| c.name()),
            self.entry_pc()
        )
    }
}

impl<'a> Instance<'a> {
    pub(crate) fn new(db: &'a Db, index: u32, rec: &'a InstanceRecord) -> Self {
        Instance { db, index, rec }
    }

    /// The db it is in.
    pub fn db(&self) -> &'a Db {
        self.db
    }

    /// Index in the instance table.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Function index of the inlined function.
    pub fn callee_index(&self) -> u32 {
        self.rec.callee.get()
    }

    /// The inlined function.
    pub fn callee(&self) -> Option<Function<'a>> {
        self.db.function(self.rec.callee.get() as usize)
    }

    /// The out-of-line function whose code holds this copy.
    pub fn caller(&self) -> Option<Function<'a>> {
        self.db.function(self.rec.caller.get() as usize)
    }

    /// The enclosing inlined copy, for an inline inside an inline.
    pub fn parent(&self) -> Option<Instance<'a>> {
        match self.rec.parent.get() {
            NO_PARENT => None,
            p => self.db.instance(p as usize),
        }
    }

    /// First address executed in the copy.
    pub fn entry_pc(&self) -> u64 {
        self.rec.entry_pc.get()
    }

    /// Code ranges `[start, end)`.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + 'a {
        let first = self.rec.ranges.get() as usize;
        self.db
            .range_records()
            .get(first..first + self.rec.range_count.get() as usize)
            .unwrap_or(&[])
            .iter()
            .map(|r| (r.start.get(), r.end.get()))
    }

    /// File of the call site (empty when unknown).
    pub fn call_file(&self) -> &'a str {
        self.db.string(self.rec.call_file.get())
    }

    /// Line of the call site (0 when unknown).
    pub fn call_line(&self) -> u32 {
        self.rec.call_line.get()
    }

    /// Where each parameter of the callee is at [`entry_pc`](Self::entry_pc), in the
    /// callee's parameter order.
    pub fn locations(&self) -> impl ExactSizeIterator<Item = Location> + 'a {
        let first = self.rec.locs.get() as usize;
        self.db
            .loc_records()
            .get(first..first + self.rec.loc_count.get() as usize)
            .unwrap_or(&[])
            .iter()
            .map(|l| {
                Location::decode(l.kind, l.reg, l.reg2, l.value.get()).unwrap_or(Location::Unknown)
            })
    }

    /// The callee's parameters with their locations at entry to this copy.
    pub fn params(&self) -> impl Iterator<Item = (Param<'a>, Location)> + 'a {
        let params = self.callee().into_iter().flat_map(|c| c.params());
        params.zip(self.locations())
    }
}

/// Check the instance sections (called by the validator once on open).
pub(crate) fn validate(
    v: &Validator<'_>,
    functions: usize,
    string_ok: &dyn Fn(u32) -> bool,
) -> Result<(), FormatError> {
    use SectionId::*;
    let recs: &[InstanceRecord] = v.recs(Instances);
    let ranges: &[RangeRecord] = v.recs(InstanceRanges);
    let locs: &[LocRecord] = v.recs(InstanceLocs);
    let within = |first: u32, count: u16, len: usize| first as u64 + count as u64 <= len as u64;
    for (i, r) in recs.iter().enumerate() {
        if r.caller.get() as usize >= functions || r.callee.get() as usize >= functions {
            return v.err(Instances, i, "function out of bounds");
        }
        let parent = r.parent.get();
        if parent != NO_PARENT
            && (parent as usize >= i || recs[parent as usize].caller.get() != r.caller.get())
        {
            return v.err(
                Instances,
                i,
                "parent does not precede it or has another caller",
            );
        }
        if !string_ok(r.call_file.get()) {
            return v.err(Instances, i, "call file is not a string");
        }
        if !within(r.ranges.get(), r.range_count.get(), ranges.len()) {
            return v.err(Instances, i, "range list out of bounds");
        }
        if !within(r.locs.get(), r.loc_count.get(), locs.len()) {
            return v.err(Instances, i, "location list out of bounds");
        }
        if i > 0 && recs[i - 1].caller.get() > r.caller.get() {
            return v.err(Instances, i, "not sorted by caller");
        }
    }
    for (i, r) in ranges.iter().enumerate() {
        if r.start.get() > r.end.get() {
            return v.err(InstanceRanges, i, "range ends before it starts");
        }
    }
    for (i, l) in locs.iter().enumerate() {
        if Location::decode(l.kind, 0, 0, 0).is_none() {
            return v.err(InstanceLocs, i, "unknown location kind");
        }
    }
    Ok(())
}
