//! Errors of parsing and binding a filter, each with the byte span it is about, and the
//! caret message the binary prints.

use std::ops::Range;

/// Byte range of a token or node in the expression text.
pub type Span = Range<usize>;

/// A refused expression: what is wrong ([`ErrorKind`]) and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct FilterError {
    /// What is wrong.
    pub kind: ErrorKind,
    /// The bytes of the expression it is about.
    pub span: Span,
}

/// The classes of refused expressions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// The text is not an expression of the language.
    #[error("{0}")]
    Syntax(String),
    /// A name that is neither a parameter of the function nor a built-in name.
    #[error("unknown name '{name}' (parameters: {})", list_or_none(.params))]
    UnknownName {
        /// The name as written.
        name: String,
        /// The function's parameter names.
        params: Vec<String>,
    },
    /// A member path that does not resolve, or that `--fields` would not read:
    /// `dcg-deref`'s message (`c->prot: struct conf has no member prot (it has: …)`).
    #[error("{0}")]
    Member(String),
    /// An enumerator name not in the enum of the value it is compared with.
    #[error("'{name}' is not an enumerator of {enum_name} ({})", list_or_none(.known))]
    UnknownEnumerator {
        /// The name as written.
        name: String,
        /// The enum type (`enum pid_type`).
        enum_name: String,
        /// Its enumerators.
        known: Vec<String>,
    },
    /// An operator applied to a value of a type it does not apply to, or a literal of the
    /// wrong kind for the value it is compared with.
    #[error("{0}")]
    Mismatch(String),
    /// `FUNC: EXPR` names a function the session cannot see.
    #[error("unknown function '{name}' ({where_})")]
    UnknownFunction {
        /// The name as written.
        name: String,
        /// Where it was looked for (`not in the db`, `not among the traced functions`).
        where_: String,
    },
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl FilterError {
    pub(crate) fn syntax(msg: impl Into<String>, span: Span) -> FilterError {
        FilterError {
            kind: ErrorKind::Syntax(msg.into()),
            span,
        }
    }

    pub(crate) fn mismatch(msg: impl Into<String>, span: Span) -> FilterError {
        FilterError {
            kind: ErrorKind::Mismatch(msg.into()),
            span,
        }
    }

    /// The message with the expression below it and a caret under the offending bytes:
    ///
    /// ```text
    /// --filter: unknown name 'nmae' (parameters: name, flags, mode)
    ///   nmae == "foo"
    ///   ^^^^
    /// ```
    ///
    /// `option` is the option's name (`--filter`); the binary prefixes `dcg: `. Tabs and
    /// other control characters of the expression are shown as spaces, so the caret stays
    /// under its token.
    pub fn caret_message(&self, option: &str, expr: &str) -> String {
        caret_message(option, expr, &self.to_string(), self.span.clone())
    }
}

/// [`FilterError::caret_message`] for any message about `span` of `expr`.
pub fn caret_message(option: &str, expr: &str, message: &str, span: Span) -> String {
    let start = clamp_to_char(expr, span.start.min(expr.len()));
    let end = clamp_to_char(expr, span.end.clamp(start, expr.len()));
    let shown: String = expr
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let pad = expr[..start].chars().count();
    let width = expr[start..end].chars().count().max(1);
    format!(
        "{option}: {message}\n  {shown}\n  {}{}",
        " ".repeat(pad),
        "^".repeat(width)
    )
}

fn clamp_to_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
