//! The one db resolver: the databases a command works with, from `--db` files (sigdb files
//! or ELF files carrying a `.dcg_sigdb` section), the dbs loaded modules expose in
//! `/sys/kernel/dcg/`, the store by build-id (the running
//! kernel's base and module dbs, or a binary's), or built in memory from a binary's DWARF
//! ([`binary`]). Lookups span all of them. Also the `--func` patterns ([`glob`]).

pub mod binary;
pub mod glob;
pub mod inlines;
pub mod kallsyms;
pub mod symbols;

use std::path::{Path, PathBuf};

use sigdb::{Db, FuncFlags, Function};

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

/// One or more open databases, searched in order.
#[derive(Debug)]
pub struct DbSet {
    dbs: Vec<Db>,
    /// Set when the dbs came from debuginfod: where from and where kept.
    fetched: Option<String>,
}

impl DbSet {
    /// Wrap already opened databases.
    pub fn new(dbs: Vec<Db>) -> DbSet {
        DbSet { dbs, fetched: None }
    }

    /// Open `--db` files: sigdb files, or ELF files carrying a `.dcg_sigdb` section.
    pub fn open_paths(paths: &[PathBuf]) -> Result<DbSet, DbError> {
        let mut dbs = Vec::new();
        for p in paths {
            dbs.push(open_one(p)?);
        }
        Ok(DbSet { dbs, fetched: None })
    }

    /// The given files; when there are none, the dbs loaded modules expose in
    /// `/sys/kernel/dcg/` (validated, and refused when not for the running kernel);
    /// when there are none either, the store's dbs for the running kernel; when the store
    /// has none, the db of the running kernel's build-id from the debuginfod servers of
    /// `net` (kept in the store; [`DbSet::fetched`] says so).
    pub fn resolve(
        paths: &[PathBuf],
        net: Option<&dcg_debuginfod::Client>,
    ) -> Result<DbSet, DbError> {
        if !paths.is_empty() {
            return DbSet::open_paths(paths);
        }
        let notes = loader::kernel::notes_path();
        let found = loader::module::sysfs_dbs(&loader::module::sysfs_dir())?;
        if !found.is_empty() {
            let dbs = found
                .into_iter()
                .map(|m| loader::module::open_sysfs_db(m, &notes))
                .collect::<Result<_, _>>()?;
            return Ok(DbSet { dbs, fetched: None });
        }
        let store = loader::Store::from_env()?;
        match (store.find_for_kernel(), net) {
            (Ok(installed), _) => Ok(DbSet {
                dbs: installed.open()?,
                fetched: None,
            }),
            (Err(loader::Error::NoKernelDb { .. }), Some(net)) => {
                let id = store.running_kernel_build_id()?;
                let (db, stored, how) = binary::fetch_db(&id, net)?;
                let note = format!(
                    "the running kernel's db came from debuginfod ({how}, {} functions) and \
                     is kept in {}",
                    db.function_count(),
                    stored.display()
                );
                Ok(DbSet {
                    dbs: vec![db],
                    fetched: Some(note),
                })
            }
            (Err(e), _) => Err(e.into()),
        }
    }

    /// When [`DbSet::resolve`] fetched the db from debuginfod: a note saying so.
    pub fn fetched(&self) -> Option<&str> {
        self.fetched.as_deref()
    }

    /// The databases.
    pub fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    /// Whether some db records inline instances (inlined copies of functions).
    pub fn has_inline_instances(&self) -> bool {
        self.dbs.iter().any(|d| d.instance_count() > 0)
    }

    /// Every function named `name` (source or symbol name), in db order.
    pub fn by_name<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Function<'a>> + 'a {
        self.dbs.iter().flat_map(move |db| db.by_name(name))
    }

    /// The function containing `addr` in any module of any db.
    pub fn by_addr(&self, addr: u64) -> Option<Function<'_>> {
        self.dbs.iter().find_map(|db| db.by_addr_any(addr))
    }

    /// The function ftrace means by `name` (as kallsyms prints it, clones with their
    /// suffix) in `module` (`None`: the kernel image or the only module).
    ///
    /// Among several matches it prefers: the right module, an exact symbol match, code
    /// over inline-only records, then the first in db order.
    pub fn find(&self, name: &str, module: Option<&str>) -> Option<Function<'_>> {
        self.dbs
            .iter()
            .flat_map(|db| db.by_name(name))
            .max_by_key(|f| {
                let m = f.module().map(|m| m.name()).unwrap_or("");
                let module_ok = match module {
                    Some(want) => m == want,
                    None => f
                        .module()
                        .is_none_or(|m| m.kind() != sigdb::ModuleKind::KernelModule),
                };
                (
                    module_ok,
                    f.symbol() == name,
                    !f.flags().contains(FuncFlags::INLINE_ONLY),
                    std::cmp::Reverse((f.index(), 0)),
                )
            })
    }
}

/// Open a sigdb file, or the `.dcg_sigdb` section of an ELF file.
pub fn open_one(path: &Path) -> Result<Db, DbError> {
    // Mapped, never read whole: a db is validated where it lies, an ELF file gives its
    // section; a FIFO or a device is refused before it is opened.
    let bytes = loader::module::map_regular(path)?;
    if !loader::blob::is_elf(&bytes) {
        return Ok(Db::open(path)?);
    }
    let db = loader::extract_from_elf(path, &bytes)?;
    Db::from_bytes(db)
        .map_err(|e| match e {
            sigdb::Error::Format { error, .. } => sigdb::Error::Format {
                path: path.to_path_buf(),
                error,
            },
            other => other,
        })
        .map_err(DbError::from)
}
