//! loader: install signature dbs into the dcg store, matched by build-id, and find them
//! again.
//!
//! - [`Places`] says where the store, the running kernel's notes and the sysfs dbs are
//!   (the defaults, or what `$DCG_STORE`, `$DCG_KERNEL_NOTES`, `$DCG_SYSFS_DIR` name,
//!   read by the binary and passed in).
//! - [`Store`] is the store directory (default `/var/lib/dcg`):
//!   [`Store::load`], [`Store::list`], [`Store::unload`], and the lookups
//!   [`Store::find_for_kernel`] and [`Store::find_for_binary`] that every db-using command
//!   falls back to without `--db`.
//! - [`kernel`] reads the running kernel's build-id from `/sys/kernel/notes`.
//! - [`blob`] embeds a db in a linkable ELF object (`.dcg_sigdb`, `dcg_sigdb_start`,
//!   `dcg_sigdb_end`) and extracts it from any ELF file carrying that section.
//! - [`module`] writes the Kbuild directory of a module carrying a db, inserts and removes
//!   it, and reads the dbs loaded modules expose in `/sys/kernel/dcg`.
//! - [`binary`] reads a user-space ELF file's GNU build-id.

pub mod binary;
pub mod blob;
mod error;
pub mod kernel;
pub mod module;
mod places;
mod store;

pub use blob::{emit_object, extract_from_elf, write_object};
pub use error::{Error, Result};
pub use places::{Places, DEFAULT_STORE, NOTES_ENV, STORE_ENV, SYSFS_ENV};
pub use store::{
    format_utc, parse_build_id, DbKind, Entry, Installed, LoadOptions, LoadOutcome, LoadStatus,
    Store, Unload,
};
