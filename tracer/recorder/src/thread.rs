//! Per-thread state: the busy flag, the thread's ring, its shadow stack of hooked calls
//! ([`ShadowStack`], [`Frame`]) and the return-address slots those calls have on the
//! stack ([`Slot`]). Every field is a [`Cell`] read and written by copy, so a signal
//! handler that runs traced code in the middle of a record (and reaches this same state)
//! never meets a reference the interrupted code holds.

use core::cell::Cell;

use crate::ring::Ring;

/// Where a hooked call's return address is: a word on one of this thread's stacks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Slot(u64);

impl Slot {
    /// The slot at `p`.
    ///
    /// # Safety
    /// `p` is the return-address slot of a call this thread is making: an aligned word of
    /// one of its stacks (the thread's own, a signal stack, a `vfork` parent's), memory
    /// that stays mapped while the thread runs.
    #[inline(always)]
    pub unsafe fn new(p: *mut u64) -> Slot {
        Slot(p as u64)
    }

    /// Its address.
    #[inline(always)]
    pub fn addr(self) -> u64 {
        self.0
    }

    /// The word in it.
    #[inline(always)]
    pub fn get(self) -> u64 {
        // SAFETY: a mapped, aligned stack word of this thread ([`Slot::new`]).
        unsafe { core::ptr::read_volatile(self.0 as *const u64) }
    }

    /// Put `ra` in it.
    #[inline(always)]
    pub fn set(self, ra: u64) {
        // SAFETY: as in `get`; the word is a return address the traced code does not
        // read until the call returns, which is what it is written for.
        unsafe { core::ptr::write_volatile(self.0 as *mut u64, ra) }
    }
}

/// A traced call whose return is hooked.
#[derive(Clone, Copy)]
pub struct Frame {
    /// The real return address.
    pub orig: u64,
    /// Where it was (the stack slot now holding a return thunk).
    pub slot: Slot,
    /// Plan index of the function.
    pub func: u32,
    /// The real address was put back for the unwinder ([`crate::unwind`]).
    pub restored: bool,
    /// A top-level call its entry tests rejected (`--filter`), hooked once a traced call
    /// was made inside it: nothing is recorded until it returns.
    pub rejected: bool,
    /// The entry values its return's fetches start from (`FuncDesc::saved`).
    pub saved: [u64; dcg_inproc::layout::SAVED_WORDS],
}

/// Frames a thread can have hooked at once; deeper calls are not recorded.
pub const MAX_FRAMES: usize = 8192;

/// Bytes of a shadow stack's mapping.
const FRAMES_BYTES: usize = MAX_FRAMES * size_of::<Frame>();

/// A thread's hooked calls, outermost first, in a mapping of [`MAX_FRAMES`] frames made
/// at its first hooked call.
pub struct ShadowStack {
    /// Null, or the mapping (never moved or shrunk while `depth > 0`).
    base: Cell<*mut Frame>,
    /// Frames in use, at most [`MAX_FRAMES`] (0 while `base` is null).
    depth: Cell<usize>,
}

impl ShadowStack {
    const fn new() -> ShadowStack {
        ShadowStack {
            base: Cell::new(core::ptr::null_mut()),
            depth: Cell::new(0),
        }
    }

    /// Map the frames if not yet done; false when the memory is not there.
    #[inline(always)]
    pub fn ensure(&self) -> bool {
        if !self.base.get().is_null() {
            return true;
        }
        // SAFETY: a new anonymous mapping; nothing else is at the address it returns.
        let m = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                FRAMES_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if m == libc::MAP_FAILED {
            return false;
        }
        self.base.set(m.cast());
        true
    }

    /// Frames in use.
    #[inline(always)]
    pub fn depth(&self) -> usize {
        self.depth.get()
    }

    /// Frame `d` (0 the outermost), if in use.
    #[inline(always)]
    pub fn get(&self, d: usize) -> Option<Frame> {
        if d >= self.depth.get() {
            return None;
        }
        // SAFETY: `d < depth <= MAX_FRAMES`, so the mapping exists and `d` is in it; the
        // frame is copied out, no reference into the mapping is kept.
        Some(unsafe { self.base.get().add(d).read() })
    }

    /// The innermost frame.
    #[inline(always)]
    pub fn top(&self) -> Option<Frame> {
        self.get(self.depth.get().wrapping_sub(1))
    }

    /// Add `f` as the innermost frame; false when the stack is full or not mapped.
    #[inline(always)]
    pub fn push(&self, f: Frame) -> bool {
        let d = self.depth.get();
        if d >= MAX_FRAMES || self.base.get().is_null() {
            return false;
        }
        // SAFETY: the mapping exists and `d < MAX_FRAMES` is in it.
        unsafe { self.base.get().add(d).write(f) };
        self.depth.set(d + 1);
        true
    }

    /// Take the innermost frame off.
    #[inline(always)]
    pub fn pop(&self) -> Option<Frame> {
        let f = self.top()?;
        self.depth.set(self.depth.get() - 1);
        Some(f)
    }

    /// Mark frame `d` as having its real return address back in its slot (or not).
    #[inline(always)]
    pub fn set_restored(&self, d: usize, restored: bool) {
        if d < self.depth.get() {
            // SAFETY: as in `get`; a field of the frame written in place.
            unsafe { (*self.base.get().add(d)).restored = restored };
        }
    }

    /// Unmap the frames when none is in use (the thread is ending).
    pub fn release(&self) {
        let base = self.base.get();
        if !base.is_null() && self.depth.get() == 0 {
            self.base.set(core::ptr::null_mut());
            // SAFETY: the mapping `ensure` made, no frame in use and no reference into it.
            unsafe { libc::munmap(base.cast(), FRAMES_BYTES) };
        }
    }
}

/// Per-thread state. No destructor, so the compiler keeps it in plain TLS.
pub struct Thread {
    /// In the recorder: a signal handler's traced calls are not recorded meanwhile.
    pub busy: Cell<bool>,
    /// This thread has no ring (none free, or recording is off in this process).
    pub no_ring: Cell<bool>,
    /// Its ring, none until its first record.
    pub ring: Cell<Option<Ring>>,
    /// Its hooked calls.
    pub frames: ShadowStack,
    /// A top-level call its entry tests rejected (`--filter`), not hooked: its return
    /// slot, the return address it held and its function, until a traced call shows
    /// whether it is still running ([`crate::record`]).
    pub rejected: Cell<Option<(Slot, u64, u32)>>,
}

thread_local! {
    static THREAD: Thread = const {
        Thread {
            busy: Cell::new(false),
            no_ring: Cell::new(false),
            ring: Cell::new(None),
            frames: ShadowStack::new(),
            rejected: Cell::new(None),
        }
    };
}

/// This thread's state.
#[inline(always)]
pub fn thread() -> &'static Thread {
    let p: *const Thread = THREAD.with(|t| t as *const Thread);
    // SAFETY: a thread-local without a destructor lives (and stays at one address) as
    // long as its thread; `Thread` is neither `Send` nor `Sync` (its cells), so the
    // reference never leaves the thread, and nothing outlives the thread that runs it.
    unsafe { &*p }
}

/// Run `f` as the recorder's own work: the traced functions it calls (`malloc`, `free`,
/// `open`, `getpid`, ... of its start-up) are not recorded, in this thread. A signal
/// handler that interrupts `f` sees the flag set and records nothing, as on the hot path.
pub fn as_recorder<R>(f: impl FnOnce() -> R) -> R {
    let t = thread();
    let was = t.busy.replace(true);
    let r = f();
    t.busy.set(was);
    r
}
