//! `dcg trace`: the kernel or the user-space tracer, what the session reports (printed on
//! stderr), and with `--report` the call-graph report of the traced calls.

use std::io::Write;
use std::process::ExitCode;

use dcg_calls::saved_format::CallRecord;
use dcg_ktrace::{Notice, Outcome};
use dcg_live::options::TraceOptions;
use dcg_report::{write_report, CallGraph, InputKind, ReportInput, ReportOptions};

use crate::trace_args::TraceArgs;
use crate::trace_notices as notices;

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
    let tuning = args.tuning();
    let texts = args.filter.clone();
    let filters = crate::report::parse_filters(&texts)?;
    let opts = args.options(offline, filters);
    // A filter refused when bound to the traced functions: a caret under its token.
    let refused = |e: &dcg_filter::saved::SelectError| {
        anyhow::anyhow!(e.error.caret_message("--filter", &texts[e.filter]))
    };
    use dcg_live::options::Engine;
    let member = opts.filters.iter().flat_map(|f| f.paths()).next();
    if !opts.other_engines.is_empty() && !opts.is_joint() {
        anyhow::bail!(
            "--engine is given once per side, in a session tracing user and kernel functions \
             together"
        );
    }
    match (opts.is_user_space(), opts.engine) {
        _ if opts.is_joint() => {}
        _ if opts.kernel.is_some() => anyhow::bail!(
            "--kernel puts kernel calls under traced user functions: name them with --func \
             PATH:PATTERN"
        ),
        (true, Engine::Fgraph | Engine::Bpf) => anyhow::bail!(
            "--engine fgraph and bpf trace kernel functions; user space (PATH:PATTERN) takes \
             inproc or uprobe"
        ),
        (true, _) if opts.comm.is_some() || opts.cgroup.is_some() => anyhow::bail!(
            "--comm and --cgroup select kernel tasks; user space traces the command or -p PID"
        ),
        // Refused before any db is looked up (the kernel plan refuses them too).
        (false, Engine::Fgraph) if member.is_some() => {
            let path = member.unwrap_or_default().to_string();
            return Err(dcg_ktrace::KtraceError::FilterMembersNeedBpf(path).into());
        }
        (false, Engine::Inproc | Engine::Uprobe) => anyhow::bail!(
            "--engine inproc and uprobe trace user-space functions (PATH:PATTERN); the kernel \
             takes fgraph or bpf"
        ),
        _ => {}
    }
    let sources = crate::db_sources(offline);
    let (code, calls) = if opts.is_joint() {
        crate::trace_joint::run(&opts, tuning, &sources, out).map_err(|e| {
            match e.downcast_ref::<dcg_utrace::UtraceError>() {
                Some(dcg_utrace::UtraceError::Filter(s)) => refused(s),
                _ => e,
            }
        })?
    } else if opts.is_user_space() {
        let f = dcg_utrace::run(&opts, &sources, out, &mut |n| {
            eprintln!("dcg: {}", notices::user(&n))
        })
        .map_err(|e| match &e {
            dcg_utrace::UtraceError::Filter(s) => refused(s),
            _ => e.into(),
        })?;
        (ExitCode::from(f.exit), f.calls)
    } else {
        kernel(&opts, tuning, &sources, out).map_err(|e| {
            match e.downcast_ref::<dcg_ktrace::KtraceError>() {
                Some(dcg_ktrace::KtraceError::Filter(s)) => refused(s),
                _ => e,
            }
        })?
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
    tuning: dcg_ktrace::Tuning,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
) -> anyhow::Result<(ExitCode, Option<Vec<CallRecord>>)> {
    let mut steps = crate::progress::Steps::on_stderr();
    let outcome = dcg_ktrace::run(opts, tuning, sources, out, &mut |n| match n {
        Notice::Progress(p) => steps.show(&p),
        n => steps.println(&format!("dcg: {}", notices::kernel(&n))),
    })?;
    drop(steps);
    match outcome {
        Outcome::NothingToTrace => Ok((ExitCode::from(2), None)),
        Outcome::Traced(mut s) => {
            for line in notices::summary(&s) {
                eprintln!("{line}");
            }
            Ok((ExitCode::SUCCESS, s.calls.take()))
        }
    }
}
