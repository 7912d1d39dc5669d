//! `dcg trace`: the kernel or the user-space tracer, what the session reports (printed on
//! stderr), and with `--report` the call-graph report of the traced calls.

use std::io::Write;
use std::process::ExitCode;

use dcg_calls::saved_format::CallRecord;
use dcg_ktrace::{Notice, Outcome, Summary, PROBE_CAP};
use dcg_live::options::TraceOptions;
use dcg_report::{write_report, CallGraph, InputKind, ReportInput, ReportOptions};

use crate::trace_args::TraceArgs;

/// Run `dcg trace`; returns the exit code (2: nothing to trace; user space: the traced
/// command's). The trace goes to `out`, or with `--trace-output` to that file. `offline`:
/// never ask debuginfod.
pub fn run(args: TraceArgs, offline: bool, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let Some(path) = args.trace_output.clone() else {
        return trace(args, offline, out);
    };
    let file = dcg_outfile::Output::create(&path)?;
    let mut w = std::io::BufWriter::new(file.writer()?);
    let code = trace(args, offline, &mut w)?;
    // The error names the file.
    w.flush()?;
    drop(w);
    file.commit()?;
    Ok(code)
}

fn trace(args: TraceArgs, offline: bool, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let report = ReportOptions {
        format: args.report.map_or(dcg_report::Format::Text, Into::into),
        ..ReportOptions::default()
    };
    let opts = args.options(offline);
    use dcg_live::options::Engine;
    match (opts.is_user_space(), opts.engine) {
        (true, Engine::Fgraph | Engine::Bpf) => anyhow::bail!(
            "--engine fgraph and bpf trace kernel functions; user space (PATH:PATTERN) takes \
             inproc or uprobe"
        ),
        (false, Engine::Inproc | Engine::Uprobe) => anyhow::bail!(
            "--engine inproc and uprobe trace user-space functions (PATH:PATTERN); the kernel \
             takes fgraph or bpf"
        ),
        _ => {}
    }
    let (code, calls) = if opts.is_user_space() {
        let sources = crate::db_sources(offline);
        let f = dcg_utrace::run(&opts, &sources, out, &mut |n| eprintln!("dcg: {n}"))?;
        (ExitCode::from(f.exit), f.calls)
    } else {
        kernel(&opts, &crate::db_sources(offline), out)?
    };
    if let Some(calls) = calls {
        let graph = CallGraph::new(calls)?;
        let input = ReportInput {
            source: format!("dcg trace --func {}", opts.func.join(" --func ")),
            kind: InputKind::Live,
            root: None,
        };
        write_report(&report, &input, &graph, out)?;
    }
    Ok(code)
}

/// The kernel session.
fn kernel(
    opts: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
) -> anyhow::Result<(ExitCode, Option<Vec<CallRecord>>)> {
    let outcome = dcg_ktrace::run(opts, sources, out, &mut |n| {
        eprintln!("dcg: {}", notice(&n))
    })?;
    match outcome {
        Outcome::NothingToTrace => Ok((ExitCode::from(2), None)),
        Outcome::Traced(mut s) => {
            for line in summary(&s) {
                eprintln!("{line}");
            }
            Ok((ExitCode::SUCCESS, s.calls.take()))
        }
    }
}

fn notice(n: &Notice) -> String {
    match n {
        Notice::RemovedStale(what) => format!("removed stale {what}"),
        Notice::DbFetched(note) => note.clone(),
        Notice::BpfFallback(why) => {
            format!("{why}; tracing with function_graph instead (--engine bpf to insist)")
        }
        Notice::NoMatch(why) => why.clone(),
        Notice::Inlined {
            funcs,
            copies,
            containers,
            more,
        } => format!(
            "{} inlined: tracing the function{} holding {} ({}), {copies} cop{} shown as \
             frames with the arguments at their first instruction and no return value \
             (DWARF does not say where an inlined copy leaves it){}",
            funcs.join(", "),
            if containers.len() == 1 { "" } else { "s" },
            if *copies == 1 { "it" } else { "them" },
            containers.join(", "),
            if *copies == 1 { "y" } else { "ies" },
            if *more > 0 {
                format!("; {more} more copies left out (limit {})", dcg_ktrace::funcs::INLINE_MAX)
            } else {
                String::new()
            }
        ),
        Notice::InlineProbeFailed {
            func,
            container,
            why,
        } => format!(
            "no probe on {func} inlined in {container} ({why}): its frame opens at its first              call, without arguments"
        ),
        Notice::NoExitProbe { func, why } => format!("no exit probe for {func}: {why}"),
        Notice::GraphRejected(names) => {
            format!("set_graph_function rejected: {}", names.join(", "))
        }
        Notice::Tracing {
            functions,
            target,
            probes,
        } => format!(
            "tracing {functions} function{} ({target}){}; Ctrl-C to stop",
            if *functions == 1 { "" } else { "s" },
            if *probes == 0 {
                String::new()
            } else {
                format!(", {probes} probes")
            }
        ),
    }
}

/// The closing lines.
fn summary(s: &Summary) -> Vec<String> {
    let mut v = Vec::new();
    if s.lost_in_stream > 0 || s.lost_unknown || s.overrun > 0 || s.dropped > 0 {
        v.push(format!(
            "dcg: warning: events were lost: {}{} reported in the stream, {} overrun, {} \
             dropped (the output misses calls; trace fewer functions or use --depth)",
            s.lost_in_stream,
            if s.lost_unknown { "+" } else { "" },
            s.overrun,
            s.dropped
        ));
    }
    let lost: u64 = s.lost_calls.iter().map(|(_, n)| n).sum();
    if lost > 0 {
        let at: Vec<String> = s
            .lost_calls
            .iter()
            .take(5)
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        let trees = match s.lossy_trees {
            0 => String::new(),
            1 => " in 1 tree (marked \"calls lost\")".to_string(),
            n => format!(" in {n} trees (marked \"calls lost\")"),
        };
        v.push(format!(
            "dcg: note: {lost} call{} of the traced tasks {} missing{trees}: the kernel skipped \
             the BPF program on their CPU while it recorded {}{}; what ran then (an \
             interrupt) was not recorded",
            if lost == 1 { "" } else { "s" },
            if lost == 1 { "is" } else { "are" },
            at.join(", "),
            if s.lost_calls.len() > at.len() {
                ", ..."
            } else {
                ""
            },
        ));
    } else if s.losses_unattributed && s.bpf_missed > 0 {
        v.push(format!(
            "dcg: note: the kernel skipped the BPF program {} times (a traced function hit \
             on a CPU where it already ran, any task); calls made in interrupts during a \
             record may be missing from the trees",
            s.bpf_missed
        ));
    }
    let missing: u64 = s.valueless.iter().map(|(_, n)| n).sum();
    if missing > 0 {
        let list: Vec<String> = s
            .valueless
            .iter()
            .take(8)
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        v.push(format!(
            "dcg: {missing} calls returned before their exit probe existed or without one, \
             value unknown: {}{}",
            list.join(", "),
            if s.valueless.len() > 8 { ", ..." } else { "" }
        ));
    }
    if s.probes_capped > 0 {
        v.push(format!(
            "dcg: probe limit {PROBE_CAP} reached: {} more functions got no probe",
            s.probes_capped
        ));
    }
    if let Some((_, first)) = s.probes_failed.first() {
        let names: Vec<&str> = s
            .probes_failed
            .iter()
            .take(8)
            .map(|(f, _)| f.as_str())
            .collect();
        v.push(format!(
            "dcg: {} probes could not be created ({}{}); first error: {first}",
            s.probes_failed.len(),
            names.join(", "),
            if s.probes_failed.len() > 8 {
                ", ..."
            } else {
                ""
            },
        ));
    }
    if let Some(u) = &s.undecoded {
        v.push(u.clone());
    }
    for f in &s.cleanup_failures {
        v.push(format!("dcg: cleanup: {f}"));
    }
    v.push(format!(
        "dcg: stopped ({}), {} calls{}",
        s.stop_reason,
        s.completed,
        if s.probes == 0 {
            String::new()
        } else {
            format!(", {} probes", s.probes)
        }
    ));
    v
}
