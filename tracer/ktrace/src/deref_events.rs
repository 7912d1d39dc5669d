//! `--deref` with the function_graph engine: a probe event at a traced function's entry
//! copies the structs behind its pointer parameters, by the reads the BPF engine makes
//! ([`FuncDerefs`]). Read `i` fetches the pointers on its way, `q{i}_0` (the register)
//! then one per hop, and its bytes `d{i}` as an array of words (`+0(+16(%di)):x64[8]`);
//! the decoder shows the structs in place of the pointers ([`DerefEvent`]), rendered as
//! the BPF engine renders them. The output parameters (`--deref`, `--fields`) are read by
//! an exit event through the entry's arguments, which the kernel keeps for it
//! (`o0=+0($arg3):u32` in a `%return` event), and shown in the return comment
//! ([`OutEvent`]).

use std::rc::Rc;

use dcg_calls::members::EventReads;
use dcg_calls::sink::ArgList;

use crate::derefs::{FuncDerefs, OutParam};

/// Bytes of struct data one event copies at most: a probe event's values share one
/// ring-buffer page (4 KiB), with its header and the pointers fetched beside them. A read
/// past it is not made: its parameter shows what the reads before it copied.
pub const EVENT_BYTES: u32 = 3072;

/// Most words one array fetch copies (the kernel's `MAX_ARRAY_LEN`).
const MAX_WORDS: u32 = 64;

/// The fetch arguments of the reads of `fd` that fit in one event, and how many reads
/// that is (they are taken in order).
pub fn deref_fetches(fd: &FuncDerefs<'_>, fprobe: bool) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut left = EVENT_BYTES;
    let mut items = 0;
    for (i, read) in fd.reads.iter().enumerate() {
        let words = read.len.div_ceil(8).clamp(1, MAX_WORDS);
        if words * 8 > left {
            break;
        }
        left -= words * 8;
        let mut expr = crate::probes::reg_expr(read.reg, fprobe);
        out.push(format!("q{i}_0={expr}:x64"));
        for (k, off) in read.hops.iter().enumerate() {
            expr = format!("{off:+}({expr})");
            out.push(format!("q{i}_{}={expr}:x64", k + 1));
        }
        out.push(format!("d{i}={:+}({expr}):x64[{words}]", read.add));
        items += 1;
    }
    (out, items)
}

/// What a deref event's fields give: the parameters its function's reads are for,
/// rendered with the bytes copied, in place of their pointers.
pub struct DerefEvent<'db> {
    /// The function's reads.
    pub reads: Rc<FuncDerefs<'db>>,
    /// How many of them the event makes ([`deref_fetches`]).
    pub items: usize,
}

/// Whether `p` points somewhere: not `NULL`, not an error value (-4095..-1).
fn points(p: u64) -> bool {
    p != 0 && p < 4095u64.wrapping_neg()
}

/// The words of an array field's value (`{0x1,0x2}`).
fn parse_words(v: &str) -> Option<Vec<u64>> {
    let body = v.strip_prefix('{')?.strip_suffix('}')?;
    body.split(',').map(dcg_fgraph::parse_number).collect()
}

impl EventReads for DerefEvent<'_> {
    fn render(&self, fields: &[(&str, &str)], symbols: &dyn dcg_deref::Symbols, out: &mut ArgList) {
        let value = |name: &str| fields.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let mut args = [0u64; 6];
        // The registers the event read: the parameters in them are shown.
        let mut known = [false; 6];
        let mut copied: Vec<(u32, u64, Vec<u8>)> = Vec::new();
        for (i, read) in self.reads.reads.iter().enumerate().take(self.items) {
            let pointers: Option<Vec<u64>> = (0..=read.hops.len())
                .map(|k| value(&format!("q{i}_{k}")).and_then(dcg_fgraph::parse_number))
                .collect();
            let Some(pointers) = pointers else { continue };
            let reg = usize::from(read.reg).min(5);
            args[reg] = pointers[0];
            known[reg] = true;
            if !pointers.iter().all(|&p| points(p)) {
                continue;
            }
            let Some(words) = value(&format!("d{i}")).and_then(parse_words) else {
                continue;
            };
            let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            bytes.truncate(read.len as usize);
            let at = pointers[pointers.len() - 1].wrapping_add(read.add as i64 as u64);
            copied.push((i as u32, at, bytes));
        }
        let mut shown = Vec::new();
        let reads = copied.iter().map(|(i, a, b)| (*i, *a, b.as_slice()));
        self.reads.render(&args, reads, symbols, &mut shown);
        for (param, (name, text)) in self.reads.params.iter().zip(&shown) {
            if known[param.reg.min(5)] {
                out.push(name, text);
            }
        }
    }
}

/// The fetch arguments of an exit event reading `outs` at the return: for output `k`
/// passed in a register, the pointer the entry got (`q{k}=$arg3:x64`) and the value it
/// points to now (`o{k}=+0($arg3):u32`). Empty when none is in a register.
pub fn out_fetches(outs: &[OutParam<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, o) in outs.iter().enumerate() {
        let Some(reg) = o.reg else { continue };
        let arg = format!("$arg{}", reg.min(5) + 1);
        let bits = match o.pointee.resolve().size() {
            1 => 8,
            2 => 16,
            3 | 4 => 32,
            _ => 64,
        };
        out.push(format!("q{k}={arg}:x64"));
        out.push(format!("o{k}=+0({arg}):u{bits}"));
    }
    out
}

/// What an output event's fields give: the function's output parameters, as the BPF
/// engine shows them (`*fildes=3`; `?` for one not in a register).
pub struct OutEvent<'db> {
    /// The function's output parameters.
    pub outs: Rc<[OutParam<'db>]>,
}

impl EventReads for OutEvent<'_> {
    fn render(&self, fields: &[(&str, &str)], symbols: &dyn dcg_deref::Symbols, out: &mut ArgList) {
        let value = |name: String| {
            fields
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| dcg_fgraph::parse_number(v))
        };
        let read = |k: usize| {
            let p = value(format!("q{k}"))?;
            Some((p, value(format!("o{k}")).filter(|_| points(p))))
        };
        crate::derefs::render_outs(&self.outs, read, symbols, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcg_bpf::DerefRead;

    fn reads(list: Vec<DerefRead>) -> FuncDerefs<'static> {
        FuncDerefs {
            params: Vec::new(),
            owner: vec![0; list.len()],
            reads: list,
        }
    }

    #[test]
    fn fetches_follow_the_reads_and_stop_at_a_full_event() {
        let r = |reg, hops: &[i32], add, len| DerefRead {
            reg,
            hops: hops.to_vec(),
            add,
            len,
        };
        let fd = reads(vec![r(2, &[], 0, 24), r(0, &[16], 480, 36)]);
        let (kprobe, n) = deref_fetches(&fd, false);
        assert_eq!(n, 2);
        assert_eq!(
            kprobe,
            [
                "q0_0=%dx:x64",
                "d0=+0(%dx):x64[3]",
                "q1_0=%di:x64",
                "q1_1=+16(%di):x64",
                "d1=+480(+16(%di)):x64[5]",
            ]
        );
        let (fprobe, _) = deref_fetches(&fd, true);
        assert_eq!(fprobe[3], "q1_1=+16($arg1):x64");
        // 7 reads of 480 bytes: 6 fit in 3 KiB.
        let big = reads(vec![r(0, &[], 0, 480); 7]);
        assert_eq!(deref_fetches(&big, false).1, 6);
    }

    #[test]
    fn array_values_are_words() {
        assert_eq!(parse_words("{0x1,0xff}"), Some(vec![1, 255]));
        assert_eq!(parse_words("{0x1,nope}"), None);
        assert_eq!(parse_words("0x1"), None);
        assert!(points(0xffff_8880_0000_0000) && !points(0) && !points(u64::MAX - 1));
    }
}
