//! The C library functions the recorder stands in front of (it is preloaded, so its
//! definitions come first): `dlclose` here; the unwinder's entry points in [`crate::unwind`].

use core::sync::atomic::{AtomicUsize, Ordering};

/// The next definition of `name` after this library's (aborts when there is none).
pub fn next(cache: &AtomicUsize, name: &core::ffi::CStr) -> usize {
    let mut f = cache.load(Ordering::Relaxed);
    if f == 0 {
        // SAFETY: a NUL-terminated name; the answer is only an address.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        if f == 0 {
            crate::fatal(b"dcg recorder: a C library function it stands in front of is missing\n");
        }
        cache.store(f, Ordering::Relaxed);
    }
    f
}

static REAL_DLCLOSE: AtomicUsize = AtomicUsize::new(0);

/// The program unloads a library: what the recorder knew readable may be unmapped now
/// ([`crate::state::RO_STALE`]), then the C library's `dlclose`.
///
/// # Safety
/// As `dlclose(3)`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlclose(handle: *mut libc::c_void) -> libc::c_int {
    crate::state::RO_STALE.store(true, Ordering::Relaxed);
    let real = next(&REAL_DLCLOSE, c"dlclose");
    // SAFETY: the C library's `dlclose` (non-null: `next` aborts otherwise), which has
    // this very signature.
    let real: unsafe extern "C" fn(*mut libc::c_void) -> libc::c_int =
        unsafe { core::mem::transmute(real) };
    // SAFETY: the caller's handle, passed on as `dlclose(3)` asks of the caller.
    unsafe { real(handle) }
}
