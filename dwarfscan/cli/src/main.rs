//! `dwarfscan [OPTIONS] <INPUT>... -o <OUT>`: DWARF function signatures → sigdb.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long mimalloc keeps freed memory before returning it to the kernel, in ms. Its
/// default (1 s in mimalloc 3) holds on to about a second's worth of freed unit results
/// and relocated section copies: 60-100 MB of the resident set of a whole-kernel scan,
/// and the reason its peak varied by ±40 MB from run to run. 10 ms (mimalloc 2's
/// default) returns it at once, at no measurable cost in time.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

extern "C" {
    // mimalloc's own API (`mimalloc.h`), linked in by the `mimalloc` crate.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// `mi_option_purge_delay` in `mimalloc.h` (the same value in mimalloc 2 and 3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Set mimalloc's purge delay unless `MIMALLOC_PURGE_DELAY` asks for another one.
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: plain FFI calls on an option index `mimalloc.h` defines; called first
        // thing in `main`, before any other thread exists (`mi_option_set` is not
        // thread safe).
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// mimalloc's current purge delay (ms).
#[cfg(test)]
fn purge_delay() -> std::ffi::c_long {
    // SAFETY: a plain FFI call reading an option.
    unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }
}

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
    /// Leave out the inlined copies of functions (their code ranges, entry pc, call site
    /// and where their parameters are there): a smaller db, but inlined functions cannot
    /// be traced and trees show no inline frames.
    #[arg(long, conflicts_with_all = ["inline_instances", "all_inline_instances"])]
    no_inline_instances: bool,
    /// Record the inlined copies of header `inline` functions too (`test_bit`,
    /// `spin_lock`, `kmalloc`): about eight times as many copies in a kernel. By default
    /// only the copies of functions worth tracing are recorded: those not declared
    /// `inline` in a header file.
    #[arg(long)]
    all_inline_instances: bool,
    /// Record the inlined copies of functions worth tracing (the default; kept for
    /// scripts).
    #[arg(long, hide = true)]
    inline_instances: bool,
    /// Also write an ELF relocatable object carrying the db in section `.dcg_sigdb`
    /// (symbols `dcg_sigdb_start`/`dcg_sigdb_end`), to link into a module or program.
    #[arg(long, value_name = "FILE")]
    emit_object: Option<PathBuf>,
    /// Also write a Kbuild module directory: `dcg_sigdb.ko` (`make -C KDIR M=DIR`) carries
    /// the db and exposes it as /sys/kernel/dcg/vmlinux (`modules` for a db of kernel
    /// modules alone); insert it with `dcg load DIR/dcg_sigdb.ko`.
    #[arg(long, value_name = "DIR")]
    emit_module: Option<PathBuf>,
    /// For a db of kernel modules alone: the build-id of the kernel they belong to (hex).
    #[arg(long, value_name = "HEX", conflicts_with = "base")]
    base_build_id: Option<String>,
    /// For a db of kernel modules alone: the kernel's vmlinux (or its db), whose
    /// build-id keys this db.
    #[arg(long, value_name = "FILE")]
    base: Option<PathBuf>,
}

fn main() {
    tune_allocator();
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
        inline_instances: if args.no_inline_instances {
            dwarfscan::InlineInstances::None
        } else if args.all_inline_instances {
            dwarfscan::InlineInstances::All
        } else {
            dwarfscan::InlineInstances::Traceable
        },
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
    let base = match (&args.base_build_id, &args.base) {
        (Some(hex), _) => Some(loader::parse_build_id(hex)?),
        (None, Some(file)) => Some(base_build_id(file)?),
        (None, None) => None,
    };
    if let Some(id) = base {
        result.builder.set_build_id(&id);
    }
    let bytes = result.to_bytes()?;
    // The builder is done with: its memory is returned before the db is checked.
    let stats = result.stats;
    drop(result.builder);
    let (modules_only, sections) = {
        let db = sigdb::Db::from_bytes(bytes.clone())?;
        db.check_frames()?;
        let sections: Vec<(&str, usize)> = db.section_sizes().collect();
        (db.flags().contains(sigdb::DbFlags::MODULES_ONLY), sections)
    };
    if modules_only && args.base_build_id.is_none() && args.base.is_none() {
        eprintln!(
            "dwarfscan: warning: a db of kernel modules alone is keyed to its kernel's build-id; \
             pass --base VMLINUX or --base-build-id HEX so `dcg load` can match it"
        );
    }
    sigdb::write_atomic(&args.output, &bytes)?;
    if let Some(obj) = &args.emit_object {
        loader::write_object(obj, &bytes)?;
    }
    if let Some(dir) = &args.emit_module {
        loader::module::write_module_dir(dir, &bytes)?;
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if args.stats {
        eprint!("{}", stats.report());
        eprintln!("db sections (bytes):");
        for (name, len) in sections.into_iter().filter(|&(_, len)| len > 0) {
            eprintln!("  {name:<20}{len:>10}");
        }
        eprintln!(
            "time total:           {:.3} s",
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The build-id of a vmlinux (GNU build-id note) or of a sigdb (its header).
fn base_build_id(file: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    if let Ok(db) = sigdb::Db::open(file) {
        return Ok(db.build_id().to_vec());
    }
    Ok(loader::binary::build_id_of(file)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn purge_delay_is_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // Index 15 is the purge delay: its default is mimalloc 3's (1 s) or 2's (10 ms).
        let before = super::purge_delay();
        assert!(before == 1000 || before == 10, "option 15 is {before}");
        super::tune_allocator();
        assert_eq!(super::purge_delay(), super::PURGE_DELAY_MS);
    }
}
