//! The records of `capture.bpf.c` (`struct call_rec`, `struct str_rec`, ...), read from
//! the ring buffer's bytes: each ring entry is a batch of records ([`batch`]).

use zerocopy::{FromBytes, Immutable, KnownLayout};

/// Longest string read, terminating NUL included.
pub const STR_MAX: usize = 256;

const REC_ENTRY: u32 = 1;
const REC_EXIT: u32 = 2;
const REC_STRING: u32 = 3;
const REC_STACK: u32 = 4;
const REC_COMM: u32 = 5;
const REC_INLINE: u32 = 6;
const REC_LOSS: u32 = 7;
const REC_CALLERS: u32 = 8;
const REC_FIELDS: u32 = 9;
const REC_DEREF: u32 = 10;
const REC_OUT: u32 = 11;
/// Bytes before a deref record's data.
const DEREF_HEAD: usize = 24;
/// Most members one function's fields record carries (`--fields`).
pub const FIELDS_MAX: usize = 8;
/// A record's first word carries its length in the upper half.
const LEN_SHIFT: u32 = 16;
/// The context code of entry and return records (the kind's second byte).
pub mod ctx {
    /// A task (process context).
    pub const TASK: u8 = 0;
    /// Serving a softirq.
    pub const SOFTIRQ: u8 = 1;
    /// A hard interrupt.
    pub const IRQ: u8 = 2;
    /// A non-maskable interrupt.
    pub const NMI: u8 = 3;
}
/// Words of a stack record.
pub const STACK_WORDS: usize = 8;
/// Stack words of an inline record (from the stack pointer up).
pub const INLINE_STACK: usize = 16;
/// Most return addresses of a root's kernel stack (`--stack`).
pub const CALLERS_MAX: usize = 48;

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct CallRec {
    kind: u32,
    tid: u32,
    ts: u64,
    ip: u64,
    a: u64,
    b: u64,
    cpu: u32,
    tgid: u32,
}

/// The argument registers that follow a `CallRec` in an entry record (a return record
/// ends before them).
#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct ArgRegs([u64; 6]);

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct LossRec {
    kind: u32,
    tid: u32,
    ts: u64,
    ip: u64,
    n: u64,
    cpu: u32,
    pad: u32,
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct StackRec {
    kind: u32,
    tid: u32,
    words: [u64; STACK_WORDS],
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct FieldsRec {
    kind: u32,
    tid: u32,
    ok: u32,
    n: u32,
    v: [u64; FIELDS_MAX],
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct DerefHead {
    kind: u32,
    tid: u32,
    item: u32,
    len: i32,
    addr: u64,
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct CallersRec {
    kind: u32,
    tid: u32,
    len: i32,
    pad: u32,
    ip: u64,
    ips: [u64; CALLERS_MAX],
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct CommRec {
    kind: u32,
    tid: u32,
    comm: [u8; 16],
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct InlineRec {
    kind: u32,
    tid: u32,
    ts: u64,
    cookie: u64,
    cpu: u32,
    pad: u32,
    regs: [u64; 16],
    stack: [u64; INLINE_STACK],
}

#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct StrRec {
    kind: u32,
    tid: u32,
    arg: u32,
    len: i32,
    s: [u8; STR_MAX],
}

/// `struct out_rec`.
#[derive(FromBytes, KnownLayout, Immutable)]
#[repr(C)]
struct OutRec {
    kind: u32,
    tid: u32,
    ptr: u64,
    value: u64,
    len: i32,
    pad: u32,
}

/// One record of the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A recorded task entered a function.
    Entry {
        /// Thread id.
        tid: u32,
        /// Process id.
        tgid: u32,
        /// CPU.
        cpu: u32,
        /// Time (CLOCK_MONOTONIC ns).
        ts: u64,
        /// The function's address.
        ip: u64,
        /// The return address on the stack at entry: the call site.
        callsite: u64,
        /// rdi, rsi, rdx, rcx, r8, r9 at entry.
        args: [u64; 6],
        /// What the CPU was running ([`ctx`]).
        ctx: u8,
    },
    /// It returned.
    Exit {
        /// Thread id.
        tid: u32,
        /// CPU.
        cpu: u32,
        /// Time.
        ts: u64,
        /// The function's address.
        ip: u64,
        /// rax.
        rax: u64,
        /// rdx (the second word of a two-register return).
        rdx: u64,
        /// What the CPU was running ([`ctx`]).
        ctx: u8,
    },
    /// The output parameter of the task's call about to return (its return record
    /// follows): the pointer its entry was passed and what it points to now.
    Out {
        /// Thread id.
        tid: u32,
        /// The pointer (0: `NULL`, nothing read).
        ptr: u64,
        /// The bytes read there (zero-extended), or None when the read faulted.
        value: Option<u64>,
    },
    /// A string argument of the task's latest entry.
    Str {
        /// Thread id.
        tid: u32,
        /// Argument register index (System V order).
        arg: u32,
        /// The bytes read, without the NUL; None when the read faulted.
        bytes: Option<&'a [u8]>,
    },
    /// A task's name, when it started being recorded.
    Comm {
        /// Thread id.
        tid: u32,
        /// The name's bytes (no NUL).
        comm: &'a [u8],
    },
    /// The first instruction of an inlined copy ran (a probe there).
    Inline {
        /// Thread id.
        tid: u32,
        /// CPU.
        cpu: u32,
        /// Time.
        ts: u64,
        /// The probe's cookie: which copy.
        cookie: u64,
        /// The general registers by DWARF number (rax, rdx, rcx, rbx, rsi, rdi, rbp,
        /// rsp, r8..r15).
        regs: [u64; 16],
        /// Stack words from the stack pointer up (zeros when the read faulted).
        stack: [u64; INLINE_STACK],
    },
    /// The kernel skipped the entry (or session) program `n` times on this CPU while a
    /// run recorded a call of `tid` (an entry or a return of the function at `ip`): `n`
    /// calls that ran on the CPU then (an interrupt's) are missing from the task's tree.
    Loss {
        /// Thread id.
        tid: u32,
        /// CPU.
        cpu: u32,
        /// Time (ns, `bpf_ktime_get_ns`).
        ts: u64,
        /// The function whose entry or return was being recorded.
        ip: u64,
        /// Entries skipped: calls not recorded.
        n: u64,
    },
    /// The kernel stack at the entry of a root that begins a tree (`--stack`): return
    /// addresses innermost first, the root's own address first (it is where the unwinder
    /// starts), then its callers'.
    Callers {
        /// Thread id.
        tid: u32,
        /// The root's address.
        ip: u64,
        /// The addresses; empty when the kernel could not unwind (`err` says why).
        ips: [u64; CALLERS_MAX],
        /// How many of `ips` are filled.
        n: usize,
        /// The helper's error (a negative errno), when it failed.
        err: Option<i32>,
    },
    /// The stack words of the task's latest entry, from the first stack-passed argument
    /// (the stack pointer at entry + 8) up; zeros when the read faulted.
    Stack {
        /// Thread id.
        tid: u32,
        /// The words.
        words: [u64; STACK_WORDS],
    },
    /// The members `--fields` read at the task's latest entry, in the function's order.
    Fields {
        /// Thread id.
        tid: u32,
        /// How many.
        n: usize,
        /// Bit i: value i was read (no read on its way failed).
        ok: u32,
        /// The values, zero-extended.
        values: [u64; FIELDS_MAX],
    },
    /// One read `--deref` made at the task's latest entry: item `item` of the function's
    /// reads, made at `addr`.
    Deref {
        /// Thread id.
        tid: u32,
        /// Which of the function's reads.
        item: u32,
        /// Where it was read.
        addr: u64,
        /// The bytes; None when the read faulted.
        bytes: Option<&'a [u8]>,
    },
}

/// The records of one ring-buffer entry (a batch): each begins with a word whose upper
/// half is its length in bytes. Ends at the first record whose length does not fit.
pub fn batch(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    std::iter::from_fn(move || {
        let word = u32::from_ne_bytes(rest.get(..4)?.try_into().ok()?);
        let len = (word >> LEN_SHIFT) as usize;
        if len < 8 || len > rest.len() {
            return None;
        }
        let (r, next) = rest.split_at(len);
        rest = next;
        Some(r)
    })
}

impl<'a> Record<'a> {
    /// Parse one ring-buffer record; None for anything that is not one.
    pub fn parse(data: &'a [u8]) -> Option<Record<'a>> {
        let word = u32::from_ne_bytes(data.get(..4)?.try_into().ok()?);
        let (kind, ctx) = (word & 0xff, (word >> 8) as u8);
        match kind {
            REC_ENTRY | REC_EXIT => {
                // Copied out: the bytes need not be 8-byte aligned.
                let (r, rest) = CallRec::read_from_prefix(data).ok()?;
                Some(if kind == REC_ENTRY {
                    let (ArgRegs(args), _) = ArgRegs::read_from_prefix(rest).ok()?;
                    Record::Entry {
                        tid: r.tid,
                        tgid: r.tgid,
                        cpu: r.cpu,
                        ts: r.ts,
                        ip: r.ip,
                        callsite: r.a,
                        args,
                        ctx,
                    }
                } else {
                    Record::Exit {
                        tid: r.tid,
                        cpu: r.cpu,
                        ts: r.ts,
                        ip: r.ip,
                        rax: r.a,
                        rdx: r.b,
                        ctx,
                    }
                })
            }
            REC_INLINE => {
                let (r, _) = InlineRec::read_from_prefix(data).ok()?;
                Some(Record::Inline {
                    tid: r.tid,
                    cpu: r.cpu,
                    ts: r.ts,
                    cookie: r.cookie,
                    regs: r.regs,
                    stack: r.stack,
                })
            }
            REC_LOSS => {
                let (r, _) = LossRec::read_from_prefix(data).ok()?;
                Some(Record::Loss {
                    tid: r.tid,
                    cpu: r.cpu,
                    ts: r.ts,
                    ip: r.ip,
                    n: r.n,
                })
            }
            REC_STACK => {
                let (r, _) = StackRec::read_from_prefix(data).ok()?;
                Some(Record::Stack {
                    tid: r.tid,
                    words: r.words,
                })
            }
            REC_FIELDS => {
                let (r, _) = FieldsRec::read_from_prefix(data).ok()?;
                Some(Record::Fields {
                    tid: r.tid,
                    n: (r.n as usize).min(FIELDS_MAX),
                    ok: r.ok,
                    values: r.v,
                })
            }
            REC_DEREF => {
                let (r, _) = DerefHead::read_from_prefix(data).ok()?;
                let bytes = match usize::try_from(r.len) {
                    Ok(n) => Some(data.get(DEREF_HEAD..DEREF_HEAD.checked_add(n)?)?),
                    Err(_) => None,
                };
                Some(Record::Deref {
                    tid: r.tid,
                    item: r.item,
                    addr: r.addr,
                    bytes,
                })
            }
            REC_OUT => {
                let (r, _) = OutRec::read_from_prefix(data).ok()?;
                Some(Record::Out {
                    tid: r.tid,
                    ptr: r.ptr,
                    value: (r.len > 0).then_some(r.value),
                })
            }
            REC_CALLERS => {
                let (r, _) = CallersRec::read_from_prefix(data).ok()?;
                let n = if r.len > 0 {
                    (r.len as usize / 8).min(CALLERS_MAX)
                } else {
                    0
                };
                Some(Record::Callers {
                    tid: r.tid,
                    ip: r.ip,
                    ips: r.ips,
                    n,
                    err: (r.len < 0).then_some(r.len),
                })
            }
            REC_COMM => {
                let (r, _) = CommRec::read_from_prefix(data).ok()?;
                let comm = &data[8..24];
                let n = r.comm.iter().position(|&b| b == 0).unwrap_or(16);
                Some(Record::Comm {
                    tid: r.tid,
                    comm: &comm[..n],
                })
            }
            REC_STRING => {
                let (r, _) = StrRec::read_from_prefix(data).ok()?;
                let bytes = (r.len > 0).then(|| {
                    let n = (r.len as usize).min(STR_MAX);
                    let s = &data[16..16 + n];
                    s.strip_suffix(&[0]).unwrap_or(s)
                });
                Some(Record::Str {
                    tid: r.tid,
                    arg: r.arg,
                    bytes,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_exit_and_string_records() {
        let mut e = vec![0u8; 96];
        e[0..4].copy_from_slice(&1u32.to_ne_bytes());
        e[4..8].copy_from_slice(&42u32.to_ne_bytes());
        e[16..24].copy_from_slice(&0xffff_ffff_8100_0000u64.to_ne_bytes());
        // struct call_rec: kind, tid, ts@8, ip@16, a@24, b@32, cpu@40, tgid@44, args@48.
        e[40..44].copy_from_slice(&1u32.to_ne_bytes());
        e[48..56].copy_from_slice(&7u64.to_ne_bytes());
        match Record::parse(&e) {
            Some(Record::Entry {
                tid, ip, cpu, args, ..
            }) => {
                assert_eq!((tid, ip, cpu, args[0]), (42, 0xffff_ffff_8100_0000, 1, 7))
            }
            r => panic!("{r:?}"),
        }
        // The context in the kind's second byte: a hard interrupt.
        let mut irq = e.clone();
        irq[0..4].copy_from_slice(&(1u32 | u32::from(ctx::IRQ) << 8).to_ne_bytes());
        assert!(matches!(
            Record::parse(&irq),
            Some(Record::Entry {
                ctx: ctx::IRQ,
                tid: 42,
                ..
            })
        ));
        // A return record is the 48-byte head alone: rax at 24, rdx at 32.
        let mut x = e[..48].to_vec();
        x[0..4].copy_from_slice(&2u32.to_ne_bytes());
        x[24..32].copy_from_slice(&(-2i64).to_ne_bytes());
        x[32..40].copy_from_slice(&5u64.to_ne_bytes());
        match Record::parse(&x) {
            Some(Record::Exit { tid, rax, rdx, .. }) => {
                assert_eq!((tid, rax as i64, rdx), (42, -2, 5))
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(Record::parse(&e[..60]), None, "entry without its arguments");
        let mut c = vec![0u8; 24];
        c[0..4].copy_from_slice(&5u32.to_ne_bytes());
        c[4..8].copy_from_slice(&7u32.to_ne_bytes());
        c[8..11].copy_from_slice(b"cat");
        assert_eq!(
            Record::parse(&c),
            Some(Record::Comm {
                tid: 7,
                comm: b"cat"
            })
        );
        // A stack record: kind 4, tid, eight words.
        let mut k = vec![0u8; 8 + 8 * STACK_WORDS];
        k[0..4].copy_from_slice(&4u32.to_ne_bytes());
        k[4..8].copy_from_slice(&42u32.to_ne_bytes());
        k[16..24].copy_from_slice(&9u64.to_ne_bytes());
        match Record::parse(&k) {
            Some(Record::Stack { tid, words }) => assert_eq!((tid, words[1]), (42, 9)),
            r => panic!("{r:?}"),
        }
        // An inline record: kind 6, tid, ts, cookie, cpu, pad, 16 registers, 16 words.
        let mut n = vec![0u8; 32 + 8 * 16 + 8 * INLINE_STACK];
        n[0..4].copy_from_slice(&6u32.to_ne_bytes());
        n[4..8].copy_from_slice(&42u32.to_ne_bytes());
        n[16..24].copy_from_slice(&3u64.to_ne_bytes());
        n[32 + 8 * 5..32 + 8 * 6].copy_from_slice(&0x1234u64.to_ne_bytes());
        n[32 + 128 + 8..32 + 128 + 16].copy_from_slice(&77u64.to_ne_bytes());
        match Record::parse(&n) {
            Some(Record::Inline {
                tid,
                cookie,
                regs,
                stack,
                ..
            }) => assert_eq!((tid, cookie, regs[5], stack[1]), (42, 3, 0x1234, 77)),
            r => panic!("{r:?}"),
        }
        assert_eq!(Record::parse(&n[..200]), None, "truncated inline record");
        // A fields record: kind 9, tid, ok bits, n, eight values.
        let mut f = vec![0u8; 16 + 8 * FIELDS_MAX];
        f[0..4].copy_from_slice(&9u32.to_ne_bytes());
        f[4..8].copy_from_slice(&42u32.to_ne_bytes());
        f[8..12].copy_from_slice(&0b01u32.to_ne_bytes());
        f[12..16].copy_from_slice(&2u32.to_ne_bytes());
        f[16..24].copy_from_slice(&0x8241u64.to_ne_bytes());
        match Record::parse(&f) {
            Some(Record::Fields { tid, n, ok, values }) => {
                assert_eq!((tid, n, ok, values[0], values[1]), (42, 2, 1, 0x8241, 0))
            }
            r => panic!("{r:?}"),
        }
        assert_eq!(Record::parse(&f[..40]), None, "truncated fields record");
        // A deref record: kind 10, tid, item, len, addr, then len bytes (the record
        // padded to 8).
        let mut d = vec![0u8; 24 + 16];
        d[0..4].copy_from_slice(&10u32.to_ne_bytes());
        d[4..8].copy_from_slice(&42u32.to_ne_bytes());
        d[8..12].copy_from_slice(&3u32.to_ne_bytes());
        d[12..16].copy_from_slice(&12i32.to_ne_bytes());
        d[16..24].copy_from_slice(&0xffff_8880_0000_1000u64.to_ne_bytes());
        d[24..36].copy_from_slice(b"hello, world");
        assert_eq!(
            Record::parse(&d),
            Some(Record::Deref {
                tid: 42,
                item: 3,
                addr: 0xffff_8880_0000_1000,
                bytes: Some(b"hello, world")
            })
        );
        assert_eq!(Record::parse(&d[..30]), None, "bytes past the record");
        d[12..16].copy_from_slice(&(-14i32).to_ne_bytes());
        assert!(matches!(
            Record::parse(&d),
            Some(Record::Deref { bytes: None, .. })
        ));
        let mut s = vec![0u8; 16 + STR_MAX];
        s[0..4].copy_from_slice(&3u32.to_ne_bytes());
        s[8..12].copy_from_slice(&1u32.to_ne_bytes());
        s[12..16].copy_from_slice(&4i32.to_ne_bytes());
        s[16..20].copy_from_slice(b"abc\0");
        assert_eq!(
            Record::parse(&s),
            Some(Record::Str {
                tid: 0,
                arg: 1,
                bytes: Some(b"abc")
            })
        );
        s[12..16].copy_from_slice(&(-14i32).to_ne_bytes());
        assert!(matches!(
            Record::parse(&s),
            Some(Record::Str { bytes: None, .. })
        ));
        // Records need no alignment (the capture queues them after a 4-byte length).
        let mut shifted = vec![0u8; 4];
        shifted.extend_from_slice(&e);
        assert_eq!(Record::parse(&shifted[4..]), Record::parse(&e));
        assert_eq!(Record::parse(&[9, 0, 0, 0]), None);
        assert_eq!(Record::parse(&e[..40]), None, "truncated");
    }

    /// A record's first word with its length in the upper half, as the program writes it.
    fn sized(mut r: Vec<u8>) -> Vec<u8> {
        let word = u32::from_ne_bytes(r[..4].try_into().unwrap()) | (r.len() as u32) << 16;
        r[..4].copy_from_slice(&word.to_ne_bytes());
        r
    }

    #[test]
    fn a_batch_splits_by_the_lengths_it_carries() {
        // An exit record (48 bytes, a hard interrupt's), a comm record (24), an exit.
        let mut x = vec![0u8; 48];
        x[0..4].copy_from_slice(&(2u32 | u32::from(ctx::IRQ) << 8).to_ne_bytes());
        x[4..8].copy_from_slice(&9u32.to_ne_bytes());
        let mut c = vec![0u8; 24];
        c[0..4].copy_from_slice(&5u32.to_ne_bytes());
        c[4..8].copy_from_slice(&9u32.to_ne_bytes());
        c[8..10].copy_from_slice(b"sh");
        let mut data = sized(x.clone());
        data.extend(sized(c));
        data.extend(sized(x));
        let recs: Vec<Record<'_>> = batch(&data).filter_map(Record::parse).collect();
        assert_eq!(recs.len(), 3, "{recs:?}");
        assert!(matches!(
            recs[0],
            Record::Exit {
                tid: 9,
                ctx: ctx::IRQ,
                ..
            }
        ));
        assert_eq!(
            recs[1],
            Record::Comm {
                tid: 9,
                comm: b"sh"
            }
        );
        // A length past the end, or too short to be a record, ends the batch.
        assert_eq!(batch(&data[..100]).count(), 2);
        let mut bad = data.clone();
        bad[48..52].copy_from_slice(&5u32.to_ne_bytes()); // length 0
        assert_eq!(batch(&bad).count(), 1);
    }
}
