//! Evaluating a bound program over one call: the values come through [`CallValues`],
//! raw from an engine or as rendered text from a saved call; nothing is allocated per
//! call (a string with escapes in saved text excepted).

use std::borrow::Cow;

use crate::bind::{Field, Node, Op, Program, Test};
use crate::parse::CmpOp;
use crate::sig::ValueType;
use crate::text::{read_text, Read};

/// A value as a source of calls has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// The raw register or memory value; the program truncates it to its type's width and
    /// sign-extends it when signed.
    Raw(u64),
    /// The string a `char *` points to, read whole.
    Str(&'a str),
    /// The value as dcg renders it (a saved call's `value`, `ret`), read back by type.
    Text(&'a str),
    /// Not known (not read, not delivered): every comparison of it is false.
    Missing,
}

/// What a program reads of a call. The engines and the call tree implement it for
/// their calls; [`crate::saved::RecordValues`] for saved calls.
pub trait CallValues {
    /// Parameter `index` (the signature's order).
    fn arg(&self, index: usize) -> Value<'_>;
    /// Parameter `index`, named `name` in the bound signature: sources whose arguments
    /// may be missing or out of order (text) check the name.
    fn arg_named(&self, index: usize, name: &str) -> Value<'_> {
        let _ = name;
        self.arg(index)
    }
    /// Member `path` (`c->port`) as `--fields` read it: saved calls carry it as the
    /// argument named by its path. Missing unless the source has it.
    fn member(&self, path: &str) -> Value<'_> {
        let _ = path;
        Value::Missing
    }
    /// The return value.
    fn ret(&self) -> Value<'_>;
    /// The duration in ns.
    fn duration_ns(&self) -> Option<u64>;
    /// The task's command name.
    fn comm(&self) -> Option<&str>;
    /// The process id.
    fn pid(&self) -> Option<u64>;
    /// The thread id.
    fn tid(&self) -> Option<u64>;
    /// The CPU.
    fn cpu(&self) -> Option<u64>;
}

impl Program {
    /// Whether the call `values` describes passes the filter.
    pub fn matches(&self, values: &dyn CallValues) -> bool {
        node(&self.root, values)
    }
}

fn node(n: &Node, v: &dyn CallValues) -> bool {
    match n {
        Node::Or(a, b) => node(a, v) || node(b, v),
        Node::And(a, b) => node(a, v) && node(b, v),
        Node::Not(a) => !node(a, v),
        Node::Test(t) => test(t, v),
    }
}

fn test(t: &Test, v: &dyn CallValues) -> bool {
    let value = match t.field {
        Field::Arg(i) => v.arg_named(i, &t.name),
        Field::Member(_) => v.member(&t.name),
        Field::Ret => v.ret(),
        Field::Duration => num(v.duration_ns()),
        Field::Comm => v.comm().map_or(Value::Missing, Value::Str),
        Field::Pid => num(v.pid()),
        Field::Tid => num(v.tid()),
        Field::Cpu => num(v.cpu()),
    };
    let Some(mut read) = read(value, &t.ty) else {
        return false;
    };
    if let Some(mask) = t.mask {
        read = match read {
            Read::Int(x) => Read::Int((x as u64 & mask) as i128),
            _ => return false,
        };
    }
    compare(&read, &t.op)
}

fn num(v: Option<u64>) -> Value<'static> {
    v.map_or(Value::Missing, Value::Raw)
}

/// A value read as its type says.
fn read<'a>(value: Value<'a>, ty: &ValueType) -> Option<Read<'a>> {
    match value {
        Value::Missing => None,
        Value::Str(s) => Some(Read::Str(Cow::Borrowed(s))),
        Value::Text(s) => read_text(s, ty),
        Value::Raw(raw) => Some(Read::Int(match ty {
            ValueType::Int { size, signed } => int(raw, *size, *signed),
            ValueType::Enum(e) => int(raw, e.size, e.signed),
            ValueType::Bool => (raw != 0) as i128,
            _ => raw as i128,
        })),
    }
}

fn int(raw: u64, size: u32, signed: bool) -> i128 {
    let v = dcg_render::truncate(raw, size, signed);
    if signed {
        v as i64 as i128
    } else {
        v as i128
    }
}

fn compare(value: &Read<'_>, op: &Op) -> bool {
    match (value, op) {
        (Read::Int(x), Op::Truth) => *x != 0,
        (Read::Str(_) | Read::Ident(_), Op::Truth) => true,
        (Read::Int(x), Op::Int(op, lit)) => match op {
            CmpOp::Eq => x == lit,
            CmpOp::Ne => x != lit,
            CmpOp::Lt => x < lit,
            CmpOp::Le => x <= lit,
            CmpOp::Gt => x > lit,
            CmpOp::Ge => x >= lit,
            CmpOp::Glob => false,
        },
        (Read::Int(x), Op::Null(eq)) => (*x == 0) == *eq,
        (Read::Str(_), Op::Null(eq)) => !*eq,
        (Read::Str(s), Op::Str(eq, lit)) => (s == lit) == *eq,
        (Read::Str(s), Op::Glob(g)) => g.matches(s),
        (Read::Ident(s), Op::Ident(eq, lit)) => (s == lit) == *eq,
        _ => false,
    }
}
