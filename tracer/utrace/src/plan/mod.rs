//! The user-space trace plan ([`UserPlan`], `session.rs`) and what it is made of: the
//! binaries of `--func PATH:PATTERN`, their signature dbs, the functions a pattern
//! selects, and for each one the uprobe / uretprobe definitions that fetch its arguments
//! and return value from their DWARF locations.

mod binary;
mod deref;
mod fetch;
mod fields;
mod inline;
mod jumps;
mod outputs;
mod probe;
mod select;
mod session;
mod values;

pub use binary::*;
pub use deref::*;
pub use fetch::*;
pub use fields::*;
pub use inline::*;
pub use jumps::*;
pub use outputs::*;
pub use probe::*;
pub use select::*;
pub use session::*;
pub use values::*;

use probe::{def, insert_number};

use crate::{Notice, UtraceError};
use dcg_dbset::glob::glob_match;
use dcg_dbset::symbols::SymbolMap;
use object::{Object as _, ObjectSegment as _};
use sigdb::{Db, FuncFlags, Function, Instance, Location, Type, TypeKind};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
type Result<T> = std::result::Result<T, UtraceError>;
use dcg_render::{is_c_string, render, render_string, Role};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        let segs = [
            Segment {
                vaddr: 0,
                filesz: 0x618,
                offset: 0,
            },
            Segment {
                vaddr: 0x401000,
                filesz: 0x1b5,
                offset: 0x1000,
            },
            Segment {
                vaddr: 0x3dd0,
                filesz: 0x248,
                offset: 0x2dd0,
            },
        ];
        assert_eq!(file_offset(&segs, 0x401139), Some(0x1139));
        assert_eq!(file_offset(&segs, 0x100), Some(0x100));
        assert_eq!(file_offset(&segs, 0x3de0), Some(0x2de0));
        assert_eq!(file_offset(&segs, 0x402000), None);
    }

    #[test]
    fn names() {
        assert_eq!(event_base("foo.isra.0"), "foo_isra_0");
        assert_eq!(event_base("0abc"), "_0abc");
        assert_eq!(event_base(&"x".repeat(100)).len(), 48);
    }

    fn f(name: &str, string: bool) -> Field {
        Field {
            name: name.into(),
            fetch: String::new(),
            string,
        }
    }

    #[test]
    fn numbers_before_strings() {
        let mut fields = vec![f("a0", false), f("s1", true), f("comm", true)];
        let mut args = vec![
            (
                "a".to_string(),
                ArgPlan::Fetched {
                    words: vec![0],
                    string: None,
                },
            ),
            (
                "s".to_string(),
                ArgPlan::Fetched {
                    words: vec![],
                    string: Some(1),
                },
            ),
        ];
        assert_eq!(insert_number(&mut fields, &mut args, f(RA_FIELD, false)), 1);
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a0", "ra", "s1", "comm"]);
        assert_eq!(
            args[1].1,
            ArgPlan::Fetched {
                words: vec![],
                string: Some(2)
            }
        );
        assert_eq!(
            args[0].1,
            ArgPlan::Fetched {
                words: vec![0],
                string: None
            }
        );
    }

    #[test]
    fn inline_values() {
        let site = InlineSite {
            copies: Vec::new(),
            target: 0,
            offset: 0x1000,
            event: Some("scale_inl".into()),
            folded: None,
            fields: [("r1", "%dx:x64"), ("r5", "%di:x64"), ("w2", "+16(%sp):x64")]
                .iter()
                .map(|(name, fetch)| Field {
                    name: name.to_string(),
                    fetch: fetch.to_string(),
                    string: false,
                })
                .collect(),
            regs: vec![(1, 0), (5, 1)],
            stack: vec![(2, 2)],
        };
        let values = [Value::Num(7), Value::Num(9), Value::Num(0x40)];
        assert!(site.complete(&values));
        let (regs, stack) = site.values(&values);
        assert_eq!((regs[1], regs[5], regs[0]), (7, 9, 0));
        assert_eq!(stack, [0, 0, 0x40]);
        assert!(!site.complete(&values[..2]));
        assert_eq!(
            site.def("dcg_1", Path::new("/bin/prog")).as_deref(),
            Some("p:dcg_1/scale_inl /bin/prog:0x1000 r1=%dx:x64 r5=%di:x64 w2=+16(%sp):x64")
        );
    }

    #[test]
    fn fields() {
        let fs = [f("a0", false), f("a1", false), f("s0", true), f("s1", true)];
        let v = parse_fields(r#"a0=0x1 a1=0xffffffffffffffea s0="a b" s1="x""#, &fs).unwrap();
        assert_eq!(
            v,
            vec![
                Value::Num(1),
                Value::Num(0xffff_ffff_ffff_ffea),
                Value::Str("a b".into()),
                Value::Str("x".into()),
            ]
        );
        let v = parse_fields(r#"a0=0x0 a1=0x2 s0=(fault) s1="he said "hi" ""#, &fs).unwrap();
        assert_eq!(v[2], Value::Fault);
        assert_eq!(v[3], Value::Str("he said \"hi\" ".into()));
        assert_eq!(parse_fields("a0=0x1", &fs), None);
        assert_eq!(parse_fields("", &[]), Some(vec![]));
        // A word array (--deref's blocks), the low byte first.
        let fs = [f("d0", false), f("a1", false)];
        let v = parse_fields("d0={0x201,0xff} a1=0x3", &fs).unwrap();
        let mut bytes = vec![1, 2, 0, 0, 0, 0, 0, 0, 0xff];
        bytes.resize(16, 0);
        assert_eq!(v, vec![Value::Bytes(bytes), Value::Num(3)]);
    }
}
