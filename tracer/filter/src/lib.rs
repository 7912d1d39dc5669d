//! The `--filter` expression language: parsed once ([`parse`]), bound once to a
//! function's signature ([`bind`], a [`Program`]), evaluated per call
//! ([`Program::matches`] over [`CallValues`]). Refused expressions are typed
//! [`FilterError`]s with the span of the offending token;
//! [`FilterError::caret_message`] words them with a caret under it. [`saved`] applies
//! filters and `--min-duration` to saved calls. See the README for the language.

pub mod bind;
pub mod entry;
pub mod error;
pub mod eval;
pub mod lex;
pub mod parse;
pub mod saved;
pub mod sig;
mod text;

pub use bind::{bind, Field, Program};
pub use entry::{EntryTest, EntryValue};
pub use error::{caret_message, ErrorKind, FilterError, Span};
pub use eval::{CallValues, Value};
pub use parse::{parse, CmpOp, Expr, Filter, Operand, OperandKind};
pub use sig::{EnumType, Member, Param, Signature, ValueType};

/// A duration as `--min-duration` takes it (`10us`, `1.5ms`, `2s`, `300ns`), in ns.
pub fn parse_duration(text: &str) -> Result<u64, FilterError> {
    let toks = lex::tokens(text.trim(), 0)?;
    match toks.as_slice() {
        [lex::Token {
            tok: lex::Tok::Duration(ns),
            ..
        }] => Ok(*ns),
        _ => Err(FilterError::syntax(
            "expected a duration with its unit (10us, 1.5ms, 2s, 300ns)",
            0..text.len(),
        )),
    }
}
