//! What of a bound program an engine can decide at a call's entry, on the raw argument
//! registers, before recording anything: the tests a call must pass, exact for what they
//! say (a call they reject cannot pass the program); the rest is decided on the decoded
//! calls.

use crate::bind::{Field, Node, Op, Program, Test};
use crate::parse::CmpOp;
use crate::sig::ValueType;

/// A test on a parameter's raw value at entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryTest {
    /// The parameter's index.
    pub arg: usize,
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
    /// enumerator or `NULL` (or test it for nonzero). Empty for a `FUNC: EXPR` program
    /// (it applies inside the tree), an `||` or a `!` at the top.
    pub fn entry_tests(&self) -> Vec<EntryTest> {
        let mut out = Vec::new();
        if self.func.is_none() {
            conjuncts(&self.root, &mut out);
        }
        out
    }
}

fn conjuncts(n: &Node, out: &mut Vec<EntryTest>) {
    match n {
        Node::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        Node::Test(t) => out.extend(entry_test(t)),
        Node::Or(..) | Node::Not(_) => {}
    }
}

/// `t` as an entry test, when a register decides it exactly as the program would.
fn entry_test(t: &Test) -> Option<EntryTest> {
    let Field::Arg(arg) = t.field else {
        return None;
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
        arg,
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
        }
    }

    fn tests(expr: &str) -> Vec<EntryTest> {
        bind(&parse(expr).unwrap(), &sig()).unwrap().entry_tests()
    }

    #[test]
    fn conjuncts_of_raw_comparisons() {
        let t = tests("fd < 0 && flags & 0x40 && name != NULL && ret == 0");
        assert_eq!(
            t,
            [
                EntryTest {
                    arg: 0,
                    size: 4,
                    signed: true,
                    mask: None,
                    cmp: Some((CmpOp::Lt, 0)),
                },
                EntryTest {
                    arg: 1,
                    size: 4,
                    signed: false,
                    mask: Some(0x40),
                    cmp: None,
                },
                EntryTest {
                    arg: 2,
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
