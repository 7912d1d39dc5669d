//! The records' clocks: `CLOCK_MONOTONIC` nanoseconds, and the time-stamp counter where
//! the recorders may use it, converted to nanoseconds here.

/// Samples of (ticks, ns) a [`TscClock`] keeps at most, the first included. When they
/// are full every other one is dropped: they still span the whole session, twice as far
/// apart (at the copier's longest pause, 8 ms or 32 ms, the first thinning comes after 32
/// or 131 s).
const SAMPLES: usize = 4096;

/// Converts time-stamp counter ticks into `CLOCK_MONOTONIC` nanoseconds, piecewise: the
/// line through the two (ticks, ns) samples around the ticks, of those taken when the
/// session started, at each [`TscClock::update`], and by the copier at each look at the
/// rings (1 to 8 ms apart, up to 32 ms with a joint session's larger rings; handed over by
/// [`crate::copier::Copier::clock_samples_into`]),
/// whether or not records are converted then: a session may convert them all at its end.
/// `CLOCK_MONOTONIC` is the TSC scaled by the kernel, whose rate NTP may slew: between two
/// samples 10 ms apart at 500 ppm a converted time is off by at most 5 µs from it, plus
/// half the gap of the two clock reads around a sample (under a microsecond; a sample
/// whose reads were interrupted, more than 50 µs apart, is not kept). Ticks before
/// the first sample or after the last take the line through the nearest two.
#[derive(Debug, Clone)]
pub struct TscClock {
    /// Increasing in ticks; never empty.
    samples: Vec<(u64, u64)>,
}

impl Default for TscClock {
    fn default() -> Self {
        TscClock::new()
    }
}

impl TscClock {
    /// Sample the counter and the clock now (retried until the sample is trustworthy,
    /// the best of a hundred tries at worst).
    pub fn new() -> TscClock {
        let mut best = tsc_sample();
        for _ in 0..100 {
            if best.1 <= MAX_GAP_NS {
                break;
            }
            let s = tsc_sample();
            if s.1 < best.1 {
                best = s;
            }
        }
        let mut samples = Vec::with_capacity(SAMPLES);
        samples.push(best.0);
        TscClock { samples }
    }

    /// Sample them again; an interrupted sample is left out.
    pub fn update(&mut self) {
        if let Some(s) = sample() {
            self.add(s);
        }
    }

    /// A sample taken elsewhere ([`sample`]); one not after the last is left out.
    pub(crate) fn add(&mut self, s: (u64, u64)) {
        if self.samples.last().is_some_and(|l| s.0 <= l.0) {
            return;
        }
        if self.samples.len() == SAMPLES {
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
        }
        self.samples.push(s);
    }

    /// `ticks` in ns.
    pub fn ns(&self, ticks: u64) -> u64 {
        let s = &self.samples;
        let n = s.len();
        if n < 2 {
            return s[0].1;
        }
        // The segment around `ticks` (the first or last one beyond the samples).
        let at = s.partition_point(|x| x.0 < ticks).clamp(1, n - 1);
        line(s[at - 1], s[at], ticks).unwrap_or(s[0].1)
    }
}

/// `ticks` on the line through samples `a` and `b` (`None` where they have the same
/// ticks).
fn line((t0, n0): (u64, u64), (t1, n1): (u64, u64), ticks: u64) -> Option<u64> {
    if t1 <= t0 {
        return None;
    }
    let dt = i128::from(ticks) - i128::from(t0);
    let ns = i128::from(n0) + dt * (i128::from(n1) - i128::from(n0)) / i128::from(t1 - t0);
    Some(u64::try_from(ns).unwrap_or(0))
}

/// The clock reads around a sample further apart than this (ns) say it was interrupted
/// (an interrupt, another CPU's `stop_machine`, the vCPU descheduled): its time is only
/// known within half of that, which would shift every time converted through it.
const MAX_GAP_NS: u64 = 50_000;

/// A trustworthy sample of (ticks, ns) now, or `None` where its clock reads were
/// interrupted.
pub(crate) fn sample() -> Option<(u64, u64)> {
    let (s, gap) = tsc_sample();
    (gap <= MAX_GAP_NS).then_some(s)
}

/// The counter, and `CLOCK_MONOTONIC` ns at the moment it was read (the midpoint of two
/// clock reads around it), with the gap between those reads: of four tries, the one
/// with the smallest gap.
fn tsc_sample() -> ((u64, u64), u64) {
    let mut best = ((0, 0), u64::MAX);
    for _ in 0..4 {
        let a = mono_ns();
        // SAFETY: rdtsc has no preconditions (dcg's own process never disables it).
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        let b = mono_ns();
        let gap = b.saturating_sub(a);
        if gap < best.1 {
            best = ((t, a / 2 + b / 2), gap);
        }
    }
    best
}

/// `CLOCK_MONOTONIC` now, in ns: the clock of every record and event (dcg's, the
/// recorder's, uprobes' `trace_clock mono`).
#[inline(always)]
pub fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Whether the recorders may stamp records with the TSC ([`PLAN_TSC`]): the kernel's
/// clock source is the TSC (so it is synchronized across CPUs and trusted) and the CPU
/// says it is constant and keeps running in every state.
pub fn tsc_usable() -> bool {
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    source.trim() == "tsc" && has("constant_tsc") && has("nonstop_tsc")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn counter_ticks_in_monotonic_ns() {
        let mut clock = TscClock::new();
        std::thread::sleep(Duration::from_millis(20));
        clock.update();
        std::thread::sleep(Duration::from_millis(5));
        // A tick read between two clock reads converts to a time between them.
        let before = mono_ns();
        // SAFETY: rdtsc.
        let t = unsafe { core::arch::x86_64::_rdtsc() };
        let after = mono_ns();
        let ns = clock.ns(t);
        assert!(
            ns + 50_000 >= before && ns <= after + 50_000,
            "{before} <= {ns} <= {after} (within 50 us)"
        );
    }

    /// A clock from made-up samples: ticks at 2 a ns for 1000 ticks, then at 4.
    fn made_up() -> TscClock {
        let mut c = TscClock {
            samples: vec![(1000, 10_000)],
        };
        c.add((2000, 10_500));
        c.add((3000, 10_750));
        c
    }

    #[test]
    fn each_tick_takes_the_segment_around_it() {
        let c = made_up();
        // Before the first sample and in the first segment: 2 ticks a ns.
        assert_eq!(c.ns(0), 9_500);
        assert_eq!(c.ns(1500), 10_250);
        // In the second: 4 ticks a ns; past the last, its line goes on.
        assert_eq!(c.ns(2500), 10_625);
        assert_eq!(c.ns(4000), 11_000);
        // A sample that does not move the counter on is left out.
        let mut d = c;
        d.add((3000, 99_999));
        assert_eq!(d.ns(4000), 11_000);
        // One sample gives no rate: every tick is its time.
        let one = TscClock {
            samples: vec![(1000, 10_000)],
        };
        assert_eq!(one.ns(5000), 10_000);
    }

    /// Converted at the end, a long session's ticks still take the segments they fell in:
    /// when the samples are full every other one goes, the first and the span stay.
    #[test]
    fn a_whole_session_is_kept_when_thinned() {
        let mut c = made_up();
        // From tick 4000 the rate changes every 1000 ticks between 4 and 2 a ns.
        let mut ns = 11_000u64;
        let mut at = Vec::new();
        for i in 0..(3 * SAMPLES as u64) {
            let t = 4000 + i * 1000;
            c.add((t, ns));
            at.push((t, ns));
            ns += if i % 2 == 0 { 250 } else { 500 };
        }
        assert!(c.samples.len() <= SAMPLES && c.samples.len() > SAMPLES / 4);
        assert_eq!(c.samples[0], (1000, 10_000));
        // A sample still kept converts exactly; the oldest ones too.
        for &(t, n) in c.samples.iter() {
            assert_eq!(c.ns(t), n);
        }
        // Between kept samples, at most the rates' difference over a thinned segment.
        let spacing = at.len() / (c.samples.len() - 3);
        for &(t, n) in at.iter().step_by(997) {
            let err = c.ns(t).abs_diff(n);
            assert!(err <= 250 * spacing as u64, "{t}: {} against {n}", c.ns(t));
        }
        let (t, n) = *at.last().unwrap();
        assert_eq!(c.ns(t), n);
    }
}
