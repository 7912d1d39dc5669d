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

mod blocks;
pub mod builder;
mod callers;
mod desc;
mod error;
pub mod filekind;
mod frames;
mod instances;
pub mod layout;
mod model;
mod reader;
pub mod regs;
mod validate;
mod varint;
mod view;

pub use builder::{
    DbBuilder, FuncId, FunctionDesc, ModuleDesc, ModuleId, ParamDesc, TypeDesc, TypeId,
};
pub use callers::Callers;
pub use error::{Error, FormatError, FormatErrorKind};
pub use instances::{Instance, InstanceDesc, InstanceId, InstanceIter, Locations, Ranges};
pub use model::{
    float_format, x86_64_reg_name, DbFlags, FloatFormat, FuncFlags, Location, ModuleKind,
    Qualifiers, TypeFlags, TypeKind,
};
pub use reader::Db;
pub use regs::SYSV_INT_ARG_REGS;
pub use view::{hex, Function, Module, Param, Type};
