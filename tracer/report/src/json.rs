//! The JSON report: one object with every function, edge, top-level function and error
//! origin (schema in `REPORT.md`).

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::model::{CallGraph, Summary};
use super::{InputKind, ReportInput};

/// Report format name.
pub const FORMAT: &str = "report";
/// Report format version.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Report<'a> {
    dcg: &'static str,
    version: u32,
    source: &'a str,
    input: &'static str,
    dbs: Option<usize>,
    root: Option<&'a str>,
    calls: u64,
    timed_calls: u64,
    timestamped_calls: u64,
    error_returns: u64,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    module: Option<&'a str>,
    calls: u64,
    timed_calls: u64,
    total_ns: Option<u64>,
    self_ns: Option<u64>,
    avg_ns: Option<u64>,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    errors: &'a BTreeMap<String, u64>,
}

#[derive(Serialize)]
struct Edge<'a> {
    caller: &'a str,
    callee: &'a str,
    calls: u64,
    total_ns: Option<u64>,
    caller_calls: u64,
    per_caller_call: f64,
    max_per_caller_call: u64,
}

#[derive(Serialize)]
struct ErrorOrigins<'a> {
    error: &'a str,
    calls: u64,
    origins: Vec<Origin<'a>>,
}

#[derive(Serialize)]
struct Origin<'a> {
    function: &'a str,
    calls: u64,
    roots: Vec<Root<'a>>,
}

#[derive(Serialize)]
struct Stacks<'a> {
    function: &'a str,
    calls: u64,
    stacks: Vec<Stack<'a>>,
}

#[derive(Serialize)]
struct Stack<'a> {
    calls: u64,
    frames: &'a [String],
}

#[derive(Serialize)]
struct Root<'a> {
    function: &'a str,
    calls: u64,
}

/// Write the JSON report: one object, one function / edge / root per line.
pub fn write(
    out: &mut dyn Write,
    input: &ReportInput,
    graph: &CallGraph,
    s: &Summary,
) -> std::io::Result<()> {
    let mut functions: Vec<Function<'_>> = s
        .functions
        .iter()
        .map(|f| {
            let t = |v: u64| (f.timed > 0).then_some(v);
            Function {
                name: &f.name,
                module: f.module.as_deref(),
                calls: f.calls,
                timed_calls: f.timed,
                total_ns: t(f.total_ns),
                self_ns: t(f.self_ns),
                avg_ns: f.avg_ns(),
                min_ns: f.min_ns,
                max_ns: f.max_ns,
                errors: &f.errors,
            }
        })
        .collect();
    functions.sort_by(|a, b| (Reverse(a.calls), a.name).cmp(&(Reverse(b.calls), b.name)));
    let name = |f: u32| graph.names[f as usize].as_str();
    let mut edges: Vec<Edge<'_>> = s
        .edges
        .iter()
        .map(|e| Edge {
            caller: name(e.caller),
            callee: name(e.callee),
            calls: e.count,
            total_ns: (s.timed > 0).then_some(e.total_ns),
            caller_calls: e.caller_calls,
            per_caller_call: (e.per_call() * 1000.0).round() / 1000.0,
            max_per_caller_call: e.max_per_call,
        })
        .collect();
    edges.sort_by(|a, b| {
        (Reverse(a.calls), a.caller, a.callee).cmp(&(Reverse(b.calls), b.caller, b.callee))
    });
    let mut roots: Vec<Root<'_>> = s
        .roots
        .iter()
        .map(|(n, &c)| Root {
            function: n,
            calls: c,
        })
        .collect();
    roots.sort_by(|a, b| (Reverse(a.calls), a.function).cmp(&(Reverse(b.calls), b.function)));
    let origins: Vec<ErrorOrigins<'_>> = s
        .origins
        .iter()
        .map(|e| ErrorOrigins {
            error: &e.error,
            calls: e.calls,
            origins: e
                .origins
                .iter()
                .map(|o| Origin {
                    function: &o.function,
                    calls: o.calls,
                    roots: o
                        .roots
                        .iter()
                        .map(|(n, c)| Root {
                            function: n,
                            calls: *c,
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let (kind, dbs) = match input.kind {
        InputKind::SavedCalls => ("calls", None),
        InputKind::Live => ("live", None),
        InputKind::FtraceText { dbs } => ("ftrace", Some(dbs)),
    };
    let r = Report {
        dcg: FORMAT,
        version: VERSION,
        source: &input.source,
        input: kind,
        dbs,
        root: input.root.as_deref(),
        calls: s.calls,
        timed_calls: s.timed,
        timestamped_calls: s.timestamped,
        error_returns: s.errors,
    };
    // The scalar fields on the first line, then one array element per line.
    let head = serde_json::to_string(&r)?;
    out.write_all(&head.as_bytes()[..head.len() - 1])?;
    array(out, "functions", &functions)?;
    array(out, "edges", &edges)?;
    array(out, "roots", &roots)?;
    array(out, "error_origins", &origins)?;
    let stacks: Vec<Stacks<'_>> = s
        .stacks
        .iter()
        .map(|r| Stacks {
            function: &r.function,
            calls: r.calls,
            stacks: r
                .stacks
                .iter()
                .map(|(frames, calls)| Stack {
                    calls: *calls,
                    frames,
                })
                .collect(),
        })
        .collect();
    // Only saved calls taken with `--stack` have any (other reports stay as they were).
    if !stacks.is_empty() {
        array(out, "stacks", &stacks)?;
    }
    out.write_all(b"\n}\n")
}

fn array<T: Serialize>(out: &mut dyn Write, key: &str, items: &[T]) -> std::io::Result<()> {
    write!(out, ",\n\"{key}\":[")?;
    for (i, item) in items.iter().enumerate() {
        out.write_all(if i == 0 { b"\n" } else { b",\n" })?;
        serde_json::to_writer(&mut *out, item)?;
    }
    out.write_all(b"\n]")
}
