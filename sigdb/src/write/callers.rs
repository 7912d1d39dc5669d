//! The inline caller lists as written: the (callee, caller) edges in output order,
//! packed as varint lists in blocks of [`CALLEE_BLOCK`] callees and cut into compressed
//! frames (the reader is `read/callers.rs`).

use super::builder::DbBuilder;
use super::frames::{compress_blocks, Packed};
use crate::layout::{InlineBlock, CALLEE_BLOCK};
use crate::varint;
use crate::Error;

/// Pack (callee, caller) edges, sorted and deduplicated, into the block index and the
/// list bytes.
fn encode(edges: &[(u32, u32)]) -> Result<(Vec<InlineBlock>, Vec<u8>), Error> {
    let mut index = Vec::new();
    let mut data = Vec::new();
    let mut lists = 0usize;
    let mut prev_callee = 0u32;
    let mut i = 0;
    while i < edges.len() {
        let callee = edges[i].0;
        let n = edges[i..].iter().take_while(|e| e.0 == callee).count();
        if lists.is_multiple_of(CALLEE_BLOCK) {
            let offset = u32::try_from(data.len()).map_err(|_| Error::TooLarge("inline edges"))?;
            index.push(InlineBlock {
                callee: callee.into(),
                offset: offset.into(),
            });
        } else {
            varint::put(&mut data, u64::from(callee - prev_callee));
        }
        prev_callee = callee;
        varint::put(&mut data, n as u64);
        let mut prev = 0u32;
        for (k, &(_, caller)) in edges[i..i + n].iter().enumerate() {
            varint::put(
                &mut data,
                u64::from(if k == 0 { caller } else { caller - prev }),
            );
            prev = caller;
        }
        lists += 1;
        i += n;
    }
    Ok((index, data))
}

/// The caller lists of the inline edges in output order (`new_index`), encoded and cut
/// into compressed frames.
pub(super) fn caller_lists(
    b: &DbBuilder,
    new_index: &[u32],
) -> Result<(Vec<InlineBlock>, Packed), Error> {
    let (mut index, lists) = encode(&inline_edges(b, new_index))?;
    let packed = compress_blocks(
        index.iter_mut().map(|b| &mut b.offset),
        &lists,
        "inline caller lists (a frame past 16 MiB)",
    )?;
    Ok((index, packed))
}

/// Inline edges in output indices, sorted and deduplicated.
fn inline_edges(b: &DbBuilder, new_index: &[u32]) -> Vec<(u32, u32)> {
    let mut inlines: Vec<(u32, u32)> = b
        .inlines
        .iter()
        .map(|&(callee, caller)| (new_index[callee.0 as usize], new_index[caller.0 as usize]))
        .collect();
    inlines.sort_unstable();
    inlines.dedup();
    inlines
}
