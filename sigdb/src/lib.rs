//! sigdb: the dcg signature database.
//!
//! A compact, binary-searchable file of function signatures extracted from DWARF:
//! addresses and sizes, return and parameter types, where each parameter lives at entry,
//! modules and flags. The byte layout is specified in `FORMAT.md`; a C reader can use it
//! from that page alone.
//!
//! Write with [`DbBuilder`]; read with [`Db::open`] (mmap) or [`Db::from_bytes`]. Opening
//! validates every offset, count, reference, sort order and the checksum once, after which
//! lookups ([`Db::by_addr`], [`Db::by_name`]) are zero-copy and cannot panic.

//!
//! The crate is in two halves around what both use (the model of gimli's `read/`,
//! `write/` and `common.rs`): `write/` builds a file, `read/` opens and reads one, and
//! `common.rs`, `layout.rs`, `model.rs`, `regs.rs` and `varint.rs` hold the ids, the
//! on-disk records, the kinds and locations, the register table and the varints they
//! share.

mod common;
mod error;
pub mod filekind;
pub mod layout;
mod model;
mod read;
pub mod regs;
mod varint;
mod write;

/// The builder and what it is given (also exported at the crate root).
pub mod builder {
    pub use crate::common::{FuncId, ModuleId, TypeId};
    pub use crate::write::desc::{FunctionDesc, MemberDesc, ModuleDesc, ParamDesc, TypeDesc};
    pub use crate::write::DbBuilder;
}

pub use builder::{
    DbBuilder, FuncId, FunctionDesc, MemberDesc, ModuleDesc, ModuleId, ParamDesc, TypeDesc, TypeId,
};
pub use common::InstanceId;
pub use error::{Error, FormatError, FormatErrorKind};
pub use model::{
    float_format, x86_64_reg_name, DbFlags, FloatFormat, FuncFlags, Location, ModuleKind,
    Qualifiers, TypeFlags, TypeKind,
};
pub use read::callers::Callers;
pub use read::instances::{Instance, InstanceIter, Locations, Ranges};
pub use read::members::{Member, Members};
pub use read::view::{hex, Function, Module, Param, Type};
pub use read::Db;
pub use regs::SYSV_INT_ARG_REGS;
pub use write::desc::InstanceDesc;
