//! Exceptions and thread cancellation: the unwinder reads return addresses from the stack
//! to find each frame's unwind information, so before it starts every hooked return
//! address is put back ([`dcg_on_raise`]); when a catch block starts, the frames below the
//! catching one are closed and the others get their hooks back ([`dcg_on_catch`]).

use core::sync::atomic::AtomicUsize;

use crate::interpose::next;
use crate::record::{close_dead, is_return_thunk, tls};
use crate::state::state;
use crate::thunks::{dcg_return_thunk, dcg_return_thunk_x87, Regs};

static REAL_RAISE: AtomicUsize = AtomicUsize::new(0);
static REAL_FORCED: AtomicUsize = AtomicUsize::new(0);
static REAL_RETHROW: AtomicUsize = AtomicUsize::new(0);
static REAL_CATCH: AtomicUsize = AtomicUsize::new(0);

/// `_Unwind_RaiseException` (`forced == 0`), `_Unwind_ForcedUnwind` (1) or
/// `_Unwind_Resume_or_Rethrow` (2) is called: put the
/// real return addresses back; returns the real function.
///
/// # Safety
/// Called by the shims in [`crate::thunks`] only.
pub unsafe extern "C" fn dcg_on_raise(forced: u64) -> usize {
    let t = &mut *tls();
    for d in 0..t.depth {
        let f = &mut *t.frames.add(d);
        let slot = f.slot as *mut u64;
        if f.restored == 0 && is_return_thunk(*slot) {
            *slot = f.orig;
            f.restored = 1;
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
/// function.
///
/// # Safety
/// Called by the shim in [`crate::thunks`] only.
pub unsafe extern "C" fn dcg_on_catch(_exc: u64, sp: u64) -> usize {
    let t = &mut *tls();
    if let Some(st) = state() {
        let was_busy = t.busy;
        t.busy = true;
        let regs: Regs = core::mem::zeroed();
        close_dead(st, t, sp, false, &regs);
        for d in 0..t.depth {
            let f = &mut *t.frames.add(d);
            let slot = f.slot as *mut u64;
            if f.restored != 0 && *slot == f.orig {
                *slot = if st.func(f.func).flags & dcg_inproc::layout::fflags::RET_X87 != 0 {
                    dcg_return_thunk_x87 as *const () as u64
                } else {
                    dcg_return_thunk as *const () as u64
                };
                f.restored = 0;
            }
        }
        t.busy = was_busy;
    }
    next(&REAL_CATCH, c"__cxa_begin_catch")
}
