//! `dcg`: typed function tracing for Linux. A thin command line over the `tracer` and
//! `loader` libraries.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use dcg_dbresolve::DbSources;
use dcg_dbset::DbSet;
use dcg_render::describe;

mod args;
mod decode;
mod examples;
mod logger;
mod progress;
mod report;
mod trace;
mod trace_args;
mod trace_joint;
mod trace_notices;

use args::{ColorChoice, DecodeArgs, ReportArgs};
use trace_args::TraceArgs;

#[derive(Parser)]
#[command(
    name = "dcg",
    version,
    about = "Function tracing that speaks in types",
    after_help = examples::help("dcg")
)]
struct Cli {
    /// Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an
    /// empty DEBUGINFOD_URLS does the same).
    #[arg(long, global = true)]
    offline: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone, Default)]
struct DbArgs {
    /// Signature db (repeat for module dbs); default: /sys/kernel/dcg, else the store's db
    /// for the running kernel.
    #[arg(long = "db", value_name = "FILE")]
    db: Vec<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Print functions as C declarations with parameter locations, module, address, flags.
    #[command(after_help = examples::help("sig"))]
    Sig {
        #[command(flatten)]
        db: DbArgs,
        /// Function names or addresses (0x...).
        #[arg(required = true, value_name = "NAME|0xADDR")]
        what: Vec<String>,
    },
    /// Print every function of the db.
    #[command(after_help = examples::help("dump"))]
    Dump {
        #[command(flatten)]
        db: DbArgs,
        /// One JSON object per function per line (schema in README).
        #[arg(long)]
        json: bool,
    },
    /// Rewrite saved ftrace function_graph text with every value decoded by its type.
    #[command(after_help = examples::help("decode"))]
    Decode(DecodeArgs),
    /// Call graph report of saved calls or ftrace text: counts, times, errors, edges;
    /// as text, json, dot, folded stacks or Chrome trace JSON.
    #[command(after_help = examples::help("report"))]
    Report(ReportArgs),
    /// Trace functions live, every value decoded by its type (`--func PATH:PATTERN`:
    /// user-space functions with uprobes).
    #[command(after_help = examples::help("trace"))]
    Trace(Box<TraceArgs>),
    /// Validate a db and install it in the store, matched by build-id; or validate the db
    /// a kernel module (`dwarfscan --emit-module`) carries and insert the module.
    #[command(after_help = examples::help("load"))]
    Load {
        /// A sigdb file, an ELF file carrying a .dcg_sigdb section, or a dcg_sigdb .ko.
        #[arg(required_unless_present = "build_id")]
        file: Option<PathBuf>,
        /// Instead of a file: fetch the db of this build-id (a kernel's or a binary's)
        /// from the debuginfod servers of DEBUGINFOD_URLS (its .dcg_sigdb section, else a
        /// db built from its debug file) and install it.
        #[arg(long, value_name = "HEX", conflicts_with_all = ["file", "force", "kernel_build_id"])]
        build_id: Option<String>,
        /// Load a kernel db even if its build-id is not the running kernel's.
        #[arg(long)]
        force: bool,
        /// Check a kernel db against this build-id instead of the running kernel's.
        #[arg(long, value_name = "HEX")]
        kernel_build_id: Option<String>,
    },
    /// List the dbs of loaded modules (/sys/kernel/dcg) and of the store.
    #[command(after_help = examples::help("list"))]
    List,
    /// Remove the db module (no argument), store entries (a build-id), or both (`all`).
    #[command(after_help = examples::help("unload"))]
    Unload {
        /// A build-id (or unique prefix) in the store, or `all`; none: the dcg_sigdb module.
        which: Option<String>,
    },
    /// Write the man pages and shell completions generated from these definitions into
    /// DIR (`man/`, `completions/`): what `tracer/cli/doc/` holds and the package installs.
    #[command(hide = true)]
    GenerateDocs { dir: PathBuf },
}

fn main() -> ExitCode {
    logger::init();
    logger::progress_bars();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`dcg dump | head`) is not an error worth a message.
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("dcg: {}", one_line(&e));
            ExitCode::from(1)
        }
    }
}

/// Where the loader looks: the places `$DCG_STORE`, `$DCG_KERNEL_NOTES` and
/// `$DCG_SYSFS_DIR` name (the system's by default). The one reading of these variables.
fn places() -> loader::Places {
    loader::Places::from_vars(|v| std::env::var_os(v))
}

/// Where dbs come from besides `--db` files: [`places`], and debuginfod as the last
/// source (the client `DEBUGINFOD_URLS` and its companions configure; none `offline`).
pub(crate) fn db_sources(offline: bool) -> DbSources {
    let net = if offline {
        None
    } else {
        dcg_debuginfod::Client::configure(|v| std::env::var_os(v), Path::new("/etc"))
    };
    DbSources {
        places: places(),
        net,
    }
}

/// The one db resolver, with debuginfod as its last source (`DEBUGINFOD_URLS`; none
/// `offline`); says on stderr when the db came from there.
pub(crate) fn resolve_db(paths: &[PathBuf], offline: bool) -> Result<DbSet> {
    let set = dcg_dbresolve::resolve(paths, &db_sources(offline))?;
    if let Some(note) = set.fetched() {
        eprintln!("dcg: {}", trace_notices::db_note(note));
    }
    Ok(set)
}

fn run(cli: Cli) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match cli.command {
        Command::Sig { db, what } => sig(&db.db, &what, cli.offline, &mut out)?,
        Command::Dump { db, json } => {
            let set = resolve_db(&db.db, cli.offline)?;
            for d in set.dbs() {
                for f in d.functions() {
                    if json {
                        serde_json::to_writer(&mut out, &describe::function_json(f))?;
                        writeln!(out)?;
                    } else {
                        writeln!(out, "{}", describe::signature_line(f))?;
                    }
                }
            }
        }
        Command::Decode(args) => decode::run(&args, cli.offline, &mut out)?,
        Command::Trace(args) => {
            let code = trace::run(*args, cli.offline, &mut out)?;
            out.flush()?;
            return Ok(code);
        }
        Command::Report(args) => {
            report::run(&args, &mut out)?;
        }
        Command::Load {
            file,
            build_id,
            force,
            kernel_build_id,
        } => {
            return load(
                file,
                build_id,
                force,
                kernel_build_id,
                cli.offline,
                &mut out,
            )
        }
        Command::GenerateDocs { dir } => {
            let cmd = <Cli as clap::CommandFactory>::command();
            for file in dcg_clidoc::write_docs(cmd, examples::of, &dir)? {
                writeln!(out, "{}", file.display())?;
            }
        }
        Command::List => list(&mut out)?,
        Command::Unload { which } => unload(which, &mut out)?,
    }
    out.flush().context("writing output")?;
    Ok(ExitCode::SUCCESS)
}

/// The buffered standard output every command writes to.
type Out<'a> = BufWriter<std::io::StdoutLock<'a>>;

/// `dcg sig`: each function named (or at an address) as a C declaration.
fn sig(db: &[PathBuf], what: &[String], offline: bool, out: &mut Out<'_>) -> Result<()> {
    let set = resolve_db(db, offline)?;
    let mut missing = Vec::new();
    for w in what {
        let mut found: Vec<_> = match parse_addr(w) {
            Some(a) => set.by_addr(a).into_iter().collect(),
            None => set.by_name(w).collect(),
        };
        if found.is_empty() && parse_addr(w).is_none() {
            // A C++ or Rust name as people write it (`ns::get<int>`, with or
            // without its parameters).
            found = set
                .dbs()
                .iter()
                .flat_map(|d| d.functions())
                .filter(|f| {
                    dcg_render::names::demangle(f.symbol()).is_some_and(|d| d.any(|n| n == w))
                })
                .collect();
        }
        if found.is_empty() {
            missing.push(w.clone());
        }
        for f in found {
            writeln!(out, "{}", describe::signature_line(f))?;
        }
    }
    out.flush()?;
    if !missing.is_empty() {
        bail!("not in the db: {}", missing.join(", "));
    }
    Ok(())
}

/// `dcg load`: a db fetched by build-id, a module inserted, or a db installed in the store.
fn load(
    file: Option<PathBuf>,
    build_id: Option<String>,
    force: bool,
    kernel_build_id: Option<String>,
    offline: bool,
    out: &mut Out<'_>,
) -> Result<ExitCode> {
    let Some(file) = file else {
        let id = loader::parse_build_id(build_id.as_deref().unwrap_or_default())?;
        if offline {
            bail!("load --build-id fetches from debuginfod, which --offline forbids");
        }
        let sources = db_sources(false);
        let net = sources.net.context(
            "load --build-id: no debuginfod server (DEBUGINFOD_URLS is empty, or unset \
             and the system names none)",
        )?;
        let (db, path, how) = dcg_dbresolve::binary::fetch_db(&id, &net, &sources.places)?;
        writeln!(
            out,
            "build-id {}: fetched from debuginfod ({}): {} functions -> {}",
            sigdb::hex(&id),
            trace_notices::fetched_as(how),
            db.function_count(),
            path.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    };
    if is_module_file(&file)? {
        let m = loader::module::insert(&file, &places(), force)?;
        writeln!(
            out,
            "{}: inserted module {}: {} functions, build-id {} -> {}",
            file.display(),
            m.name,
            m.function_count,
            m.build_id,
            m.sysfs_file.display()
        )?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let store = places().store()?;
    let opts = loader::LoadOptions {
        force,
        kernel_build_id: kernel_build_id
            .as_deref()
            .map(loader::parse_build_id)
            .transpose()?,
    };
    let o = store.load(&file, &opts)?;
    let what = match o.status {
        loader::LoadStatus::Installed => "installed",
        loader::LoadStatus::Replaced { .. } => "replaced the previous db",
        loader::LoadStatus::AlreadyLoaded => "already loaded, nothing to do",
    };
    writeln!(
        out,
        "{}: {what}: {} functions, build-id {} -> {}",
        file.display(),
        o.function_count,
        o.build_id,
        o.path.display()
    )?;
    out.flush().context("writing output")?;
    Ok(ExitCode::SUCCESS)
}

/// `dcg list`: the module dbs, then the store's.
fn list(out: &mut Out<'_>) -> Result<()> {
    list_module_dbs(out)?;
    let store = places().store()?;
    let entries = store.list()?;
    if entries.is_empty() {
        writeln!(out, "no dbs loaded in {}", store.root().display())?;
    }
    for e in entries {
        writeln!(
            out,
            "{}  {:<7} {:>7} functions {:>9} bytes  loaded {}  {}{}",
            e.build_id,
            e.kind.as_str(),
            e.function_count,
            e.size,
            e.loaded_at
                .map(loader::format_utc)
                .unwrap_or_else(|| "?".into()),
            e.source.as_deref().unwrap_or("?"),
            if e.matches_running_kernel {
                "  [running kernel]"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// `dcg unload`: the db module, store entries, or both.
fn unload(which: Option<String>, out: &mut Out<'_>) -> Result<()> {
    let module = loader::module::MODULE_NAME;
    let which: Option<loader::Unload> = which.as_deref().map(str::parse).transpose()?;
    let mut removed = Vec::new();
    // No argument: the module (an error when it is not loaded); `all`: it too.
    let module_too = match &which {
        None => true,
        Some(loader::Unload::All) => loader::module::is_loaded(module),
        Some(_) => false,
    };
    if module_too {
        loader::module::remove(module)?;
        removed.push(format!("module {module}"));
    }
    if let Some(which) = &which {
        removed.extend(places().store()?.unload(which)?);
    }
    if removed.is_empty() {
        bail!("nothing to unload");
    }
    for id in removed {
        writeln!(out, "unloaded {id}")?;
    }
    Ok(())
}

/// Whether `file` is a kernel module (ELF with `.modinfo`), not a db for the store.
fn is_module_file(file: &std::path::Path) -> Result<bool> {
    // Mapped, never read whole: only an ELF file's section headers are looked at.
    let bytes = loader::module::map_regular(file)?;
    Ok(loader::module::is_module(&bytes))
}

/// `dcg list`: the dbs loaded modules expose, one line each, validated.
fn list_module_dbs(out: &mut impl Write) -> Result<()> {
    let places = places();
    for m in loader::module::sysfs_dbs(&places.sysfs)? {
        let path = m.path.clone();
        let size = m.bytes.len();
        match loader::module::open_sysfs_db(m, &places.notes) {
            Ok(db) => writeln!(
                out,
                "{}  module  {:>7} functions {:>9} bytes  {}  {}",
                sigdb::hex(db.build_id()),
                db.function_count(),
                size,
                path.display(),
                if loader::module::is_loaded(loader::module::MODULE_NAME) {
                    loader::module::MODULE_NAME
                } else {
                    "?"
                }
            )?,
            Err(e) => writeln!(out, "{e}")?,
        }
    }
    Ok(())
}

fn parse_addr(s: &str) -> Option<u64> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    u64::from_str_radix(hex, 16).ok()
}

/// The error and its causes on one line, each cause said once (library errors often
/// include their cause's text already).
fn one_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if msg.contains(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
    }
    msg
}

/// Whether the error is a closed output pipe, possibly wrapped.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .map(|io| io.kind())
            .or_else(|| {
                c.downcast_ref::<serde_json::Error>()
                    .and_then(|j| j.io_error_kind())
            })
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}
