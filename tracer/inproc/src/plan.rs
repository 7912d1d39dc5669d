//! The plan file: the targets, the functions and how each value is fetched.
//!
//! Values are planned as fetch expressions in the syntax of uprobe events (`%di:x64`,
//! `+8(%sp):x64`, `+0(%si):ustring`, `$retval:x64`, `+8($retval):x64`) so that both
//! user-space engines read a parameter from the same plan; the in-process recorder also
//! reads `%xmmN` (`%xmmN_hi` for the upper half), `%st0` / `%st0_hi`, and at a return
//! `%savedK`, the value of an entry fetch the call kept ([`FuncDesc::saved`]). [`parse_fetch`]
//! turns one into a [`FetchOp`].

use std::io::Write;
use std::path::Path;

use zerocopy::IntoBytes;

use crate::layout::*;
use crate::InprocError;

/// A function of the plan.
#[derive(Debug, Clone)]
pub struct PlanFunc {
    /// Index of its target.
    pub target: u32,
    /// ELF address.
    pub addr: u64,
    /// Bytes of code.
    pub size: u32,
    /// How the entry reaches the recorder ([`mode`]).
    pub mode: u8,
    /// [`fflags`].
    pub flags: u8,
    /// See [`FuncDesc::site_off`].
    pub site_off: u8,
    /// See [`FuncDesc::patch_len`].
    pub patch_len: u8,
    /// The entry record's fetches.
    pub entry: Vec<FetchOp>,
    /// The return record's fetches.
    pub ret: Vec<FetchOp>,
    /// The tests on entry fetches a top-level call must pass to be recorded.
    pub conds: Vec<CondTest>,
    /// Entry fetches (indices) whose values the return's `%savedK` fetches start from.
    pub saved: Vec<u16>,
}

/// A target binary of the plan.
#[derive(Debug, Clone)]
pub struct PlanTarget {
    /// GNU build-id (empty: match by path).
    pub build_id: Vec<u8>,
    /// Path as the process maps it.
    pub path: String,
}

/// General registers by their uprobe fetch name, as DWARF numbers.
const GPRS: [(&str, u8); 16] = [
    ("ax", 0),
    ("dx", 1),
    ("cx", 2),
    ("bx", 3),
    ("si", 4),
    ("di", 5),
    ("bp", 6),
    ("sp", 7),
    ("r8", 8),
    ("r9", 9),
    ("r10", 10),
    ("r11", 11),
    ("r12", 12),
    ("r13", 13),
    ("r14", 14),
    ("r15", 15),
];

/// Parse a fetch expression (see the module doc) into the op the recorder runs.
pub fn parse_fetch(expr: &str) -> Result<FetchOp, InprocError> {
    let bad = || InprocError::Fetch(expr.to_string());
    let (body, ty) = match expr.rsplit_once(':') {
        Some((b, t)) => (b, t),
        None => (expr, "x64"),
    };
    // `x64[N]`: a block of N words at the address (`--deref`).
    let block = ty
        .strip_prefix("x64[")
        .and_then(|n| n.strip_suffix(']'))
        .map(|n| n.parse::<u8>().map_err(|_| bad()))
        .transpose()?;
    if block.is_some_and(|n| n == 0 || usize::from(n) > MAX_BLOCK_WORDS) {
        return Err(bad());
    }
    let string = match ty {
        _ if block.is_some() => true,
        "x64" | "u64" | "s64" => false,
        "ustring" | "string" => true,
        _ => return Err(bad()),
    };
    // Peel `+OFF(` ... `)` from the outside in.
    let mut offs = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('(') {
        let off: i32 = rest[..open].parse().map_err(|_| bad())?;
        offs.push(off);
        rest = rest[open + 1..].strip_suffix(')').ok_or_else(bad)?;
    }
    // Innermost first.
    offs.reverse();
    if offs.len() > 3 {
        return Err(bad());
    }
    let mut op = FetchOp {
        kind: match (block, string) {
            (Some(_), _) => FETCH_BLOCK,
            (None, true) => FETCH_STRING,
            (None, false) => FETCH_WORD,
        },
        words: block.unwrap_or(0),
        ..FetchOp::default()
    };
    if rest == "$retval" {
        op.reg = REG_RETVAL;
    } else if let Some(x) = rest.strip_prefix("%xmm") {
        let (n, hi) = match x.strip_suffix("_hi") {
            Some(n) => (n, 1),
            None => (x, 0),
        };
        let n: u8 = n.parse().map_err(|_| bad())?;
        if n >= 8 || string || !offs.is_empty() {
            return Err(bad());
        }
        op.kind = FETCH_XMM;
        op.reg = n;
        op.off[0] = hi;
        return Ok(op);
    } else if rest == "%st0" || rest == "%st0_hi" {
        if string || !offs.is_empty() {
            return Err(bad());
        }
        op.kind = FETCH_ST0;
        op.off[0] = i32::from(rest.ends_with("_hi"));
        return Ok(op);
    } else if let Some(k) = rest.strip_prefix("%saved") {
        let k: u8 = k.parse().map_err(|_| bad())?;
        if usize::from(k) >= SAVED_WORDS {
            return Err(bad());
        }
        op.reg = REG_SAVED + k;
    } else if let Some(r) = rest.strip_prefix('%') {
        op.reg = GPRS
            .iter()
            .find(|(n, _)| *n == r)
            .map(|&(_, d)| d)
            .ok_or_else(bad)?;
    } else {
        return Err(bad());
    }
    if string && offs.is_empty() {
        return Err(bad());
    }
    op.nderef = offs.len() as u8;
    op.off[..offs.len()].copy_from_slice(&offs);
    Ok(op)
}

/// Write the plan to `path`, replacing atomically whatever is there
/// ([`dcg_outfile::Output::replace`]: the directory may be world-writable; nothing in it
/// is followed).
pub fn write_plan(
    path: &Path,
    targets: &[PlanTarget],
    funcs: &[PlanFunc],
    flags: u32,
) -> Result<(), InprocError> {
    let mut strings = Vec::new();
    let mut tdesc = Vec::new();
    for t in targets {
        let mut build_id = [0u8; 40];
        let n = t.build_id.len().min(40);
        build_id[..n].copy_from_slice(&t.build_id[..n]);
        tdesc.push(TargetDesc {
            build_id,
            build_id_len: n as u32,
            path_off: strings.len() as u32,
            path_len: t.path.len() as u32,
            reserved: 0,
        });
        strings.extend_from_slice(t.path.as_bytes());
    }
    let mut ops = Vec::new();
    let mut conds: Vec<CondTest> = Vec::new();
    let mut fdesc = Vec::new();
    for f in funcs {
        let cond_first = conds.len() as u32;
        conds.extend(f.conds.iter().filter(|c| {
            f.entry
                .get(usize::from(c.op))
                .is_some_and(|o| o.kind == FETCH_WORD)
        }));
        let entry_op = ops.len() as u32;
        ops.extend_from_slice(&f.entry);
        let ret_op = ops.len() as u32;
        ops.extend_from_slice(&f.ret);
        fdesc.push(FuncDesc {
            addr: f.addr,
            size: f.size,
            target: f.target,
            entry_op,
            ret_op,
            entry_n: f.entry.len() as u16,
            ret_n: f.ret.len() as u16,
            mode: f.mode,
            flags: f.flags,
            site_off: f.site_off,
            patch_len: f.patch_len,
            cond_first,
            cond_n: conds.len() as u32 - cond_first,
            saved: std::array::from_fn(|k| f.saved.get(k).map_or(0, |&i| i + 1)),
        });
    }
    let header = PlanHeader {
        magic: PLAN_MAGIC,
        ntargets: tdesc.len() as u32,
        nfuncs: fdesc.len() as u32,
        nops: ops.len() as u32,
        strings_len: strings.len() as u32,
        flags,
        nconds: conds.len() as u32,
    };
    let mut f = dcg_outfile::Output::replace(path)?;
    let mut w = |b: &[u8]| f.write_all(b).map_err(|e| dcg_outfile::into_error(path, e));
    w(header.as_bytes())?;
    w(tdesc.as_bytes())?;
    w(fdesc.as_bytes())?;
    w(ops.as_bytes())?;
    w(IntoBytes::as_bytes(&conds[..]))?;
    w(&strings)?;
    Ok(f.commit()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetches() {
        let op = parse_fetch("%di:x64").unwrap();
        assert_eq!((op.kind, op.reg, op.nderef), (FETCH_WORD, 5, 0));
        let op = parse_fetch("+8(%sp):x64").unwrap();
        assert_eq!((op.reg, op.nderef, op.off[0]), (7, 1, 8));
        let op = parse_fetch("+0(%si):ustring").unwrap();
        assert_eq!((op.kind, op.reg, op.nderef), (FETCH_STRING, 4, 1));
        let op = parse_fetch("+0(+8(%sp)):ustring").unwrap();
        assert_eq!((op.nderef, op.off[0], op.off[1]), (2, 8, 0));
        let op = parse_fetch("+16($retval):x64").unwrap();
        assert_eq!((op.reg, op.off[0]), (REG_RETVAL, 16));
        let op = parse_fetch("%xmm3").unwrap();
        assert_eq!((op.kind, op.reg, op.off[0]), (FETCH_XMM, 3, 0));
        assert_eq!(parse_fetch("%xmm1_hi:x64").unwrap().off[0], 1);
        assert_eq!(parse_fetch("%st0_hi").unwrap().kind, FETCH_ST0);
        assert!(parse_fetch("$comm").is_err());
        assert!(parse_fetch("%xmm9").is_err());
        assert!(parse_fetch("%di:ustring").is_err());
        let op = parse_fetch("+0(+16(%di)):x64[8]").unwrap();
        assert_eq!(
            (op.kind, op.nderef, op.words, op.off[0]),
            (FETCH_BLOCK, 2, 8, 16)
        );
        assert!(parse_fetch("+0(%di):x64[65]").is_err());
        assert!(parse_fetch("+0(%di):x64[0]").is_err());
        assert!(parse_fetch("%di:x64[4]").is_err());
    }
}
