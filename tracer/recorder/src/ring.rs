//! The ring file, as the recorder writes it: the shared header's counters ([`Shm`]), a
//! thread's ring ([`Ring`]: claimed, its memory made sure of ahead of the records,
//! retired when the thread ends) and the room of one record at its head ([`Space`]).
//! Formats: `dcg_inproc::layout`; dcg is the one reader.

use core::mem::offset_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use dcg_inproc::layout::*;

/// The ring file's mapping: its header, then the object slots, then the rings.
#[derive(Clone, Copy)]
pub struct Shm {
    base: NonNull<ShmHeader>,
    nrings: u32,
    ring_size: u32,
}

// SAFETY: a shared mapping that lives as long as the process; every field other threads
// (or dcg) write is reached as an atomic.
unsafe impl Send for Shm {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shm {}

impl Shm {
    /// The ring file mapped at `base`.
    ///
    /// # Safety
    /// `base` is the start of a shared mapping of at least `ring_offset(nrings,
    /// ring_size)` bytes (a valid [`ShmHeader`] first) that is never unmapped, and whose
    /// words are only written atomically by other threads and processes.
    pub unsafe fn new(base: NonNull<ShmHeader>, nrings: u32, ring_size: u32) -> Shm {
        Shm {
            base,
            nrings,
            ring_size,
        }
    }

    /// The `u32` at byte `off` of the file (`offset_of!` a field of the header or of an
    /// object slot).
    #[inline(always)]
    fn word(&self, off: usize) -> &'static AtomicU32 {
        // SAFETY: a `u32` field of the header or a slot, in the mapping ([`Shm::new`]), which is
        // never unmapped; 4-aligned (`repr(C)`, the mapping starts a page); every process
        // reaches it atomically.
        unsafe { AtomicU32::from_ptr(self.base.cast::<u8>().add(off).cast().as_ptr()) }
    }

    /// Whether dcg stopped reading.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.word(offset_of!(ShmHeader, stopped))
            .load(Ordering::Relaxed)
            != 0
    }

    /// Say that one more process attached.
    pub fn attached(&self) {
        self.word(offset_of!(ShmHeader, attached))
            .fetch_add(1, Ordering::AcqRel);
    }

    /// Count function `i` of the plan as not hooked (and name it while slots last).
    pub fn unhooked(&self, i: u32) {
        let n = self
            .word(offset_of!(ShmHeader, unhooked))
            .fetch_add(1, Ordering::AcqRel);
        if n < UNHOOKED_SLOTS {
            // SAFETY: slot `n < UNHOOKED_SLOTS` is in the mapping, 4-aligned, this
            // process's alone (it took `n`); dcg reads it after `attached` went up.
            unsafe {
                self.base
                    .cast::<u8>()
                    .add(unhooked_offset(n))
                    .cast::<u32>()
                    .write(i)
            };
        }
    }

    /// Publish that process `pid` has the object at `path` loaded at `bias`; false when
    /// no object slot is left.
    pub fn publish_object(&self, pid: u32, bias: u64, path: &str) -> bool {
        let i = self
            .word(offset_of!(ShmHeader, next_object))
            .fetch_add(1, Ordering::AcqRel);
        if i >= OBJECT_SLOTS {
            return false;
        }
        // SAFETY: slot `i < OBJECT_SLOTS` is in the mapping, 8-aligned; this process took
        // `i`, so its plain fields are this thread's until `ready`, which dcg waits for.
        let slot = unsafe { self.base.cast::<u8>().add(object_offset(i)) }
            .cast::<ObjectSlot>()
            .as_ptr();
        let b = path.as_bytes();
        let n = b.len().min(239);
        // SAFETY: as above.
        unsafe {
            (&raw mut (*slot).pid).write(pid);
            (&raw mut (*slot).bias).write(bias);
            let dst = (&raw mut (*slot).path).cast::<u8>();
            std::ptr::copy_nonoverlapping(b.as_ptr(), dst, n);
        }
        self.word(object_offset(i) + offset_of!(ObjectSlot, ready))
            .store(1, Ordering::Release);
        true
    }

    /// Ring `i` (`i < nrings`).
    #[inline(always)]
    fn ring(&self, i: u32) -> Option<Ring> {
        if i >= self.nrings {
            return None;
        }
        // SAFETY: ring `i < nrings` starts at `ring_offset(i, ring_size)`, inside the
        // mapping ([`Shm::new`]).
        let h = unsafe { self.base.cast::<u8>().add(ring_offset(i, self.ring_size)) };
        Some(Ring {
            h: h.cast(),
            size: self.ring_size,
        })
    }

    /// Claim a ring for this thread (its first record): one a thread that ended gave back,
    /// else a fresh one, whose first pages are made sure of. `clock`: its timestamps.
    /// None when every ring is in use, or there is no memory for a new one (counted).
    pub fn claim(&self, clock: u32) -> Option<Ring> {
        let next = self.word(offset_of!(ShmHeader, next_ring));
        let fresh = next.load(Ordering::Acquire).min(self.nrings);
        let reused = (0..fresh)
            .filter_map(|i| self.ring(i))
            .find(|r| r.take_free());
        let r = match reused {
            Some(r) => r,
            None => {
                let r = self.ring(next.fetch_add(1, Ordering::AcqRel))?;
                r.set_populated(0);
                if !r.populate(0, POPULATE_STEP) {
                    self.word(offset_of!(ShmHeader, no_space))
                        .fetch_add(1, Ordering::AcqRel);
                    return None;
                }
                r.word(offset_of!(RingHeader, state))
                    .store(RING_OWNED, Ordering::Relaxed);
                r
            }
        };
        // SAFETY: system calls without memory arguments.
        let (tid, pid) = unsafe { (libc::syscall(libc::SYS_gettid), libc::getpid()) };
        let mut comm = [0u8; 16];
        // SAFETY: PR_GET_NAME writes at most 16 bytes, the size of `comm`.
        unsafe { libc::prctl(libc::PR_GET_NAME, comm.as_mut_ptr()) };
        r.set_owner(clock, tid as u32, pid as u32, comm);
        r.word(offset_of!(RingHeader, ready))
            .store(1, Ordering::Release);
        Some(r)
    }
}

/// Memory made sure of ahead of the records, at a time.
const POPULATE_STEP: u64 = 1 << 20;

/// `MADV_POPULATE_WRITE` (Linux 5.14), which the libc crate may not name.
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// A ring of the ring file: a [`RingHeader`] and `size` data bytes after it, in a mapping
/// that lives as long as the process. Only the thread that claimed it writes records.
#[derive(Clone, Copy)]
pub struct Ring {
    h: NonNull<RingHeader>,
    size: u32,
}

impl Ring {
    /// The header's `u32` at byte `off` (`offset_of!` a field), as an atomic.
    #[inline(always)]
    fn word(&self, off: usize) -> &'static AtomicU32 {
        // SAFETY: a field of the header, in the mapping for the process's life ([`Shm::ring`]),
        // 4-aligned (`repr(C)`, ring headers start at multiples of 8); dcg reaches it
        // atomically too.
        unsafe { AtomicU32::from_ptr(self.h.cast::<u8>().add(off).cast().as_ptr()) }
    }

    /// The header's `u64` at byte `off`, as an atomic.
    #[inline(always)]
    fn word64(&self, off: usize) -> &'static AtomicU64 {
        // SAFETY: as `word`, 8-aligned.
        unsafe { AtomicU64::from_ptr(self.h.cast::<u8>().add(off).cast().as_ptr()) }
    }

    /// Data bytes made sure of so far (a field only the owner reads and writes).
    #[inline(always)]
    fn populated(&self) -> u32 {
        // SAFETY: a field of the header in the mapping, this thread's alone.
        unsafe { (&raw const (*self.h.as_ptr()).populated).read() }
    }

    #[inline(always)]
    fn set_populated(&self, v: u32) {
        // SAFETY: as `populated`.
        unsafe { (&raw mut (*self.h.as_ptr()).populated).write(v) }
    }

    /// Say whose ring it is, before it is marked ready.
    fn set_owner(&self, clock: u32, tid: u32, pid: u32, comm: [u8; 16]) {
        let h = self.h.as_ptr();
        // SAFETY: plain fields of the header in the mapping, this thread's until `ready`
        // (dcg reads them after it).
        unsafe {
            (&raw mut (*h).clock).write(clock);
            (&raw mut (*h).tid).write(tid);
            (&raw mut (*h).pid).write(pid);
            (&raw mut (*h).comm).write(comm);
        }
    }

    /// Take the ring if a thread that ended gave it back.
    fn take_free(&self) -> bool {
        self.word(offset_of!(RingHeader, state))
            .compare_exchange(RING_FREE, RING_OWNED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Count a top-level call its entry tests rejected (a counter only this thread
    /// writes: no locked instruction).
    #[inline(always)]
    pub fn rejected(&self) {
        let w = self.word64(offset_of!(RingHeader, rejected));
        w.store(w.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Give the ring back: its thread ends (dcg frees it once drained).
    pub fn retire(&self) {
        self.word(offset_of!(RingHeader, state))
            .store(RING_RETIRED, Ordering::Release);
    }

    /// Its address, as a non-null thread-key value.
    pub fn as_ptr(&self) -> *const libc::c_void {
        self.h.as_ptr().cast()
    }

    /// Back `[from, to)` of the data with memory before anything is written there: a
    /// store to a page of a full `/dev/shm` would be a `SIGBUS` in the target, where this
    /// is an error. (The header's page with `from` 0.) Done a megabyte at a time as the
    /// first lap goes, so that a thread that records little costs little.
    fn populate(&self, from: u64, to: u64) -> bool {
        let r = self.h.as_ptr() as usize;
        let data = r + size_of::<RingHeader>();
        let start = if from == 0 { r } else { data + from as usize };
        let to = to.min(u64::from(self.size));
        let end = data + to as usize;
        let (start, end) = (start & !4095, (end + 4095) & !4095);
        // SAFETY: advice on pages of the ring file's mapping (the rings' neighbours at
        // worst, also ring memory), which changes no byte of them.
        let got =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE) };
        // SAFETY: this thread's errno.
        let errno = unsafe { *libc::__errno_location() };
        // Kernels before 5.14 know no such advice, and kernels built without
        // CONFIG_ADVISE_SYSCALLS no madvise at all: nothing to check there.
        if got == 0 || errno == libc::EINVAL || errno == libc::ENOSYS {
            self.set_populated(to as u32);
            true
        } else {
            false
        }
    }

    /// Room for a record of at most `max` bytes at the head, padding to the end where it
    /// does not fit before it; none when the ring is full (counted as lost).
    #[inline(always)]
    pub fn reserve(&self, max: usize) -> Option<Space> {
        let size = u64::from(self.size);
        let head_word = self.word64(offset_of!(RingHeader, head));
        let head = head_word.load(Ordering::Relaxed);
        let tail = self
            .word64(offset_of!(RingHeader, tail))
            .load(Ordering::Acquire);
        let pos = head % size;
        let pad = if pos + max as u64 > size {
            size - pos
        } else {
            0
        };
        let need = (head + pad + max as u64).min(size);
        let populated = u64::from(self.populated());
        if head + pad + max as u64 - tail > size
            || (need > populated && !self.populate(populated, need + POPULATE_STEP))
        {
            self.word64(offset_of!(RingHeader, lost))
                .fetch_add(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: the data follows the header, in the mapping.
        let data = unsafe { self.h.cast::<u8>().add(size_of::<RingHeader>()) };
        if pad > 0 {
            // SAFETY: `pos < size` with `pad >= 8` bytes free from it (records are
            // multiples of 8), past the head: this thread's until published.
            unsafe {
                let p = data.add(pos as usize).cast::<RecHeader>().as_ptr();
                (&raw mut (*p).len).write(pad as u32);
                (&raw mut (*p).kind).write(REC_PAD);
            }
            head_word.store(head + pad, Ordering::Release);
            return Some(Space { p: data, cap: max });
        }
        // SAFETY: `pos + max <= size`: the record fits in the data.
        let p = unsafe { data.add(pos as usize) };
        Some(Space { p, cap: max })
    }

    /// Publish a record of `len` bytes written at the head.
    #[inline(always)]
    pub fn commit(&self, len: usize) {
        let head = self.word64(offset_of!(RingHeader, head));
        head.store(head.load(Ordering::Relaxed) + len as u64, Ordering::Release);
    }
}

/// `cap` bytes at a ring's head, reserved for one record: this thread's alone until it is
/// committed, read by nobody before.
pub struct Space {
    p: NonNull<u8>,
    cap: usize,
}

impl Space {
    /// Write the word `v` at `at` (8-aligned); nothing when it does not fit.
    #[inline(always)]
    pub fn put(&mut self, at: usize, v: u64) {
        if at + 8 <= self.cap {
            // SAFETY: in the reserved bytes; records and their words are 8-aligned.
            unsafe { self.p.add(at).cast::<u64>().write(v) };
        }
    }

    /// The `n` bytes at `at` to fill, if they fit.
    #[inline(always)]
    pub fn bytes(&mut self, at: usize, n: usize) -> Option<&mut [u8]> {
        // SAFETY: in the reserved bytes when it fits, which no one else reads or writes
        // until the record is committed (and `self` is borrowed meanwhile).
        (at + n <= self.cap)
            .then(|| unsafe { core::slice::from_raw_parts_mut(self.p.add(at).as_ptr(), n) })
    }

    /// Write the record's header, field by field (no vector stores: the traced code's
    /// upper register halves stay clean).
    #[inline(always)]
    pub fn header(&mut self, len: u32, kind: u16, cpu: u16, func: u32, ts: u64) {
        if size_of::<RecHeader>() > self.cap {
            return;
        }
        let h = self.p.cast::<RecHeader>().as_ptr();
        // SAFETY: the record starts with its header, in the reserved bytes, 8-aligned.
        unsafe {
            (&raw mut (*h).len).write(len);
            (&raw mut (*h).kind).write(kind);
            (&raw mut (*h).cpu).write(cpu);
            (&raw mut (*h).func).write(func);
            (&raw mut (*h).reserved).write(0);
            (&raw mut (*h).ts).write(ts);
        }
    }
}
