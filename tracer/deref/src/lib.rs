//! The data behind pointers (`--deref`): what an engine copies at the call ([`plan`]:
//! a [`ReadPlan`]) and the C-initializer text of what it copied ([`render_deref`]):
//!
//! `c=&conf{port=8080, name="dcg", m=MODE_FAST, in={a=7, tag="hello"}, next=0x…}`.
//!
//! Scalars, enums, bools, chars, floats and pointers are written by `dcg-render` (one
//! implementation of each); this crate adds the walk through members and the rules of
//! the layout, in `README.md` (the exact forms: a table there).

mod fields;
mod plan;
mod text;

pub use fields::{
    parse_fields_arg, parse_path, resolve, Access, FieldError, FieldPath, FieldPlan, MAX_FIELD_HOPS,
};
pub use plan::{follow, output, plan, From, Output, Read, ReadKind, ReadPlan, STRING_BYTES};
pub use text::{render_deref, render_pointee, render_value, render_word};

/// The default byte cap per argument (`--deref-bytes`).
pub const DEFAULT_CAP: u32 = 512;

/// The memory of the traced program as captured at the call: implemented by the engines
/// (the BPF record, the in-process recorder's copies, probe-event fetches).
pub trait Memory {
    /// Copy the captured bytes at `[addr, addr + buf.len())` into `buf`, from its start;
    /// return how many were captured (0: none). Bytes past that are shown as `?`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize;
}

/// Names of addresses, as dcg writes pointers that land on a symbol.
pub trait Symbols {
    /// `&name` (`&name+0x10` inside it) for data, `name` for a function's start when
    /// `to_func`; `None` when no symbol holds `addr` (dcg-dbset's
    /// `SymbolMap::pointer_text_as` is the implementation the engines have).
    fn pointer_text(&self, addr: u64, to_func: bool) -> Option<String>;

    /// The text of an integer of a typedef chain `names` (outermost first, `gfp_t`) when
    /// the engine knows one (dcg-kflags' `FlagTables::render`: `GFP_KERNEL|__GFP_ZERO`);
    /// `None`: rendered by its type as usual.
    fn typedef_text(&self, _names: &[&str], _value: u64) -> Option<String> {
        None
    }
}

/// No symbols (tests, or a source without a symbol table).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoSymbols;

impl Symbols for NoSymbols {
    fn pointer_text(&self, _addr: u64, _to_func: bool) -> Option<String> {
        None
    }
}

/// Captured memory as a list of (address, bytes) blocks: what a saved call or a test
/// holds.
#[derive(Clone, Debug, Default)]
pub struct Blocks(pub Vec<(u64, Vec<u8>)>);

impl Memory for Blocks {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        for (start, bytes) in &self.0 {
            let Some(skip) = addr.checked_sub(*start) else {
                continue;
            };
            let Ok(skip) = usize::try_from(skip) else {
                continue;
            };
            if skip < bytes.len() {
                let n = buf.len().min(bytes.len() - skip);
                buf[..n].copy_from_slice(&bytes[skip..skip + n]);
                return n;
            }
        }
        0
    }
}
