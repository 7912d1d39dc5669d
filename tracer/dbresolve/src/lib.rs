//! Where a command's signature dbs come from, apart from the lookups over them
//! (`dcg-dbset`): `--db` files (sigdb files or ELF files carrying a `.dcg_sigdb`
//! section), the dbs loaded modules expose in `/sys/kernel/dcg/`, the store by build-id
//! (the running kernel's base and module dbs, or a binary's), a db built in memory from a
//! binary's DWARF, or debuginfod by build-id ([`binary`]). Each returns the opened dbs.

pub mod binary;

use std::path::{Path, PathBuf};

use dcg_dbset::note::{DbNote, Whose};
use dcg_dbset::DbSet;
use sigdb::Db;

/// Where dbs come from besides `--db` files: the loader's places (the store, the running
/// kernel's notes, the sysfs dbs) and the debuginfod client (`None`: offline, or no server
/// configured). The binary makes it from its options and the environment.
#[derive(Debug, Clone, Default)]
pub struct DbSources {
    /// The store, the kernel's notes, the sysfs directory.
    pub places: loader::Places,
    /// The debuginfod client, the last source.
    pub net: Option<dcg_debuginfod::Client>,
}

/// Errors finding or opening databases.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// A db file could not be read or is invalid.
    #[error(transparent)]
    Sigdb(#[from] sigdb::Error),
    /// The store could not provide a db.
    #[error(transparent)]
    Store(#[from] loader::Error),
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// None of the `--db` files is for the binary.
    #[error("{}: none of the --db files is for this binary (build-id {build_id})", path.display())]
    NoneForBinary {
        /// The binary.
        path: PathBuf,
        /// Its build-id.
        build_id: String,
    },
    /// Scanning a binary's DWARF failed.
    #[error("{}: {error}", path.display())]
    Build {
        /// The file scanned.
        path: PathBuf,
        /// What went wrong.
        error: String,
    },
    /// No db anywhere and none could be built.
    #[error(
        "no db for {} (build-id {build_id}) and none could be built from its DWARF: {error}",
        path.display()
    )]
    NoDwarf {
        /// The binary.
        path: PathBuf,
        /// Its build-id.
        build_id: String,
        /// Why the scan failed.
        error: String,
    },
    /// Debuginfod gave no usable db: what each way of getting one found.
    #[error("no db for build-id {build_id} from debuginfod ({servers}): {error}")]
    Fetched {
        /// The build-id.
        build_id: String,
        /// The servers configured.
        servers: String,
        /// What went wrong, for the section and the debug file.
        error: String,
    },
    /// Every debuginfod server answered that it has neither the section nor the debug
    /// file.
    #[error(
        "no debuginfod server has a db for build-id {build_id}: neither a .dcg_sigdb \
         section nor a debug file ({why})"
    )]
    NotOnServers {
        /// The build-id.
        build_id: String,
        /// The servers asked (or the remembered miss).
        why: String,
    },
    /// Fetching from debuginfod failed.
    #[error(transparent)]
    Debuginfod(#[from] dcg_debuginfod::FetchError),
}

/// Open `--db` files: sigdb files, or ELF files carrying a `.dcg_sigdb` section.
pub fn open_paths(paths: &[PathBuf]) -> Result<DbSet, DbError> {
    let mut dbs = Vec::new();
    for p in paths {
        dbs.push(open_one(p)?);
    }
    Ok(DbSet::new(dbs))
}

/// The given files; when there are none, the dbs loaded modules expose in
/// `/sys/kernel/dcg/` (validated, and refused when not for the running kernel);
/// when there are none either, the store's dbs for the running kernel; when the store
/// has none, the db of the running kernel's build-id from the debuginfod servers of
/// `sources` (kept in the store; [`DbSet::fetched`] says so). The sysfs directory, the
/// kernel's notes and the store are those of `sources`.
pub fn resolve(paths: &[PathBuf], sources: &DbSources) -> Result<DbSet, DbError> {
    if !paths.is_empty() {
        return open_paths(paths);
    }
    let places = &sources.places;
    let found = loader::module::sysfs_dbs(&places.sysfs)?;
    if !found.is_empty() {
        let dbs = found
            .into_iter()
            .map(|m| loader::module::open_sysfs_db(m, &places.notes))
            .collect::<Result<_, _>>()?;
        return Ok(DbSet::new(dbs));
    }
    let store = places.store()?;
    match (store.find_for_kernel(), &sources.net) {
        (Ok(installed), _) => Ok(DbSet::new(installed.open()?)),
        (Err(loader::Error::NoKernelDb { .. }), Some(net)) => {
            let id = store.running_kernel_build_id()?;
            let (db, stored, how) = binary::fetch_db(&id, net, places)?;
            let note = DbNote::Fetched {
                whose: Whose::Kernel,
                how,
                functions: db.function_count(),
                stored,
            };
            Ok(DbSet::fetched_with(vec![db], note))
        }
        (Err(e), _) => Err(e.into()),
    }
}

/// Open a sigdb file, or the `.dcg_sigdb` section of an ELF file. Its compressed frames
/// and blocks are all checked ([`Db::verify`]: the store checked the dbs it installed,
/// a file given by path never was), so a damaged one is refused naming the file and the
/// section rather than read as empty names and `arg=?`.
pub fn open_one(path: &Path) -> Result<Db, DbError> {
    // Mapped, never read whole: a db is validated where it lies, an ELF file gives its
    // section; a FIFO or a device is refused before it is opened.
    let bytes = loader::module::map_regular(path)?;
    let named = |e| match e {
        sigdb::Error::Format { error, .. } => sigdb::Error::Format {
            path: path.to_path_buf(),
            error,
        },
        other => other,
    };
    let db = if loader::blob::is_elf(&bytes) {
        Db::from_bytes(loader::extract_from_elf(path, &bytes)?).map_err(named)?
    } else {
        Db::open(path)?
    };
    db.verify().map_err(named)?;
    Ok(db)
}
