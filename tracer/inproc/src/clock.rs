//! The records' clocks: `CLOCK_MONOTONIC` nanoseconds, and the time-stamp counter where
//! the recorders may use it, converted to nanoseconds here.

/// Converts time-stamp counter ticks into `CLOCK_MONOTONIC` nanoseconds: the line through
/// the (ticks, ns) pairs sampled when the session started and at the latest
/// [`TscClock::update`] (which dcg calls before it converts what it drained).
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    start: (u64, u64),
    last: (u64, u64),
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
        TscClock { start: s, last: s }
    }

    /// Sample them again: the slope from the start to now.
    pub fn update(&mut self) {
        self.last = tsc_sample();
    }

    /// `ticks` in ns.
    pub fn ns(&self, ticks: u64) -> u64 {
        let ((t0, n0), (t1, n1)) = (self.start, self.last);
        if t1 <= t0 {
            // No slope yet: the nanoseconds since the start are unknown.
            return n0;
        }
        let dt = i128::from(ticks) - i128::from(t0);
        let ns = i128::from(n0) + dt * i128::from(n1 - n0) / i128::from(t1 - t0);
        u64::try_from(ns).unwrap_or(0)
    }
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
}
