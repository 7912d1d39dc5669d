//! What the program is told before it runs: the functions to attach to and each one's
//! plan bits ([`Target`]), which tasks start recording and what a root's condition is
//! ([`Tasks`], [`RootCond`]), and the members read at functions' entries
//! ([`FuncFields`]); each with the bytes of its map value in capture.bpf.c's layout.

use crate::FIELDS_MAX;

/// Plan bit: the function is a root (entering it starts recording the task).
const PLAN_ROOT: u32 = 1 << 8;
/// Plan bit: some parameters are passed on the stack (a stack record follows entries).
const PLAN_STACK: u32 = 1 << 9;
/// Plan bit: members are read at entry (`--fields`: a fields record follows entries).
const PLAN_FIELDS: u32 = 1 << 10;
/// Plan bit: structs are read behind pointer parameters (`--deref`: deref records follow
/// entries).
const PLAN_DEREF: u32 = 1 << 11;
/// Plan field: an output parameter's argument register + 1 (bits 12-14) and the bytes it
/// points to (bits 16-19), read at the return through the session's cookie.
const PLAN_OUT_SHIFT: u32 = 12;
const PLAN_OUT_SIZE_SHIFT: u32 = 16;
/// A function to attach to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Its address (`available_filter_functions_addrs`).
    pub addr: u64,
    /// Entering it starts recording the task.
    pub root: bool,
    /// Bit i: argument register i (System V order) holds a C string to read.
    pub strings: u8,
    /// Some parameters are on the stack: its words are read at entry.
    pub stack: bool,
    /// Members are read at entry ([`Tasks::fields`] says which).
    pub fields: bool,
    /// Structs are read at entry ([`Tasks::derefs`] says which).
    pub derefs: bool,
    /// An output parameter read at the return (session links only): its argument
    /// register (0-5) and the bytes it points to (1-8).
    pub out: Option<(u8, u8)>,
}

impl Target {
    pub(crate) fn plan(&self) -> u32 {
        u32::from(self.strings & 0x3f)
            | if self.root { PLAN_ROOT } else { 0 }
            | if self.stack { PLAN_STACK } else { 0 }
            | if self.fields { PLAN_FIELDS } else { 0 }
            | if self.derefs { PLAN_DEREF } else { 0 }
            | self
                .out
                .filter(|&(reg, size)| reg < 6 && (1..=8).contains(&size))
                .map_or(0, |(reg, size)| {
                    (u32::from(reg) + 1) << PLAN_OUT_SHIFT | u32::from(size) << PLAN_OUT_SIZE_SHIFT
                })
    }
}

/// Which tasks a root starts recording ([`Loaded::attach`]): all that match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tasks<'a> {
    /// Only these processes (and their children).
    pub procs: Option<&'a [u32]>,
    /// Only the tasks with this name (`comm`, at most 15 bytes).
    pub comm: Option<&'a str>,
    /// Only the tasks in the cgroup (v2) with this id (the inode number of its directory).
    pub cgroup: Option<u64>,
    /// Roots whose calls start recording only when their condition holds (`--filter`
    /// on a top-level call's arguments): the rejected calls cost no records.
    pub conds: &'a [RootCond],
    /// Each tree begins with the kernel stack of its root's callers (`--stack`).
    pub stacks: bool,
    /// The members read at functions' entries (`--fields`); their targets say
    /// [`Target::fields`].
    pub fields: &'a [FuncFields],
    /// The structs read at functions' entries (`--deref`); their targets say
    /// [`Target::derefs`].
    pub derefs: &'a [FuncDerefs],
}

/// Most pointers a member's path follows (the program's `FIELD_HOPS`).
pub const FIELD_HOPS: usize = 4;

/// The members read at a function's entry, each a fields record value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncFields {
    /// The function's address (`available_filter_functions_addrs`).
    pub addr: u64,
    /// The members, at most [`FIELDS_MAX`].
    pub fetches: Vec<FieldFetch>,
}

/// How a member is read: from argument register `reg` (System V order), through the
/// pointer at each offset but the last, then `size` bytes at the last; the register
/// itself without offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFetch {
    /// The argument register.
    pub reg: u8,
    /// Byte offsets, one per `->` (at most [`FIELD_HOPS`]).
    pub offsets: Vec<i32>,
    /// Bytes of the value (1-8).
    pub size: u8,
}

impl FuncFields {
    /// The program's `struct field_fetches`: n (u32), pad (u32), then per member reg,
    /// hops, size, pad (u8 each) and FIELD_HOPS offsets (i32); native byte order.
    pub(crate) fn bytes(&self) -> [u8; 8 + 20 * FIELDS_MAX] {
        let mut v = [0u8; 8 + 20 * FIELDS_MAX];
        let fetches = &self.fetches[..self.fetches.len().min(FIELDS_MAX)];
        v[0..4].copy_from_slice(&(fetches.len() as u32).to_ne_bytes());
        for (i, f) in fetches.iter().enumerate() {
            let at = 8 + 20 * i;
            let offsets = &f.offsets[..f.offsets.len().min(FIELD_HOPS)];
            v[at] = f.reg;
            v[at + 1] = offsets.len() as u8;
            v[at + 2] = f.size.clamp(1, 8);
            for (k, o) in offsets.iter().enumerate() {
                v[at + 4 + 4 * k..at + 8 + 4 * k].copy_from_slice(&o.to_ne_bytes());
            }
        }
        v
    }
}

/// Most reads of one function's structs (the program's `DEREF_ITEMS`).
pub const DEREF_ITEMS: usize = 8;
/// Most bytes one read copies (the program's `DEREF_BYTES`): a longer struct takes
/// several reads, each at the address of the one before plus this.
pub const DEREF_BYTES: u32 = 480;

/// Most pointers one read follows from its register (the program's `DEREF_HOPS`).
pub const DEREF_HOPS: usize = 3;

/// The structs read behind a function's pointer parameters at its entry, each read a
/// deref record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncDerefs {
    /// The function's address (`available_filter_functions_addrs`).
    pub addr: u64,
    /// The reads, at most [`DEREF_ITEMS`], in order.
    pub reads: Vec<DerefRead>,
}

/// One read: from argument register `reg` (System V order), through the pointer stored
/// at each of `hops` offsets in turn (a NULL or error pointer, or a faulting read, reads
/// nothing), `len` bytes at the address reached plus `add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerefRead {
    /// The argument register.
    pub reg: u8,
    /// Byte offsets of the pointers followed (at most [`DEREF_HOPS`]).
    pub hops: Vec<i32>,
    /// Added to the address reached.
    pub add: i32,
    /// Bytes to copy (at most [`DEREF_BYTES`]).
    pub len: u32,
}

impl FuncDerefs {
    /// The program's `struct deref_items`: n (u32), pad (u32), then per read reg, hops
    /// (u8 each), pad (u16), DEREF_HOPS offsets (i32), add (i32), len (u32); native byte
    /// order.
    pub(crate) fn bytes(&self) -> [u8; 8 + 24 * DEREF_ITEMS] {
        let mut v = [0u8; 8 + 24 * DEREF_ITEMS];
        let reads = &self.reads[..self.reads.len().min(DEREF_ITEMS)];
        v[0..4].copy_from_slice(&(reads.len() as u32).to_ne_bytes());
        for (i, r) in reads.iter().enumerate() {
            let at = 8 + 24 * i;
            let hops = &r.hops[..r.hops.len().min(DEREF_HOPS)];
            v[at] = r.reg;
            v[at + 1] = hops.len() as u8;
            for (k, o) in hops.iter().enumerate() {
                v[at + 4 + 4 * k..at + 8 + 4 * k].copy_from_slice(&o.to_ne_bytes());
            }
            v[at + 16..at + 20].copy_from_slice(&r.add.to_ne_bytes());
            v[at + 20..at + 24].copy_from_slice(&r.len.min(DEREF_BYTES).to_ne_bytes());
        }
        v
    }
}

/// Most tests of one root's condition (the program's `COND_TESTS`).
pub const COND_TESTS: usize = 4;

/// A root whose calls start recording only when every test holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootCond {
    /// The root's address (`available_filter_functions_addrs`).
    pub addr: u64,
    /// The tests, at most [`COND_TESTS`] (more are left out: the decoded calls decide).
    pub tests: Vec<CondTest>,
}

/// A test on an argument register at a root's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CondTest {
    /// The register, in System V argument order (0: rdi .. 5: r9).
    pub reg: u8,
    /// The comparison.
    pub op: CondOp,
    /// Bytes of the register the parameter uses (1, 2, 4 or 8).
    pub size: u8,
    /// The parameter is signed: sign-extended and compared as signed.
    pub signed: bool,
    /// ANDed with the value first (`flags & 0x40`).
    pub mask: Option<u64>,
    /// What it is compared with.
    pub value: i64,
}

/// How a [`CondTest`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CondOp {
    /// Nonzero.
    Truth = 0,
    /// `==`
    Eq = 1,
    /// `!=`
    Ne = 2,
    /// `<`
    Lt = 3,
    /// `<=`
    Le = 4,
    /// `>`
    Gt = 5,
    /// `>=`
    Ge = 6,
}

impl RootCond {
    /// The program's `struct cond`: n (u32), pad (u32), then per test reg, op, size,
    /// flags (u8 each), pad (u32), mask (u64), value (i64); native byte order.
    pub(crate) fn bytes(&self) -> [u8; 8 + 24 * COND_TESTS] {
        let mut v = [0u8; 8 + 24 * COND_TESTS];
        let tests = &self.tests[..self.tests.len().min(COND_TESTS)];
        v[0..4].copy_from_slice(&(tests.len() as u32).to_ne_bytes());
        for (i, t) in tests.iter().enumerate() {
            let at = 8 + 24 * i;
            v[at] = t.reg;
            v[at + 1] = t.op as u8;
            v[at + 2] = t.size;
            v[at + 3] = u8::from(t.signed) | if t.mask.is_some() { 2 } else { 0 };
            v[at + 8..at + 16].copy_from_slice(&t.mask.unwrap_or(0).to_ne_bytes());
            v[at + 16..at + 24].copy_from_slice(&t.value.to_ne_bytes());
        }
        v
    }
}

impl Tasks<'_> {
    /// The program's `struct settings`: filter_procs (u32), filter_comm (u32), cgroup
    /// (u64), comm (16 bytes, NUL-padded), stacks (u32), pad (u32), native byte order.
    pub(crate) fn settings(&self) -> [u8; 40] {
        let mut v = [0u8; 40];
        v[32..36].copy_from_slice(&u32::from(self.stacks).to_ne_bytes());
        v[0..4].copy_from_slice(&u32::from(self.procs.is_some()).to_ne_bytes());
        v[4..8].copy_from_slice(&u32::from(self.comm.is_some()).to_ne_bytes());
        v[8..16].copy_from_slice(&self.cgroup.unwrap_or(0).to_ne_bytes());
        if let Some(c) = self.comm {
            let n = c.len().min(15);
            v[16..16 + n].copy_from_slice(&c.as_bytes()[..n]);
        }
        v
    }
}
