//! Exceptions and thread cancellation: the unwinder reads return addresses from the stack
//! to find each frame's unwind information, so before it starts every hooked return
//! address is put back ([`dcg_on_raise`]); when a catch block starts, the frames below the
//! catching one are closed and the others get their hooks back ([`dcg_on_catch`]).

use core::sync::atomic::AtomicUsize;

use crate::interpose::next;
use crate::record::{close_dead, is_return_thunk, return_thunk};
use crate::state::state;
use crate::thread::thread;
use crate::thunks::Regs;

static REAL_RAISE: AtomicUsize = AtomicUsize::new(0);
static REAL_FORCED: AtomicUsize = AtomicUsize::new(0);
static REAL_RETHROW: AtomicUsize = AtomicUsize::new(0);
static REAL_CATCH: AtomicUsize = AtomicUsize::new(0);

/// `_Unwind_RaiseException` (`forced == 0`), `_Unwind_ForcedUnwind` (1) or
/// `_Unwind_Resume_or_Rethrow` (2) is called: put the real return addresses back;
/// returns the real function. Called by the shims in [`crate::thunks`].
pub extern "C" fn dcg_on_raise(forced: u64) -> usize {
    let t = thread();
    for d in 0..t.frames.depth() {
        let Some(f) = t.frames.get(d) else { break };
        if !f.restored && is_return_thunk(f.slot.get()) {
            f.slot.set(f.orig);
            t.frames.set_restored(d, true);
        }
    }
    match forced {
        0 => next(&REAL_RAISE, c"_Unwind_RaiseException"),
        1 => next(&REAL_FORCED, c"_Unwind_ForcedUnwind"),
        _ => next(&REAL_RETHROW, c"_Unwind_Resume_or_Rethrow"),
    }
}

/// `__cxa_begin_catch` is called by a catch block whose frame's stack pointer is `sp`:
/// the frames below it were unwound; the others are hooked again. Returns the real
/// function. Called by the shim in [`crate::thunks`].
pub extern "C" fn dcg_on_catch(_exc: u64, sp: u64) -> usize {
    let t = thread();
    if let Some(st) = state() {
        let was_busy = t.busy.replace(true);
        close_dead(st, t, sp, false, &Regs::ZERO);
        for d in 0..t.frames.depth() {
            let Some(f) = t.frames.get(d) else { break };
            if f.restored && f.slot.get() == f.orig {
                f.slot.set(return_thunk(st, f.func));
                t.frames.set_restored(d, false);
            }
        }
        t.busy.set(was_busy);
    }
    next(&REAL_CATCH, c"__cxa_begin_catch")
}
