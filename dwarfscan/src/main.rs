//! `dwarfscan [OPTIONS] <INPUT>... -o <OUT>`: DWARF function signatures → sigdb.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Extract every function signature from ELF/DWARF into a dcg signature database.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// vmlinux, executables, shared libraries, objects, kernel modules
    /// (.ko, .ko.xz, .ko.zst, .ko.gz) or directories of modules.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output database.
    #[arg(short, long)]
    output: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// Print counters and timings to stderr.
    #[arg(long)]
    stats: bool,
    /// No progress bar.
    #[arg(short, long)]
    quiet: bool,
    /// Keep only inline edges whose callee has no out-of-line copy.
    #[arg(long)]
    inline_only_edges: bool,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("dwarfscan: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(j) = args.jobs {
        rayon::ThreadPoolBuilder::new()
            .num_threads(j.max(1))
            .build_global()?;
    }
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} compilation units",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar
    });
    let mut opts = dwarfscan::Options {
        inline_only_edges: args.inline_only_edges,
        ..Default::default()
    };
    if let Some(bar) = &bar {
        let bar = bar.clone();
        opts.progress = Some(Arc::new(move |p| match p {
            dwarfscan::Progress::UnitsQueued(n) => bar.inc_length(n),
            dwarfscan::Progress::UnitsDone(n) => bar.inc(n),
        }));
    }
    let inputs: Vec<_> = args.inputs.iter().map(dwarfscan::Input::new).collect();
    let start = std::time::Instant::now();
    let mut result = dwarfscan::scan(&inputs, &opts)?;
    result.write(&args.output)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if args.stats {
        eprint!("{}", result.stats.report());
        eprintln!(
            "time total:           {:.3} s",
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
