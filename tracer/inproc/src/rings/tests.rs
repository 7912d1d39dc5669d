//! The rings' tests, and what they write as a recorder would.

use super::*;
use zerocopy::IntoBytes;

impl Rings {
    /// As the recorder of thread `tid` would: ring `ring` claimed and ready (the next
    /// ring to claim after it), `bytes` written at its head (wrapping around its end),
    /// the ring retired after them where `retire` says.
    pub(crate) fn write_as_recorder(&self, ring: u32, tid: u32, bytes: &[u8], retire: bool) {
        let base = ring_offset(ring, self.ring_size);
        let data = base + size_of::<RingHeader>();
        let head_at = self.u64_at(base + std::mem::offset_of!(RingHeader, head));
        let head = head_at.load(Ordering::Relaxed);
        let size = self.ring_size as usize;
        for (i, b) in bytes.iter().enumerate() {
            let at = data + (head as usize + i) % size;
            // SAFETY: in bounds of a map this test owns, a byte no one else writes.
            unsafe { *(self.map.as_ptr().add(at) as *mut u8) = *b };
        }
        let field = |f: usize| self.u32_at(base + f);
        field(std::mem::offset_of!(RingHeader, tid)).store(tid, Ordering::Relaxed);
        field(std::mem::offset_of!(RingHeader, pid)).store(tid, Ordering::Relaxed);
        field(std::mem::offset_of!(RingHeader, clock)).store(CLOCK_MONO, Ordering::Relaxed);
        head_at.store(head + bytes.len() as u64, Ordering::Release);
        if retire {
            field(std::mem::offset_of!(RingHeader, state)).store(RING_RETIRED, Ordering::Release);
        }
        field(std::mem::offset_of!(RingHeader, ready)).store(1, Ordering::Release);
        self.u32_at(std::mem::offset_of!(ShmHeader, next_ring))
            .fetch_max(ring + 1, Ordering::Release);
    }

    /// Bytes of ring `ring` not taken yet.
    pub(crate) fn untaken(&self, ring: u32) -> u64 {
        let base = ring_offset(ring, self.ring_size);
        let head = self.u64_at(base + std::mem::offset_of!(RingHeader, head));
        let tail = self.u64_at(base + std::mem::offset_of!(RingHeader, tail));
        head.load(Ordering::Acquire) - tail.load(Ordering::Acquire)
    }
}

#[test]
fn unhooked_functions_named_once() {
    let dir = std::env::temp_dir();
    let rings = Rings::create(&dir, 1, 4096).unwrap();
    // What two recorders write for plan functions 7, 3 and 7 again.
    for (n, f) in [7u32, 3, 7].into_iter().enumerate() {
        rings
            .u32_at(unhooked_offset(n as u32))
            .store(f, Ordering::Release);
    }
    rings
        .u32_at(std::mem::offset_of!(ShmHeader, unhooked))
        .store(3, Ordering::Release);
    assert_eq!(rings.unhooked(), 3);
    assert_eq!(rings.unhooked_funcs(), vec![3, 7]);
}

/// This thread's minor page faults so far.
fn faults() -> i64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is this thread.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
    u.ru_minflt
}

/// Read every 4 KiB of `len` bytes at `at` of the rings' mapping.
fn touch(rings: &Rings, at: usize, len: usize) -> u64 {
    (at..at + len)
        .step_by(4096)
        // SAFETY: a byte in bounds of the map (indexed first); volatile, or an optimized
        // build reads nothing whose sum is not used.
        .map(|o| u64::from(unsafe { std::ptr::read_volatile(&rings.map[o]) }))
        .sum()
}

#[test]
fn rings_mapped_ahead_are_read_without_a_fault() {
    let size = 4 << 20;
    let rings = Rings::create(&std::env::temp_dir(), 2, size).unwrap();
    rings.map_ahead(1, 1 << 20);
    let data = |i| ring_offset(i, size) + size_of::<RingHeader>();
    let before = faults();
    assert_eq!(touch(&rings, ring_offset(0, size), (1 << 20) + 4096), 0);
    assert_eq!(faults() - before, 0, "ring 0's first MiB was mapped ahead");
    let before = faults();
    touch(&rings, data(1), 1 << 20);
    assert!(faults() - before >= 1, "ring 1 was not mapped ahead");
    // What the recorder populates later is mapped from where the premapping ended.
    assert_eq!(rings.mapped[0].load(Ordering::Relaxed), 1 << 20);
    rings
        .u32_at(ring_offset(0, size) + std::mem::offset_of!(RingHeader, populated))
        .store(2 << 20, Ordering::Release);
    rings.map_populated(0, ring_offset(0, size));
    let before = faults();
    touch(&rings, data(0) + (1 << 20), 1 << 20);
    assert_eq!(faults() - before, 0);
}

#[test]
fn taken_bytes_free_a_retired_ring() {
    let dir = std::env::temp_dir();
    let rings = Rings::create(&dir, 2, 4096).unwrap();
    // A thread's one record, then its end.
    let rec = RecHeader {
        len: 32,
        kind: REC_ENTRY,
        cpu: 1,
        func: 5,
        reserved: 0,
        ts: 42,
    };
    let mut bytes = rec.as_bytes().to_vec();
    bytes.extend_from_slice(&9u64.to_ne_bytes());
    rings.write_as_recorder(0, 7, &bytes, true);
    let at = |f: usize| rings.u32_at(ring_offset(0, 4096) + f);
    let mut out = Vec::new();
    assert_eq!(rings.drain(&TscClock::new(), &mut out), 1);
    assert_eq!((out[0].func, out[0].ts, out[0].kind), (5, 42, REC_ENTRY));
    assert_eq!(out[0].payload, 9u64.to_ne_bytes());
    // Drained and its thread gone: free for the next thread.
    assert_eq!(
        at(std::mem::offset_of!(RingHeader, state)).load(Ordering::Acquire),
        RING_FREE
    );
    assert_eq!(
        at(std::mem::offset_of!(RingHeader, ready)).load(Ordering::Acquire),
        0
    );
}

#[test]
fn payload_values() {
    let mut p = Vec::new();
    p.extend_from_slice(&7u64.to_ne_bytes());
    p.extend_from_slice(&3u64.to_ne_bytes());
    p.extend_from_slice(b"abc\0\0\0\0\0");
    p.extend_from_slice(&STRING_FAULT.to_ne_bytes());
    p.extend_from_slice(&9u64.to_ne_bytes());
    p.extend_from_slice(b"\0\x01\0\0\0\0\0\0\x02\0\0\0\0\0\0\0");
    let kinds = [FETCH_WORD, FETCH_STRING, FETCH_STRING, FETCH_BLOCK];
    let v = values(&p, kinds.into_iter()).unwrap();
    assert_eq!(
        v,
        vec![
            RawValue::Word(7),
            RawValue::Str(b"abc".to_vec()),
            RawValue::Fault,
            RawValue::Bytes(b"\0\x01\0\0\0\0\0\0\x02".to_vec()),
        ]
    );
    assert!(values(&p[..12], [FETCH_WORD, FETCH_STRING].into_iter()).is_none());
}
