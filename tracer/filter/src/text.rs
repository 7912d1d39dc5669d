//! Reading a rendered value back by its type (the rules of `dcg-render`, reversed):
//! integers, hex, `NULL`, `ERR_PTR(-E…)`, errno names, enumerators (`A|B` too), bools,
//! `'c'`, quoted strings. Anything else (`?LOC`, `&symbol`, a string cut short with
//! `...`) reads as nothing, and its comparisons are false.

use std::borrow::Cow;

use crate::sig::{EnumType, ValueType};

/// A value read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read<'a> {
    /// A number (pointers and bools included).
    Int(i128),
    /// A string's text.
    Str(Cow<'a, str>),
    /// A name the reader does not know (an untyped value's enumerator).
    Ident(&'a str),
}

/// `text` read as a value of type `ty`.
pub(crate) fn read_text<'a>(text: &'a str, ty: &ValueType) -> Option<Read<'a>> {
    match ty {
        ValueType::CString if text.starts_with('"') => string(text).map(Read::Str),
        ValueType::Enum(e) => int(text, false)
            .or_else(|| enumerators(text, e))
            .map(Read::Int),
        ValueType::Other(_) => None,
        ValueType::Untyped if text.starts_with('"') => string(text).map(Read::Str),
        ValueType::Untyped => int(text, true).map(Read::Int).or_else(|| {
            text.bytes()
                .all(|c| c == b'_' || c == b'|' || c.is_ascii_alphanumeric())
                .then_some(Read::Ident(text))
        }),
        ValueType::Pointer | ValueType::CString => int(text, false).map(Read::Int),
        ValueType::Int { .. } | ValueType::Bool => int(text, true).map(Read::Int),
    }
}

/// A number as dcg renders one: decimal, hex, `NULL`, `true`/`false`, `-ENAME`,
/// `ERR_PTR(-ENAME)` (its bit pattern, or the negative errno when `signed_errptr`), `'c'`.
fn int(text: &str, signed_errptr: bool) -> Option<i128> {
    let b = text.as_bytes();
    match b.first()? {
        b'0'..=b'9' | b'-' if b.get(1).is_some_and(u8::is_ascii_digit) || b[0] != b'-' => {
            if let Some(hex) = text.strip_prefix("0x") {
                return u64::from_str_radix(hex, 16).ok().map(i128::from);
            }
            text.parse::<i64>().ok().map(i128::from)
        }
        b'-' => dcg_render::errno_code(&text[1..]).map(|c| -c as i128),
        b'\'' => char_value(text),
        _ => match text {
            "NULL" | "false" => Some(0),
            "true" => Some(1),
            _ => {
                let inner = text.strip_prefix("ERR_PTR(")?.strip_suffix(')')?;
                let code = int(inner, true)?;
                Some(if signed_errptr {
                    code
                } else {
                    code as i64 as u64 as i128
                })
            }
        },
    }
}

/// `'c'`, `'\n'`, `'\x7f'`: plain `char` as rendered.
fn char_value(text: &str) -> Option<i128> {
    let inner = text.strip_prefix('\'')?.strip_suffix('\'')?;
    let v = match inner.as_bytes() {
        [c] => *c,
        [b'\\', b'n'] => b'\n',
        [b'\\', b't'] => b'\t',
        [b'\\', b'r'] => b'\r',
        [b'\\', b'0'] => 0,
        [b'\\', c @ (b'\\' | b'\'')] => *c,
        [b'\\', b'x', ..] => u8::from_str_radix(&inner[2..], 16).ok()?,
        _ => return None,
    };
    Some(v as i128)
}

/// An enumerator's value, or the OR of a flag enum's `A|B`.
fn enumerators(text: &str, e: &EnumType) -> Option<i128> {
    let mut v = 0i128;
    for part in text.split('|') {
        v |= e.value(part)? as i128;
    }
    Some(v)
}

/// A quoted string as `render_string` writes it; `None` when cut short (`"abc"...`) or
/// malformed.
fn string(text: &str) -> Option<Cow<'_, str>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'x' => {
                let h: String = chars.by_ref().take(2).collect();
                out.push(char::from(u8::from_str_radix(&h, 16).ok()?));
            }
            c => out.push(c),
        }
    }
    Some(Cow::Owned(out))
}
