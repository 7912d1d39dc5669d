//! The hot path: a traced function's entry and return. Nothing here allocates, locks or
//! panics; every failure drops the record and counts it.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use dcg_inproc::layout::*;

use crate::state::{state, State, DISABLED};
use crate::thunks::{dcg_return_thunk, dcg_return_thunk_x87, Regs};

/// A traced call whose return is hooked.
#[derive(Clone, Copy)]
pub struct Frame {
    /// The real return address.
    pub orig: u64,
    /// Where it was (the stack slot now holding a return thunk).
    pub slot: u64,
    /// Plan index of the function.
    pub func: u32,
    /// The real address was put back for the unwinder ([`crate::unwind`]).
    pub restored: u32,
}

/// Frames a thread can have hooked at once; deeper calls are not recorded.
pub const MAX_FRAMES: usize = 8192;

/// Per-thread state. No destructor, so the compiler keeps it in plain TLS.
pub struct Tls {
    /// In the recorder: a signal handler's traced calls are not recorded meanwhile.
    pub busy: bool,
    /// This thread has no ring (none free, or recording is off in this process).
    pub no_ring: bool,
    /// Its ring's header, null until its first record.
    pub ring: *mut RingHeader,
    /// The shadow stack (mmap'd at the first hooked call).
    pub frames: *mut Frame,
    /// Frames in use.
    pub depth: usize,
}

thread_local! {
    static TLS: UnsafeCell<Tls> = const {
        UnsafeCell::new(Tls {
            busy: false,
            no_ring: false,
            ring: core::ptr::null_mut(),
            frames: core::ptr::null_mut(),
            depth: 0,
        })
    };
}

/// This thread's state.
#[inline(always)]
pub fn tls() -> *mut Tls {
    TLS.with(|t| t.get())
}

/// Ring `i`'s header.
unsafe fn ring(st: &State, i: u32) -> *mut RingHeader {
    st.shm.add(ring_offset(i, st.ring_size)) as *mut RingHeader
}

/// Back `[from, to)` of ring `r`'s data with memory before anything is written there: a
/// store to a page of a full `/dev/shm` would be a `SIGBUS` in the target, where this is
/// an error. (The ring's header page with `from` 0.) Done a megabyte at a time as the
/// first lap goes, so that a thread that records little costs little.
unsafe fn populate(st: &State, r: *mut RingHeader, from: u64, to: u64) -> bool {
    let data = r as usize + size_of::<RingHeader>();
    let start = if from == 0 {
        r as usize
    } else {
        data + from as usize
    };
    let end = data + to.min(u64::from(st.ring_size)) as usize;
    let (start, end) = (start & !4095, (end + 4095) & !4095);
    let got = libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE);
    // Kernels before 5.14 know no such advice: nothing to check there.
    if got == 0 || *libc::__errno_location() == libc::EINVAL {
        (*r).populated = to.min(u64::from(st.ring_size)) as u32;
        true
    } else {
        false
    }
}

/// Memory made sure of ahead of the records, at a time.
const POPULATE_STEP: u64 = 1 << 20;

/// `MADV_POPULATE_WRITE` (Linux 5.14), which the libc crate may not name.
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Claim a ring for this thread (its first record): one a thread that ended gave back,
/// else a fresh one. The thread gives it back when it ends ([`thread_exit`]).
unsafe fn claim(st: &State, t: &mut Tls) -> bool {
    if t.no_ring {
        return false;
    }
    let h = st.shm as *mut ShmHeader;
    let next = AtomicU32::from_ptr(&raw mut (*h).next_ring);
    let fresh = next.load(Ordering::Acquire).min(st.nrings);
    let reused = (0..fresh).map(|i| ring(st, i)).find(|&r| {
        AtomicU32::from_ptr(&raw mut (*r).state)
            .compare_exchange(RING_FREE, RING_OWNED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    let r = match reused {
        Some(r) => r,
        None => {
            let i = next.fetch_add(1, Ordering::AcqRel);
            if i >= st.nrings {
                t.no_ring = true;
                return false;
            }
            let r = ring(st, i);
            (*r).populated = 0;
            if !populate(st, r, 0, POPULATE_STEP) {
                AtomicU32::from_ptr(&raw mut (*h).no_space).fetch_add(1, Ordering::AcqRel);
                t.no_ring = true;
                return false;
            }
            AtomicU32::from_ptr(&raw mut (*r).state).store(RING_OWNED, Ordering::Relaxed);
            r
        }
    };
    (*r).clock = if st.tsc { CLOCK_TSC } else { CLOCK_MONO };
    (*r).tid = libc::syscall(libc::SYS_gettid) as u32;
    (*r).pid = libc::getpid() as u32;
    let mut comm = [0u8; 16];
    libc::prctl(libc::PR_GET_NAME, comm.as_mut_ptr());
    (*r).comm = comm;
    AtomicU32::from_ptr(&raw mut (*r).ready).store(1, Ordering::Release);
    t.ring = r;
    // Any non-null value: the key's destructor runs when the thread ends.
    libc::pthread_setspecific(st.thread_key, r as *const libc::c_void);
    true
}

/// The destructor of the recorder's thread key: the thread is ending. Its ring goes back
/// (dcg frees it once drained) and its shadow stack is unmapped; it records nothing more.
///
/// # Safety
/// Called by the C library as a thread ends.
pub unsafe extern "C" fn thread_exit(_: *mut libc::c_void) {
    let t = &mut *tls();
    t.no_ring = true;
    // Its `munmap` is the recorder's, not the program's.
    t.busy = true;
    // A forked child's thread inherited the value, not the ring: its own is in `t`.
    if !t.ring.is_null() {
        AtomicU32::from_ptr(&raw mut (*t.ring).state).store(RING_RETIRED, Ordering::Release);
        t.ring = core::ptr::null_mut();
    }
    if !t.frames.is_null() && t.depth == 0 {
        libc::munmap(t.frames.cast(), MAX_FRAMES * size_of::<Frame>());
        t.frames = core::ptr::null_mut();
    }
    t.busy = false;
}

/// Room for a record of at most `max` bytes at the ring's head, padding to the end where
/// it does not fit before it; null when the ring is full (counted as lost).
unsafe fn reserve(st: &State, r: *mut RingHeader, max: usize) -> *mut u8 {
    let size = st.ring_size as u64;
    let head = (*r).head;
    let tail = AtomicU64::from_ptr(&raw mut (*r).tail).load(Ordering::Acquire);
    let pos = head % size;
    let pad = if pos + max as u64 > size {
        size - pos
    } else {
        0
    };
    let data = (r as *mut u8).add(size_of::<RingHeader>());
    let need = (head + pad + max as u64).min(size);
    let populated = u64::from((*r).populated);
    if head + pad + max as u64 - tail > size
        || (need > populated && !populate(st, r, populated, need + POPULATE_STEP))
    {
        AtomicU64::from_ptr(&raw mut (*r).lost).fetch_add(1, Ordering::Relaxed);
        return core::ptr::null_mut();
    }
    if pad > 0 {
        let p = data.add(pos as usize) as *mut RecHeader;
        (*p).len = pad as u32;
        (*p).kind = REC_PAD;
        AtomicU64::from_ptr(&raw mut (*r).head).store(head + pad, Ordering::Release);
        return data;
    }
    data.add(pos as usize)
}

/// Publish a record of `len` bytes written at the head.
unsafe fn commit(r: *mut RingHeader, len: usize) {
    let head = AtomicU64::from_ptr(&raw mut (*r).head);
    head.store(head.load(Ordering::Relaxed) + len as u64, Ordering::Release);
}

/// Copy `n` bytes without calling the C library's `memcpy` (which may use, and clear the
/// upper halves of, vector registers the traced code keeps values in).
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    for i in 0..n {
        core::ptr::write_volatile(dst.add(i), core::ptr::read_volatile(src.add(i)));
    }
}

/// Bytes at `addr` that can be read directly, without a fault, up to `n`: those in a
/// read-only file mapping of start-up (while no `dlclose` can have removed one), or in
/// the page the stack pointer `sp` is in (mapped: the return address was just pushed
/// there; the next page may be a small signal stack's end).
#[inline(always)]
fn direct_len(st: &State, addr: u64, n: usize, sp: u64) -> usize {
    let page_end = (sp | 4095).wrapping_add(1);
    if addr >= sp && addr < page_end {
        return n.min((page_end - addr) as usize);
    }
    st.readable_len(addr).min(n as u64) as usize
}

/// Read `n` bytes at `addr` into `dst` without ever faulting: directly where the address
/// is known readable, else through the kernel (`process_vm_readv` on ourselves), which
/// reads up to the first unmapped byte. `string`: stop after a NUL. Returns the bytes
/// read.
unsafe fn read_mem(st: &State, addr: u64, dst: *mut u8, n: usize, sp: u64, string: bool) -> usize {
    if addr == 0 {
        return 0;
    }
    let direct = direct_len(st, addr, n, sp);
    if direct == n || (string && direct > 0) {
        if !string {
            copy(addr as *const u8, dst, n);
            return n;
        }
        // A string: up to its NUL, which usually comes long before `n`.
        for i in 0..direct {
            let b = core::ptr::read_volatile((addr as *const u8).add(i));
            core::ptr::write_volatile(dst.add(i), b);
            if b == 0 {
                return i + 1;
            }
        }
        if direct == n {
            return n;
        }
    }
    let local = libc::iovec {
        iov_base: dst.cast(),
        iov_len: n,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: n,
    };
    let got = libc::process_vm_readv(st.pid(), &local, 1, &remote, 1, 0);
    if got < 0 {
        0
    } else {
        got as usize
    }
}

/// Evaluate `op` on `regs`: the address a string is read at, or the word.
unsafe fn eval(st: &State, op: &FetchOp, regs: &Regs) -> Option<u64> {
    let mut v = match op.kind {
        FETCH_XMM => return Some(regs.xmm[(op.reg & 7) as usize][(op.off[0] & 1) as usize]),
        FETCH_ST0 => return Some(regs.st0[(op.off[0] & 1) as usize]),
        _ => regs.gpr[(op.reg & 15) as usize],
    };
    let sp = regs.gpr[7];
    let n = (op.nderef as usize).min(3);
    let reads = if op.kind == FETCH_STRING { n - 1 } else { n };
    for k in 0..reads {
        let addr = v.wrapping_add(op.off[k] as i64 as u64);
        let mut w = 0u64;
        if read_mem(st, addr, (&raw mut w).cast(), 8, sp, false) != 8 {
            return None;
        }
        v = w;
    }
    if op.kind == FETCH_STRING {
        v = v.wrapping_add(op.off[n - 1] as i64 as u64);
    }
    Some(v)
}

/// Bytes a record with `ops` can take at most.
fn max_len(ops: &[FetchOp]) -> usize {
    size_of::<RecHeader>()
        + ops
            .iter()
            .map(|o| {
                if o.kind == FETCH_STRING {
                    8 + MAX_STRING
                } else {
                    8
                }
            })
            .sum::<usize>()
}

/// Write a record of `kind` for function `func` with the values of `ops`.
unsafe fn record(st: &State, t: &mut Tls, kind: u16, func: u32, ops: &[FetchOp], regs: &Regs) {
    if t.ring.is_null() && !claim(st, t) {
        return;
    }
    let r = t.ring;
    let p = reserve(st, r, max_len(ops));
    if p.is_null() {
        return;
    }
    let mut at = size_of::<RecHeader>();
    let sp = regs.gpr[7];
    for op in ops {
        let w = p.add(at) as *mut u64;
        at += 8;
        if op.kind != FETCH_STRING {
            *w = eval(st, op, regs).unwrap_or(0);
            continue;
        }
        let Some(addr) = eval(st, op, regs).filter(|&a| a != 0) else {
            *w = STRING_FAULT;
            continue;
        };
        let dst = p.add(at);
        let got = read_mem(st, addr, dst, MAX_STRING, sp, true);
        if got == 0 {
            *w = STRING_FAULT;
            continue;
        }
        let len = core::slice::from_raw_parts(dst, got)
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(got);
        *w = len as u64;
        at += len.div_ceil(8) * 8;
    }
    let h = p as *mut RecHeader;
    (*h).len = at as u32;
    (*h).kind = kind;
    (*h).cpu = libc::sched_getcpu().max(0) as u16;
    (*h).func = func;
    (*h).reserved = 0;
    (*h).ts = if st.tsc {
        // SAFETY: rdtsc, which start-up checked this process may execute.
        core::arch::x86_64::_rdtsc()
    } else {
        dcg_inproc::rings::mono_ns()
    };
    commit(r, at);
}

/// This program image starts recording: a [`REC_EXEC`] record in this thread's ring, by
/// which dcg ends the calls the thread had open in the program it ran before an `exec`.
pub unsafe fn image_started(st: &State) {
    let t = &mut *tls();
    // SAFETY: plain registers, all zero: a record without values reads none of them.
    let regs: Regs = core::mem::zeroed();
    record(st, t, REC_EXEC, 0, &[], &regs);
}

/// How far below live code a frame's return slot may be for the frame to count as left
/// by a `longjmp`: further away it may be on another stack (a signal handler's alternate
/// stack, a `vfork` child's), and it stays until a return below it shows it gone.
const SAME_STACK: u64 = 1 << 20;

/// Whether `ra` is one of the recorder's return thunks (a hooked return address).
#[inline(always)]
pub fn is_return_thunk(ra: u64) -> bool {
    ra == dcg_return_thunk as *const () as u64 || ra == dcg_return_thunk_x87 as *const () as u64
}

/// Close the frames a `longjmp` (or an unwind) skipped: those whose return slot is below
/// `sp`, the stack pointer of live code, on the same stack. `reused`: the slot at `sp`
/// was just written by a new call with a real return address, so a frame whose slot is
/// that very slot is gone too (main calls `foo`, `foo` longjmps back into main, main
/// calls `getpid` from the same stack depth; a tail call instead leaves the return
/// thunk in the slot and the frame lives on).
pub unsafe fn close_dead(st: &State, t: &mut Tls, sp: u64, reused: bool, regs: &Regs) {
    while t.depth > 0 {
        let f = *t.frames.add(t.depth - 1);
        let live = f.slot > sp || (f.slot == sp && !reused);
        if live || sp - f.slot > SAME_STACK {
            break;
        }
        t.depth -= 1;
        record(st, t, REC_UNWIND, f.func, &[], regs);
    }
}

/// A traced function was entered (`site`: where its hook returns to).
///
/// # Safety
/// Called by the entry thunks only, with the registers they saved.
pub unsafe extern "C" fn dcg_on_entry(regs: *mut Regs, slot: *mut u64, site: u64) {
    let t = &mut *tls();
    if t.busy {
        return;
    }
    t.busy = true;
    let st = state();
    if let Some(st) = st.filter(|_| !DISABLED.load(Ordering::Relaxed)) {
        if let Some(func) = st.lookup(site) {
            entry(st, t, &*regs, slot, func);
        }
    }
    t.busy = false;
}

unsafe fn entry(st: &State, t: &mut Tls, regs: &Regs, slot: *mut u64, func: u32) {
    if st.stopped() {
        return;
    }
    if t.frames.is_null() {
        let m = libc::mmap(
            core::ptr::null_mut(),
            MAX_FRAMES * size_of::<Frame>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if m == libc::MAP_FAILED {
            return;
        }
        t.frames = m.cast();
    }
    // A tail call from a hooked function (or a jump back to its own entry) finds the
    // return thunk in the slot: the new frame's "real" return address is the thunk, so
    // the one return closes both calls, innermost first.
    close_dead(st, t, slot as u64, !is_return_thunk(*slot), regs);
    let f = st.func(func);
    let hook = f.flags & fflags::NO_RET_HOOK == 0;
    if hook && t.depth >= MAX_FRAMES {
        return;
    }
    record(st, t, REC_ENTRY, func, st.ops(f.entry_op, f.entry_n), regs);
    if !hook {
        record(st, t, REC_NORET, func, &[], regs);
        return;
    }
    *t.frames.add(t.depth) = Frame {
        orig: *slot,
        slot: slot as u64,
        func,
        restored: 0,
    };
    t.depth += 1;
    *slot = if f.flags & fflags::RET_X87 != 0 {
        dcg_return_thunk_x87 as *const () as u64
    } else {
        dcg_return_thunk as *const () as u64
    };
}

/// A hooked function returned; `slot` is where its return address was. Returns the
/// real return address.
///
/// # Safety
/// Called by the return thunks only.
pub unsafe extern "C" fn dcg_on_exit(regs: *mut Regs, slot: u64) -> u64 {
    let t = &mut *tls();
    let was_busy = t.busy;
    t.busy = true;
    let Some(st) = state() else {
        crate::fatal(b"dcg recorder: a hooked return without a plan\n")
    };
    let regs = &*regs;
    // The frame of this return: the innermost whose slot this is. Frames above it were
    // left without a return (longjmp, an exception, a vfork child that exec'd).
    let mut at = t.depth;
    while at > 0 && (*t.frames.add(at - 1)).slot != slot {
        at -= 1;
    }
    if at > 0 {
        while t.depth > at {
            t.depth -= 1;
            let f = *t.frames.add(t.depth);
            record(st, t, REC_UNWIND, f.func, &[], regs);
        }
    }
    let orig = match t.depth.checked_sub(1).map(|d| *t.frames.add(d)) {
        Some(f) if f.slot == slot => {
            t.depth -= 1;
            if !was_busy && !DISABLED.load(Ordering::Relaxed) && !st.stopped() {
                let d = st.func(f.func);
                record(st, t, REC_EXIT, f.func, st.ops(d.ret_op, d.ret_n), regs);
            }
            f.orig
        }
        // A return with no frame: nothing can be right any more.
        _ => crate::fatal(b"dcg recorder: return without its frame\n"),
    };
    t.busy = was_busy;
    orig
}
