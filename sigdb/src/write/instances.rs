//! Inlined copies ("instances") as written: ordered canonically, exact duplicates merged,
//! and packed in blocks of [`INSTANCE_BLOCK`] records relative to the previous one
//! (`read/instances.rs` decodes them; the record's vocabulary is in `common.rs`).

use rustc_hash::FxHashMap as HashMap;

use super::desc::InstanceDesc;
use super::strings::StringTable;
use crate::common::{put_location, Context, HEAD_CALLER, HEAD_PARENT, HEAD_SAME_FILE};
use crate::layout::{InstanceBlock, INSTANCE_BLOCK};
use crate::model::Location;
use crate::varint;
use crate::Error;

/// The encoded instance sections.
#[derive(Default)]
pub(super) struct Encoded {
    pub index: Vec<InstanceBlock>,
    pub data: Vec<u8>,
    pub files: Vec<u32>,
    pub count: u32,
}

/// No parent: the rank used while sorting instances inlined directly into their caller.
const NO_PARENT: u32 = u32::MAX;

/// Everything of an instance but its parent, with function indices already renumbered.
type Key<'d> = (
    u32,
    u64,
    &'d [(u64, u64)],
    u32,
    &'d str,
    u32,
    &'d [Location],
);

/// Order instances canonically — by (caller, nesting depth, entry pc, ranges, callee, call
/// site, locations, parent) — merge exact duplicates, and pack them. `addrs[f]` is the
/// address of output function `f`, from which entry pcs are stored as differences.
pub(super) fn encode(
    all: &[InstanceDesc],
    new_index: &[u32],
    addrs: &[u64],
    strings: &StringTable<'_>,
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
                    &x.ranges[..],
                    new_index[x.callee.0 as usize],
                    x.call_file.as_str(),
                    x.call_line,
                    &x.params[..],
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
    let mut out = Encoded {
        count: u32::try_from(unique.len()).map_err(|_| Error::TooLarge("inline instances"))?,
        ..Encoded::default()
    };
    // The call files, sorted, interned in that order.
    let mut files: Vec<&str> = unique
        .iter()
        .map(|&(_, i)| all[i].call_file.as_str())
        .collect();
    files.sort_unstable();
    files.dedup();
    let file_index: HashMap<&str, u32> = files
        .iter()
        .enumerate()
        .map(|(k, f)| (*f, k as u32))
        .collect();
    for f in &files {
        out.files.push(strings.add(f)?);
    }
    let mut ctx = Context::default();
    for (k, &((caller, d, _), i)) in unique.iter().enumerate() {
        let x = &all[i];
        if k.is_multiple_of(INSTANCE_BLOCK) {
            let offset =
                u32::try_from(out.data.len()).map_err(|_| Error::TooLarge("inline instances"))?;
            out.index.push(InstanceBlock {
                caller: caller.into(),
                offset: offset.into(),
            });
            ctx = Context::block(caller, addrs[caller as usize]);
        }
        let parent = x
            .parent
            .map(|p| k as u32 - final_of[&(d - 1, rank[p.0 as usize])]);
        let file = file_index[x.call_file.as_str()];
        let (nr, nl) = (x.ranges.len(), x.params.len());
        let mut head = 0u8;
        if caller != ctx.caller {
            head |= HEAD_CALLER;
        }
        if parent.is_some() {
            head |= HEAD_PARENT;
        }
        if file == ctx.file {
            head |= HEAD_SAME_FILE;
        }
        head |= (nr.min(3) as u8) << 3 | (nl.min(7) as u8) << 5;
        let data = &mut out.data;
        data.push(head);
        if caller != ctx.caller {
            varint::put(data, u64::from(caller - ctx.caller));
            ctx.caller = caller;
            ctx.entry = addrs[caller as usize];
        }
        varint::put(data, u64::from(new_index[x.callee.0 as usize]));
        if let Some(back) = parent {
            varint::put(data, u64::from(back));
        }
        if file != ctx.file {
            varint::put(data, u64::from(file));
            ctx.file = file;
        }
        varint::put_signed(data, i64::from(x.call_line) - i64::from(ctx.line));
        ctx.line = x.call_line;
        varint::put_signed(data, x.entry_pc.wrapping_sub(ctx.entry) as i64);
        ctx.entry = x.entry_pc;
        if nr >= 3 {
            varint::put(data, nr as u64);
        }
        let mut prev = x.entry_pc;
        for &(start, end) in &x.ranges {
            if end < start {
                return Err(Error::Builder(format!(
                    "inline instance {i}: range {start:#x}..{end:#x} ends before it starts"
                )));
            }
            varint::put_signed(data, start.wrapping_sub(prev) as i64);
            varint::put(data, end - start);
            prev = end;
        }
        if nl >= 7 {
            varint::put(data, nl as u64);
        }
        for loc in &x.params {
            put_location(data, *loc);
        }
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
