//! Errors of the loader. Every message names the file or directory concerned and the
//! problem, on one line — except [`Error::NoKernelDb`] and [`Error::NoBinaryDb`], which
//! end with the exact commands to run next, one per line.

use std::path::PathBuf;

/// Result of loader operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of the loader.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call on a file or directory failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The input bytes are not a valid signature database; nothing was installed.
    #[error("{}: refusing to load: {error}", path.display())]
    InvalidDb {
        /// The input file.
        path: PathBuf,
        /// What is wrong, with the byte offset.
        error: sigdb::FormatError,
    },
    /// The input is neither a signature db nor an ELF file carrying one.
    #[error("{}: not a dcg signature db (no DCGSIGDB magic) and not an ELF file", path.display())]
    NotADb {
        /// The input file.
        path: PathBuf,
    },
    /// An ELF input could not be parsed or holds no usable `.dcg_sigdb` section.
    #[error("{}: {what}", path.display())]
    Elf {
        /// The ELF file.
        path: PathBuf,
        /// The problem.
        what: String,
    },
    /// The store directory is unsafe to use.
    #[error("store {}: {what}", path.display())]
    UnsafeStore {
        /// The store (or an entry in it).
        path: PathBuf,
        /// Why it is refused.
        what: String,
    },
    /// The db's build-id differs from the kernel it would be installed for.
    #[error(
        "{}: db is for kernel build-id {db}, but {against} is {expected}; \
         pass --force to load it for that kernel anyway",
        path.display()
    )]
    WrongBuildId {
        /// The input file.
        path: PathBuf,
        /// Build-id recorded in the db (hex; `none` when empty).
        db: String,
        /// The build-id it was checked against (hex).
        expected: String,
        /// `the running kernel` or `--kernel-build-id`.
        against: &'static str,
    },
    /// The db carries no build-id to key it by.
    #[error("{}: db has no build-id; {hint}", path.display())]
    NoBuildId {
        /// The input file.
        path: PathBuf,
        /// What to do about it.
        hint: &'static str,
    },
    /// The running kernel's build-id could not be read.
    #[error(
        "{}: cannot read the running kernel's build-id: {what}; \
         pass --kernel-build-id ID (or --force)",
        path.display()
    )]
    KernelBuildId {
        /// The notes file (`/sys/kernel/notes`).
        path: PathBuf,
        /// The problem.
        what: String,
    },
    /// The store holds no db for the running kernel.
    #[error(
        "no signature db for the running kernel (build-id {build_id}) in store {}; \
         create and load one with:\n{steps}",
        store.display()
    )]
    NoKernelDb {
        /// Running kernel build-id (hex).
        build_id: String,
        /// The store.
        store: PathBuf,
        /// The commands to run, one per line, indented.
        steps: String,
    },
    /// The store holds no db for a user-space binary.
    #[error(
        "{}: no signature db for build-id {build_id} in store {}; create and load one with:\n{steps}",
        binary.display(),
        store.display()
    )]
    NoBinaryDb {
        /// The binary.
        binary: PathBuf,
        /// Its build-id (hex).
        build_id: String,
        /// The store.
        store: PathBuf,
        /// The commands to run, one per line, indented.
        steps: String,
    },
    /// A binary has no GNU build-id note.
    #[error("{}: has no GNU build-id note (.note.gnu.build-id); cannot match it to a db", path.display())]
    NoBinaryBuildId {
        /// The binary.
        path: PathBuf,
    },
    /// `unload` named a build-id that is not loaded.
    #[error("store {}: no db loaded for build-id {id}", store.display())]
    NotLoaded {
        /// The store.
        store: PathBuf,
        /// The requested build-id (prefix).
        id: String,
    },
    /// A build-id prefix matched several entries.
    #[error("store {}: build-id prefix {id} is ambiguous: {}", store.display(), matches.join(", "))]
    Ambiguous {
        /// The store.
        store: PathBuf,
        /// The requested prefix.
        id: String,
        /// The matching build-ids.
        matches: Vec<String>,
    },
    /// A build-id argument is not hexadecimal.
    #[error("invalid build-id {0:?}: expected 2 to 80 hex digits")]
    BadBuildIdArg(String),
    /// Inserting, removing or reading a db module failed.
    #[error(transparent)]
    Module(#[from] crate::module::ModuleError),
    /// Another sigdb error (opening an installed db).
    #[error(transparent)]
    Db(#[from] sigdb::Error),
    /// Writing an output failed (the message names the file).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    pub(crate) fn nix(path: impl Into<PathBuf>) -> impl FnOnce(nix::errno::Errno) -> Error {
        let path = path.into();
        move |e| Error::Io {
            path,
            source: std::io::Error::from(e),
        }
    }

    pub(crate) fn unsafe_store(path: impl Into<PathBuf>, what: impl Into<String>) -> Error {
        Error::UnsafeStore {
            path: path.into(),
            what: what.into(),
        }
    }
}
