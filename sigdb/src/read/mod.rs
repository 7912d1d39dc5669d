//! The reading half: a [`Db`] opened from a file or bytes, checked once on open
//! (`validate.rs`), then read in place (`db.rs`: storage, sections, frames and blocks
//! decompressed on first use; `lookup.rs`: the questions a db answers; `view.rs`: the
//! views it answers with). The packed sections are decoded by the modules named for
//! them: `callers.rs`, `instances.rs`, `members.rs`, `frames.rs` (zstd) and `blocks.rs` (LZ4).

pub(crate) mod blocks;
pub(crate) mod callers;
mod db;
mod frames;
pub(crate) mod instances;
mod lookup;
pub(crate) mod members;
mod validate;
pub(crate) mod view;

pub use db::Db;
