//! `dwarfscan [OPTIONS] <INPUT>... -o <OUT>`: DWARF function signatures → sigdb.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Parser;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long mimalloc keeps freed memory before returning it to the kernel, in ms. Its
/// default (1 s in mimalloc 3) holds on to about a second's worth of freed unit results
/// and relocated section copies: 30-50 MB more peak resident set on a whole-kernel scan,
/// up to 300 MB on the whole Debian 7.2 kernel (and the reason its peak varies by ±40 MB
/// from run to run). Returning it sooner costs the page faults (and zeroing) of taking it
/// back: with huge pages off, 300 ms keeps that peak at 250-276 MB for 0.1-0.3 s more
/// system time than 1 s; 10 ms cost about 1 s (`BENCHMARKS.md`, "Scan speed").
const PURGE_DELAY_MS: std::ffi::c_long = 300;

extern "C" {
    // mimalloc's own API (`mimalloc.h`), linked in by the `mimalloc` crate.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    #[cfg(test)]
    fn mi_version() -> std::ffi::c_int;
}

/// `mi_option_purge_delay` in `mimalloc.h` (the same value in mimalloc 2 and 3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
/// `mi_option_allow_thp` in mimalloc 3's `mimalloc.h`.
const MI_OPTION_ALLOW_THP: std::ffi::c_int = 43;

/// Set mimalloc's purge delay and turn transparent huge pages off, unless
/// `MIMALLOC_PURGE_DELAY` or `MIMALLOC_ALLOW_THP` ask otherwise. With huge pages, every
/// 2 MiB mimalloc takes back after a purge is faulted in and zeroed whole, and partly
/// used huge pages count in full in the resident set: without them the scan of a
/// kernel takes less system time and less memory (`BENCHMARKS.md`, "Scan speed").
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: a plain FFI call on an option index `mimalloc.h` defines, made first
        // thing in `main`, before any other thread exists (`mi_option_set` is not thread
        // safe).
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: as above, before any other thread exists.
        unsafe { mi_option_set(MI_OPTION_ALLOW_THP, 0) };
        // What mimalloc does at start-up when the option is 0 (it has started already):
        // huge pages off for the whole process, the memory it has reserved included.
        // SAFETY: `prctl(PR_SET_THP_DISABLE)` takes integers only; it reads and writes no
        // memory of ours.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
}

/// mimalloc's current value of `option`.
#[cfg(test)]
fn option(option: std::ffi::c_int) -> std::ffi::c_long {
    // SAFETY: a plain FFI call reading an option.
    unsafe { mi_option_get(option) }
}

/// Extract every function signature from ELF/DWARF into a dcg signature database.
#[derive(Parser, Debug)]
#[command(
    name = "dwarfscan",
    version,
    about,
    after_help = dcg_clidoc::help_text(EXAMPLES)
)]
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

const EXAMPLES: &[dcg_clidoc::Example] = &[
    dcg_clidoc::Example {
        what: "A program's functions into a db",
        cmd: "dwarfscan ./prog -o prog.db",
    },
    dcg_clidoc::Example {
        what: "A kernel and its modules, with the module that carries the db",
        cmd: "dwarfscan vmlinux /lib/modules/$(uname -r)/kernel -o vmlinux.db --emit-module dcg-module",
    },
    dcg_clidoc::Example {
        what: "libc from its debug file, counters and timings on stderr",
        cmd: "dwarfscan --stats /usr/lib/debug/.build-id/ab/cdef0123.debug -o libc.db",
    },
];

fn main() {
    tune_allocator();
    // `dwarfscan --generate-docs DIR` (hidden; the arguments above require inputs): the
    // man page and shell completions generated from these definitions, into DIR.
    let argv: Vec<_> = std::env::args_os().skip(1).collect();
    if let [flag, dir] = &argv[..] {
        if flag == "--generate-docs" {
            generate_docs(Path::new(dir));
            return;
        }
    }
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("dwarfscan: {e}");
        std::process::exit(1);
    }
}

/// Write the man page and completions into `dir`, naming each file written.
fn generate_docs(dir: &Path) {
    let cmd = <Args as clap::CommandFactory>::command();
    match dcg_clidoc::write_docs(cmd, |_| EXAMPLES, dir) {
        Ok(files) => files.iter().for_each(|f| println!("{}", f.display())),
        Err(e) => {
            eprintln!("dwarfscan: {}: {e}", dir.display());
            std::process::exit(1);
        }
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
    // The builder is done with. It is not freed allocation by allocation (tens of
    // milliseconds): the command ends soon, which returns its memory at once.
    let stats = result.stats;
    std::mem::forget(result.builder);
    // Every output is written (and synced) before the first is put in place: a failure
    // leaves all of them as they were. The db goes in place last.
    let (db_out, modules_only, sections) = stage_db(&args.output, &bytes)?;
    if modules_only && args.base_build_id.is_none() && args.base.is_none() {
        eprintln!(
            "dwarfscan: warning: a db of kernel modules alone is keyed to its kernel's build-id; \
             pass --base VMLINUX or --base-build-id HEX so `dcg load` can match it"
        );
    }
    let object = match &args.emit_object {
        Some(path) => {
            let mut out = dcg_outfile::Output::create(path)?;
            out.write_all(&loader::emit_object(&bytes)?)
                .map_err(|e| dcg_outfile::into_error(path, e))?;
            out.sync()?;
            Some(out)
        }
        None => None,
    };
    let module = match &args.emit_module {
        Some(dir) => Some(loader::module::stage_module_dir(dir, &bytes)?),
        None => None,
    };
    if let Some(m) = module {
        m.commit()?;
    }
    if let Some(o) = object {
        o.commit()?;
    }
    db_out.commit()?;
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

/// The db sections and their sizes, as `--stats` prints them.
type Sections = Vec<(&'static str, usize)>;

/// Write the db to `path`, checked while it is written (opening it validates every
/// record read in place, `Db::verify` decompresses and checks every frame and block and
/// every struct's members): a db that fails the check
/// is never put in place. Returns the output to commit, whether the
/// db holds kernel modules alone, and its sections. An output written in place (a
/// device, a FIFO) gets the db only once it passed.
fn stage_db(path: &Path, bytes: &[u8]) -> anyhow::Result<(dcg_outfile::Output, bool, Sections)> {
    let check = || -> Result<(bool, Sections), sigdb::Error> {
        let db = sigdb::Db::from_bytes(bytes.to_vec())?;
        db.verify()?;
        let sections = db.section_sizes().collect();
        Ok((db.flags().contains(sigdb::DbFlags::MODULES_ONLY), sections))
    };
    let mut out = dcg_outfile::Output::create(path)?;
    let write = |out: &mut dcg_outfile::Output| {
        out.write_all(bytes)
            .map_err(|e| dcg_outfile::into_error(path, e))?;
        out.sync()
    };
    let (modules_only, sections) = if out.replaces() {
        let (checked, written) = std::thread::scope(|s| {
            let checker = s.spawn(check);
            let written = write(&mut out);
            (checker.join(), written)
        });
        let checked = checked.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        written?;
        checked?
    } else {
        let checked = check()?;
        write(&mut out)?;
        checked
    };
    Ok((out, modules_only, sections))
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
    fn allocator_is_tuned() {
        use super::{option, MI_OPTION_ALLOW_THP, MI_OPTION_PURGE_DELAY};
        // The option indices are mimalloc 3's.
        // SAFETY: a plain FFI call.
        let version = unsafe { super::mi_version() };
        assert!(
            (30000..40000).contains(&version),
            "mimalloc version {version}"
        );
        let delay_set = std::env::var_os("MIMALLOC_PURGE_DELAY").is_some();
        let thp_set = std::env::var_os("MIMALLOC_ALLOW_THP").is_some();
        if !delay_set {
            assert_eq!(option(MI_OPTION_PURGE_DELAY), 1000, "mimalloc 3's default");
        }
        if !thp_set {
            assert_eq!(option(MI_OPTION_ALLOW_THP), 1, "mimalloc 3's default");
        }
        super::tune_allocator();
        if !delay_set {
            assert_eq!(option(MI_OPTION_PURGE_DELAY), super::PURGE_DELAY_MS);
        }
        if !thp_set {
            assert_eq!(option(MI_OPTION_ALLOW_THP), 0);
        }
    }
}
