//! Folded stacks for flame graph tools (flamegraph.pl, inferno, speedscope):
//! `top;caller;callee WEIGHT`, one line per distinct stack, sorted.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;

use super::model::CallGraph;
use super::FoldedWeight;

/// Write one line per distinct stack. With [`FoldedWeight::Calls`] a stack's weight is the
/// number of calls made at it, so the weights add up to the number of calls; with
/// [`FoldedWeight::SelfNs`] it is their self time (stacks of weight 0 are left out).
pub fn write(out: &mut dyn Write, graph: &CallGraph, weight: FoldedWeight) -> std::io::Result<()> {
    for (stack, w) in stacks(graph, weight) {
        writeln!(out, "{stack} {w}")?;
    }
    Ok(())
}

/// The deepest stack written, in frames: the calls at its last frame and below are
/// counted in one frame [`DEEPER`] there (a 200,000-deep recursion would otherwise give
/// 200,000 lines of up to 200,000 frames each).
pub const MAX_FRAMES: usize = 1024;

/// The frame that stands for every call deeper than [`MAX_FRAMES`].
pub const DEEPER: &str = "[deeper calls]";

/// The (stack, weight) pairs, sorted by stack.
pub fn stacks(graph: &CallGraph, weight: FoldedWeight) -> Vec<(String, u64)> {
    // Stacks interned as (parent stack, function) → stack id; parents come first in id order.
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut nodes: Vec<(u32, u32)> = Vec::new();
    let mut depths: Vec<u32> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    let mut stack_of = vec![0u32; graph.len()];
    const NONE: u32 = u32::MAX;
    const DEEPER_FUNC: u32 = u32::MAX;
    for i in 0..graph.len() {
        let up = graph.parent[i].map_or(NONE, |p| stack_of[p]);
        let depth = if up == NONE {
            0
        } else {
            depths[up as usize] + 1
        };
        if up != NONE && nodes[up as usize].1 == DEEPER_FUNC {
            // Already below the cap: counted in the parent's [deeper calls] frame.
            stack_of[i] = up;
            weights[up as usize] += self_weight(graph, i, weight);
            continue;
        }
        let func = if depth as usize >= MAX_FRAMES - 1 {
            DEEPER_FUNC
        } else {
            graph.func[i]
        };
        let key = (up, func);
        let id = *ids.entry(key).or_insert_with(|| {
            nodes.push(key);
            depths.push(depth);
            weights.push(0);
            nodes.len() as u32 - 1
        });
        stack_of[i] = id;
        weights[id as usize] += self_weight(graph, i, weight);
    }
    let mut v: Vec<(String, u64)> = Vec::new();
    for (id, &w) in weights.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let mut parts = Vec::new();
        let mut cur = id as u32;
        while cur != NONE {
            let (up, f) = nodes[cur as usize];
            parts.push(if f == DEEPER_FUNC {
                Cow::Borrowed(DEEPER)
            } else {
                frame_name(graph, f as usize)
            });
            cur = up;
        }
        parts.reverse();
        v.push((parts.join(";"), w));
    }
    v.sort();
    v
}

/// The weight call `i` adds to its stack.
fn self_weight(graph: &CallGraph, i: usize, weight: FoldedWeight) -> u64 {
    match weight {
        FoldedWeight::Calls => 1,
        FoldedWeight::SelfNs => {
            let d = graph.calls[i].duration_ns.unwrap_or(0);
            let kids: u64 = graph.children[i]
                .iter()
                .filter_map(|&c| graph.calls[c].duration_ns)
                .sum();
            d.saturating_sub(kids)
        }
    }
}

/// A function's frame: its name, a kernel function's with the flame graph tools' kernel
/// annotation (`do_sys_openat2_[k]`, which flamegraph.pl and inferno colour as kernel
/// code) in calls that traced both sides.
fn frame_name(graph: &CallGraph, f: usize) -> Cow<'_, str> {
    let name = graph.names[f].as_str();
    if !graph.kernel[f] {
        return Cow::Borrowed(name);
    }
    let bare = name
        .strip_suffix(super::model::KERNEL_MARK)
        .map_or(name, str::trim_end);
    Cow::Owned(format!("{bare}_[k]"))
}
