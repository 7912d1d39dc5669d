//! Kernel memory read through BPF, for kernels without `/proc/kcore`: a program attached
//! to `getppid`'s syscall function copies the range this process asks for (the `peek`
//! map) when this process calls `getppid`.

use std::mem::MaybeUninit;
use std::os::raw::c_ulong;
use std::ptr::NonNull;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags};

use crate::{libbpf, BpfError};

use crate::skel::peek::{PeekSkel, PeekSkelBuilder};

/// Bytes one request reads (`PEEK_MAX` in `peek.bpf.c`).
const CHUNK: usize = 4096;
/// The request's header before the bytes: addr, len, tgid, rc, done.
const HEADER: usize = 24;

/// A loaded and attached reader of kernel memory.
pub struct KernelPeek {
    // Field order is drop order: the link before the skeleton.
    _link: Link,
    skel: PeekSkel<'static>,
    tgid: u32,
}

impl KernelPeek {
    /// Load the reader and attach it to the function at `syscall` (the address of
    /// `__x64_sys_getppid`, or whichever function `getppid` runs, from kallsyms).
    pub fn open(syscall: u64) -> Result<KernelPeek, BpfError> {
        // 'static: the skeleton borrows its object storage for its whole life;
        // one small leak per reader (a session opens at most one).
        let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let open = PeekSkelBuilder::default()
            .open(storage)
            .map_err(libbpf("opening the kernel reader"))?;
        let skel = open.load().map_err(libbpf("loading the kernel reader"))?;
        let addrs = [syscall as c_ulong];
        let opts = libbpf_sys::bpf_kprobe_multi_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_kprobe_multi_opts>() as libbpf_sys::size_t,
            addrs: addrs.as_ptr(),
            cnt: 1,
            ..Default::default()
        };
        let prog = skel.progs.dcg_peek.as_libbpf_object();
        // SAFETY: a loaded program of the skeleton; opts and addrs outlive the call.
        let link = unsafe {
            libbpf_sys::bpf_program__attach_kprobe_multi_opts(
                prog.as_ptr(),
                std::ptr::null(),
                &opts,
            )
        };
        let link = match NonNull::new(link) {
            // SAFETY: a link libbpf just created, owned from here on.
            Some(l) => unsafe { Link::from_ptr(l) },
            None => {
                return Err(BpfError::Attach {
                    count: 1,
                    source: std::io::Error::last_os_error(),
                })
            }
        };
        Ok(KernelPeek {
            _link: link,
            skel,
            tgid: std::process::id(),
        })
    }

    /// `len` bytes of kernel memory at `addr`; `None` when any part cannot be read.
    pub fn read(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let n = (len - out.len()).min(CHUNK);
            out.extend_from_slice(&self.chunk(addr + out.len() as u64, n)?);
        }
        Some(out)
    }

    fn chunk(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        let key = 0u32.to_ne_bytes();
        let mut req = vec![0u8; HEADER + CHUNK];
        req[..8].copy_from_slice(&addr.to_ne_bytes());
        req[8..12].copy_from_slice(&(len as u32).to_ne_bytes());
        req[12..16].copy_from_slice(&self.tgid.to_ne_bytes());
        self.skel.maps.peek.update(&key, &req, MapFlags::ANY).ok()?;
        // The program runs in this process's getppid.
        let _ = nix::unistd::getppid();
        let got = self.skel.maps.peek.lookup(&key, MapFlags::ANY).ok()??;
        let rc = i32::from_ne_bytes(got.get(16..20)?.try_into().ok()?);
        let done = u32::from_ne_bytes(got.get(20..24)?.try_into().ok()?);
        (done == 1 && rc == 0).then(|| got[HEADER..HEADER + len].to_vec())
    }
}
