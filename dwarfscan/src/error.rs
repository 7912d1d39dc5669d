//! Errors of a scan: each names the file and the problem.

use std::path::PathBuf;

/// Why a scan failed.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file could not be decompressed (`.ko.xz`, `.ko.zst`, `.ko.gz`).
    #[error("{path}: cannot decompress: {reason}")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Not an ELF file, or an ELF file dcg does not support.
    #[error("{path}: {reason}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is unsupported.
        reason: String,
    },
    /// The file has no DWARF debug information.
    #[error("{path}: no DWARF debug information{hint}")]
    NoDwarf {
        /// The file.
        path: PathBuf,
        /// Extra hint (e.g. the `.gnu_debuglink` target).
        hint: String,
    },
    /// The DWARF is malformed beyond what can be skipped.
    #[error("{path}: malformed DWARF: {reason}")]
    Dwarf {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A directory input holds no kernel modules.
    #[error("{path}: no kernel modules (*.ko, *.ko.xz, *.ko.zst, *.ko.gz) below this directory")]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// No inputs were given.
    #[error("no input files")]
    NoInputs,
    /// Writing the database failed.
    #[error("{0}")]
    Db(#[from] sigdb::Error),
}

impl ScanError {
    pub(crate) fn unsupported(path: &std::path::Path, reason: impl Into<String>) -> ScanError {
        ScanError::Unsupported {
            path: path.to_path_buf(),
            reason: reason.into(),
        }
    }

    pub(crate) fn dwarf(path: &std::path::Path, reason: impl std::fmt::Display) -> ScanError {
        ScanError::Dwarf {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}
