//! The records' clocks: `CLOCK_MONOTONIC` nanoseconds, and the time-stamp counter where
//! the recorders may use it, converted to nanoseconds here.

/// Samples of (ticks, ns) a [`TscClock`] keeps besides the first.
const SAMPLES: usize = 64;

/// Converts time-stamp counter ticks into `CLOCK_MONOTONIC` nanoseconds, piecewise: the
/// line through the two (ticks, ns) samples around the ticks, of those taken when the
/// session started and at each [`TscClock::update`] (which dcg calls before it converts
/// what it drained, a few milliseconds apart). `CLOCK_MONOTONIC` is the TSC scaled by
/// the kernel, whose rate NTP may slew by at most 500 ppm: between two samples 10 ms
/// apart a converted time is off by at most 5 µs from that, plus half the gap of the two
/// clock reads around a sample (under a microsecond). The last samples are kept; ticks
/// older than them take the line from the first sample to the oldest kept.
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    start: (u64, u64),
    samples: [(u64, u64); SAMPLES],
    kept: usize,
}

impl Default for TscClock {
    fn default() -> Self {
        TscClock::new()
    }
}

impl TscClock {
    /// Sample the counter and the clock now.
    pub fn new() -> TscClock {
        let s = tsc_sample();
        TscClock {
            start: s,
            samples: [s; SAMPLES],
            kept: 0,
        }
    }

    /// Sample them again.
    pub fn update(&mut self) {
        self.add(tsc_sample());
    }

    fn add(&mut self, s: (u64, u64)) {
        if self.kept > 0 && s.0 <= self.samples[self.kept - 1].0 {
            return;
        }
        if self.kept == SAMPLES {
            self.samples.copy_within(SAMPLES / 2.., 0);
            self.kept = SAMPLES / 2;
        }
        self.samples[self.kept] = s;
        self.kept += 1;
    }

    /// `ticks` in ns.
    pub fn ns(&self, ticks: u64) -> u64 {
        let kept = &self.samples[..self.kept];
        // The segment around `ticks` (the first or last one beyond the samples).
        let at = kept.partition_point(|s| s.0 < ticks);
        let (a, b) = match (at, kept.len()) {
            (_, 0) => return self.start.1,
            (0, _) => (self.start, kept[0]),
            (i, n) if i == n && n >= 2 => (kept[n - 2], kept[n - 1]),
            (i, n) if i == n => (self.start, kept[0]),
            (i, _) => (kept[i - 1], kept[i]),
        };
        line(a, b, ticks).unwrap_or_else(|| {
            line(self.start, kept[kept.len() - 1], ticks).unwrap_or(self.start.1)
        })
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

/// The counter, and `CLOCK_MONOTONIC` ns at the moment it was read (the midpoint of two
/// clock reads around it).
fn tsc_sample() -> (u64, u64) {
    let a = mono_ns();
    // SAFETY: rdtsc has no preconditions (dcg's own process never disables it).
    let t = unsafe { core::arch::x86_64::_rdtsc() };
    let b = mono_ns();
    (t, a / 2 + b / 2)
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
            start: (1000, 10_000),
            samples: [(0, 0); SAMPLES],
            kept: 0,
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
    }

    #[test]
    fn the_last_samples_are_kept() {
        let mut c = made_up();
        for i in 0..200u64 {
            c.add((4000 + i * 1000, 11_000 + i * 250));
        }
        assert!(c.kept <= SAMPLES);
        // Older than the samples kept: the line from the first sample to the oldest.
        let oldest = c.samples[0];
        assert!(oldest.0 > 100_000);
        assert_eq!(c.ns(oldest.0), oldest.1);
        assert_eq!(c.ns(1000), 10_000);
        assert_eq!(c.ns(203_000 - 500), 11_000 + 199 * 250 - 125);
    }
}
