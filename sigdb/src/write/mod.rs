//! The writing half: a [`DbBuilder`] collects descriptions (`desc.rs`) in any order and
//! writes a canonical file. `builder.rs` collects; `strings.rs` lays the string section
//! out; `writer.rs` numbers the records and assembles the file from the sections, each
//! written by the module named for it: `types.rs`, `functions.rs` (with the canonical
//! order and the modules' function ranges), `names.rs`, `callers.rs`, `instances.rs`,
//! packed by `frames.rs` (zstd) and `blocks.rs` (LZ4).

mod blocks;
mod builder;
mod callers;
pub(crate) mod desc;
mod frames;
mod functions;
mod instances;
mod names;
mod strings;
mod types;
mod writer;

pub use builder::DbBuilder;
