//! One self-contained HTML file: the call trees with every typed value (folded below a
//! depth, built lazily so 100,000 calls open in seconds), a search that opens the path to
//! a function, a flame graph (SVG laid out by `inferno`, click to zoom), the call graph
//! (Graphviz `dot` when installed, else a table of edges) and the text report's tables.
//! No network and no external file: the page's script, style and data are in it.
//!
//! Values are shown as the saved calls hold them, rendered by the one renderer of the
//! text printer; nothing is rendered again here.

use std::collections::HashMap;
use std::io::Write;

use super::model::CallGraph;
use super::{FoldedWeight, ReportError, ReportInput, Summary};
use dcg_calls::saved_format::Space;

const CSS: &str = include_str!("html/report.css");
const JS: &str = include_str!("html/report.js");

/// Write the page.
pub fn write(
    out: &mut dyn Write,
    input: &ReportInput,
    graph: &CallGraph,
    summary: &Summary,
    top: usize,
) -> Result<(), ReportError> {
    let mut tables = Vec::new();
    super::text::write(&mut tables, input, graph, summary, top)?;
    let flame = flame_svg(graph)?;
    let call_graph = call_graph_html(graph, summary)?;
    let data = data_json(input, graph);
    let title = format!("dcg report: {}", input.source);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{CSS}</style></head>\n<body>\n\
         <header><h1>dcg report</h1><span class=\"src\">{source}</span>\
         <span>{calls} calls</span><nav>\
         <button id=\"tab-tree\">Call trees</button><button id=\"tab-flame\">Flame graph</button>\
         <button id=\"tab-graph\">Call graph</button><button id=\"tab-tables\">Tables</button></nav>\
         <input id=\"dcg-search\" placeholder=\"find a function (Enter: next)\">\
         <span id=\"search-count\"></span></header>\n\
         <section id=\"view-flame\">{flame}</section>\n\
         <section id=\"view-tree\"><div id=\"tree\"></div></section>\n\
         <section id=\"view-graph\">{call_graph}</section>\n\
         <section id=\"view-tables\"><pre>{tables}</pre></section>\n\
         <script type=\"application/json\" id=\"dcg-data\">{data}</script>\n\
         <script>{JS}</script>\n</body></html>\n",
        title = escape(&title),
        source = escape(&input.source),
        calls = graph.len(),
        tables = escape(&String::from_utf8_lossy(&tables)),
        data = data.replace("</", "<\\/"),
    )?;
    Ok(())
}

/// `&`, `<`, `>`, `"` escaped for HTML text and attributes.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            c => o.push(c),
        }
    }
    o
}

/// The calls as the page's script reads them: function names, and per call `[func,
/// parent, args, ret, duration, error, origin, interrupt, inlined in, lost, irqs,
/// stack, outs, kernel]` (a top-level call's stack: its frames outermost first; kernel:
/// 1 where a kernel call below a user call begins the kernel's part). What
/// a call line shows is written here by the text printer's code (`dcg_calls::text`): the
/// argument list, the duration as its column shows it (`+ 14.000 us`), where an interrupt
/// subtree begins and the word for it, the calls lost, the interrupts' time; the values
/// are the saved calls' own (rendered by type when they were decoded).
fn data_json(input: &ReportInput, graph: &CallGraph) -> String {
    use dcg_calls::text;
    use serde_json::{json, Value};
    let index: HashMap<u64, usize> = graph
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id, i))
        .collect();
    let with = |f: &dyn Fn(&mut String)| {
        let mut s = String::new();
        f(&mut s);
        s
    };
    let calls: Vec<Value> = graph
        .calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let args = with(&|s| {
                text::push_arg_list(
                    s,
                    c.args.iter().map(|a| (a.name.as_str(), a.value.as_str())),
                    false,
                )
            });
            let parent = graph.parent[i];
            let caller_ctx = parent.and_then(|p| graph.calls[p].ctx);
            let interrupt = c
                .ctx
                .filter(|x| x.begins_subtree(caller_ctx))
                .map(|x| text::interrupt_name(Some(x)));
            // Lost calls are said where they were lost (more than its callees lost) and
            // at the top of the tree, as the text printer says them.
            let below: u64 = graph.children[i]
                .iter()
                .filter_map(|&k| graph.calls[k].lost)
                .sum();
            let lost = c
                .lost
                .filter(|&n| parent.is_none() || n > below)
                .map(|n| with(&|s| text::push_lost_count(s, n)));
            json!([
                graph.func[i],
                parent.map_or(-1, |p| p as i64),
                args,
                c.ret,
                c.duration_ns
                    .map(|ns| with(&|s| text::push_duration_value(s, ns))
                        .trim_start()
                        .to_string()),
                u8::from(c.error),
                c.origin
                    .and_then(|o| index.get(&o))
                    .map_or(-1, |&o| o as i64),
                interrupt,
                c.inline.as_ref().map(|s| s.container.clone()),
                lost,
                c.irq_ns
                    .map(|ns| with(&|s| text::push_duration_plain(s, ns))),
                c.stack
                    .as_ref()
                    .map(|s| s.iter().rev().map(|f| f.label()).collect::<Vec<_>>()),
                // Output parameters, as the text printer writes them after the value.
                (!c.out.is_empty()).then(|| {
                    c.out
                        .iter()
                        .map(|o| format!("*{}={}", o.name, o.value))
                        .collect::<Vec<_>>()
                        .join(" ")
                }),
                // A kernel call a user call made (both sides traced): where the kernel
                // begins, as the text's `/* kernel */`.
                u8::from(
                    c.space == Some(Space::Kernel)
                        && parent.is_some_and(|p| graph.calls[p].space == Some(Space::User)),
                ),
            ])
        })
        .collect();
    json!({ "source": input.source, "names": graph.names, "calls": calls }).to_string()
}

/// The flame graph of the calls (their self time where every call has a duration, else
/// their number), inline: the first `<svg>` of the page, its own script drives the zoom.
fn flame_svg(graph: &CallGraph) -> Result<String, ReportError> {
    if graph.is_empty() {
        return Ok("<p>No calls.</p>".into());
    }
    let timed = graph.calls.iter().all(|c| c.duration_ns.is_some());
    let weight = if timed {
        FoldedWeight::SelfNs
    } else {
        FoldedWeight::Calls
    };
    // Ordered frame by frame, so that the stacks under one frame are next to each other
    // and inferno draws it once: ordered as strings (inferno's order), `f;g` and `f;g;h`
    // can have `f;g.isra.0`, `f;g [module]` or `f;g2` between them (`.`, ` ` and digits
    // sort before `;`) and `g` would be drawn twice. Inferno keeps the order of its input
    // only as a flame chart's, whose lines it reverses: given reversed here.
    let mut stacks = super::folded::stacks(graph, weight);
    stacks.sort_by(|a, b| b.0.split(';').cmp(a.0.split(';')));
    let lines: Vec<String> = stacks
        .into_iter()
        .map(|(s, w)| format!("{s} {w}"))
        .collect();
    if lines.is_empty() {
        return Ok("<p>No call has a duration.</p>".into());
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = "Calls (width: self time)".into();
    if !timed {
        opts.title = "Calls (width: number of calls)".into();
    }
    opts.count_name = if timed { "ns" } else { "calls" }.into();
    // Every frame is drawn, however narrow: the page shows the whole graph.
    opts.min_width = 0.0;
    opts.flame_chart = true;
    // Both sides traced: the folded stacks annotate kernel frames `_[k]`, which the java
    // palette (flamegraph.pl's for mixed stacks) draws orange, the others red.
    if graph.kernel.iter().any(|&k| k) {
        opts.colors =
            inferno::flamegraph::Palette::Multi(inferno::flamegraph::color::MultiPalette::Java);
    }
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)
        .map_err(ReportError::Io)?;
    let svg = String::from_utf8_lossy(&svg);
    // Inline in the page: no XML prolog; the page starts its script once loaded.
    let start = svg.find("<svg").unwrap_or(0);
    Ok(svg[start..].replacen(" onload=\"init(evt)\"", "", 1))
}

/// Graphviz lays out this many functions in a few seconds (1,215 functions and 1,488
/// edges: 3.2 s on the machine of BENCHMARKS.md, growing faster than the graph); above
/// it the page shows the table, and says why.
pub const GRAPHVIZ_MAX_FUNCTIONS: usize = 1000;

/// The call graph: Graphviz's SVG of the DOT report (fit to the page, a click shows it
/// at full size) when `dot` is installed and the graph
/// is small enough to lay out quickly, else a table of caller → callee edges with their
/// counts, after a note that says why.
fn call_graph_html(graph: &CallGraph, summary: &Summary) -> Result<String, ReportError> {
    let functions = summary.functions.len();
    let why = if functions > GRAPHVIZ_MAX_FUNCTIONS {
        format!(
            "{functions} functions: more than Graphviz lays out in a few seconds \
             ({GRAPHVIZ_MAX_FUNCTIONS}); the edges as a table \
             (<code>dcg report --format dot | dot -Tsvg</code> for a drawing)."
        )
    } else {
        let mut dot = Vec::new();
        super::dot::write(&mut dot, graph, summary)?;
        if let Some(svg) = graphviz(&dot) {
            return Ok(svg);
        }
        "Graphviz is not installed: the edges as a table (<code>dcg report --format dot</code> \
         for a drawing)."
            .to_string()
    };
    let mut s = format!(
        "<p class=\"note\">{why}</p><table class=\"edges\">\
         <tr><th>caller</th><th>callee</th><th>calls</th></tr>"
    );
    for e in &summary.edges {
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&summary.functions[e.caller as usize].name),
            escape(&summary.functions[e.callee as usize].name),
            e.count
        ));
    }
    s.push_str("</table>");
    Ok(s)
}

/// `dot -Tsvg` of `dot`, without its XML prolog; `None` when Graphviz is missing or fails.
fn graphviz(dot: &[u8]) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let input = dot.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    if !out.status.success() {
        return None;
    }
    let svg = String::from_utf8(out.stdout).ok()?;
    let start = svg.find("<svg")?;
    Some(svg[start..].to_string())
}
