//! Errors of reading and writing a sigdb.

use std::fmt;
use std::path::PathBuf;

/// What is wrong with a database's bytes, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset in the file where the problem was found.
    pub offset: u64,
    /// The problem.
    pub kind: FormatErrorKind,
}

/// The kinds of format problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatErrorKind {
    /// Shorter than the header or than the header says.
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes present.
        len: u64,
    },
    /// Not a sigdb.
    BadMagic,
    /// A version this reader does not know.
    UnsupportedVersion(u32),
    /// A header field has an impossible value.
    BadHeader(&'static str),
    /// A section lies outside the file, overlaps the header, is misaligned, or its
    /// length does not match count × record size.
    BadSection(&'static str),
    /// The body checksum does not match.
    Checksum {
        /// Checksum recorded in the header.
        expected: u32,
        /// Checksum of the bytes present.
        actual: u32,
    },
    /// A record refers outside its target table or holds an invalid code.
    BadRecord {
        /// Section of the record.
        section: &'static str,
        /// Record index.
        index: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// Records that must be sorted are not.
    NotSorted(&'static str),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FormatErrorKind::*;
        match &self.kind {
            Truncated { needed, len } => write!(f, "truncated: needs {needed} bytes, has {len}")?,
            BadMagic => f.write_str("not a dcg signature database (bad magic)")?,
            UnsupportedVersion(v) => write!(
                f,
                "format version {v} is not supported (this dcg reads versions {} to {}); \
                 rebuild the db from its ELF files: dwarfscan FILE... -o DB",
                crate::layout::VERSION_5,
                crate::layout::VERSION
            )?,
            BadHeader(what) => write!(f, "bad header: {what}")?,
            BadSection(name) => write!(f, "bad section table entry for '{name}'")?,
            Checksum { expected, actual } => write!(
                f,
                "checksum mismatch: header says {expected:#010x}, body has {actual:#010x}"
            )?,
            BadRecord {
                section,
                index,
                what,
            } => write!(f, "{section} record {index}: {what}")?,
            NotSorted(section) => write!(f, "{section} are not sorted")?,
        }
        write!(f, " (at offset {:#x})", self.offset)
    }
}

impl std::error::Error for FormatError {}

/// An error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid database.
    #[error("{}: {error}", path.display())]
    Format {
        /// The file (`<memory>` for in-memory buffers).
        path: PathBuf,
        /// What is wrong.
        error: FormatError,
    },
    /// A table would exceed the format's 32-bit limits.
    #[error("too many {0} for the sigdb format")]
    TooLarge(&'static str),
    /// The db was written before struct members were recorded (format version 5).
    #[error(
        "{}: struct and union members are not recorded in this db (format version 5); \
         rebuild it from its ELF files: dwarfscan FILE... -o DB",
        path.display()
    )]
    MembersNotRecorded {
        /// The db.
        path: PathBuf,
    },
    /// Writing the db out failed (the message names the file).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
    /// The builder was given inconsistent input.
    #[error("invalid database contents: {0}")]
    Builder(String),
}
