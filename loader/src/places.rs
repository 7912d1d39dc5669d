//! Where the loader looks: the store directory, the running kernel's notes, the sysfs
//! directory of module dbs. The system's places by default; the `dcg` binary reads the
//! variables that move them (tests and containers set them) and passes them here, so no
//! library reads the environment.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::Result;
use crate::{kernel, module, Store};

/// Store used when `$DCG_STORE` is not set.
pub const DEFAULT_STORE: &str = "/var/lib/dcg";
/// Environment variable naming the store.
pub const STORE_ENV: &str = "DCG_STORE";
/// Environment variable overriding `/sys/kernel/notes` (for tests and containers).
pub const NOTES_ENV: &str = "DCG_KERNEL_NOTES";
/// Environment variable overriding [`module::SYSFS_DIR`] (for tests and containers).
pub const SYSFS_ENV: &str = "DCG_SYSFS_DIR";

/// The store directory, the running kernel's notes file and the sysfs directory of module
/// dbs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Places {
    /// The store ([`DEFAULT_STORE`]).
    pub store: PathBuf,
    /// The running kernel's ELF notes ([`kernel::DEFAULT_NOTES`]).
    pub notes: PathBuf,
    /// Where loaded modules expose their dbs ([`module::SYSFS_DIR`]).
    pub sysfs: PathBuf,
}

impl Default for Places {
    fn default() -> Places {
        Places {
            store: PathBuf::from(DEFAULT_STORE),
            notes: PathBuf::from(kernel::DEFAULT_NOTES),
            sysfs: PathBuf::from(module::SYSFS_DIR),
        }
    }
}

impl Places {
    /// The places [`STORE_ENV`], [`NOTES_ENV`] and [`SYSFS_ENV`] name, read through
    /// `var` (a binary passes `std::env::var_os`); an unset or empty variable leaves the
    /// default.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Places {
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let default = Places::default();
        Places {
            store: set(STORE_ENV).unwrap_or(default.store),
            notes: set(NOTES_ENV).unwrap_or(default.notes),
            sysfs: set(SYSFS_ENV).unwrap_or(default.sysfs),
        }
    }

    /// The store at [`Places::store`], reading the running kernel's build-id from
    /// [`Places::notes`].
    pub fn store(&self) -> Result<Store> {
        Ok(Store::open(&self.store)?.with_kernel_notes(&self.notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_move_places_and_empty_ones_do_not() {
        let vars = |name: &str| match name {
            STORE_ENV => Some(OsString::from("/tmp/store")),
            NOTES_ENV => Some(OsString::new()),
            _ => None,
        };
        let p = Places::from_vars(vars);
        assert_eq!(p.store, PathBuf::from("/tmp/store"));
        assert_eq!(p.notes, PathBuf::from(kernel::DEFAULT_NOTES));
        assert_eq!(p.sysfs, PathBuf::from(module::SYSFS_DIR));
    }
}
