//! Binding: every name of a parsed filter resolved once against a signature — a
//! parameter index or a built-in value, its type, each literal turned into the value it
//! is compared with — or a typed error at the offending token.

use std::cell::RefCell;

use dcg_dbset::glob::Glob;

use crate::error::{ErrorKind, FilterError, Span};
use crate::parse::{is_path, CmpOp, Expr, Filter, Operand, OperandKind};
use crate::sig::{Member, Signature, ValueType};

/// A filter bound to a signature: what the engines and the saved-calls reader evaluate.
#[derive(Debug, Clone)]
pub struct Program {
    pub(crate) func: Option<String>,
    pub(crate) root: Node,
    /// The member paths it reads ([`Field::Member`] indexes them).
    pub(crate) members: Vec<MemberRead>,
}

/// A member path a program reads.
#[derive(Debug, Clone)]
pub(crate) struct MemberRead {
    /// As written (`c->port`).
    pub path: Box<str>,
    /// Read as a whole word (not a bit-field): [`crate::sig::Member::word`].
    pub word: bool,
}

impl Program {
    /// `FUNC` of a `FUNC: EXPR` filter: the function inside the tree it applies to.
    pub fn func(&self) -> Option<&str> {
        self.func.as_deref()
    }

    /// Whether the program reads only values known at a call's entry (parameters,
    /// `comm`, `pid`, `tid`, `cpu`): then it can decide at entry.
    pub fn entry_only(&self) -> bool {
        self.root.entry_only()
    }

    /// The member paths the program reads (`c->port`): each is read as `--fields PATH`
    /// reads it, and its value is the argument of that name.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|m| &*m.path)
    }

    /// The values the program reads, each once, in the order it reads them first: what
    /// an engine has to fetch for it.
    pub fn fields(&self) -> Vec<Field> {
        let mut out = Vec::new();
        self.root.fields(&mut out);
        out
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Or(Box<Node>, Box<Node>),
    And(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Test(Test),
}

impl Node {
    fn fields(&self, out: &mut Vec<Field>) {
        match self {
            Node::Or(a, b) | Node::And(a, b) => {
                a.fields(out);
                b.fields(out);
            }
            Node::Not(a) => a.fields(out),
            Node::Test(t) if !out.contains(&t.field) => out.push(t.field),
            Node::Test(_) => {}
        }
    }

    fn entry_only(&self) -> bool {
        match self {
            Node::Or(a, b) | Node::And(a, b) => a.entry_only() && b.entry_only(),
            Node::Not(a) => a.entry_only(),
            Node::Test(t) => !matches!(t.field, Field::Ret | Field::Duration),
        }
    }
}

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Parameter by index.
    Arg(usize),
    /// A member path, by index into [`Program::members`]: the value `--fields` reads.
    Member(usize),
    /// The return value.
    Ret,
    /// The call's duration, ns.
    Duration,
    /// The task's command name.
    Comm,
    /// The process id.
    Pid,
    /// The thread id.
    Tid,
    /// The CPU.
    Cpu,
}

/// One comparison of a bound program.
#[derive(Debug, Clone)]
pub(crate) struct Test {
    pub field: Field,
    /// The parameter's name, for [`Field::Arg`]; the path, for [`Field::Member`].
    pub name: Box<str>,
    pub ty: ValueType,
    pub mask: Option<u64>,
    pub op: Op,
}

/// What a value is compared with.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Nonzero (non-NULL).
    Truth,
    Int(CmpOp, i128),
    Null(bool),
    Str(bool, String),
    Glob(Glob),
    /// An unknown name compared with an untyped value's text (`==` when true).
    Ident(bool, String),
}

const BUILTINS: [&str; 6] = ["ret", "duration", "comm", "pid", "tid", "cpu"];

/// Bind `filter` to `sig`: the program to evaluate, or the first refused token.
pub fn bind(filter: &Filter, sig: &Signature) -> Result<Program, FilterError> {
    let binder = Binder {
        sig,
        members: RefCell::default(),
    };
    let root = binder.expr(&filter.expr)?;
    Ok(Program {
        func: filter.func.as_ref().map(|(f, _)| f.clone()),
        root,
        members: binder.members.into_inner(),
    })
}

struct Binder<'a> {
    sig: &'a Signature,
    /// The member paths bound so far.
    members: RefCell<Vec<MemberRead>>,
}

impl Binder<'_> {
    fn expr(&self, e: &Expr) -> Result<Node, FilterError> {
        Ok(match e {
            Expr::Or(a, b) => Node::Or(Box::new(self.expr(a)?), Box::new(self.expr(b)?)),
            Expr::And(a, b) => Node::And(Box::new(self.expr(a)?), Box::new(self.expr(b)?)),
            Expr::Not(a) => Node::Not(Box::new(self.expr(a)?)),
            Expr::Truth(o) => Node::Test(self.truth(o)?),
            Expr::Cmp {
                lhs,
                op,
                op_span,
                rhs,
            } => Node::Test(self.cmp(lhs, *op, op_span, rhs)?),
        })
    }

    /// The field an operand names, with its type; `None` when it is a literal.
    fn field(&self, o: &Operand) -> Option<(Field, ValueType)> {
        let OperandKind::Name {
            name,
            negated: false,
        } = &o.kind
        else {
            return None;
        };
        if is_path(name) {
            return self.member(o, name).ok();
        }
        // Parameters first: a parameter named `pid` is the parameter.
        if let Some(i) = self.sig.param(name) {
            return Some((Field::Arg(i), self.sig.params[i].ty.clone()));
        }
        let unsigned = ValueType::Int {
            size: 8,
            signed: false,
        };
        Some(match name.as_str() {
            "ret" => (Field::Ret, self.sig.ret.clone()),
            "duration" => (Field::Duration, unsigned),
            "comm" => (Field::Comm, ValueType::CString),
            "pid" => (Field::Pid, unsigned),
            "tid" => (Field::Tid, unsigned),
            "cpu" => (Field::Cpu, unsigned),
            _ => return None,
        })
    }

    /// Member `path` (operand `o`) as the signature resolved it: by a db function's
    /// types (refused as `--fields` refuses it), or, untyped, when its parameter or the
    /// path itself is among the names.
    fn member(&self, o: &Operand, path: &str) -> Result<(Field, ValueType), FilterError> {
        let (ty, word) = if self.sig.is_untyped() {
            let root = path.split(['-', '.']).next().unwrap_or(path);
            if self.sig.param(root).is_none() && self.sig.param(path).is_none() {
                return Err(self.unknown_name(o));
            }
            (ValueType::Untyped, false)
        } else {
            let refuse = |msg: String| FilterError {
                kind: ErrorKind::Member(msg),
                span: o.span.clone(),
            };
            match self.sig.members.iter().find(|m| m.path == path) {
                Some(Member {
                    ty: Ok(ty), word, ..
                }) => (ty.clone(), *word),
                Some(Member { ty: Err(why), .. }) => return Err(refuse(why.clone())),
                None => return Err(refuse(format!("{path}: not resolved against the function"))),
            }
        };
        let mut members = self.members.borrow_mut();
        let i = match members.iter().position(|m| &*m.path == path) {
            Some(i) => i,
            None => {
                members.push(MemberRead {
                    path: path.into(),
                    word,
                });
                members.len() - 1
            }
        };
        Ok((Field::Member(i), ty))
    }

    fn param_name(&self, field: Field) -> Box<str> {
        match field {
            Field::Arg(i) => self.sig.params[i].name.as_str().into(),
            Field::Member(i) => self.members.borrow()[i].path.clone(),
            _ => "".into(),
        }
    }

    fn unknown_name(&self, o: &Operand) -> FilterError {
        let name = match &o.kind {
            OperandKind::Name { name, .. } => name.clone(),
            _ => String::new(),
        };
        FilterError {
            kind: ErrorKind::UnknownName {
                name,
                params: self
                    .sig
                    .params
                    .iter()
                    .filter(|p| !p.name.is_empty())
                    .map(|p| p.name.clone())
                    .collect(),
            },
            span: o.span.clone(),
        }
    }

    /// The field side of a test: a name, or `name & mask`.
    fn subject(&self, o: &Operand) -> Result<(Field, ValueType, Option<u64>), FilterError> {
        if let OperandKind::Mask(value, mask) = &o.kind {
            let (field, ty, inner) = self.subject(value)?;
            if inner.is_some() {
                return Err(FilterError::mismatch(
                    "one '&' per value: write the masks as one number",
                    o.span.clone(),
                ));
            }
            let m = self.mask(&field, &ty, value, mask)?;
            return Ok((field, ty, Some(m)));
        }
        if let OperandKind::Name {
            name,
            negated: false,
        } = &o.kind
        {
            if is_path(name) {
                let (f, ty) = self.member(o, name)?;
                return Ok((f, ty, None));
            }
        }
        match self.field(o) {
            Some((f, ty)) => Ok((f, ty, None)),
            None if is_plain_name(o) => Err(self.unknown_name(o)),
            None => Err(FilterError::mismatch(
                "a value alone is not a condition: compare a name with it",
                o.span.clone(),
            )),
        }
    }

    fn mask(
        &self,
        field: &Field,
        ty: &ValueType,
        value: &Operand,
        mask: &Operand,
    ) -> Result<u64, FilterError> {
        let what = match (field, ty) {
            (Field::Duration, _) => Some("a duration"),
            (Field::Comm, _) | (_, ValueType::CString) => Some("a string"),
            (_, ValueType::Pointer) => Some("a pointer"),
            (_, ValueType::Other(n)) => Some(n.as_str()),
            _ => None,
        };
        if let Some(what) = what {
            return Err(FilterError::mismatch(
                format!("'&' tests bits of integers; '{}' is {what}", text_of(value)),
                value.span.clone(),
            ));
        }
        match self.literal(ty, mask)? {
            Lit::Int(v) => Ok(v as u64),
            _ => Err(FilterError::mismatch(
                "the mask of '&' is a number or an enumerator",
                mask.span.clone(),
            )),
        }
    }

    fn truth(&self, o: &Operand) -> Result<Test, FilterError> {
        let (field, ty, mask) = self.subject(o)?;
        if mask.is_none() {
            let refuse = match (field, &ty) {
                (Field::Duration, _) => Some("a duration: compare it ('duration > 1ms')"),
                (Field::Comm, _) => Some("a string: compare it ('comm == \"cat\"')"),
                (_, ValueType::Other(_)) => Some("not a number or a pointer"),
                _ => None,
            };
            if let Some(why) = refuse {
                return Err(FilterError::mismatch(
                    format!("'{}' alone is {why}", text_of(o)),
                    o.span.clone(),
                ));
            }
        }
        Ok(Test {
            name: self.param_name(field),
            field,
            ty,
            mask,
            op: Op::Truth,
        })
    }

    fn cmp(
        &self,
        lhs: &Operand,
        op: CmpOp,
        op_span: &Span,
        rhs: &Operand,
    ) -> Result<Test, FilterError> {
        // A literal on the left (`0 < len`) is turned around.
        let (lhs, op, rhs) = if self.field(lhs).is_none()
            && !matches!(lhs.kind, OperandKind::Mask(..))
            && !is_path_operand(lhs)
            && (self.field(rhs).is_some()
                || matches!(rhs.kind, OperandKind::Mask(..))
                || is_path_operand(rhs))
        {
            (rhs, mirror(op), lhs)
        } else {
            (lhs, op, rhs)
        };
        let (field, ty, mask) = self.subject(lhs)?;
        if let Some((_, _)) = self.field(rhs) {
            return Err(FilterError::mismatch(
                "names are compared with values, not with other names",
                rhs.span.clone(),
            ));
        }
        let op = self.operation(field, &ty, mask.is_some(), op, op_span, lhs, rhs)?;
        Ok(Test {
            name: self.param_name(field),
            field,
            ty,
            mask,
            op,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn operation(
        &self,
        field: Field,
        ty: &ValueType,
        masked: bool,
        op: CmpOp,
        op_span: &Span,
        lhs: &Operand,
        rhs: &Operand,
    ) -> Result<Op, FilterError> {
        if let ValueType::Other(n) = ty {
            return Err(FilterError::mismatch(
                format!("'{}' is {n}: no filter compares it", text_of(lhs)),
                lhs.span.clone(),
            ));
        }
        let stringy = matches!(ty, ValueType::CString | ValueType::Untyped) && !masked;
        if op == CmpOp::Glob && !stringy {
            return Err(FilterError::mismatch(
                format!("'~' matches strings; '{}' is not one", text_of(lhs)),
                op_span.clone(),
            ));
        }
        let lit = if field == Field::Duration {
            match rhs.kind {
                OperandKind::Duration(ns) => Lit::Int(ns as i128),
                _ => {
                    return Err(FilterError::mismatch(
                        "duration is compared with a duration ('10us', '1.5ms')",
                        rhs.span.clone(),
                    ))
                }
            }
        } else if masked {
            self.literal(
                &ValueType::Int {
                    size: 8,
                    signed: false,
                },
                rhs,
            )?
        } else {
            self.literal(ty, rhs)?
        };
        let equality = matches!(op, CmpOp::Eq | CmpOp::Ne);
        let eq = op == CmpOp::Eq;
        let bad_op = |what: &str| {
            FilterError::mismatch(
                format!("'{}' does not apply to {what}", op.as_str()),
                op_span.clone(),
            )
        };
        Ok(match lit {
            Lit::Str(s) if op == CmpOp::Glob && stringy => {
                Op::Glob(Glob::new(&s).map_err(|e| {
                    FilterError::syntax(format!("bad glob: {}", e.reason), rhs.span.clone())
                })?)
            }
            _ if op == CmpOp::Glob => {
                return Err(FilterError::mismatch(
                    "'~' takes a glob in a string (\"*.conf\")",
                    rhs.span.clone(),
                ))
            }
            Lit::Str(s) if equality && stringy => Op::Str(eq, s),
            Lit::Str(_) if stringy => return Err(bad_op("strings")),
            Lit::Null if equality => Op::Null(eq),
            Lit::Null => return Err(bad_op("NULL")),
            Lit::Ident(n) if equality => Op::Ident(eq, n),
            Lit::Ident(_) => return Err(bad_op("names of values")),
            Lit::Int(_) if matches!(ty, ValueType::CString) && !masked => {
                return Err(FilterError::mismatch(
                    format!("'{}' is a string: compare it with a string", text_of(lhs)),
                    rhs.span.clone(),
                ))
            }
            Lit::Int(_) if matches!(ty, ValueType::Bool) && !equality => {
                return Err(bad_op("a bool"))
            }
            Lit::Int(v) => Op::Int(op, wrap(v, ty, masked)),
            // (`literal` gives strings for string and untyped values only.)
            Lit::Str(_) => return Err(bad_op("this value")),
        })
    }

    /// What a literal means next to a value of type `ty`.
    fn literal(&self, ty: &ValueType, o: &Operand) -> Result<Lit, FilterError> {
        let mismatch = |what: &str| {
            FilterError::mismatch(
                format!("{what} '{}' compared with {}", text_of(o), describe(ty)),
                o.span.clone(),
            )
        };
        match &o.kind {
            OperandKind::Int(v) => match ty {
                ValueType::CString => Err(mismatch("a number")),
                _ => Ok(Lit::Int(*v)),
            },
            OperandKind::Duration(_) => Err(mismatch("a duration")),
            OperandKind::Str(s) => match ty {
                ValueType::CString | ValueType::Untyped => Ok(Lit::Str(s.clone())),
                _ => Err(mismatch("a string")),
            },
            OperandKind::Mask(..) => Err(FilterError::mismatch(
                "'&' goes on the name's side of a comparison",
                o.span.clone(),
            )),
            OperandKind::Name { name, negated } => self.named(ty, name, *negated, o),
        }
    }

    /// A name used as a value: `NULL`, `true`/`false`, an enumerator, an errno.
    fn named(
        &self,
        ty: &ValueType,
        name: &str,
        negated: bool,
        o: &Operand,
    ) -> Result<Lit, FilterError> {
        let mismatch = |what: &str| {
            FilterError::mismatch(
                format!("{what} '{}' compared with {}", text_of(o), describe(ty)),
                o.span.clone(),
            )
        };
        if !negated {
            match (name, ty) {
                ("NULL", ValueType::Pointer | ValueType::CString | ValueType::Untyped) => {
                    return Ok(Lit::Null)
                }
                ("NULL", _) => return Err(mismatch("NULL")),
                ("true" | "false", ValueType::Bool | ValueType::Untyped) => {
                    return Ok(Lit::Int((name == "true") as i128))
                }
                ("true" | "false", _) => return Err(mismatch("a bool")),
                (_, ValueType::Enum(e)) => {
                    if let Some(v) = e.value(name) {
                        return Ok(Lit::Int(v as i128));
                    }
                }
                _ => {}
            }
        }
        if let Some(code) = dcg_render::errno_code(name) {
            return match ty {
                ValueType::Int { .. } | ValueType::Pointer | ValueType::Untyped => {
                    Ok(Lit::Int(if negated { -code } else { code } as i128))
                }
                _ => Err(mismatch("an errno")),
            };
        }
        match ty {
            ValueType::Enum(e) if !negated => Err(FilterError {
                kind: ErrorKind::UnknownEnumerator {
                    name: name.to_string(),
                    enum_name: e.name.clone(),
                    known: e.enumerators.iter().map(|(n, _)| n.clone()).collect(),
                },
                span: o.span.clone(),
            }),
            ValueType::Untyped if !negated && !BUILTINS.contains(&name) => {
                Ok(Lit::Ident(name.to_string()))
            }
            _ if negated => Err(FilterError::mismatch(
                format!("'{name}' is not an errno name"),
                o.span.clone(),
            )),
            _ => Err(self.unknown_name(o)),
        }
    }
}

/// A literal, bound.
enum Lit {
    Int(i128),
    Str(String),
    Null,
    Ident(String),
}

/// A negative literal compared with an unsigned value is its bit pattern at the value's
/// width (`-1` of an `unsigned int` is 0xffffffff; `-ENOENT` of a pointer, the
/// `ERR_PTR`), as C converts it.
fn wrap(v: i128, ty: &ValueType, masked: bool) -> i128 {
    let size = match ty {
        _ if masked => return v,
        ValueType::Int {
            size,
            signed: false,
        } => *size,
        ValueType::Pointer => 8,
        ValueType::Enum(e) if !e.signed => e.size,
        _ => return v,
    };
    if v >= 0 {
        return v;
    }
    dcg_render::truncate(v as i64 as u64, size, false) as i128
}

fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        op => op,
    }
}

fn is_path_operand(o: &Operand) -> bool {
    matches!(&o.kind, OperandKind::Name { name, negated: false } if is_path(name))
}

fn is_plain_name(o: &Operand) -> bool {
    matches!(o.kind, OperandKind::Name { negated: false, .. })
}

/// An operand as the user wrote it, for messages.
fn text_of(o: &Operand) -> String {
    match &o.kind {
        OperandKind::Name { name, negated } => {
            format!("{}{name}", if *negated { "-" } else { "" })
        }
        OperandKind::Int(v) => v.to_string(),
        OperandKind::Duration(ns) => duration_text(*ns),
        OperandKind::Str(s) => format!("\"{s}\""),
        OperandKind::Mask(a, b) => format!("{} & {}", text_of(a), text_of(b)),
    }
}

fn describe(ty: &ValueType) -> String {
    match ty {
        ValueType::Int { size, signed } => {
            format!(
                "a {}-bit {} integer",
                size * 8,
                if *signed { "signed" } else { "unsigned" }
            )
        }
        ValueType::Bool => "a bool".into(),
        ValueType::Pointer => "a pointer".into(),
        ValueType::CString => "a string".into(),
        ValueType::Enum(e) => e.name.clone(),
        ValueType::Other(n) => n.clone(),
        ValueType::Untyped => "a value".into(),
    }
}

/// A duration in its largest exact unit: `10us`, `1500us`, `2s`.
fn duration_text(ns: u64) -> String {
    let (v, unit) = match ns {
        0 => (0, "ns"),
        n if n % 1_000_000_000 == 0 => (n / 1_000_000_000, "s"),
        n if n % 1_000_000 == 0 => (n / 1_000_000, "ms"),
        n if n % 1_000 == 0 => (n / 1_000, "us"),
        n => (n, "ns"),
    };
    format!("{v}{unit}")
}
