//! The tokens of an expression, each with its byte span.

use crate::error::{FilterError, Span};

/// A token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    /// A name: a parameter, a built-in name, an enumerator, an errno, `NULL`, `true`,
    /// or a member path rooted at a parameter (`c->next->port`, `c->in.tag`).
    Ident(String),
    /// An unsigned integer literal (a `-` before it is its own token).
    Int(u64),
    /// A duration literal, in ns.
    Duration(u64),
    /// A string literal, unescaped.
    Str(String),
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `~`
    Tilde,
    /// `&`
    Amp,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `!`
    Bang,
    /// `-`
    Minus,
    /// `(`
    LParen,
    /// `)`
    RParen,
}

/// A token and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its bytes in the expression.
    pub span: Span,
}

/// The tokens of `text`; positions are offset by `base` (the length of a `FUNC: `
/// prefix), so spans index the whole expression.
pub fn tokens(text: &str, base: usize) -> Result<Vec<Token>, FilterError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = b.get(i + 1).copied();
        let (tok, len) = match (c, two) {
            (b'=', Some(b'=')) => (Tok::Eq, 2),
            (b'!', Some(b'=')) => (Tok::Ne, 2),
            (b'<', Some(b'=')) => (Tok::Le, 2),
            (b'>', Some(b'=')) => (Tok::Ge, 2),
            (b'&', Some(b'&')) => (Tok::AndAnd, 2),
            (b'|', Some(b'|')) => (Tok::OrOr, 2),
            (b'<', _) => (Tok::Lt, 1),
            (b'>', _) => (Tok::Gt, 1),
            (b'~', _) => (Tok::Tilde, 1),
            (b'&', _) => (Tok::Amp, 1),
            (b'!', _) => (Tok::Bang, 1),
            (b'-', _) => (Tok::Minus, 1),
            (b'(', _) => (Tok::LParen, 1),
            (b')', _) => (Tok::RParen, 1),
            (b'=', _) => {
                return Err(FilterError::syntax(
                    "'=' is not an operator: compare with '=='",
                    base + i..base + i + 1,
                ))
            }
            (b'"', _) => {
                let (s, len) = string(&text[i..], base + i)?;
                (Tok::Str(s), len)
            }
            (b'0'..=b'9', _) => number(&text[i..], base + i)?,
            (c, _) if is_name_start(c) => {
                let len = name_len(&b[i..]);
                (Tok::Ident(text[i..i + len].to_string()), len)
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(FilterError::syntax(
                    format!("unexpected character '{ch}'"),
                    base + i..base + i + ch.len_utf8(),
                ));
            }
        };
        i += len;
        out.push(Token {
            tok,
            span: base + start..base + i,
        });
    }
    Ok(out)
}

fn is_name_start(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphabetic()
}

/// The length of the name at the start of `b`: a C identifier, and a member path's
/// steps written against it (`c->next->name`, `c->in.tag`; no spaces inside).
fn name_len(b: &[u8]) -> usize {
    let word = |b: &[u8]| {
        b.iter()
            .position(|&c| !(c == b'_' || c.is_ascii_alphanumeric()))
            .unwrap_or(b.len())
    };
    let mut len = word(b);
    loop {
        let step = match &b[len..] {
            [b'-', b'>', c, ..] if is_name_start(*c) => 2,
            [b'.', c, ..] if is_name_start(*c) => 1,
            _ => return len,
        };
        len += step + word(&b[len + step..]);
    }
}

/// A string literal at the start of `s` (which begins with `"`): its text and length.
fn string(s: &str, at: usize) -> Result<(String, usize), FilterError> {
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, i + 1)),
            '\\' => match chars.next() {
                Some((_, '"')) => out.push('"'),
                Some((_, '\\')) => out.push('\\'),
                Some((j, e)) => {
                    return Err(FilterError::syntax(
                        format!("unknown escape '\\{e}' (only \\\" and \\\\)"),
                        at + i..at + j + e.len_utf8(),
                    ))
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(FilterError::syntax("unterminated string", at..at + s.len()))
}

/// Duration units and their ns.
const UNITS: [(&str, u64); 5] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
];

/// A number at the start of `s`: an integer (decimal, `0x` hex, `0` octal) or a duration
/// (`10us`, `1.5ms`).
fn number(s: &str, at: usize) -> Result<(Tok, usize), FilterError> {
    let b = s.as_bytes();
    let word_end = b
        .iter()
        .position(|&c| !(c == b'_' || c == b'.' || c.is_ascii_alphanumeric()))
        .unwrap_or(b.len());
    let word = &s[..word_end];
    let span = at..at + word_end;
    let bad = |what: &str| FilterError::syntax(format!("{what} '{word}'"), span.clone());
    if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).map_err(|_| bad("not a number:"))?;
        return Ok((Tok::Int(v), word_end));
    }
    let digits = word
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(word.len());
    let (num, unit) = word.split_at(digits);
    if unit.is_empty() {
        if num.contains('.') {
            return Err(bad("a fraction needs a duration unit (ns, us, ms, s):"));
        }
        // A leading 0 is octal, as in C (`0644`).
        let v = match num.strip_prefix('0').filter(|o| !o.is_empty()) {
            Some(oct) => u64::from_str_radix(oct, 8).map_err(|_| bad("not an octal number:"))?,
            None => num
                .parse::<u64>()
                .map_err(|_| bad("integer out of range:"))?,
        };
        return Ok((Tok::Int(v), word_end));
    }
    let Some(&(_, scale)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        return Err(bad("unknown unit (ns, us, ms, s, m) in"));
    };
    let ns = duration_ns(num, scale).ok_or_else(|| bad("not a duration:"))?;
    Ok((Tok::Duration(ns), word_end))
}

/// `num` (digits with at most one `.`) times `scale`, in ns, rounded down.
fn duration_ns(num: &str, scale: u64) -> Option<u64> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() || frac.contains('.') || frac.len() > 9 {
        return None;
    }
    let whole: u128 = int.parse().ok()?;
    let frac_v: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let denom = 10u128.pow(frac.len() as u32);
    let ns = (whole * denom + frac_v) * scale as u128 / denom;
    u64::try_from(ns).ok()
}
