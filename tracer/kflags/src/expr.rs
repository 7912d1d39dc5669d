//! Tokens of a `print fmt:` line and the C constant expressions of its flag tables:
//! integer literals (with `u`/`l` suffixes, hex, octal), casts, `~ ! -`, `* / %`,
//! `+ -`, `<< >>`, `&`, `^`, `|`, parentheses; computed as the kernel's 64-bit
//! `unsigned long`.

use crate::Error;

/// A token of a print format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Num(u64),
    Ident(String),
    Str(String),
    Punct(&'static str),
}

const PUNCTS: [&str; 30] = [
    "<<", ">>", "->", "&&", "||", "==", "!=", "<=", ">=", "(", ")", "{", "}", ",", "|", "&", "^",
    "~", "!", "+", "-", "*", "/", "%", "?", ":", "<", ">", ".", ";",
];

/// Split `s` into tokens; brackets and unknown characters are dropped (they never occur
/// inside a flag table).
pub(crate) fn tokens(s: &str) -> Result<Vec<Tok>, Error> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut text = String::new();
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                text.push(char::from(b[i]));
                i += 1;
            }
            i += 1;
            out.push(Tok::Str(text));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Num(number(&s[start..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else if let Some(p) = PUNCTS.iter().find(|p| s[i..].starts_with(**p)) {
            out.push(Tok::Punct(p));
            i += p.len();
        } else {
            i += 1;
        }
    }
    Ok(out)
}

/// A C integer literal: `10`, `0x400`, `010`, with `u`/`l` suffixes.
fn number(text: &str) -> Result<u64, Error> {
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    let parsed = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(h, 16)
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse()
    };
    parsed.map_err(|_| Error::Expr(format!("bad number {text:?}")))
}

/// An expression's value and the type names it was cast to (`gfp_t`).
pub(crate) struct Value {
    pub value: u64,
    pub casts: Vec<String>,
}

/// The values of identifiers a format leaves unexpanded (enum constants): a db's
/// enumerators, say.
pub type Consts<'c> = &'c dyn Fn(&str) -> Option<u64>;

/// Evaluate the whole token slice as one constant expression.
pub(crate) fn eval(toks: &[Tok], consts: Consts<'_>) -> Result<Value, Error> {
    let mut p = Parser {
        consts,
        toks,
        at: 0,
        casts: Vec::new(),
        depth: 0,
    };
    let value = p.binary(0)?;
    if p.at != toks.len() {
        return Err(Error::Expr(format!("unexpected {:?}", toks[p.at])));
    }
    Ok(Value {
        value,
        casts: p.casts,
    })
}

struct Parser<'t> {
    consts: Consts<'t>,
    toks: &'t [Tok],
    at: usize,
    casts: Vec<String>,
    /// Nesting of unary operators and parentheses, bounded (the stack is).
    depth: u32,
}

/// How deep an expression may nest.
const MAX_DEPTH: u32 = 200;

/// Binary operators by precedence, loosest first.
const LEVELS: [&[&str]; 7] = [
    &["|"],
    &["^"],
    &["&"],
    &["+", "-"],
    &["<<", ">>"],
    &["*", "/", "%"],
    &[],
];

impl Parser<'_> {
    fn peek(&self, at: usize) -> Option<&Tok> {
        self.toks.get(at)
    }

    fn binary(&mut self, level: usize) -> Result<u64, Error> {
        if LEVELS[level].is_empty() {
            return self.unary();
        }
        let mut v = self.binary(level + 1)?;
        while let Some(Tok::Punct(op)) = self.peek(self.at) {
            if !LEVELS[level].contains(op) {
                break;
            }
            let op = *op;
            self.at += 1;
            let r = self.binary(level + 1)?;
            v = match op {
                "|" => v | r,
                "^" => v ^ r,
                "&" => v & r,
                "+" => v.wrapping_add(r),
                "-" => v.wrapping_sub(r),
                "<<" => v.checked_shl(r as u32).filter(|_| r < 64).unwrap_or(0),
                ">>" => v.checked_shr(r as u32).filter(|_| r < 64).unwrap_or(0),
                "*" => v.wrapping_mul(r),
                "/" => v
                    .checked_div(r)
                    .ok_or(Error::Expr("division by 0".into()))?,
                _ => v
                    .checked_rem(r)
                    .ok_or(Error::Expr("division by 0".into()))?,
            };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<u64, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::Expr("nested too deep".into()));
        }
        let v = self.operand();
        self.depth -= 1;
        v
    }

    fn operand(&mut self) -> Result<u64, Error> {
        match self.peek(self.at) {
            Some(Tok::Punct("~")) => {
                self.at += 1;
                Ok(!self.unary()?)
            }
            Some(Tok::Punct("-")) => {
                self.at += 1;
                Ok(self.unary()?.wrapping_neg())
            }
            Some(Tok::Punct("+")) => {
                self.at += 1;
                self.unary()
            }
            Some(Tok::Punct("!")) => {
                self.at += 1;
                Ok(u64::from(self.unary()? == 0))
            }
            Some(Tok::Punct("(")) => {
                if let Some((names, end)) = self.cast_at(self.at) {
                    self.at = end;
                    let v = self.unary()?;
                    let v = cast(&names, v);
                    self.casts
                        .extend(names.into_iter().filter(|n| !is_c_word(n)));
                    return Ok(v);
                }
                self.at += 1;
                let v = self.binary(0)?;
                match self.peek(self.at) {
                    Some(Tok::Punct(")")) => {
                        self.at += 1;
                        Ok(v)
                    }
                    t => Err(Error::Expr(format!("expected ')', found {t:?}"))),
                }
            }
            Some(Tok::Num(n)) => {
                let n = *n;
                self.at += 1;
                Ok(n)
            }
            Some(Tok::Ident(name)) if (self.consts)(name).is_some() => {
                let v = (self.consts)(name).unwrap_or(0);
                self.at += 1;
                Ok(v)
            }
            t => Err(Error::Expr(format!("not a constant: {t:?}"))),
        }
    }

    /// A cast at `at`: `(` type words and `*` `)` followed by an operand; its type words
    /// and the index after `)`.
    fn cast_at(&self, at: usize) -> Option<(Vec<String>, usize)> {
        let mut names = Vec::new();
        let mut i = at + 1;
        loop {
            match self.peek(i)? {
                Tok::Ident(n) => names.push(n.clone()),
                Tok::Punct("*") if !names.is_empty() => names.push("*".into()),
                Tok::Punct(")") => break,
                _ => return None,
            }
            i += 1;
        }
        let operand = matches!(
            self.peek(i + 1)?,
            Tok::Num(_) | Tok::Ident(_) | Tok::Punct("(" | "~" | "-" | "!" | "+")
        );
        (!names.is_empty() && operand).then_some((names, i + 1))
    }
}

/// Whether `w` is a word of a C base type (not a typedef's name).
pub(crate) fn is_c_word(w: &str) -> bool {
    matches!(
        w,
        "unsigned" | "signed" | "long" | "int" | "short" | "char" | "void" | "const" | "*"
    )
}

/// A value converted to the cast's type: `int`/`short`/`char` widths truncate; the rest
/// (`unsigned long`, typedefs, pointers) are taken as 64 bits.
fn cast(names: &[String], v: u64) -> u64 {
    let has = |w: &str| names.iter().any(|n| n == w);
    if has("*") || has("long") {
        v
    } else if has("char") {
        v & 0xff
    } else if has("short") {
        v & 0xffff
    } else if has("int") {
        v & 0xffff_ffff
    } else {
        v
    }
}
