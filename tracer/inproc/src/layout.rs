//! The two files dcg and the recorder share, byte by byte (native endianness: both run on
//! the same machine). Every record is `repr(C)` with explicit padding, 8-byte aligned.
//!
//! **The plan** (written by dcg, mapped read-only by the recorder): a [`PlanHeader`], then
//! `ntargets` [`TargetDesc`], `nfuncs` [`FuncDesc`], `nops` [`FetchOp`], `nconds`
//! [`CondTest`], then `strings_len` bytes of strings (target paths).
//!
//! **The rings** (a file in `/dev/shm` dcg creates, mapped shared by every traced process):
//! a [`ShmHeader`], [`OBJECT_SLOTS`] [`ObjectSlot`]s, [`UNHOOKED_SLOTS`] `u32` plan indices of
//! functions a recorder could not hook (and 8 bytes of padding), then `nrings` rings, each a [`RingHeader`] followed by `ring_size`
//! data bytes. A thread claims a ring at its first record (one a thread that ended gave
//! back, else the next fresh one: `next_ring`, an atomic counter) and is its only producer
//! until it ends; dcg is its only consumer and frees it once drained. `head` and `tail` count bytes
//! written and consumed since the start; a record never wraps: where one does not fit
//! before the end, a [`REC_PAD`] record fills the rest.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// First bytes of a plan file.
pub const PLAN_MAGIC: [u8; 8] = *b"DCGPLAN4";
/// First bytes of a ring file.
pub const SHM_MAGIC: [u8; 8] = *b"DCGRING1";

/// Environment variable naming the plan file.
pub const ENV_PLAN: &str = "DCG_INPROC_PLAN";
/// Environment variable naming the ring file.
pub const ENV_SHM: &str = "DCG_INPROC_SHM";

/// Plan flag: processes forked by the traced command are traced too.
pub const PLAN_FOLLOW_FORKS: u32 = 1;
/// Plan flag: timestamps may be the CPU's time-stamp counter (`rdtsc`, a third of the cost
/// of `clock_gettime`), which dcg converts: the machine's clock source is the TSC, constant
/// and running in every state. A ring says what its thread used ([`RingHeader::clock`]).
pub const PLAN_TSC: u32 = 2;
/// Plan flag: `--stack`. A top-level call (no hooked call open in its thread) is preceded
/// by a [`REC_STACK`] record.
pub const PLAN_STACK: u32 = 4;

/// Plan header.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct PlanHeader {
    /// [`PLAN_MAGIC`].
    pub magic: [u8; 8],
    /// Number of [`TargetDesc`].
    pub ntargets: u32,
    /// Number of [`FuncDesc`].
    pub nfuncs: u32,
    /// Number of [`FetchOp`].
    pub nops: u32,
    /// Bytes of strings at the end.
    pub strings_len: u32,
    /// `PLAN_*` flags.
    pub flags: u32,
    /// Number of [`CondTest`].
    pub nconds: u32,
}

/// A binary whose functions are traced: matched against the process's loaded objects by
/// build-id (by path when it has none).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct TargetDesc {
    /// The GNU build-id, `build_id_len` bytes used.
    pub build_id: [u8; 40],
    /// Bytes of `build_id` used (0: match by path).
    pub build_id_len: u32,
    /// Offset of the path in the strings.
    pub path_off: u32,
    /// Length of the path.
    pub path_len: u32,
    /// Zero.
    pub reserved: u32,
}

/// How a function's entry reaches the recorder.
pub mod mode {
    /// A `-pg` build: the function calls `mcount` (or `__fentry__` with `-mfentry`) itself;
    /// the call returns to `site_off`.
    pub const MCOUNT: u8 = 1;
    /// A `-fpatchable-function-entry` build: a NOP pad at `patch_off` becomes a call.
    pub const PATCHABLE: u8 = 2;
    /// A plain build: the first `patch_len` bytes move to a trampoline.
    pub const PLAIN: u8 = 3;
    /// An IFUNC: `addr` is its resolver, which the recorder calls at start-up; of the
    /// `PLAIN` functions flagged `IFUNC_IMPL` that follow it, the one the resolver
    /// returns is hooked (records name that one).
    pub const IFUNC: u8 = 4;
}

/// Function flags.
pub mod fflags {
    /// Never hook the return: the function returns twice (`setjmp`, `vfork`) or the
    /// caller asked for entries only.
    pub const NO_RET_HOOK: u8 = 1;
    /// The return value is on the x87 stack (`long double`): read `st0` at the return.
    pub const RET_X87: u8 = 2;
    /// A possible implementation of the IFUNC before it: hooked only if chosen.
    pub const IFUNC_IMPL: u8 = 4;
}

/// A traced function.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct FuncDesc {
    /// Its ELF address (the load bias is added at run time).
    pub addr: u64,
    /// Bytes of code.
    pub size: u32,
    /// Index of its [`TargetDesc`].
    pub target: u32,
    /// First [`FetchOp`] of the entry record.
    pub entry_op: u32,
    /// First [`FetchOp`] of the return record.
    pub ret_op: u32,
    /// Number of entry ops.
    pub entry_n: u16,
    /// Number of return ops.
    pub ret_n: u16,
    /// One of [`mode`].
    pub mode: u8,
    /// [`fflags`].
    pub flags: u8,
    /// `MCOUNT`: offset of the instruction after the call (where it returns);
    /// `PATCHABLE`: offset of the 5-byte NOP.
    pub site_off: u8,
    /// `PLAIN`: bytes of whole instructions at the entry moved to the trampoline (5..=32).
    pub patch_len: u8,
    /// First [`CondTest`] a top-level call must pass to be recorded (`--filter`).
    pub cond_first: u32,
    /// Number of those tests (0: every call is recorded).
    pub cond_n: u32,
    /// Entry fetches whose values the return's fetches start from ([`REG_SAVED`]): each
    /// one's index among the entry fetches plus one (0: none). Output parameters: the
    /// pointer passed, read again when the call returns.
    pub saved: [u16; SAVED_WORDS],
}

/// Entry values a hooked call keeps until it returns ([`FuncDesc::saved`]).
pub const SAVED_WORDS: usize = 4;

/// A test on one value of a function's entry record that a top-level call must pass
/// (`--filter` on its arguments, decided at entry): a call that fails one is not recorded,
/// nor anything it calls, and is counted ([`RingHeader::rejected`]). The value is entry
/// fetch `op` of the function, cut to its low `size` bytes (sign-extended with
/// [`COND_SIGNED`]), ANDed with `mask` ([`COND_MASK`]), then compared with `value`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct CondTest {
    /// Index of the value among the function's entry fetches (a word fetch).
    pub op: u16,
    /// One of the `COND_*` comparisons.
    pub cmp: u8,
    /// Bytes of the value: 1, 2, 4 or 8.
    pub size: u8,
    /// [`COND_SIGNED`], [`COND_MASK`].
    pub flags: u8,
    /// Zero.
    pub reserved: [u8; 3],
    /// The mask ([`COND_MASK`]).
    pub mask: u64,
    /// The operand (an unsigned one as its bits).
    pub value: i64,
}

/// The value is nonzero.
pub const COND_TRUTH: u8 = 0;
/// `==`.
pub const COND_EQ: u8 = 1;
/// `!=`.
pub const COND_NE: u8 = 2;
/// `<`.
pub const COND_LT: u8 = 3;
/// `<=`.
pub const COND_LE: u8 = 4;
/// `>`.
pub const COND_GT: u8 = 5;
/// `>=`.
pub const COND_GE: u8 = 6;
/// The value is signed: sign-extended and compared as signed.
pub const COND_SIGNED: u8 = 1;
/// The value is ANDed with [`CondTest::mask`] first (then compared as unsigned).
pub const COND_MASK: u8 = 2;

impl CondTest {
    /// Whether the value `v` (the fetched word) passes.
    #[inline(always)]
    pub fn holds(&self, v: u64) -> bool {
        let shift = if self.size >= 8 {
            0
        } else {
            64 - 8 * u32::from(self.size)
        };
        let mut v = v;
        if shift > 0 {
            v <<= shift;
            v = if self.flags & COND_SIGNED != 0 {
                ((v as i64) >> shift) as u64
            } else {
                v >> shift
            };
        }
        if self.flags & COND_MASK != 0 {
            v &= self.mask;
        }
        if self.cmp == COND_TRUTH {
            return v != 0;
        }
        let ord = if self.flags & COND_SIGNED != 0 {
            (v as i64).cmp(&self.value)
        } else {
            v.cmp(&(self.value as u64))
        };
        match self.cmp {
            COND_EQ => ord.is_eq(),
            COND_NE => ord.is_ne(),
            COND_LT => ord.is_lt(),
            COND_LE => ord.is_le(),
            COND_GT => ord.is_gt(),
            _ => ord.is_ge(),
        }
    }
}

/// How one value is fetched: start from register `reg` (DWARF number; [`REG_RETVAL`] is
/// rax at the return), then read a word at `+off[i]` `nderef` times; a [`FETCH_STRING`]
/// reads the NUL-terminated string at the address the last step gives instead of a word,
/// a [`FETCH_BLOCK`] `words` words there (`--deref`).
/// [`FETCH_XMM`] takes xmm register `reg` (0..8) (its low 8 bytes, `off[0] == 1` for the
/// high 8), [`FETCH_ST0`] the low (`off[0] == 0`) or high word of the x87 `st0`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct FetchOp {
    /// One of the `FETCH_*` kinds.
    pub kind: u8,
    /// Register (DWARF number 0..16 for general registers).
    pub reg: u8,
    /// Number of memory reads (0..=3).
    pub nderef: u8,
    /// [`FETCH_BLOCK`]: words copied (1..=[`MAX_BLOCK_WORDS`]); zero otherwise.
    pub words: u8,
    /// Offsets of the reads.
    pub off: [i32; 3],
}

/// A 64-bit word.
pub const FETCH_WORD: u8 = 1;
/// A string.
pub const FETCH_STRING: u8 = 2;
/// An xmm register half.
pub const FETCH_XMM: u8 = 3;
/// A word of `st0`.
pub const FETCH_ST0: u8 = 4;
/// A block of memory: as a string's, a length word (the bytes copied, fewer than asked
/// where readable memory ended; [`STRING_FAULT`]: none) then the bytes, padded to 8.
pub const FETCH_BLOCK: u8 = 5;
/// Most words a [`FETCH_BLOCK`] copies (as a uprobe's longest array).
pub const MAX_BLOCK_WORDS: usize = 64;
/// DWARF register number of rax: the return value register.
pub const REG_RETVAL: u8 = 0;
/// A return fetch's start: saved entry value `reg - REG_SAVED` ([`FuncDesc::saved`];
/// fetch syntax `%saved0`).
pub const REG_SAVED: u8 = 32;
/// Longest string a record carries; longer ones are cut.
pub const MAX_STRING: usize = 256;
/// String length word of a string that could not be read.
pub const STRING_FAULT: u64 = u64::MAX;

/// Ring file header.
#[repr(C)]
#[derive(Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ShmHeader {
    /// [`SHM_MAGIC`].
    pub magic: [u8; 8],
    /// Number of rings.
    pub nrings: u32,
    /// Data bytes of each ring (a multiple of 8).
    pub ring_size: u32,
    /// Rings claimed so far (can pass `nrings`: those threads record nothing).
    pub next_ring: u32,
    /// Set by dcg when it stops draining: the recorder writes nothing more.
    pub stopped: u32,
    /// Processes whose recorder found a traced binary loaded and hooked it.
    pub attached: u32,
    /// Functions of the plan a recorder could not hook (its entry could not be patched);
    /// the first [`UNHOOKED_SLOTS`] are named at [`unhooked_offset`].
    pub unhooked: u32,
    /// [`ObjectSlot`]s claimed so far.
    pub next_object: u32,
    /// Threads that recorded nothing because the memory behind a new ring could not be
    /// had (a full `/dev/shm`): writing there would have been a `SIGBUS` in the target.
    pub no_space: u32,
    /// Zero.
    pub reserved: [u64; 3],
}

/// Objects (the executable, its libraries) the traced processes had loaded when their
/// recorder started, where: so that pointers into them are named without reading
/// `/proc/PID/maps` of a process that may be gone by then.
pub const OBJECT_SLOTS: u32 = 256;

/// One loaded object of a traced process.
#[repr(C)]
#[derive(Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct ObjectSlot {
    /// Its process.
    pub pid: u32,
    /// Set once the rest is written.
    pub ready: u32,
    /// Load bias (run-time address − ELF address).
    pub bias: u64,
    /// Its path, NUL-padded (cut at 239 bytes).
    pub path: [u8; 240],
}

/// A ring's header.
#[repr(C)]
#[derive(Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct RingHeader {
    /// Bytes written since the start (the producer's; published with release order).
    pub head: u64,
    /// Bytes consumed (dcg's).
    pub tail: u64,
    /// Records dropped because the ring was full.
    pub lost: u64,
    /// Thread id of its producer.
    pub tid: u32,
    /// Process id of its producer.
    pub pid: u32,
    /// The thread's name when it claimed the ring (`comm`, NUL-padded).
    pub comm: [u8; 16],
    /// Set once `tid`, `pid` and `comm` are written (cleared by dcg when it frees the
    /// ring for another thread).
    pub ready: u32,
    /// `RING_*`: who has the ring. A ring is claimed fresh (`next_ring`) or, free again
    /// after its thread ended, by compare-and-swap from [`RING_FREE`].
    pub state: u32,
    /// What its records' `ts` are: [`CLOCK_MONO`] or [`CLOCK_TSC`] (set at the claim).
    pub clock: u32,
    /// Data bytes whose memory the recorder has made sure of (the producer's; grows a
    /// megabyte at a time during the first lap, then stays at `ring_size`).
    pub populated: u32,
    /// Zero.
    /// Top-level calls of its thread not recorded because a [`CondTest`] rejected them
    /// at entry (the producer's).
    pub rejected: u64,
    /// Zero.
    pub reserved: [u32; 2],
}

/// Record timestamps in `CLOCK_MONOTONIC` nanoseconds.
pub const CLOCK_MONO: u32 = 0;
/// Record timestamps in time-stamp counter ticks (`rdtsc`), which dcg converts.
pub const CLOCK_TSC: u32 = 1;

/// A ring's state: a thread records into it.
pub const RING_OWNED: u32 = 1;
/// Its thread ended (its last record is written): dcg drains it, then frees it.
pub const RING_RETIRED: u32 = 2;
/// Drained after its thread ended: the next thread that needs a ring may take it.
pub const RING_FREE: u32 = 3;

/// Padding to the end of the ring: skip.
pub const REC_PAD: u16 = 0;
/// A traced function was entered: its entry values follow.
pub const REC_ENTRY: u16 = 1;
/// It returned: its return values follow.
pub const REC_EXIT: u16 = 2;
/// Its frame was left without a return (`longjmp`, an exception): no values.
pub const REC_UNWIND: u16 = 3;
/// A function that is never given a return hook returned as far as the trace knows: a
/// leaf without a value.
pub const REC_NORET: u16 = 4;
/// The recorder of a new program image started (its start-up, in the thread that runs
/// it): calls its thread had open in the program before (`exec`) ended. No values;
/// `func` is 0.
pub const REC_EXEC: u16 = 5;
/// The stack a top-level call starts on ([`PLAN_STACK`]), written just before
/// its [`REC_ENTRY`]: three words, the stack pointer at the function's first instruction
/// (where its return address is), the frame pointer there and the number of bytes
/// copied, then those bytes of the stack from the stack pointer up (at most
/// [`STACK_COPY`], fewer where the stack's mapping ends or, on the main thread, where its
/// stack starts: glibc's `__libc_stack_end`, above which lie no frames). No hooked call is open in the
/// thread, so the copy holds no return thunk. dcg unwinds it; nothing is unwound in the
/// traced program.
pub const REC_STACK: u16 = 6;
/// Bytes of stack a [`REC_STACK`] record copies at most: a stack cut there is marked.
pub const STACK_COPY: usize = 16384;

/// Header of every record. Values follow: a word per word fetch, and per string fetch a
/// length word (or [`STRING_FAULT`]) then the bytes, padded to 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct RecHeader {
    /// Total bytes of the record, header included (a multiple of 8).
    pub len: u32,
    /// `REC_*`.
    pub kind: u16,
    /// The CPU the thread ran on.
    pub cpu: u16,
    /// Index of the function in the plan.
    pub func: u32,
    /// Zero.
    pub reserved: u32,
    /// `CLOCK_MONOTONIC` nanoseconds, or TSC ticks (its ring's [`RingHeader::clock`]).
    pub ts: u64,
}

/// Byte offset of object slot `i` in the ring file.
pub const fn object_offset(i: u32) -> usize {
    size_of::<ShmHeader>() + i as usize * size_of::<ObjectSlot>()
}

/// Functions a recorder could not hook, named by their plan index (a `u32` each) in the
/// ring file after the object slots: the first [`UNHOOKED_SLOTS`] of
/// [`ShmHeader::unhooked`].
pub const UNHOOKED_SLOTS: u32 = 62;

/// Byte offset of unhooked slot `i` in the ring file.
pub const fn unhooked_offset(i: u32) -> usize {
    object_offset(OBJECT_SLOTS) + i as usize * 4
}

/// Byte offset of ring `i`'s header in the ring file.
pub const fn ring_offset(i: u32, ring_size: u32) -> usize {
    unhooked_offset(UNHOOKED_SLOTS + 2)
        + i as usize * (size_of::<RingHeader>() + ring_size as usize)
}

const _: () = {
    assert!(size_of::<PlanHeader>() == 32);
    assert!(size_of::<TargetDesc>() == 56);
    assert!(size_of::<FuncDesc>() == 48);
    assert!(size_of::<CondTest>() == 24);
    assert!(size_of::<FetchOp>() == 16);
    assert!(size_of::<ShmHeader>() == 64);
    assert!(size_of::<RingHeader>() == 80);
    assert!(size_of::<RecHeader>() == 24);
    assert!(size_of::<ObjectSlot>() == 256);
};
