//! Folded stacks for flame graph tools (flamegraph.pl, inferno, speedscope):
//! `top;caller;callee WEIGHT`, one line per distinct stack, sorted.

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

/// The (stack, weight) pairs, sorted by stack.
pub fn stacks(graph: &CallGraph, weight: FoldedWeight) -> Vec<(String, u64)> {
    // Stacks interned as (parent stack, function) → stack id; parents come first in id order.
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut nodes: Vec<(u32, u32)> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    let mut stack_of = vec![0u32; graph.len()];
    const NONE: u32 = u32::MAX;
    for i in 0..graph.len() {
        let up = graph.parent[i].map_or(NONE, |p| stack_of[p]);
        let key = (up, graph.func[i]);
        let id = *ids.entry(key).or_insert_with(|| {
            nodes.push(key);
            weights.push(0);
            nodes.len() as u32 - 1
        });
        stack_of[i] = id;
        weights[id as usize] += match weight {
            FoldedWeight::Calls => 1,
            FoldedWeight::SelfNs => {
                let d = graph.calls[i].duration_ns.unwrap_or(0);
                let kids: u64 = graph.children[i]
                    .iter()
                    .filter_map(|&c| graph.calls[c].duration_ns)
                    .sum();
                d.saturating_sub(kids)
            }
        };
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
            parts.push(graph.names[f as usize].as_str());
            cur = up;
        }
        parts.reverse();
        v.push((parts.join(";"), w));
    }
    v.sort();
    v
}
