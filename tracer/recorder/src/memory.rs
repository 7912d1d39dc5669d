//! Reading the traced program's memory without ever faulting it: directly where the
//! address is known readable (the loaded objects' mappings of start-up, the stack
//! pointer's own page), else through the kernel (`process_vm_readv` on this process),
//! which stops at the first unmapped byte.

use crate::state::State;

/// Copy `n` bytes without calling the C library's `memcpy` (which may use, and clear the
/// upper halves of, vector registers the traced code keeps values in).
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes.
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    let mut i = 0;
    if (src as usize | dst as usize).is_multiple_of(8) {
        // Both aligned (a struct into a record): a word at a time.
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n`, in both ranges (the caller's promise), 8-aligned.
            unsafe {
                let w = core::ptr::read_volatile(src.add(i).cast::<u64>());
                core::ptr::write_volatile(dst.add(i).cast::<u64>(), w);
            }
            i += 8;
        }
    }
    while i < n {
        // SAFETY: `i < n`, in both ranges (the caller's promise).
        unsafe { core::ptr::write_volatile(dst.add(i), core::ptr::read_volatile(src.add(i))) };
        i += 1;
    }
}

/// Bytes at `addr` that can be read directly, without a fault, up to `n`: those in a
/// loaded object's mapping of start-up (while no `dlclose` can have removed one), or in
/// the page the stack pointer `sp` is in (mapped: the return address was just pushed
/// there; the next page may be a small signal stack's end).
#[inline(always)]
fn direct_len(st: &State, addr: u64, n: usize, sp: u64) -> usize {
    let page_end = (sp | 4095).wrapping_add(1);
    if addr >= sp && addr < page_end {
        return n.min((page_end - addr) as usize);
    }
    st.readable_len(addr).min(n as u64) as usize
}

/// Read `dst.len()` bytes at `addr` into `dst` without ever faulting. `string`: stop
/// after a NUL. `sp`: the stack pointer of the traced code. Returns the bytes read.
#[inline(always)]
pub fn read_mem(st: &State, addr: u64, dst: &mut [u8], sp: u64, string: bool) -> usize {
    let n = dst.len();
    if addr == 0 {
        return 0;
    }
    let direct = direct_len(st, addr, n, sp);
    let out = dst.as_mut_ptr();
    if direct == n || (string && direct > 0) {
        if !string {
            // SAFETY: `direct_len` found the `n` bytes at `addr` mapped and readable;
            // `dst` is `n` bytes.
            unsafe { copy(addr as *const u8, out, n) };
            return n;
        }
        // A string: up to its NUL, which usually comes long before `n`.
        for i in 0..direct {
            // SAFETY: `i < direct <= n`: readable at `addr` ([`direct_len`]), in `dst`.
            let b = unsafe {
                let b = core::ptr::read_volatile((addr as *const u8).add(i));
                core::ptr::write_volatile(out.add(i), b);
                b
            };
            if b == 0 {
                return i + 1;
            }
        }
        if direct == n {
            return n;
        }
    }
    let local = libc::iovec {
        iov_base: out.cast(),
        iov_len: n,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: n,
    };
    // SAFETY: the kernel writes at most `n` bytes into `dst` and reads the remote range
    // itself, failing (not faulting) where it is unmapped.
    let got = unsafe { libc::process_vm_readv(st.pid(), &local, 1, &remote, 1, 0) };
    if got < 0 {
        0
    } else {
        got as usize
    }
}

/// The word at `addr`, if it can be read.
#[inline(always)]
pub fn read_word(st: &State, addr: u64, sp: u64) -> Option<u64> {
    let mut w = [0u8; 8];
    (read_mem(st, addr, &mut w, sp, false) == 8).then(|| u64::from_ne_bytes(w))
}

/// Copy the stack from `sp` up into `dst` (a multiple of 8 bytes), without ever
/// faulting: directly up to `mapped` (an address up to which the stack is known mapped,
/// the main thread's start; else the stack pointer's own page), the pages above it
/// through the kernel, one page an iovec, so that the copy stops where the stack's
/// mapping ends. Returns the bytes copied (a multiple of 8).
#[inline(always)]
pub fn read_stack(sp: u64, mapped: u64, pid: i32, dst: &mut [u8]) -> usize {
    let page_end = (sp | 4095).wrapping_add(1).max(mapped & !7);
    let first = dst.len().min((page_end - sp) as usize) & !7;
    // SAFETY: the page of `sp` is mapped (the return address was just pushed there), and
    // so is the stack up to `mapped` (the caller's promise); `first` bytes from `sp` stay
    // below both ends; `dst` has at least `first` bytes.
    unsafe { copy_words(sp as *const u64, dst.as_mut_ptr().cast(), first / 8) };
    let rest = dst.len() - first;
    if rest == 0 {
        return first;
    }
    const PAGES: usize = 8;
    let mut remote = [libc::iovec {
        iov_base: core::ptr::null_mut(),
        iov_len: 0,
    }; PAGES];
    let mut n = 0;
    let mut at = 0;
    while at < rest && n < PAGES {
        let len = (rest - at).min(4096);
        remote[n] = libc::iovec {
            iov_base: (page_end + at as u64) as *mut libc::c_void,
            iov_len: len,
        };
        at += len;
        n += 1;
    }
    let local = libc::iovec {
        iov_base: dst[first..].as_mut_ptr().cast(),
        iov_len: at,
    };
    // SAFETY: the kernel writes at most `at <= rest` bytes into `dst[first..]` and reads
    // the remote pages itself, stopping (not faulting) at the first unmapped one.
    let got = unsafe { libc::process_vm_readv(pid, &local, 1, remote.as_ptr(), n as _, 0) };
    first + (got.max(0) as usize & !7)
}

/// Copy `n` words without the C library's `memcpy` (see [`copy`]).
///
/// # Safety
/// `src` is readable and `dst` writable for `n` words, both 8-aligned.
#[inline(always)]
unsafe fn copy_words(src: *const u64, dst: *mut u64, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`, in both ranges (the caller's promise).
        unsafe { core::ptr::write_volatile(dst.add(i), core::ptr::read_volatile(src.add(i))) };
    }
}
