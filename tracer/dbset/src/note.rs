//! What the user should know about where a db came from: typed, for the binary to word.

use std::path::PathBuf;

/// Whose db a note is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whose {
    /// The running kernel's.
    Kernel,
    /// The binary at this path's.
    Binary(PathBuf),
}

/// How a db fetched from debuginfod was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchedAs {
    /// The binary's `.dcg_sigdb` section, fetched alone.
    Section,
    /// Built here from the debug file the server has.
    BuiltFromDebugFile,
}

/// A note of the db resolver.
#[derive(Debug, Clone, PartialEq)]
pub enum DbNote {
    /// No db here: it came from debuginfod and is kept in the store.
    Fetched {
        /// Whose db.
        whose: Whose,
        /// How it was made.
        how: FetchedAs,
        /// Its functions.
        functions: usize,
        /// Where the store keeps it.
        stored: PathBuf,
    },
    /// The `--db` file given for a binary has another build-id: values may be wrong.
    BuildIdMismatch {
        /// The binary.
        binary: PathBuf,
        /// The db file.
        db: PathBuf,
    },
    /// No db in the store: one was built in memory from DWARF.
    Built {
        /// The binary.
        binary: PathBuf,
        /// Why the store could not be read, if it could not.
        store_unreadable: Option<String>,
        /// The file whose DWARF it was built from (the binary or its debug file).
        from: PathBuf,
        /// Its functions.
        functions: usize,
        /// How long the build took, in seconds.
        seconds: f64,
        /// The commands that keep a db for the binary (one per line, indented), when it
        /// has a build-id.
        to_keep: Option<String>,
    },
}
