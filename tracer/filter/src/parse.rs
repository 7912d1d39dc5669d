//! The syntax tree of an expression and its parser (recursive descent over [`crate::lex`]).
//!
//! ```text
//! filter  := [FUNC ': '] expr
//! expr    := and ('||' and)*
//! and     := unary ('&&' unary)*
//! unary   := '!' unary | '(' expr ')' [cmp operand] | operand [cmp operand]
//! operand := atom ('&' atom)*          -- '&' binds tighter than the comparisons
//! atom    := NAME | PATH | INT | DURATION | STRING | '-' INT | '-' NAME
//! PATH    := NAME ('->' NAME | '.' NAME)+   -- a member path, one token, no spaces
//! cmp     := '==' | '!=' | '<' | '<=' | '>' | '>=' | '~'
//! ```

use crate::error::{FilterError, Span};
use crate::lex::{tokens, Tok, Token};

/// A parsed `--filter` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// `FUNC` of a `FUNC: EXPR` filter, with its span: the expression applies to calls
    /// of FUNC inside the tree, not to the top-level call.
    pub func: Option<(String, Span)>,
    /// The expression.
    pub expr: Expr,
}

impl Filter {
    /// The member paths the expression names (`c->port`), in the order written.
    pub fn paths(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.expr.paths(&mut out);
        out
    }
}

/// Whether a name is a member path (`c->port`, `c->in.tag`) rather than a plain name.
pub fn is_path(name: &str) -> bool {
    name.contains("->") || name.contains('.')
}

impl Expr {
    fn paths<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Or(a, b) | Expr::And(a, b) => {
                a.paths(out);
                b.paths(out);
            }
            Expr::Not(a) => a.paths(out),
            Expr::Cmp { lhs, rhs, .. } => {
                lhs.paths(out);
                rhs.paths(out);
            }
            Expr::Truth(o) => o.paths(out),
        }
    }
}

impl Operand {
    fn paths<'a>(&'a self, out: &mut Vec<&'a str>) {
        match &self.kind {
            OperandKind::Name { name, .. } if is_path(name) => out.push(name),
            OperandKind::Mask(a, b) => {
                a.paths(out);
                b.paths(out);
            }
            _ => {}
        }
    }
}

/// A boolean expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// `a || b`
    Or(Box<Expr>, Box<Expr>),
    /// `a && b`
    And(Box<Expr>, Box<Expr>),
    /// `!a`
    Not(Box<Expr>),
    /// `lhs OP rhs`
    Cmp {
        /// The left operand.
        lhs: Operand,
        /// The operator.
        op: CmpOp,
        /// The operator's span.
        op_span: Span,
        /// The right operand.
        rhs: Operand,
    },
    /// An operand standing alone: true when nonzero (`flags & 0x40`, a bool parameter).
    Truth(Operand),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
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
    /// `~`: a glob match.
    Glob,
}

impl CmpOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Glob => "~",
        }
    }
}

/// An operand and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Operand {
    /// What it is.
    pub kind: OperandKind,
    /// Its bytes in the expression.
    pub span: Span,
}

/// The operands.
#[derive(Debug, Clone, PartialEq)]
pub enum OperandKind {
    /// A name: a parameter, a member path (`c->port`, [`is_path`]), a built-in name, or
    /// (as a literal) an enumerator, an errno name, `NULL`, `true`/`false`; `negated`
    /// when written `-NAME` (`-ENOENT`).
    Name {
        /// The name.
        name: String,
        /// Written with a leading `-`.
        negated: bool,
    },
    /// An integer (`-` applied).
    Int(i128),
    /// A duration in ns.
    Duration(u64),
    /// A string.
    Str(String),
    /// `value & mask`.
    Mask(Box<Operand>, Box<Operand>),
}

/// Parse a `--filter` expression.
pub fn parse(text: &str) -> Result<Filter, FilterError> {
    let (func, body_at) = split_func(text);
    let toks = tokens(&text[body_at..], body_at)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end: text.len(),
    };
    if p.toks.is_empty() {
        return Err(FilterError::syntax("empty expression", body_at..text.len()));
    }
    let expr = p.expr(0)?;
    if let Some(t) = p.peek() {
        let msg = match t.tok {
            Tok::RParen => "unmatched ')'".to_string(),
            _ => "expected '&&', '||' or the end of the expression".to_string(),
        };
        return Err(FilterError::syntax(msg, t.span.clone()));
    }
    Ok(Filter { func, expr })
}

/// `FUNC` of a `FUNC: EXPR` filter and where the expression starts. The function name
/// ends at the first colon followed by a space (user-space `PATH:PATTERN` names hold
/// colons followed by no space); a prefix holding a space or a quote is not a name.
fn split_func(text: &str) -> (Option<(String, Span)>, usize) {
    let lead = text.len() - text.trim_start().len();
    let Some(colon) = text.find(": ") else {
        return (None, 0);
    };
    let name = &text[lead..colon];
    if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '"') {
        return (None, 0);
    }
    (Some((name.to_string(), lead..colon)), colon + 1)
}

/// Nesting beyond this is refused (the parser recurses).
const MAX_DEPTH: usize = 200;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek().is_some_and(|t| &t.tok == tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Span of the next token, or the end of the text.
    fn here(&self) -> Span {
        self.peek()
            .map(|t| t.span.clone())
            .unwrap_or(self.end..self.end)
    }

    fn expr(&mut self, depth: usize) -> Result<Expr, FilterError> {
        if depth > MAX_DEPTH {
            return Err(FilterError::syntax(
                "expression nested too deeply",
                self.here(),
            ));
        }
        let mut lhs = self.and(depth)?;
        while self.eat(&Tok::OrOr) {
            let rhs = self.and(depth)?;
            lhs = Expr::Or(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn and(&mut self, depth: usize) -> Result<Expr, FilterError> {
        let mut lhs = self.unary(depth)?;
        while self.eat(&Tok::AndAnd) {
            let rhs = self.unary(depth)?;
            lhs = Expr::And(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, FilterError> {
        if depth > MAX_DEPTH {
            return Err(FilterError::syntax(
                "expression nested too deeply",
                self.here(),
            ));
        }
        if self.eat(&Tok::Bang) {
            return Ok(Expr::Not(Box::new(self.unary(depth + 1)?)));
        }
        if self.eat(&Tok::LParen) {
            let open = self.toks[self.pos - 1].span.clone();
            let inner = self.expr(depth + 1)?;
            if !self.eat(&Tok::RParen) {
                return Err(FilterError::syntax("expected ')'", self.here_or(open)));
            }
            // `(flags & 0x40) != 0`, as C is written: a lone operand in parentheses
            // may be compared.
            return match inner {
                Expr::Truth(lhs) if self.peek().and_then(|t| cmp_op(&t.tok)).is_some() => {
                    self.comparison(lhs)
                }
                e => Ok(e),
            };
        }
        let lhs = self.operand()?;
        if self.peek().and_then(|t| cmp_op(&t.tok)).is_some() {
            self.comparison(lhs)
        } else {
            Ok(Expr::Truth(lhs))
        }
    }

    /// The span to blame for a missing token: the next token, else `fallback`.
    fn here_or(&self, fallback: Span) -> Span {
        self.peek().map(|t| t.span.clone()).unwrap_or(fallback)
    }

    fn comparison(&mut self, lhs: Operand) -> Result<Expr, FilterError> {
        let t = &self.toks[self.pos];
        let (op, op_span) = (cmp_op(&t.tok).unwrap_or(CmpOp::Eq), t.span.clone());
        self.pos += 1;
        let rhs = self.operand()?;
        if let Some(t) = self.peek() {
            if cmp_op(&t.tok).is_some() {
                return Err(FilterError::syntax(
                    "comparisons do not chain: join them with '&&'",
                    t.span.clone(),
                ));
            }
        }
        Ok(Expr::Cmp {
            lhs,
            op,
            op_span,
            rhs,
        })
    }

    fn operand(&mut self) -> Result<Operand, FilterError> {
        let mut lhs = self.atom()?;
        while self.eat(&Tok::Amp) {
            let rhs = self.atom()?;
            let span = lhs.span.start..rhs.span.end;
            lhs = Operand {
                kind: OperandKind::Mask(Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
        Ok(lhs)
    }

    fn atom(&mut self) -> Result<Operand, FilterError> {
        let Some(t) = self.peek().cloned() else {
            return Err(FilterError::syntax(
                "expected a name or a value at the end",
                self.end..self.end,
            ));
        };
        self.pos += 1;
        let kind = match t.tok {
            Tok::Ident(name) => OperandKind::Name {
                name,
                negated: false,
            },
            Tok::Int(v) => OperandKind::Int(v as i128),
            Tok::Duration(ns) => OperandKind::Duration(ns),
            Tok::Str(s) => OperandKind::Str(s),
            Tok::Minus => return self.negated(t.span),
            _ => {
                return Err(FilterError::syntax("expected a name or a value", t.span));
            }
        };
        Ok(Operand { kind, span: t.span })
    }

    /// The atom after a `-`: a negative integer or `-NAME` (an errno).
    fn negated(&mut self, minus: Span) -> Result<Operand, FilterError> {
        let next = self.peek().cloned();
        let kind = match next.as_ref().map(|t| &t.tok) {
            Some(Tok::Int(v)) => OperandKind::Int(-(*v as i128)),
            Some(Tok::Ident(name)) => OperandKind::Name {
                name: name.clone(),
                negated: true,
            },
            _ => {
                return Err(FilterError::syntax(
                    "'-' goes before a number or an errno name",
                    minus,
                ))
            }
        };
        self.pos += 1;
        let end = next.map(|t| t.span.end).unwrap_or(minus.end);
        Ok(Operand {
            kind,
            span: minus.start..end,
        })
    }
}

fn cmp_op(t: &Tok) -> Option<CmpOp> {
    Some(match t {
        Tok::Eq => CmpOp::Eq,
        Tok::Ne => CmpOp::Ne,
        Tok::Lt => CmpOp::Lt,
        Tok::Le => CmpOp::Le,
        Tok::Gt => CmpOp::Gt,
        Tok::Ge => CmpOp::Ge,
        Tok::Tilde => CmpOp::Glob,
        _ => return None,
    })
}
