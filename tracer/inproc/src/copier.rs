//! The copier: a thread of dcg that empties the rings as fast as the recorders fill them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::TscClock;
use crate::rings::{Chunk, Rings};

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
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Copier {
    /// Start copying out of `rings`.
    pub fn start(rings: Arc<Rings>) -> std::io::Result<Copier> {
        let (to_dcg, chunks) = std::sync::mpsc::channel::<Vec<Chunk>>();
        let (spare, spares) = std::sync::mpsc::sync_channel::<Vec<u8>>(SPARE_BUFFERS);
        let (to_clock, samples) = std::sync::mpsc::channel::<(u64, u64)>();
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, q, st) = (rings.clone(), queued.clone(), stop.clone());
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
                    let n = if q.load(Ordering::Relaxed) >= COPIER_MAX_BYTES {
                        0
                    } else {
                        r.take(&mut local, &mut buffers)
                    };
                    if n > 0 {
                        q.fetch_add(n, Ordering::Relaxed);
                        if to_dcg.send(std::mem::take(&mut local)).is_err() {
                            break;
                        }
                    }
                    let wait = pause.after(n, r.ring_size());
                    // A look that took a lot looks again at once.
                    if n < r.ring_size() as usize / 16 {
                        std::thread::sleep(wait);
                    }
                }
            })?;
        Ok(Copier {
            rings,
            chunks,
            spare,
            queued,
            samples,
            stop,
            thread: Some(thread),
        })
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
            let _ = t.join();
        }
    }
}

impl Drop for Copier {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::Pause;
    use std::time::Duration;

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
