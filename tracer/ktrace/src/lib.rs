//! Live kernel tracing: `dcg trace --func PATTERN [--show-retvals] [--args] ...`.
//!
//! function_graph in a private instance (`instances/dcg-<pid>`), graph roots multiplexed
//! through the shared top-level `set_graph_function` ([`dcg_live::graphfilter`]), the stream
//! cut to this session's trees ([`tree::TreeFilter`]) and decoded by type
//! ([`dcg_calls::decode::Decoder`]). Kernels without `funcgraph-retval` / `funcgraph-args` get
//! values from exit / entry probe events ([`probes`]) joined to the calls. The design and
//! its limits are described in `tracer/KTRACE.md`.

pub mod callees;
pub mod funcs;
pub mod probes;
pub mod tree;

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::signal::Signal;

use dcg_calls::decode::{Decoder, Options};
use dcg_calls::output::OutputFile;
use dcg_dbset::DbSet;
use dcg_live::graphfilter::{Registration, Registry};
use dcg_live::options::TraceOptions;
use dcg_live::process::Child;
use dcg_live::tracefs::{self, Session};

use funcs::Available;
use probes::Probes;
use tree::{Feedback, TreeFilter};

/// Most probes one session creates.
pub const PROBE_CAP: usize = 500;
/// Levels of static callee discovery below the roots when `--depth` is not given.
const STATIC_DEPTH: u32 = 2;
/// Most functions given lazy probes per read of the pipe.
const LAZY_PER_ROUND: usize = 8;
/// Longest drain of the pipe after the command exited.
const DRAIN_MAX: Duration = Duration::from_secs(3);

/// `DCG_KTRACE_DEBUG=1`: progress with timestamps on stderr.
pub(crate) fn debug(msg: std::fmt::Arguments<'_>) {
    use std::sync::OnceLock;
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    let start = START.get_or_init(|| {
        std::env::var_os("DCG_KTRACE_DEBUG")
            .is_some_and(|v| v == "1")
            .then(Instant::now)
    });
    if let Some(t) = start {
        eprintln!("dcg debug {:8.3}: {msg}", t.elapsed().as_secs_f64());
    }
}

/// What the kernel's tracefs offers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    /// `options/funcgraph-retval`.
    pub retval: bool,
    /// `options/funcgraph-retaddr`.
    pub retaddr: bool,
    /// `options/funcgraph-args`.
    pub args: bool,
}

impl Features {
    /// Detect from the instance's option files.
    /// `DCG_KTRACE_PROBES=1` pretends the kernel lacks `funcgraph-retval` and
    /// `funcgraph-args`, to exercise the probe path on any kernel (tests).
    pub fn detect(s: &Session) -> Features {
        if std::env::var_os("DCG_KTRACE_PROBES").is_some_and(|v| v == "1") {
            return Features::default();
        }
        Features {
            retval: s.has("options/funcgraph-retval"),
            retaddr: s.has("options/funcgraph-retaddr"),
            args: s.has("options/funcgraph-args"),
        }
    }
}

/// Expand `--func` patterns against the traceable functions; explain every pattern that
/// matches nothing.
fn resolve_roots(
    patterns: &[String],
    avail: &Available,
    set: &DbSet,
) -> std::result::Result<Vec<String>, Vec<String>> {
    let mut roots = Vec::new();
    let mut errors = Vec::new();
    for p in patterns {
        let m = avail.matching(p);
        if m.is_empty() {
            errors.push(funcs::explain(p, set, avail));
        }
        for f in m {
            if !roots.contains(&f) {
                roots.push(f);
            }
        }
    }
    if errors.is_empty() {
        Ok(roots)
    } else {
        Err(errors)
    }
}

fn opt(sess: &Session, name: &str, on: bool) -> Result<()> {
    let rel = format!("options/{name}");
    if sess.has(&rel) {
        sess.write(&rel, if on { "1" } else { "0" })?;
    }
    Ok(())
}

/// Run `dcg trace` on the kernel. Returns the exit code (2: no traceable function).
pub fn run(args: &TraceOptions, out: &mut dyn Write) -> Result<ExitCode> {
    // A stop signal before tracefs is touched ends dcg at once (see tracefs).
    tracefs::install_stop_handlers();
    if let Some(f) = args
        .func
        .iter()
        .find(|f| dcg_live::options::split_user_func(f).is_some())
    {
        bail!("{f}: user-space and kernel functions cannot be traced in one session");
    }
    let set = DbSet::resolve(&args.db)?;
    let root = tracefs::mount_point()?;
    // Catch signals before touching tracefs, so an interrupt cannot cut a stale-session
    // removal in half; the loop acts on the stop request once tracing runs.
    tracefs::arm_stop_handlers();
    for r in tracefs::remove_stale(&root) {
        eprintln!("dcg: removed stale {r}");
    }
    let avail = Available::read(&root).context("reading available_filter_functions")?;
    let roots = match resolve_roots(&args.func, &avail, &set) {
        Ok(r) => r,
        Err(errors) => {
            for e in errors {
                eprintln!("dcg: {e}");
            }
            return Ok(ExitCode::from(2));
        }
    };
    if let Some(pid) = args.pid {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            bail!("no process {pid}");
        }
    }

    // Declared before the session so that it is dropped after it: the instance goes
    // first, then the graph functions are given back.
    let mut registration: Option<Registration> = None;
    let mut sess = Session::create(&root)?;
    let feat = Features::detect(&sess);
    let mut child = if args.command.is_empty() {
        None
    } else {
        Some(Child::spawn_stopped(&args.command)?)
    };
    let target = child.as_ref().map(|c| c.pid()).or(args.pid);

    // Instance setup: output columns, values the kernel can print itself, pid filter.
    opt(&sess, "funcgraph-irqs", false)?;
    opt(&sess, "funcgraph-proc", true)?;
    opt(&sess, "funcgraph-tail", false)?;
    let kernel_retvals = args.show_retvals && feat.retval;
    opt(&sess, "funcgraph-retval", kernel_retvals)?;
    opt(&sess, "funcgraph-retaddr", kernel_retvals && feat.retaddr)?;
    let kernel_args = args.args && feat.args;
    opt(&sess, "funcgraph-args", kernel_args)?;
    let _ = sess.write("buffer_size_kb", "4096");
    if let Some(pid) = target {
        sess.write("set_ftrace_pid", &pid.to_string())?;
        opt(&sess, "function-fork", true)?;
        if sess.has("set_event_pid") {
            sess.write("set_event_pid", &pid.to_string())?;
            opt(&sess, "event-fork", true)?;
        }
    }
    // Never dcg itself (reading the pipe would trace itself).
    let me = std::process::id().to_string();
    if sess.has("set_ftrace_notrace_pid") {
        let _ = sess.write("set_ftrace_notrace_pid", &me);
    }
    if sess.has("set_event_notrace_pid") {
        let _ = sess.write("set_event_notrace_pid", &me);
    }

    debug(format_args!("instance set up, features {feat:?}"));
    let mut filter = TreeFilter::new(roots.iter().cloned(), args.depth);
    let mut probes = Probes::new(PROBE_CAP);
    let want_exit = args.show_retvals && !feat.retval;
    let want_entry = args.args && !feat.args;
    // Callees this many levels below a root get probes (static discovery and lazily).
    let lazy_depth = match args.depth {
        0 => STATIC_DEPTH,
        d => (d - 1).min(STATIC_DEPTH + 1),
    };
    if want_exit || want_entry {
        let mut funcs: Vec<String> = roots.clone();
        let static_depth = lazy_depth;
        if static_depth > 0 {
            if let Some(kt) = callees::KernelText::open() {
                // Void callees only matter for their arguments.
                let keep =
                    |n: &str| avail.contains(n) && (want_entry || !funcs::returns_void(&set, n));
                funcs.extend(kt.closure(&roots, static_depth, PROBE_CAP, &keep));
            }
        }
        debug(format_args!("{} functions to probe", funcs.len()));
        for f in &funcs {
            if want_exit {
                if let Some(ev) = probes.add_exit(&mut sess, &set, &avail, f) {
                    filter.add_event(&ev);
                }
            }
            if want_entry {
                if let Some(ev) = probes.add_entry(&mut sess, &set, &avail, f) {
                    filter.add_event(&ev);
                }
            }
        }
        for r in &roots {
            if want_exit && !probes.has_exit(r) && !funcs::returns_void(&set, r) {
                let why = probes
                    .failed
                    .iter()
                    .find(|(f, _)| f == r)
                    .map_or("unknown reason".to_string(), |(_, e)| e.clone());
                eprintln!("dcg: no exit probe for {r}: {why}");
            }
        }
    }

    let _ = registration.replace(
        Registry::system(&root)
            .register(std::process::id(), &roots)
            .context("registering graph functions")?,
    );
    debug(format_args!(
        "{} probes; graph functions registered",
        probes.len()
    ));
    sess.write("current_tracer", "function_graph")?;
    debug(format_args!("function_graph on"));
    sess.write("tracing_on", "1")?;
    let mut pipe = sess.open_pipe()?;

    let color = args.color;
    let mut dec = Decoder::new(
        &set,
        Options {
            json: args.json,
            errors_only: args.errors_only,
            color,
            hide_probe_events: true,
            collapse_empty: true,
        },
    );
    let saved = match &args.output {
        Some(path) => {
            let file = OutputFile::create(path)?;
            dec.save_records(
                Box::new(std::io::BufWriter::new(file.file()?)),
                &format!("dcg trace --func {}", args.func.join(" --func ")),
            )?;
            Some(file)
        }
        None => None,
    };
    let what = match (&child, args.pid) {
        (Some(c), _) => format!("command pid {}", c.pid()),
        (None, Some(p)) => format!("pid {p}"),
        (None, None) => "all tasks".to_string(),
    };
    eprintln!(
        "dcg: tracing {} function{} ({what}){}; Ctrl-C to stop",
        roots.len(),
        if roots.len() == 1 { "" } else { "s" },
        if probes.is_empty() {
            String::new()
        } else {
            format!(", {} probes", probes.len())
        }
    );
    if let Some(c) = child.as_mut() {
        c.resume()?;
    }

    // The trace loop.
    let start = Instant::now();
    let deadline = args
        .duration
        .map(|s| start + Duration::from_secs_f64(s.max(0.0)));
    let mut lines = Vec::new();
    let mut completed = 0u64;
    let mut lost_total: u64 = 0;
    let mut lost_unknown = false;
    let mut drain_until: Option<Instant> = None;
    let mut drain_end: Option<Instant> = None;
    let stop_reason = loop {
        if let Some(sig) = tracefs::stop_requested() {
            break format!("signal {sig}");
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break "duration reached".into();
        }
        if drain_until.is_none() {
            if let Some(c) = child.as_mut() {
                if c.poll().is_some() {
                    drain_until = Some(Instant::now() + Duration::from_millis(700));
                    drain_end = Some(Instant::now() + DRAIN_MAX);
                }
            }
        }
        if drain_end.is_some_and(|d| Instant::now() >= d) {
            break "command exited".into();
        }
        lines.clear();
        // No poll: a waiting reader makes the ring buffer raise an irq_work per event,
        // which function_graph records inside the traced calls.
        pipe.read_available(&mut lines)?;
        if lines.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(d) = drain_until {
            if lines.is_empty() && Instant::now() >= d {
                break "command exited".into();
            }
            if !lines.is_empty() {
                drain_until = Some(Instant::now() + Duration::from_millis(400));
            }
        }
        if !lines.is_empty() {
            debug(format_args!("{} lines, first: {}", lines.len(), lines[0]));
        }
        let mut fb = Feedback::default();
        let mut done = false;
        for l in &lines {
            filter.feed(l, &mut dec, &mut fb)?;
            if let Some(n) = args.count {
                if completed + fb.completed >= n {
                    done = true;
                    break;
                }
            }
        }
        dec.flush_out(out)?;
        completed += fb.completed;
        out.flush()?;
        for n in fb.lost {
            match n {
                Some(n) => lost_total += n,
                None => lost_unknown = true,
            }
        }
        if want_exit || want_entry {
            // Lazy probes for callees seen in the stream, as deep as static discovery
            // goes, a few per round: each registration takes ~0.1 s under TCG, and the
            // pipe must keep being read.
            let mut budget = LAZY_PER_ROUND;
            for (f, rel) in fb.seen {
                if rel > lazy_depth || budget == 0 {
                    continue;
                }
                let before = probes.len();
                if want_exit {
                    if let Some(ev) = probes.add_exit(&mut sess, &set, &avail, &f) {
                        filter.add_event(&ev);
                    }
                }
                if want_entry {
                    if let Some(ev) = probes.add_entry(&mut sess, &set, &avail, &f) {
                        filter.add_event(&ev);
                    }
                }
                if probes.len() > before {
                    budget -= 1;
                }
            }
        }
        if done {
            break format!("{completed} calls");
        }
    };
    debug(format_args!("loop ended: {stop_reason}"));
    let _ = sess.write("tracing_on", "0");
    dec.finish(out)?;
    out.flush()?;
    if let Some(c) = child.as_mut() {
        c.terminate(Signal::SIGTERM);
    }

    // Lost events and overruns: from the stream and from the per-CPU stats.
    let (overrun, dropped) = buffer_stats(&sess);
    if lost_total > 0 || lost_unknown || overrun > 0 || dropped > 0 {
        eprintln!(
            "dcg: warning: events were lost: {lost_total}{} reported in the stream, \
             {overrun} overrun, {dropped} dropped (the output misses calls; trace fewer \
             functions or use --depth)",
            if lost_unknown { "+" } else { "" }
        );
    }
    let unjoined: Vec<(String, u64)> = dec
        .valueless()
        .into_iter()
        .filter(|(f, _)| !funcs::returns_void(&set, f))
        .collect();
    let missing: u64 = unjoined.iter().map(|(_, n)| n).sum();
    if want_exit && missing > 0 {
        let v = &unjoined;
        let list: Vec<String> = v
            .iter()
            .take(8)
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        eprintln!(
            "dcg: {missing} calls returned before their exit probe existed or without one, \
             value unknown: {}{}",
            list.join(", "),
            if v.len() > 8 { ", ..." } else { "" }
        );
    }
    if probes.capped > 0 {
        eprintln!(
            "dcg: probe limit {PROBE_CAP} reached: {} more functions got no probe",
            probes.capped
        );
    }
    if !probes.failed.is_empty() {
        let names: Vec<&str> = probes
            .failed
            .iter()
            .take(8)
            .map(|(f, _)| f.as_str())
            .collect();
        eprintln!(
            "dcg: {} probes could not be created ({}{}); first error: {}",
            probes.failed.len(),
            names.join(", "),
            if probes.failed.len() > 8 { ", ..." } else { "" },
            probes.failed[0].1
        );
    }
    if let Some(summary) = dec.summary() {
        eprintln!("{summary}");
    }
    drop(dec);
    if let Some(file) = saved {
        file.commit()?;
    }

    // Cleanup: the pipe, the instance and the probes, then the graph functions.
    drop(pipe);
    debug(format_args!("closing the session"));
    for f in sess.close() {
        eprintln!("dcg: cleanup: {f}");
    }
    debug(format_args!("session closed"));
    if let Some(mut r) = registration.take() {
        r.unregister().context("restoring set_graph_function")?;
    }
    eprintln!(
        "dcg: stopped ({stop_reason}), {completed} calls{}",
        if probes.is_empty() {
            String::new()
        } else {
            format!(", {} probes", probes.len())
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// Sum of `overrun` and `dropped events` over the instance's CPUs.
fn buffer_stats(sess: &Session) -> (u64, u64) {
    let (mut overrun, mut dropped) = (0, 0);
    let Ok(rd) = std::fs::read_dir(sess.file("per_cpu")) else {
        return (0, 0);
    };
    for e in rd.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("stats")) else {
            continue;
        };
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v: u64 = v.trim().parse().unwrap_or(0);
            match k.trim() {
                "overrun" => overrun += v,
                "dropped events" => dropped += v,
                _ => {}
            }
        }
    }
    (overrun, dropped)
}
