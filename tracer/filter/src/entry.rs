//! What of a bound program an engine can decide at a call's entry, on the raw argument
//! registers (and, for an engine that reads them there, the words of member paths),
//! before recording anything: the tests a call must pass, exact for what they say (a
//! call they reject cannot pass the program); the rest is decided on the decoded calls.

use crate::bind::{Field, MemberRead, Node, Op, Program, Test};
use crate::parse::CmpOp;
use crate::sig::ValueType;

/// The value an entry test reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryValue {
    /// The parameter of this index.
    Arg(usize),
    /// The word `--fields PATH` reads (a member, not a bit-field; a pointer followed on
    /// the way that is `NULL` makes the program's test false, so the word read then
    /// decides nothing the program would keep).
    Member(String),
}

/// A test on a parameter's (or a member's) raw value at entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryTest {
    /// What it reads.
    pub value: EntryValue,
    /// Bytes of the value (the register's low bytes).
    pub size: u32,
    /// Sign-extended and compared as signed.
    pub signed: bool,
    /// ANDed with the value first (then compared as unsigned).
    pub mask: Option<u64>,
    /// The comparison and its operand (as i64 bits for an unsigned value); `None`: the
    /// value is nonzero.
    pub cmp: Option<(CmpOp, i64)>,
}

impl Program {
    /// The tests on integer, enum and pointer parameters the program needs to hold: the
    /// conjuncts of its top-level `&&` chain that compare a parameter with a number, an
    /// enumerator or `NULL` (or test it for nonzero); with `members` (an engine that
    /// reads the members' words at the entry), such tests on member paths too. Empty for
    /// a `FUNC: EXPR` program (it applies inside the tree), an `||` or a `!` at the top.
    pub fn entry_tests(&self, members: bool) -> Vec<EntryTest> {
        let mut out = Vec::new();
        if self.func.is_none() {
            let members = if members { &self.members[..] } else { &[] };
            conjuncts(&self.root, members, &mut out);
        }
        out
    }
}

fn conjuncts(n: &Node, members: &[MemberRead], out: &mut Vec<EntryTest>) {
    match n {
        Node::And(a, b) => {
            conjuncts(a, members, out);
            conjuncts(b, members, out);
        }
        Node::Test(t) => out.extend(entry_test(t, members)),
        Node::Or(..) | Node::Not(_) => {}
    }
}

/// `t` as an entry test, when a register (or a member's word, for the `members` given)
/// decides it exactly as the program would.
fn entry_test(t: &Test, members: &[MemberRead]) -> Option<EntryTest> {
    let value = match t.field {
        Field::Arg(arg) => EntryValue::Arg(arg),
        // A `char` array's word is its bytes, not an address.
        Field::Member(i) if t.ty != ValueType::CString => {
            let m = members.get(i).filter(|m| m.word)?;
            EntryValue::Member(m.path.to_string())
        }
        _ => return None,
    };
    let (size, signed, pointer) = match &t.ty {
        ValueType::Int { size, signed } => (*size, *signed, false),
        ValueType::Enum(e) => (e.size, e.signed, false),
        ValueType::Pointer | ValueType::CString => (8, false, true),
        _ => return None,
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return None;
    }
    // Masked values are compared as unsigned (the program reads them so).
    let signed = signed && t.mask.is_none();
    let cmp = match (&t.op, pointer) {
        (Op::Truth, false) => None,
        (Op::Null(eq), true) => Some((if *eq { CmpOp::Eq } else { CmpOp::Ne }, 0)),
        (Op::Int(op, lit), false) if *op != CmpOp::Glob => Some((*op, literal(*lit, signed)?)),
        _ => return None,
    };
    Some(EntryTest {
        value,
        size,
        signed,
        mask: t.mask,
        cmp,
    })
}

/// A literal as the register comparison takes it: within i64 for a signed value, within
/// u64 (as its bits) for an unsigned one; else the test is left to the decoded calls.
fn literal(lit: i128, signed: bool) -> Option<i64> {
    if signed {
        i64::try_from(lit).ok()
    } else {
        u64::try_from(lit).ok().map(|v| v as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sig::{Param, Signature};
    use crate::{bind, parse};

    fn sig() -> Signature {
        let p = |name: &str, ty: ValueType| Param {
            name: name.into(),
            ty,
        };
        Signature {
            params: vec![
                p(
                    "fd",
                    ValueType::Int {
                        size: 4,
                        signed: true,
                    },
                ),
                p(
                    "flags",
                    ValueType::Int {
                        size: 4,
                        signed: false,
                    },
                ),
                p("name", ValueType::CString),
                p("ok", ValueType::Bool),
            ],
            ret: ValueType::Int {
                size: 8,
                signed: true,
            },
            members: Vec::new(),
        }
    }

    fn tests(expr: &str) -> Vec<EntryTest> {
        bind(&parse(expr).unwrap(), &sig())
            .unwrap()
            .entry_tests(true)
    }

    #[test]
    fn conjuncts_of_raw_comparisons() {
        let t = tests("fd < 0 && flags & 0x40 && name != NULL && ret == 0");
        assert_eq!(
            t,
            [
                EntryTest {
                    value: EntryValue::Arg(0),
                    size: 4,
                    signed: true,
                    mask: None,
                    cmp: Some((CmpOp::Lt, 0)),
                },
                EntryTest {
                    value: EntryValue::Arg(1),
                    size: 4,
                    signed: false,
                    mask: Some(0x40),
                    cmp: None,
                },
                EntryTest {
                    value: EntryValue::Arg(2),
                    size: 8,
                    signed: false,
                    mask: None,
                    cmp: Some((CmpOp::Ne, 0)),
                },
            ]
        );
    }

    #[test]
    fn what_a_register_cannot_decide_is_left_out() {
        // An alternative, a negation, a string's text, a bool, a function inside the
        // tree.
        assert!(tests("fd == 1 || fd == 2").is_empty());
        assert!(tests("!(fd == 1)").is_empty());
        assert!(tests("name == \"x\"").is_empty());
        assert!(tests("ok").is_empty());
        assert!(tests("f: fd == 1").is_empty());
        assert_eq!(tests("duration > 1ms && fd >= 3").len(), 1);
    }
}
