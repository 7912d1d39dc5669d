//! `dcg trace` with user and kernel patterns together (issue 42): the user side traces
//! the command in process (or with uprobes), the kernel side (the BPF engine or
//! function_graph, limited to the command's process) records beside it, and the kernel
//! calls each thread made are joined into its user tree.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use dcg_calls::saved_format::CallRecord;
use dcg_ktrace::joint::KernelHalf;
use dcg_live::options::{Engine, TraceOptions};

use crate::trace_notices as notices;

/// The kernel half as the user engine drives it.
struct Side<'h>(&'h mut KernelHalf);

impl dcg_utrace::KernelSide for Side<'_> {
    fn attach(&mut self, pid: i32) -> Result<(), String> {
        self.0.attach(pid)?;
        // What the kernel side traces, said when it starts (a process given with -p runs
        // on: the user waits for this line).
        for n in self.0.take_notices() {
            eprintln!("dcg: {}", notices::kernel(&n));
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Vec<CallRecord>, String> {
        self.0.finish()
    }
}

/// Run the session; the exit code and the calls when collected for a report.
pub fn run(
    opts: &TraceOptions,
    tuning: dcg_ktrace::Tuning,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
) -> anyhow::Result<(ExitCode, Option<Vec<CallRecord>>)> {
    let (user, kernel) = split(opts)?;
    let note_user = &mut |n: dcg_utrace::Notice| eprintln!("dcg: {}", notices::user(&n));
    let set = match dcg_dbresolve::resolve(&kernel.db, sources) {
        Ok(set) => set,
        Err(e) => {
            // The user side alone, said in one line.
            let why = e.to_string();
            let first = why.lines().next().unwrap_or_default();
            let why = first.split("; create").next().unwrap_or(first).to_string();
            note_user(dcg_utrace::Notice::NoKernelSide(why));
            let f = dcg_utrace::run(&user, sources, out, note_user)?;
            return Ok((ExitCode::from(f.exit), f.calls));
        }
    };
    if let Some(note) = set.fetched() {
        eprintln!(
            "dcg: {}",
            notices::kernel(&dcg_ktrace::Notice::DbFetched(note.clone()))
        );
    }
    let mut half = KernelHalf::new(kernel, tuning, set);
    let dbs = half.dbs();
    let mut side = Side(&mut half);
    let joint = dcg_utrace::Joint {
        dbs: &dbs,
        side: &mut side,
    };
    let finished = dcg_utrace::run_joint(&user, sources, out, note_user, Some(joint));
    for n in half.take_notices() {
        eprintln!("dcg: {}", notices::kernel(&n));
    }
    let f = finished?;
    Ok((ExitCode::from(f.exit), f.calls))
}

/// The options of each side: the user patterns and every option for the user side; the
/// kernel patterns, the values asked and the kernel's dbs for the kernel side. A `--db`
/// goes to the side its db describes.
fn split(opts: &TraceOptions) -> anyhow::Result<(TraceOptions, TraceOptions)> {
    let engines: Vec<Engine> = std::iter::once(opts.engine)
        .chain(opts.other_engines.iter().copied())
        .filter(|&e| e != Engine::Auto)
        .collect();
    let (user_engines, kernel_engines): (Vec<Engine>, Vec<Engine>) =
        engines.iter().partition(|e| e.is_user());
    if user_engines.len() > 1 || kernel_engines.len() > 1 {
        anyhow::bail!("--engine is given once per side (a user and a kernel engine)");
    }
    let (mut user_db, mut kernel_db): (Vec<PathBuf>, Vec<PathBuf>) = Default::default();
    for path in &opts.db {
        let db = sigdb::Db::open(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let kernel = db.modules().any(|m| {
            matches!(
                m.kind(),
                sigdb::ModuleKind::Kernel | sigdb::ModuleKind::KernelModule
            )
        });
        if kernel {
            kernel_db.push(path.clone());
        } else {
            user_db.push(path.clone());
        }
    }
    let is_user = |f: &&String| dcg_live::options::split_user_func(f).is_some();
    let mut user = opts.clone();
    user.func = opts.func.iter().filter(is_user).cloned().collect();
    user.db = user_db;
    user.engine = user_engines.first().copied().unwrap_or(Engine::Auto);
    user.other_engines.clear();
    let kernel = TraceOptions {
        engine: kernel_engines.first().copied().unwrap_or(Engine::Auto),
        func: opts.kernel_patterns(),
        depth: opts.kernel_depth,
        show_retvals: opts.show_retvals,
        args: opts.args,
        errno: opts.errno,
        db: kernel_db,
        no_inline_frames: opts.no_inline_frames,
        offline: opts.offline,
        hide_irqs: opts.hide_irqs,
        notrace: opts.notrace.clone(),
        // The kernel's calls are joined into the user trees when the command ends: its
        // records are only copied while the command runs, and decoded then.
        output: dcg_live::options::OutputRequest {
            shown_at_end: true,
            ..Default::default()
        },
        ..TraceOptions::default()
    };
    Ok((user, kernel))
}
