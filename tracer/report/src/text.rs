//! The text report: a heading, then tables with aligned columns. Rows are ordered by
//! their measure, ties broken by name, so the output is deterministic.

use std::cmp::Reverse;
use std::io::Write;

use super::model::{CallGraph, EdgeStats, ErrnoOrigins, FuncStats, RootStacks, Summary};
use super::{us, InputKind, ReportInput};

/// Write the text report, `top` rows per table.
pub fn write(
    out: &mut dyn Write,
    input: &ReportInput,
    graph: &CallGraph,
    s: &Summary,
    top: usize,
) -> std::io::Result<()> {
    heading(out, input)?;
    if graph.is_empty() {
        writeln!(out, "no calls")?;
        return Ok(());
    }
    totals(out, graph, s)?;
    let timed = s.timed > 0;
    function_tables(out, s, top, timed)?;
    errors_table(out, s, top)?;
    origins_table(out, &s.origins, top)?;
    let mut edges: Vec<&EdgeStats> = s.edges.iter().collect();
    edges_by_calls(out, graph, &mut edges, top, timed)?;
    edges_per_caller_call(out, graph, &mut edges, top)?;
    roots_table(out, s, top)?;
    stacks_table(out, &s.stacks, top)
}

/// The distinct stacks that led to each top-level function's calls (saved with
/// `--stack`), most calls first, each on one line innermost first (`<-`: called from).
fn stacks_table(out: &mut dyn Write, stacks: &[RootStacks], top: usize) -> std::io::Result<()> {
    if stacks.is_empty() {
        return Ok(());
    }
    section(
        out,
        "Stacks that led to top-level calls (innermost first)",
        stacks.len(),
        top,
    )?;
    for r in stacks.iter().take(top) {
        let n = r.stacks.len();
        writeln!(
            out,
            "  {}: {} calls, {n} distinct {}",
            r.function,
            r.calls,
            if n == 1 { "stack" } else { "stacks" }
        )?;
        let rows: Vec<Vec<String>> = r
            .stacks
            .iter()
            .take(top)
            .map(|(frames, calls)| vec![calls.to_string(), frames.join(" <- ")])
            .collect();
        table(out, &["calls", "stack"], &rows, 1)?;
        if n > top {
            writeln!(out, "  ({} more stacks)", n - top)?;
        }
    }
    Ok(())
}

/// What was read: the source, the kind of input and the subtree kept.
fn heading(out: &mut dyn Write, input: &ReportInput) -> std::io::Result<()> {
    writeln!(out, "dcg report: {}", input.source)?;
    let kind = match input.kind {
        InputKind::SavedCalls => "saved calls".to_string(),
        InputKind::Live => "live trace".to_string(),
        InputKind::FtraceText { dbs: 0 } => "ftrace text, no signature db (raw values)".into(),
        InputKind::FtraceText { dbs: 1 } => "ftrace text, decoded with 1 db".into(),
        InputKind::FtraceText { dbs } => format!("ftrace text, decoded with {dbs} dbs"),
    };
    writeln!(out, "input: {kind}")?;
    if let Some(r) = &input.root {
        writeln!(out, "only calls inside: {r}")?;
    }
    Ok(())
}

/// The totals: calls, functions, edges, errors, and how many calls carry a duration and
/// a timestamp.
fn totals(out: &mut dyn Write, graph: &CallGraph, s: &Summary) -> std::io::Result<()> {
    let errfuncs = s.functions.iter().filter(|f| f.error_count() > 0).count();
    writeln!(
        out,
        "calls: {} of {} functions, {} top-level, {} caller -> callee edges, {} error returns in {} functions",
        s.calls,
        s.functions.len(),
        graph.roots.len(),
        s.edges.len(),
        s.errors,
        errfuncs
    )?;
    let timed = s.timed > 0;
    let durations = match s.timed {
        0 => "none (counts only)".to_string(),
        t if t == s.calls => "every call".to_string(),
        t => format!("{t} of {} calls (times cover those only)", s.calls),
    };
    let stamps = match s.timestamped {
        0 => "none".to_string(),
        t if t == s.calls => "every call".to_string(),
        t => format!("{t} of {} calls", s.calls),
    };
    writeln!(out, "durations: {durations}; timestamps: {stamps}")?;
    if timed {
        writeln!(
            out,
            "times in us; total counts a recursive call once; self = total - callees"
        )?;
    }
    Ok(())
}

/// The functions by calls and, when calls are timed, by total and by self time (each
/// sort starts from the previous order, so ties keep it).
fn function_tables(
    out: &mut dyn Write,
    s: &Summary,
    top: usize,
    timed: bool,
) -> std::io::Result<()> {
    let mut funcs: Vec<&FuncStats> = s.functions.iter().collect();
    funcs.sort_by(|a, b| (Reverse(a.calls), &a.name).cmp(&(Reverse(b.calls), &b.name)));
    section(
        out,
        &format!("Top {top} functions by calls"),
        funcs.len(),
        top,
    )?;
    func_table(out, &funcs[..top.min(funcs.len())], timed)?;
    if timed {
        funcs.sort_by(|a, b| (Reverse(a.total_ns), &a.name).cmp(&(Reverse(b.total_ns), &b.name)));
        section(
            out,
            &format!("Top {top} functions by total time"),
            funcs.len(),
            top,
        )?;
        func_table(out, &funcs[..top.min(funcs.len())], timed)?;
        funcs.sort_by(|a, b| (Reverse(a.self_ns), &a.name).cmp(&(Reverse(b.self_ns), &b.name)));
        section(
            out,
            &format!("Top {top} functions by self time"),
            funcs.len(),
            top,
        )?;
        func_table(out, &funcs[..top.min(funcs.len())], timed)?;
    }
    Ok(())
}

/// Error returns, by function and value.
fn errors_table(out: &mut dyn Write, s: &Summary, top: usize) -> std::io::Result<()> {
    let mut errs: Vec<(u64, &str, &str)> = s
        .functions
        .iter()
        .flat_map(|f| {
            f.errors
                .iter()
                .map(|(e, &n)| (n, f.name.as_str(), e.as_str()))
        })
        .collect();
    errs.sort_by(|a, b| (Reverse(a.0), a.1, a.2).cmp(&(Reverse(b.0), b.1, b.2)));
    section(out, &format!("Top {top} error returns"), errs.len(), top)?;
    if errs.is_empty() {
        writeln!(out, "  (none)")?;
    } else {
        let rows: Vec<Vec<String>> = errs
            .iter()
            .take(top)
            .map(|(n, f, e)| vec![n.to_string(), e.to_string(), f.to_string()])
            .collect();
        table(out, &["count", "error", "function"], &rows, 1)?;
    }
    Ok(())
}

/// `caller -> callee` of an edge.
fn edge_name(graph: &CallGraph, e: &EdgeStats) -> String {
    let name = |f: u32| graph.names[f as usize].as_str();
    format!("{} -> {}", name(e.caller), name(e.callee))
}

/// The caller -> callee edges by calls (`edges` is left in that order).
fn edges_by_calls(
    out: &mut dyn Write,
    graph: &CallGraph,
    edges: &mut [&EdgeStats],
    top: usize,
    timed: bool,
) -> std::io::Result<()> {
    let name = |f: u32| graph.names[f as usize].as_str();
    edges.sort_by(|a, b| {
        (Reverse(a.count), name(a.caller), name(a.callee)).cmp(&(
            Reverse(b.count),
            name(b.caller),
            name(b.callee),
        ))
    });
    section(
        out,
        &format!("Top {top} caller -> callee edges by calls"),
        edges.len(),
        top,
    )?;
    let rows: Vec<Vec<String>> = edges
        .iter()
        .take(top)
        .map(|e| {
            let mut r = vec![e.count.to_string()];
            if timed {
                r.push(us(e.total_ns));
            }
            r.push(edge_name(graph, e));
            r
        })
        .collect();
    let head: &[&str] = if timed {
        &["calls", "time", "caller -> callee"]
    } else {
        &["calls", "caller -> callee"]
    };
    table(out, head, &rows, head.len() - 1)
}

/// Called way too often: the edges by most calls of the callee in one call of the
/// caller (sorted from the order `edges` is in).
fn edges_per_caller_call(
    out: &mut dyn Write,
    graph: &CallGraph,
    edges: &mut [&EdgeStats],
    top: usize,
) -> std::io::Result<()> {
    let name = |f: u32| graph.names[f as usize].as_str();
    edges.sort_by(|a, b| {
        (
            Reverse(a.max_per_call),
            Reverse(a.count),
            name(a.caller),
            name(a.callee),
        )
            .cmp(&(
                Reverse(b.max_per_call),
                Reverse(b.count),
                name(b.caller),
                name(b.callee),
            ))
    });
    section(
        out,
        &format!("Top {top} calls per caller call (called way too often?)"),
        edges.len(),
        top,
    )?;
    let rows: Vec<Vec<String>> = edges
        .iter()
        .take(top)
        .map(|e| {
            vec![
                e.max_per_call.to_string(),
                format!("{:.2}", e.per_call()),
                e.caller_calls.to_string(),
                e.count.to_string(),
                edge_name(graph, e),
            ]
        })
        .collect();
    table(
        out,
        &[
            "max/call",
            "avg/call",
            "caller calls",
            "calls",
            "caller -> callee",
        ],
        &rows,
        4,
    )
}

/// The top-level calls by count.
fn roots_table(out: &mut dyn Write, s: &Summary, top: usize) -> std::io::Result<()> {
    let mut roots: Vec<(&String, &u64)> = s.roots.iter().collect();
    roots.sort_by(|a, b| (Reverse(a.1), a.0).cmp(&(Reverse(b.1), b.0)));
    section(out, &format!("Top {top} top-level calls"), roots.len(), top)?;
    let rows: Vec<Vec<String>> = roots
        .iter()
        .take(top)
        .map(|(n, c)| vec![c.to_string(), n.to_string()])
        .collect();
    table(out, &["calls", "function"], &rows, 1)
}

/// Error origins by errno: one row per error value and function where it first appeared,
/// with how many failing top-level calls it explains and their functions.
fn origins_table(out: &mut dyn Write, origins: &[ErrnoOrigins], top: usize) -> std::io::Result<()> {
    let rows: Vec<Vec<String>> = origins
        .iter()
        .flat_map(|e| {
            e.origins.iter().map(|o| {
                let roots: Vec<String> =
                    o.roots.iter().map(|(n, c)| format!("{n} ({c})")).collect();
                vec![
                    o.calls.to_string(),
                    e.error.clone(),
                    o.function.clone(),
                    roots.join(", "),
                ]
            })
        })
        .collect();
    section(
        out,
        &format!("Top {top} error origins by errno"),
        rows.len(),
        top,
    )?;
    if rows.is_empty() {
        return writeln!(out, "  (none)");
    }
    table(
        out,
        &["calls", "error", "origin", "failing top-level functions"],
        &rows[..top.min(rows.len())],
        1,
    )
}

fn section(out: &mut dyn Write, title: &str, len: usize, top: usize) -> std::io::Result<()> {
    writeln!(out)?;
    if len > top {
        writeln!(out, "{title} (of {len})")
    } else {
        writeln!(out, "{title}")
    }
}

fn func_table(out: &mut dyn Write, funcs: &[&FuncStats], timed: bool) -> std::io::Result<()> {
    let rows: Vec<Vec<String>> = funcs
        .iter()
        .map(|f| {
            let mut r = vec![f.calls.to_string()];
            if timed {
                let t = |v: Option<u64>| v.map_or("-".to_string(), us);
                let have = f.timed > 0;
                r.push(t(have.then_some(f.total_ns)));
                r.push(t(have.then_some(f.self_ns)));
                r.push(t(f.avg_ns()));
                r.push(t(f.max_ns));
            }
            r.push(f.error_count().to_string());
            r.push(f.name.clone());
            r
        })
        .collect();
    let head: &[&str] = if timed {
        &["calls", "total", "self", "avg", "max", "errors", "function"]
    } else {
        &["calls", "errors", "function"]
    };
    table(out, head, &rows, head.len() - 1)
}

/// Columns before `left_from` are right-aligned, the rest left-aligned; the last column
/// is not padded.
fn table(
    out: &mut dyn Write,
    head: &[&str],
    rows: &[Vec<String>],
    left_from: usize,
) -> std::io::Result<()> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| cut(c)).collect())
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    // Padded by hand: `format!`'s width stops at 65535 and panics beyond.
    let line = |cells: Vec<&str>| {
        let mut s = String::from(" ");
        let last = cells.len() - 1;
        for (i, c) in cells.into_iter().enumerate() {
            s.push(' ');
            let pad = w[i].saturating_sub(c.chars().count());
            if i == last {
                s.push_str(c);
            } else if i < left_from {
                s.extend(std::iter::repeat_n(' ', pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                s.extend(std::iter::repeat_n(' ', pad));
            }
        }
        s
    };
    writeln!(out, "{}", line(head.to_vec()))?;
    for r in &rows {
        writeln!(out, "{}", line(r.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// The longest cell shown, in characters: a longer name (a 64 KiB C++ template
/// instance) is cut there and marked with `…`.
pub const MAX_CELL: usize = 4096;

/// `c`, cut at [`MAX_CELL`] characters.
fn cut(c: &str) -> String {
    match c.char_indices().nth(MAX_CELL) {
        None => c.to_string(),
        Some((at, _)) => format!("{}…", &c[..at]),
    }
}
