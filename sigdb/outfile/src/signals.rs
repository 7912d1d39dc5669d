//! Stop signals held back while a replacement is linked and renamed into place: between
//! the two calls the file has a temporary name, which a signal's default action (ending
//! the process there) would leave behind.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use nix::sys::signal::{raise, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The signals that end a process by default and that a user sends to stop one.
const STOP_SIGNALS: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// The signal that came while held back (0: none).
static PENDING: AtomicI32 = AtomicI32::new(0);
/// One holder at a time: the dispositions are the process's.
static HOLDING: Mutex<()> = Mutex::new(());

extern "C" fn remember(sig: nix::libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
}

/// Run `f` with the stop signals held back, then deliver the one that came (if any) with
/// the disposition it had before: a handler the program installed, or the default action.
/// A signal the program ignores stays ignored.
pub(crate) fn deferred<T>(f: impl FnOnce() -> T) -> T {
    let _one = HOLDING.lock().unwrap_or_else(|e| e.into_inner());
    PENDING.store(0, Ordering::SeqCst);
    let hold = SigAction::new(
        SigHandler::Handler(remember),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    let mut saved = Vec::with_capacity(STOP_SIGNALS.len());
    for s in STOP_SIGNALS {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        if let Ok(old) = unsafe { sigaction(s, &hold) } {
            saved.push((s, old));
        }
    }
    let value = f();
    for (s, old) in &saved {
        // SAFETY: putting back the disposition that was there.
        let _ = unsafe { sigaction(*s, old) };
    }
    let sig = PENDING.swap(0, Ordering::SeqCst);
    if let Ok(s) = Signal::try_from(sig) {
        // Delivered with the disposition just put back (ignored if it was ignored).
        let _ = raise(s);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_held_back_reaches_the_handler_after() {
        static SEEN: AtomicI32 = AtomicI32::new(0);
        extern "C" fn seen(sig: nix::libc::c_int) {
            SEEN.store(sig, Ordering::SeqCst);
        }
        let action = SigAction::new(SigHandler::Handler(seen), SaFlags::empty(), SigSet::empty());
        // SAFETY: the handler only stores to an atomic.
        let old = unsafe { sigaction(Signal::SIGHUP, &action) }.unwrap();
        deferred(|| {
            raise(Signal::SIGHUP).unwrap();
            assert_eq!(SEEN.load(Ordering::SeqCst), 0, "delivered while held back");
        });
        assert_eq!(SEEN.load(Ordering::SeqCst), Signal::SIGHUP as i32);
        // SAFETY: restoring the test process's disposition.
        unsafe { sigaction(Signal::SIGHUP, &old) }.unwrap();
    }
}
