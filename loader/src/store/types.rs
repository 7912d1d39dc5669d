//! What the store's callers see: kinds of dbs, load options and outcomes, listed entries,
//! installed dbs, what to unload, and the metadata kept beside each db.

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sigdb::{Db, DbFlags};

use crate::error::{Error, Result};

/// What an installed db describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DbKind {
    /// A kernel image (possibly with some of its modules).
    Kernel,
    /// Kernel modules only, used beside the base db of their kernel.
    KernelModules,
    /// A user-space program or library.
    User,
}

impl DbKind {
    /// The kind of a db, from its header flags.
    pub fn of(flags: DbFlags) -> DbKind {
        if flags.contains(DbFlags::MODULES_ONLY) {
            DbKind::KernelModules
        } else if flags.contains(DbFlags::KERNEL) {
            DbKind::Kernel
        } else {
            DbKind::User
        }
    }

    /// `kernel`, `kernel-modules` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            DbKind::Kernel => "kernel",
            DbKind::KernelModules => "kernel-modules",
            DbKind::User => "user",
        }
    }

    pub(super) fn is_kernel(self) -> bool {
        self != DbKind::User
    }
}

impl std::fmt::Display for DbKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of [`Store::load`].
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Install a kernel db even when its build-id differs from the kernel it is
    /// installed for (the running kernel, or `kernel_build_id`).
    pub force: bool,
    /// Install a kernel db for this kernel instead of the running one. Without `force`
    /// the db's build-id must equal it. Ignored for user-space dbs, which are always
    /// keyed by their own build-id.
    pub kernel_build_id: Option<Vec<u8>>,
}

/// What [`Store::load`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadStatus {
    /// Newly installed.
    Installed,
    /// Replaced a different db installed under the same key.
    Replaced {
        /// Checksum of the db that was replaced.
        previous_checksum: u32,
    },
    /// The identical db was already installed; nothing changed.
    AlreadyLoaded,
}

/// The result of a successful [`Store::load`].
#[derive(Clone, Debug)]
pub struct LoadOutcome {
    /// What happened.
    pub status: LoadStatus,
    /// The build-id the db is installed under (hex).
    pub build_id: String,
    /// The build-id recorded in the db (hex); differs from `build_id` only when forced.
    pub db_build_id: String,
    /// What the db describes.
    pub kind: DbKind,
    /// The installed file.
    pub path: PathBuf,
    /// Number of functions in the db.
    pub function_count: u64,
    /// Size of the db in bytes.
    pub size: u64,
    /// Module names, for a module-only db.
    pub modules: Vec<String>,
}

/// One installed db, as [`Store::list`] reports it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The build-id it is installed under (hex): the kernel's or the binary's.
    pub build_id: String,
    /// What it describes.
    pub kind: DbKind,
    /// The installed file.
    pub path: PathBuf,
    /// The file it was loaded from (absolute), when recorded.
    pub source: Option<String>,
    /// Number of functions.
    pub function_count: u64,
    /// Size in bytes.
    pub size: u64,
    /// When it was loaded.
    pub loaded_at: Option<SystemTime>,
    /// Body checksum from the db header.
    pub checksum: u32,
    /// The build-id recorded in the db (hex); differs from `build_id` only when forced.
    pub db_build_id: String,
    /// Module names, for a module-only db.
    pub modules: Vec<String>,
    /// Whether it is a kernel db installed for the running kernel.
    pub matches_running_kernel: bool,
}

/// The dbs installed for one build-id: what a lookup spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// The build-id (raw bytes).
    pub build_id: Vec<u8>,
    /// The base db (kernel image or binary), if loaded.
    pub base: Option<PathBuf>,
    /// Module-only dbs loaded for this kernel, sorted by file name.
    pub modules: Vec<PathBuf>,
}

impl Installed {
    /// Every db path, base first.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.base.iter().chain(&self.modules).cloned().collect()
    }

    /// Open (map and validate) every db, base first.
    pub fn open(&self) -> Result<Vec<Db>> {
        self.paths()
            .iter()
            .map(|p| Db::open(p).map_err(Error::from))
            .collect()
    }
}

/// Which entries [`Store::unload`] removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unload {
    /// Every entry.
    All,
    /// The entry whose build-id is, or uniquely starts with, this hex string.
    BuildId(String),
}

impl std::str::FromStr for Unload {
    type Err = Error;

    /// `all`, or a build-id (a unique hex prefix is enough).
    fn from_str(s: &str) -> Result<Unload> {
        if s == "all" {
            return Ok(Unload::All);
        }
        let lower = s.to_ascii_lowercase();
        if lower.len() < 2 || lower.len() > 80 || !lower.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::BadBuildIdArg(s.to_string()));
        }
        Ok(Unload::BuildId(lower))
    }
}

/// Parse a hex build-id (`--kernel-build-id`): an even number of 2 to 80 hex digits.
pub fn parse_build_id(s: &str) -> Result<Vec<u8>> {
    let bad = || Error::BadBuildIdArg(s.to_string());
    if !(2..=80).contains(&s.len()) || s.len() & 1 != 0 {
        return Err(bad());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2).ok_or_else(bad)?, 16).map_err(|_| bad()))
        .collect()
}

/// The per-db metadata file.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Meta {
    pub(super) source: String,
    pub(super) loaded_at: u64,
    pub(super) checksum: u32,
    pub(super) function_count: u64,
    pub(super) size: u64,
    pub(super) kind: DbKind,
    pub(super) db_build_id: String,
    #[serde(default)]
    pub(super) modules: Vec<String>,
}
