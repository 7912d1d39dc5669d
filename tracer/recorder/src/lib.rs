//! The in-process recorder: `libdcg_recorder.so`, which `dcg trace --engine inproc -- CMD`
//! preloads into the command. Before `main` it reads the plan dcg wrote (which functions,
//! how each value is fetched), hooks those functions ([`setup`]) and from then on records
//! every entry and return of them into its thread's ring ([`record`]), which dcg drains.
//!
//! It never parses DWARF, never allocates or locks on the hot path, and makes no system
//! call there but one: memory outside the stack pointer's page and the read-only mappings
//! of start-up is read through `process_vm_readv`, which cannot fault. It never
//! records its own work. Return hooks keep a per-thread shadow stack; `longjmp` and
//! exceptions close the frames they skip ([`unwind`]); a forked child records into rings
//! of its own, or nothing when forks are not followed.

mod interpose;
mod record;
mod setup;
mod state;
mod thunks;
mod unwind;

use std::sync::atomic::Ordering;

/// Say `msg` on stderr and abort: the recorder lost track of a return address, and
/// returning anywhere would be worse.
pub(crate) fn fatal(msg: &[u8]) -> ! {
    // SAFETY: a write of a static buffer, then abort.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

/// After `fork`, in the child: its threads record into rings of their own (or nothing).
unsafe extern "C" fn after_fork_child() {
    let t = &mut *record::tls();
    t.ring = core::ptr::null_mut();
    t.no_ring = false;
    as_recorder(|| {
        if let Some(st) = state::state() {
            st.pid.store(libc::getpid(), Ordering::Relaxed);
            if !st.follow {
                state::DISABLED.store(true, Ordering::Relaxed);
            }
        }
    });
}

/// Run `f` as the recorder's own work: the traced functions it calls (`malloc`, `free`,
/// `open`, `getpid`, ... of its start-up) are not recorded, in this thread.
pub(crate) fn as_recorder<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: this thread's own state; a signal handler that interrupts `f` sees the
    // flag set and records nothing, as on the hot path.
    let t = unsafe { &mut *record::tls() };
    let was = t.busy;
    t.busy = true;
    let r = f();
    t.busy = was;
    r
}

/// Remove the recorder from the environment programs started from here inherit.
unsafe fn scrub_environment() {
    unsafe extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let env = environ;
    if env.is_null() {
        return;
    }
    let mut read = 0;
    let mut write = 0;
    loop {
        let e = *env.add(read);
        if e.is_null() {
            break;
        }
        let s = std::ffi::CStr::from_ptr(e).to_bytes();
        let ours = s.starts_with(b"DCG_INPROC_")
            || (s.starts_with(b"LD_PRELOAD=") && s.windows(16).any(|w| w == b"libdcg_recorder."));
        if !ours {
            *env.add(write) = e;
            write += 1;
        }
        read += 1;
    }
    *env.add(write) = core::ptr::null_mut();
}

unsafe extern "C" fn init() {
    as_recorder(|| {
        // SAFETY: start-up, before `main`, as the constructor of a preloaded library.
        unsafe { setup::init() };
        if state::state().is_some() {
            // SAFETY: registers a function of this library, which is never unloaded.
            unsafe { libc::pthread_atfork(None, None, Some(after_fork_child)) };
        }
    });
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: unsafe extern "C" fn() = init;
