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

mod hook;
mod interpose;
mod memory;
mod record;
mod ring;
mod setup;
mod state;
mod thread;
mod thunks;
mod unwind;

use std::sync::atomic::Ordering;

pub(crate) use thread::as_recorder;

/// Say `msg` on stderr and abort: the recorder lost track of a return address, and
/// returning anywhere would be worse.
pub(crate) fn fatal(msg: &[u8]) -> ! {
    // SAFETY: a write of a buffer of `msg.len()` bytes, then abort.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

/// After `fork`, in the child: its threads record into rings of their own (or nothing).
extern "C" fn after_fork_child() {
    let t = thread::thread();
    t.ring.set(None);
    t.no_ring.set(false);
    as_recorder(|| {
        if let Some(st) = state::state() {
            // SAFETY: a system call without arguments.
            st.pid.store(unsafe { libc::getpid() }, Ordering::Relaxed);
            if !st.follow {
                state::DISABLED.store(true, Ordering::Relaxed);
            }
        }
    });
}

/// Remove the recorder from the environment programs started from here inherit. Run at
/// start-up, before `main`: no other thread reads or changes the environment meanwhile.
fn scrub_environment() {
    unsafe extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    // SAFETY: the C library's environment pointer, read once (start-up, one thread).
    let env = unsafe { environ };
    if env.is_null() {
        return;
    }
    let mut read = 0;
    let mut write = 0;
    loop {
        // SAFETY: `read` is at most the index of the array's terminating null.
        let e = unsafe { *env.add(read) };
        if e.is_null() {
            break;
        }
        // SAFETY: each entry of the environment is a NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(e) }.to_bytes();
        let ours = s.starts_with(b"DCG_INPROC_")
            || (s.starts_with(b"LD_PRELOAD=") && s.windows(16).any(|w| w == b"libdcg_recorder."));
        if !ours {
            // SAFETY: `write <= read`: an entry of the array, now holding a kept one.
            unsafe { *env.add(write) = e };
            write += 1;
        }
        read += 1;
    }
    // SAFETY: `write <= read`, the index of the terminating null at most.
    unsafe { *env.add(write) = core::ptr::null_mut() };
}

/// The library's constructor: set up (before `main`), then follow forks.
extern "C" fn init() {
    as_recorder(|| {
        setup::init();
        if state::state().is_some() {
            let child: unsafe extern "C" fn() = after_fork_child;
            // SAFETY: registers a function of this library, which is never unloaded.
            unsafe { libc::pthread_atfork(None, None, Some(child)) };
        }
    });
}

#[used]
#[unsafe(link_section = ".init_array")]
static INIT: extern "C" fn() = init;
