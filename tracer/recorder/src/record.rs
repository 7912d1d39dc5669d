//! The hot path: a traced function's entry and return. Nothing here allocates, locks or
//! panics; every failure drops the record and counts it. It is safe code over the
//! recorder's small handles: this thread's state and shadow stack ([`crate::thread`]),
//! its ring ([`crate::ring`]) and non-faulting reads of the target ([`crate::memory`]).

use core::sync::atomic::Ordering;

use dcg_inproc::layout::*;

use crate::memory::{read_mem, read_stack, read_word};
use crate::ring::{Ring, Space};
use crate::state::{state, State, DISABLED};
use crate::thread::{thread, Frame, Slot, Thread};
use crate::thunks::{dcg_return_thunk, dcg_return_thunk_x87, Regs};

/// This thread's ring: the one it has, else one claimed now (its first record) and given
/// back when the thread ends ([`thread_exit`]).
#[inline(always)]
fn ring(st: &State, t: &Thread) -> Option<Ring> {
    if let Some(r) = t.ring.get() {
        return Some(r);
    }
    if t.no_ring.get() {
        return None;
    }
    let Some(r) = st.shm.claim(if st.tsc { CLOCK_TSC } else { CLOCK_MONO }) else {
        t.no_ring.set(true);
        return None;
    };
    t.ring.set(Some(r));
    // Any non-null value: the key's destructor runs when the thread ends.
    // SAFETY: a key start-up created; the value is only compared with null.
    unsafe { libc::pthread_setspecific(st.thread_key, r.as_ptr()) };
    Some(r)
}

/// The destructor of the recorder's thread key: the thread is ending. Its ring goes back
/// (dcg frees it once drained) and its shadow stack is unmapped; it records nothing more.
pub extern "C" fn thread_exit(_: *mut libc::c_void) {
    let t = thread();
    t.no_ring.set(true);
    // Its `munmap` is the recorder's, not the program's.
    t.busy.set(true);
    // A forked child's thread inherited the value, not the ring: its own is in `t`.
    if let Some(r) = t.ring.take() {
        r.retire();
    }
    t.frames.release();
    t.busy.set(false);
}

/// Evaluate `op` on `regs` (and at a return, the call's `saved` entry values): the
/// address a string is read at, or the word.
#[inline(always)]
fn eval(st: &State, op: &FetchOp, regs: &Regs, saved: &Saved) -> Option<u64> {
    let mut v = match op.kind {
        FETCH_XMM => return Some(regs.xmm[(op.reg & 7) as usize][(op.off[0] & 1) as usize]),
        FETCH_ST0 => return Some(regs.st0[(op.off[0] & 1) as usize]),
        _ if op.reg >= REG_SAVED => *saved.get(usize::from(op.reg - REG_SAVED))?,
        _ => regs.gpr[(op.reg & 15) as usize],
    };
    let sp = regs.gpr[7];
    let n = (op.nderef as usize).min(3);
    // A string's or block's last step gives the address read from, not a word.
    let at_address = op.kind == FETCH_STRING || op.kind == FETCH_BLOCK;
    let reads = if at_address { n.saturating_sub(1) } else { n };
    for k in 0..reads {
        v = read_word(st, v.wrapping_add(op.off[k] as i64 as u64), sp)?;
    }
    if at_address && n > 0 {
        v = v.wrapping_add(op.off[n - 1] as i64 as u64);
    }
    Some(v)
}

/// Bytes a [`FETCH_BLOCK`] copies.
#[inline(always)]
fn block_len(op: &FetchOp) -> usize {
    (op.words as usize).min(MAX_BLOCK_WORDS) * 8
}

/// Bytes a record with `ops` can take at most.
fn max_len(ops: &[FetchOp]) -> usize {
    size_of::<RecHeader>()
        + ops
            .iter()
            .map(|o| match o.kind {
                FETCH_STRING => 8 + MAX_STRING,
                FETCH_BLOCK => 8 + block_len(o),
                _ => 8,
            })
            .sum::<usize>()
}

/// The time now, in the ring's clock.
#[inline(always)]
fn now(st: &State) -> u64 {
    if st.tsc {
        // SAFETY: rdtsc, which start-up checked this process may execute.
        unsafe { core::arch::x86_64::_rdtsc() }
    } else {
        dcg_inproc::clock::mono_ns()
    }
}

/// A hooked call's saved entry values ([`Frame::saved`]).
type Saved = [u64; SAVED_WORDS];

/// No saved values (entry records; fetches from them fail).
const NONE_SAVED: &Saved = &[0; SAVED_WORDS];

/// Write a record of `kind` for function `func` with the values of `ops`.
fn record(
    st: &State,
    t: &Thread,
    (kind, func): (u16, u32),
    ops: &[FetchOp],
    regs: &Regs,
    saved: &Saved,
) {
    let Some(r) = ring(st, t) else {
        return;
    };
    let Some(mut p) = r.reserve(max_len(ops)) else {
        return;
    };
    let mut at = size_of::<RecHeader>();
    let sp = regs.gpr[7];
    for op in ops {
        let w = at;
        at += 8;
        let string = op.kind == FETCH_STRING;
        if !string && op.kind != FETCH_BLOCK {
            p.put(w, eval(st, op, regs, saved).unwrap_or(0));
            continue;
        }
        let Some(addr) = eval(st, op, regs, saved).filter(|&a| a != 0) else {
            p.put(w, STRING_FAULT);
            continue;
        };
        let want = if string { MAX_STRING } else { block_len(op) };
        let Some(dst) = p.bytes(at, want) else {
            p.put(w, STRING_FAULT);
            continue;
        };
        let got = read_mem(st, addr, dst, sp, string);
        if got == 0 {
            p.put(w, STRING_FAULT);
            continue;
        }
        let len = if string {
            p.bytes(at, got)
                .and_then(|b| b.iter().position(|&c| c == 0))
                .unwrap_or(got)
        } else {
            got
        };
        p.put(w, len as u64);
        at += len.div_ceil(8) * 8;
    }
    seal(st, r, p, at, kind, func);
}

/// Write the header of a record of `len` bytes at `p` and publish it.
#[inline(always)]
fn seal(st: &State, r: Ring, mut p: Space, len: usize, kind: u16, func: u32) {
    // SAFETY: a system call without arguments.
    let cpu = unsafe { libc::sched_getcpu() }.max(0) as u16;
    p.header(len as u32, kind, cpu, func, now(st));
    r.commit(len);
}

/// A [`REC_STACK`] record: the stack a top-level call of `func` starts on (its
/// return address first), for dcg to unwind. No hooked call is open in the thread, so
/// no return address in it is a return thunk.
fn stack(st: &State, t: &Thread, func: u32, regs: &Regs) {
    let Some(r) = ring(st, t) else {
        return;
    };
    let (sp, bp) = (regs.gpr[7], regs.gpr[6]);
    // On the main thread's stack, nothing above its start is a frame: a shallow stack
    // is a small copy (the environment and auxiliary vector above are left out).
    let (want, mapped) = match st.stack_end.checked_sub(sp) {
        // `__libc_stack_end` points at `argc`, a word of the stack: mapped too.
        Some(d) if sp != 0 && d < STACK_COPY as u64 => ((d as usize + 15) & !7, st.stack_end + 8),
        _ => (STACK_COPY, 0),
    };
    let head = size_of::<RecHeader>() + 24;
    let Some(mut p) = r.reserve(head + want) else {
        return;
    };
    let Some(dst) = p.bytes(head, want) else {
        return;
    };
    // The main thread's stack is one mapping from `sp` to its start.
    let n = read_stack(sp, mapped, st.pid(), dst);
    let at = size_of::<RecHeader>();
    p.put(at, sp);
    p.put(at + 8, bp);
    p.put(at + 16, n as u64);
    seal(st, r, p, head + n, REC_STACK, func);
}

/// This program image starts recording: a [`REC_EXEC`] record in this thread's ring, by
/// which dcg ends the calls the thread had open in the program it ran before an `exec`.
pub fn image_started(st: &State) {
    record(st, thread(), (REC_EXEC, 0), &[], &Regs::ZERO, NONE_SAVED);
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

/// The return thunk of function `func`.
#[inline(always)]
pub fn return_thunk(st: &State, func: u32) -> u64 {
    if st.func(func).flags & fflags::RET_X87 != 0 {
        dcg_return_thunk_x87 as *const () as u64
    } else {
        dcg_return_thunk as *const () as u64
    }
}

/// Close the frames a `longjmp` (or an unwind) skipped: those whose return slot is below
/// `sp`, the stack pointer of live code, on the same stack. `reused`: the slot at `sp`
/// was just written by a new call with a real return address, so a frame whose slot is
/// that very slot is gone too (main calls `foo`, `foo` longjmps back into main, main
/// calls `getpid` from the same stack depth; a tail call instead leaves the return
/// thunk in the slot and the frame lives on).
pub fn close_dead(st: &State, t: &Thread, sp: u64, reused: bool, regs: &Regs) {
    while let Some(f) = t.frames.top() {
        let slot = f.slot.addr();
        let live = slot > sp || (slot == sp && !reused);
        if live || sp - slot > SAME_STACK {
            break;
        }
        t.frames.pop();
        if !f.rejected {
            record(st, t, (REC_UNWIND, f.func), &[], regs, NONE_SAVED);
        }
    }
}

/// Whether a traced call whose return slot is `slot` is inside this thread's rejected
/// top-level call, which has no return hook yet: a call not deeper on the stack shows it
/// gone (returned, or left by a `longjmp` or an exception); a deeper one is inside it
/// while its slot still holds its return address, and then its return is hooked (an
/// unrecorded frame), so that the calls after this one need no such test. A tail call
/// from the rejected function (at its very slot) is recorded as a top-level call.
#[inline(always)]
fn inside_rejected(st: &State, t: &Thread, slot: Slot) -> bool {
    let Some((r, ra, func)) = t.rejected.get() else {
        return false;
    };
    t.rejected.set(None);
    let (at, ra_at) = (slot.addr(), r.addr());
    if at >= ra_at || ra_at - at > SAME_STACK || r.get() != ra {
        return false;
    }
    r.set(return_thunk(st, func));
    t.frames.push(Frame {
        orig: ra,
        slot: r,
        func,
        restored: false,
        rejected: true,
        saved: [0; SAVED_WORDS],
    });
    true
}

/// Whether a top-level call of `f` passes its entry tests (`--filter`), on the values its
/// entry record would hold.
#[inline(always)]
fn passes(st: &State, f: &FuncDesc, regs: &Regs) -> bool {
    let ops = st.ops(f.entry_op, f.entry_n);
    st.conds(f).iter().all(|c| {
        ops.get(usize::from(c.op))
            .and_then(|op| eval(st, op, regs, NONE_SAVED))
            .is_some_and(|v| c.holds(v))
    })
}

/// A traced function was entered (`site`: where its hook returns to).
///
/// # Safety
/// Called by the entry thunks only: `regs` the registers they saved, `slot` the traced
/// call's return-address slot on this thread's stack.
pub unsafe extern "C" fn dcg_on_entry(regs: *mut Regs, slot: *mut u64, site: u64) {
    let t = thread();
    if t.busy.replace(true) {
        return;
    }
    if let Some(st) = state().filter(|_| !DISABLED.load(Ordering::Relaxed)) {
        if let Some(func) = st.lookup(site) {
            // SAFETY: the thunk's saved registers, on its stack for this call; the slot
            // is the traced call's (this function's contract).
            let (regs, slot) = unsafe { (&*regs, Slot::new(slot)) };
            entry(st, t, regs, slot, func);
        }
    }
    t.busy.set(false);
}

#[inline(always)]
fn entry(st: &State, t: &Thread, regs: &Regs, slot: Slot, func: u32) {
    if st.stopped() || !t.frames.ensure() {
        return;
    }
    // Inside a rejected call: nothing is recorded, no return hooked.
    if inside_rejected(st, t, slot) {
        return;
    }
    // A tail call from a hooked function (or a jump back to its own entry) finds the
    // return thunk in the slot: the new frame's "real" return address is the thunk, so
    // the one return closes both calls, innermost first.
    let orig = slot.get();
    close_dead(st, t, slot.addr(), !is_return_thunk(orig), regs);
    if t.frames.top().is_some_and(|f| f.rejected) {
        return;
    }
    let f = st.func(func);
    let hook = f.flags & fflags::NO_RET_HOOK == 0;
    if hook && t.frames.depth() >= crate::thread::MAX_FRAMES {
        return;
    }
    let top_level = t.frames.depth() == 0;
    if top_level && f.cond_n > 0 && !passes(st, f, regs) {
        // No return hook until a traced call is made inside it ([`inside_rejected`]).
        t.rejected.set(Some((slot, orig, func)));
        if let Some(r) = ring(st, t) {
            r.rejected();
        }
        return;
    }
    if st.stacks && top_level {
        stack(st, t, func, regs);
    }
    let entry_ops = st.ops(f.entry_op, f.entry_n);
    record(st, t, (REC_ENTRY, func), entry_ops, regs, NONE_SAVED);
    if !hook {
        record(st, t, (REC_NORET, func), &[], regs, NONE_SAVED);
        return;
    }
    t.frames.push(Frame {
        orig,
        slot,
        func,
        restored: false,
        rejected: false,
        saved: saved_values(st, f, entry_ops, regs),
    });
    slot.set(return_thunk(st, func));
}

/// The entry values `f`'s return fetches start from ([`FuncDesc::saved`]): the words of
/// those entry fetches, 0 where one is not set or not read.
#[inline(always)]
fn saved_values(st: &State, f: &FuncDesc, ops: &[FetchOp], regs: &Regs) -> Saved {
    let mut saved = [0; SAVED_WORDS];
    for (v, &i) in saved.iter_mut().zip(&f.saved) {
        if let Some(op) = usize::from(i).checked_sub(1).and_then(|i| ops.get(i)) {
            *v = eval(st, op, regs, NONE_SAVED).unwrap_or(0);
        }
    }
    saved
}

/// A hooked function returned; `slot` is where its return address was. Returns the
/// real return address.
///
/// # Safety
/// Called by the return thunks only, `regs` the registers they saved.
pub unsafe extern "C" fn dcg_on_exit(regs: *mut Regs, slot: u64) -> u64 {
    let t = thread();
    let was_busy = t.busy.replace(true);
    let Some(st) = state() else {
        crate::fatal(b"dcg recorder: a hooked return without a plan\n")
    };
    // SAFETY: the thunk's saved registers, on its stack for this call.
    let regs = unsafe { &*regs };
    let orig = exit(st, t, regs, slot, was_busy);
    t.busy.set(was_busy);
    orig
}

#[inline(always)]
fn exit(st: &State, t: &Thread, regs: &Regs, slot: u64, was_busy: bool) -> u64 {
    // The frame of this return: the innermost whose slot this is. Frames above it were
    // left without a return (longjmp, an exception, a vfork child that exec'd).
    let mut at = t.frames.depth();
    while at > 0 && t.frames.get(at - 1).is_some_and(|f| f.slot.addr() != slot) {
        at -= 1;
    }
    if at > 0 {
        while t.frames.depth() > at {
            let Some(f) = t.frames.pop() else { break };
            if !f.rejected {
                record(st, t, (REC_UNWIND, f.func), &[], regs, NONE_SAVED);
            }
        }
    }
    match t.frames.top() {
        Some(f) if f.slot.addr() == slot => {
            t.frames.pop();
            if !was_busy && !f.rejected && !DISABLED.load(Ordering::Relaxed) && !st.stopped() {
                let d = st.func(f.func);
                record(
                    st,
                    t,
                    (REC_EXIT, f.func),
                    st.ops(d.ret_op, d.ret_n),
                    regs,
                    &f.saved,
                );
            }
            f.orig
        }
        // A return with no frame: nothing can be right any more.
        _ => crate::fatal(b"dcg recorder: return without its frame\n"),
    }
}
