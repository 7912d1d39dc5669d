//! The copier: a thread of dcg that empties the rings as fast as the recorders fill them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dcg_spool::Kept;
use zerocopy::{FromBytes, IntoBytes};

use crate::clock::TscClock;
use crate::rings::{Chunk, Rings, Writer};

/// Run this thread ahead of the traced program and of other work when it wakes, where dcg
/// may (as root): a ring fills in a few milliseconds of a hot loop, and a busy machine can
/// keep a thread of normal priority off the CPU for longer. (Real-time scheduling measured
/// worse here: more records lost on a loaded 2-CPU machine.)
fn ahead_of_others() {
    // SAFETY: setpriority on this thread (a thread id is a PRIO_PROCESS who).
    unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as u32, -10) };
}

/// Most bytes the [`Copier`] holds for dcg before it leaves them in the rings (which then
/// fill, and count what they drop).
const COPIER_MAX_BYTES: usize = 1 << 30;

/// Buffers kept for the copier at the most.
const SPARE_BUFFERS: usize = 64;

/// Bytes of a holding copier's queue ([`Copier::start_holding`]) the kernel backs before
/// the command runs: the records of about 100,000 calls, at 160 bytes for an entry and
/// its return. More is reserved ([`dcg_spool::IN_MEMORY`]) and backed as it fills.
const HELD_PREFAULT: usize = 16 << 20;

/// Rings, and bytes of each, a holding copier maps before the command runs: the
/// command's first two threads' first megabyte (what the recorder backs when a thread
/// claims its ring).
const MAPPED_AHEAD: (u32, u32) = (2, 1 << 20);

/// The copier's pause between two looks at the rings: short while they fill fast, longer
/// while they stay nearly empty, since every wakeup costs the machine (most of all in a
/// session tracing the kernel too, where the kernel side's programs run on each kernel
/// function the wakeup calls). The longest pause is the time a thread that starts a hot
/// loop just after a look takes to fill half a ring (about 1 GB/s of records natively):
/// 8 ms for 16 MiB rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    now: Duration,
    longest: Duration,
}

impl Pause {
    /// The shortest pause.
    pub const MIN: Duration = Duration::from_millis(1);

    /// The first pause, for rings of `ring_size` bytes each.
    pub fn new(ring_size: u32) -> Pause {
        Pause {
            now: Self::MIN,
            longest: Self::longest(ring_size),
        }
    }

    /// The longest pause for rings of `ring_size` bytes: half a ring at a MiB a
    /// millisecond, within 1 and 50 ms.
    pub fn longest(ring_size: u32) -> Duration {
        Duration::from_millis(u64::from(ring_size) >> 21)
            .clamp(Self::MIN, Duration::from_millis(50))
    }

    /// The pause after a look that took `taken` bytes from rings of `ring_size` bytes
    /// each: back to the shortest once a look takes a sixteenth of a ring, twice as long
    /// (up to the longest) while looks take under a 256th, unchanged between.
    pub fn after(&mut self, taken: usize, ring_size: u32) -> Duration {
        let ring = ring_size as usize;
        if taken >= ring / 16 {
            self.now = Self::MIN;
        } else if taken < ring / 256 {
            self.now = (self.now * 2).min(self.longest);
        }
        self.now
    }
}

/// A thread that moves the recorders' bytes out of the rings as fast as they come
/// ([`Rings::take`]), so that a traced hot loop outrunning dcg's decoding fills dcg's
/// memory instead of its ring. It never waits for dcg: chunks go over a channel, and
/// buffers dcg is done with come back over another (their pages are mapped already: a
/// fresh buffer costs a page fault per 4 KiB, more than the copy).
///
/// A holding copier ([`Copier::start_holding`]) keeps what it takes itself, for dcg to
/// take once it has stopped: in one queue whose first pages the kernel backed before the
/// command ran, past [`dcg_spool::IN_MEMORY`] in a spool file. That is for a session
/// tracing the kernel too, which decodes nothing before the command ends: there each
/// fresh buffer's page faults ran the kernel side's programs, on the command's CPU.
pub struct Copier {
    rings: Arc<Rings>,
    chunks: std::sync::mpsc::Receiver<Vec<Chunk>>,
    spare: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// Bytes sent and not yet taken by dcg.
    queued: Arc<std::sync::atomic::AtomicUsize>,
    /// The clock samples it took, one a look at the rings: dcg's other threads need not
    /// wake to sample the clock while the command runs (each wakeup costs the traced
    /// program, most of all where the kernel side's programs run on what it calls).
    samples: std::sync::mpsc::Receiver<(u64, u64)>,
    stop: Arc<AtomicBool>,
    /// Cleared when a holding copier is to send what it takes, as one that is not.
    holding: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Option<Kept>>>,
    /// What a holding copier held when it stopped.
    held: std::sync::Mutex<Option<Kept>>,
}

impl Copier {
    /// Start copying out of `rings`, sending dcg what it takes.
    pub fn start(rings: Arc<Rings>) -> std::io::Result<Copier> {
        Self::start_with(rings, None)
    }

    /// Start copying out of `rings`, holding what it takes until it is stopped (or
    /// told [`Copier::hold_no_more`]). Call it before the traced command runs and
    /// before a kernel side attaches, but after the command is forked (a fork leaves
    /// the pages dcg had write-protected, each a page fault at its next write): the
    /// queue's first [`HELD_PREFAULT`] bytes are backed now, on this thread, and the
    /// first rings' first megabyte mapped ([`Rings::map_ahead`]).
    pub fn start_holding(rings: Arc<Rings>) -> std::io::Result<Copier> {
        rings.map_ahead(MAPPED_AHEAD.0, MAPPED_AHEAD.1);
        let mut kept = Kept::default();
        kept.reserve(dcg_spool::IN_MEMORY);
        kept.prefault(HELD_PREFAULT);
        Self::start_with(rings, Some(kept))
    }

    fn start_with(rings: Arc<Rings>, mut held: Option<Kept>) -> std::io::Result<Copier> {
        let (to_dcg, chunks) = std::sync::mpsc::channel::<Vec<Chunk>>();
        let (spare, spares) = std::sync::mpsc::sync_channel::<Vec<u8>>(SPARE_BUFFERS);
        let (to_clock, samples) = std::sync::mpsc::channel::<(u64, u64)>();
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let holding = Arc::new(AtomicBool::new(held.is_some()));
        let (r, q, st, h) = (rings.clone(), queued.clone(), stop.clone(), holding.clone());
        let thread = std::thread::Builder::new()
            .name("dcg-copier".into())
            .spawn(move || {
                ahead_of_others();
                let mut local = Vec::new();
                let mut buffers: Vec<Vec<u8>> = Vec::new();
                let mut pause = Pause::new(r.ring_size());
                while !st.load(Ordering::Acquire) {
                    if let Some(s) = crate::clock::sample() {
                        let _ = to_clock.send(s);
                    }
                    buffers.extend(spares.try_iter());
                    if !h.load(Ordering::Acquire) {
                        if let Some(mut kept) = held.take() {
                            chunks_of(&mut kept, &mut local);
                        }
                    }
                    let n = if q.load(Ordering::Relaxed) >= COPIER_MAX_BYTES {
                        0
                    } else if let Some(kept) = held.as_mut() {
                        hold(&r, kept)
                    } else {
                        r.take(&mut local, &mut buffers)
                    };
                    q.fetch_add(n, Ordering::Relaxed);
                    if !local.is_empty() && to_dcg.send(std::mem::take(&mut local)).is_err() {
                        break;
                    }
                    let wait = pause.after(n, r.ring_size());
                    // A look that took a lot looks again at once.
                    if n < r.ring_size() as usize / 16 {
                        std::thread::sleep(wait);
                    }
                }
                held
            })?;
        Ok(Copier {
            rings,
            chunks,
            spare,
            queued,
            samples,
            stop,
            holding,
            thread: Some(thread),
            held: Default::default(),
        })
    }

    /// A holding copier sends what it takes from now on, and what it held.
    pub fn hold_no_more(&self) {
        self.holding.store(false, Ordering::Release);
    }

    /// Whether it holds what it takes ([`Copier::start_holding`]) and has not been told
    /// [`Copier::hold_no_more`].
    pub fn holding(&self) -> bool {
        self.holding.load(Ordering::Acquire)
    }

    /// The clock samples taken since the last call, into `clock`.
    pub fn clock_samples_into(&self, clock: &mut TscClock) {
        for s in self.samples.try_iter() {
            clock.add(s);
        }
    }

    /// The rings it copies from.
    pub fn rings(&self) -> &Rings {
        &self.rings
    }

    /// Move what was copied so far to `out` (once stopped, what the rings still hold
    /// too).
    pub fn take(&self, out: &mut Vec<Chunk>) {
        for mut c in self.chunks.try_iter() {
            let n: usize = c.iter().map(|c| c.bytes.len()).sum();
            self.queued.fetch_sub(
                n.min(self.queued.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            out.append(&mut c);
        }
        if self.thread.is_none() {
            if let Some(mut kept) = self.held.lock().ok().and_then(|mut h| h.take()) {
                chunks_of(&mut kept, out);
            }
            self.rings.take(out, &mut Vec::new());
        }
    }

    /// Chunks dcg has decoded: their buffers go back to the copier.
    pub fn give_back(&self, chunks: &mut Vec<Chunk>) {
        for c in chunks.drain(..) {
            if self.spare.try_send(c.bytes).is_err() {
                break;
            }
        }
        chunks.clear();
    }

    /// Stop the thread (after it finished its round).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            if let (Ok(Some(kept)), Ok(mut held)) = (t.join(), self.held.lock()) {
                *held = Some(kept);
            }
        }
    }
}

/// Take what the rings hold into `kept`, each ring's bytes after their [`Writer`]; past
/// [`dcg_spool::IN_MEMORY`] bytes in memory, move them to its spool file (where that
/// fails, they stay in memory). Returns the bytes taken.
fn hold(rings: &Rings, kept: &mut Kept) -> usize {
    let n = rings.take_with(|w, first, second| kept.push_parts(&[w.as_bytes(), first, second]));
    if kept.in_memory() > dcg_spool::IN_MEMORY {
        if let Err(e) = kept.spool() {
            log::debug!("spooling the recorders' bytes: {e}");
        }
    }
    n
}

/// What `kept` holds, oldest first, as chunks appended to `out`; `kept` is left empty.
fn chunks_of(kept: &mut Kept, out: &mut Vec<Chunk>) {
    let mut add = |entry: &[u8]| {
        if let Ok((w, bytes)) = Writer::read_from_prefix(entry) {
            out.push(Chunk::new(w, bytes.to_vec()));
        }
    };
    // Spooled bytes are the oldest; a spool file that cannot be read back loses them.
    if let Err(e) = kept.take_spooled(1 << 20, &mut add) {
        log::warn!("reading back the recorders' spooled bytes: {e}");
    }
    dcg_spool::entries(&kept.queue, add);
    kept.queue.clear();
}

impl Drop for Copier {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Wait until the copier took everything from ring `ring`.
    fn taken(rings: &Rings, ring: u32) {
        let t = Instant::now();
        while rings.untaken(ring) > 0 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the copier took nothing"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// `n` bytes counting up from `from`.
    fn bytes(from: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| from.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn a_holding_copier_gives_everything_in_order_once_stopped() {
        let rings = Arc::new(Rings::create(&std::env::temp_dir(), 2, 4096).unwrap());
        let mut copier = Copier::start_holding(rings.clone()).unwrap();
        let (a, b, c) = (bytes(1, 3000), bytes(2, 3000), bytes(3, 64));
        rings.write_as_recorder(0, 10, &a, false);
        taken(&rings, 0);
        // Past the ring's end: handed out in two parts, held as one.
        rings.write_as_recorder(0, 10, &b, false);
        rings.write_as_recorder(1, 11, &c, true);
        taken(&rings, 0);
        taken(&rings, 1);
        let mut out = Vec::new();
        copier.take(&mut out);
        assert!(
            out.is_empty(),
            "a holding copier sent something before it stopped"
        );
        copier.stop();
        copier.take(&mut out);
        let got: Vec<(u32, &[u8])> = out.iter().map(|c| (c.tid, &c.bytes[..])).collect();
        let want: Vec<(u32, &[u8])> = vec![(10, &a), (10, &b), (11, &c)];
        assert_eq!(got, want);
        assert_eq!(out[2].pid, 11);
        assert_eq!(out[2].clock, crate::layout::CLOCK_MONO);
    }

    #[test]
    fn held_bytes_come_back_oldest_first_from_the_spool_file_and_memory() {
        let mut kept = Kept::default();
        let writer = |tid| Writer {
            tid,
            pid: 1,
            comm: *b"joint-loop\0\0\0\0\0\0",
            clock: crate::layout::CLOCK_TSC,
        };
        for tid in 1..=3 {
            let (first, second) = (bytes(tid as u8, 40), bytes(100, 8));
            kept.push_parts(&[writer(tid).as_bytes(), &first, &second]);
            if tid == 2 {
                kept.spool().unwrap();
            }
        }
        let mut out = Vec::new();
        chunks_of(&mut kept, &mut out);
        let tids: Vec<u32> = out.iter().map(|c| c.tid).collect();
        assert_eq!(tids, [1, 2, 3]);
        assert_eq!(out[2].bytes, [bytes(3, 40), bytes(100, 8)].concat());
        assert_eq!(out[0].comm(), "joint-loop");
        assert!(kept.is_empty());
    }

    #[test]
    fn a_copier_told_to_hold_no_more_sends_what_it_held_and_takes() {
        let rings = Arc::new(Rings::create(&std::env::temp_dir(), 1, 4096).unwrap());
        let copier = Copier::start_holding(rings.clone()).unwrap();
        let (a, b) = (bytes(5, 100), bytes(6, 200));
        rings.write_as_recorder(0, 3, &a, false);
        taken(&rings, 0);
        copier.hold_no_more();
        rings.write_as_recorder(0, 3, &b, false);
        taken(&rings, 0);
        let mut out = Vec::new();
        let t = Instant::now();
        while out.len() < 2 && t.elapsed() < Duration::from_secs(10) {
            copier.take(&mut out);
            std::thread::sleep(Duration::from_millis(1));
        }
        let got: Vec<&[u8]> = out.iter().map(|c| &c.bytes[..]).collect();
        assert_eq!(got, [&a[..], &b[..]]);
    }

    #[test]
    fn pauses_grow_while_the_rings_stay_empty_and_reset_when_they_fill() {
        let ring = 16 << 20;
        let ms = Duration::from_millis;
        let mut p = Pause::new(ring);
        let grown: Vec<Duration> = (0..5).map(|_| p.after(0, ring)).collect();
        assert_eq!(grown, [ms(2), ms(4), ms(8), ms(8), ms(8)]);
        // Between a 256th and a sixteenth of a ring: unchanged.
        assert_eq!(p.after(ring as usize / 100, ring), ms(8));
        assert_eq!(p.after(ring as usize / 16, ring), Pause::MIN);
        assert_eq!(p.after(ring as usize / 255, ring), Pause::MIN);
        assert_eq!(p.after(100, ring), ms(2));
    }

    #[test]
    fn larger_rings_allow_longer_pauses() {
        let ring = 64 << 20;
        let ms = Duration::from_millis;
        let mut p = Pause::new(ring);
        let grown: Vec<Duration> = (0..6).map(|_| p.after(0, ring)).collect();
        assert_eq!(grown, [ms(2), ms(4), ms(8), ms(16), ms(32), ms(32)]);
        assert_eq!(Pause::longest(1 << 30), ms(50));
        assert_eq!(Pause::longest(4096), Pause::MIN);
    }
}
