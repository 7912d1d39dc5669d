//! Graphviz DOT of the call graph: one node per function (calls, total time, error
//! returns), one edge per caller → callee pair labelled with its call count.

use std::io::Write;

use super::model::{CallGraph, Summary};
use super::us;

/// A DOT quoted string: `"` and `\` escaped, newlines as `\n`.
pub fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Write the graph; nodes and edges sorted by name.
pub fn write(out: &mut dyn Write, graph: &CallGraph, s: &Summary) -> std::io::Result<()> {
    writeln!(out, "digraph calls {{")?;
    writeln!(out, "  rankdir=LR;")?;
    writeln!(
        out,
        "  node [shape=box, fontname=\"monospace\", fontsize=10];"
    )?;
    writeln!(out, "  edge [fontname=\"monospace\", fontsize=9];")?;
    let mut funcs: Vec<usize> = (0..s.functions.len()).collect();
    funcs.sort_by(|&a, &b| s.functions[a].name.cmp(&s.functions[b].name));
    for i in funcs {
        let f = &s.functions[i];
        let plural = if f.calls == 1 { "" } else { "s" };
        let mut label = format!("{}\n{} call{plural}", f.name, f.calls);
        if f.timed > 0 {
            label.push_str(&format!(", {} us", us(f.total_ns)));
        }
        let errors = f.error_count();
        let mut attrs = String::new();
        if errors > 0 {
            let list: Vec<String> = f.errors.iter().map(|(e, n)| format!("{e} x{n}")).collect();
            label.push_str(&format!("\nerrors: {}", list.join(", ")));
            attrs.push_str(", color=red, fontcolor=red");
        }
        writeln!(
            out,
            "  {} [label={}{attrs}];",
            quote(&f.name),
            quote(&label)
        )?;
    }
    // Summary edges are already sorted by (caller, callee) name.
    for e in &s.edges {
        writeln!(
            out,
            "  {} -> {} [label=\"{}\"];",
            quote(&graph.names[e.caller as usize]),
            quote(&graph.names[e.callee as usize]),
            e.count
        )?;
    }
    writeln!(out, "}}")
}
