//! Start-up, before `main`: map the plan and the rings, find the traced binaries among the
//! loaded objects, hook their functions ([`crate::hook`]), publish the state.

use std::ffi::CStr;
use std::ptr::NonNull;

use dcg_inproc::layout::*;
use zerocopy::FromBytes;

use crate::hook::Hooks;
use crate::ring::Shm;
use crate::state::{publish, State};

/// A loaded object: its load bias, address range, name and build-id.
pub struct Object {
    /// Load bias.
    pub bias: u64,
    /// First address mapped.
    pub start: u64,
    /// End of the last segment.
    pub end: u64,
    name: String,
    build_id: Vec<u8>,
}

/// `dl_iterate_phdr`'s callback: one loaded object into the `Vec<Object>` at `data`.
///
/// # Safety
/// Called by `dl_iterate_phdr` only, with the vector [`init`] passes as `data`.
unsafe extern "C" fn each_object(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the vector `init` passed, borrowed by nothing else meanwhile, and the C
    // library's description of a loaded object, valid for this call.
    let (out, info) = unsafe { (&mut *(data as *mut Vec<Object>), &*info) };
    let bias = info.dlpi_addr;
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null object name is a NUL-terminated string.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    // SAFETY: the object's program headers, `dlpi_phnum` of them, mapped.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let (mut start, mut end, mut build_id) = (u64::MAX, 0, Vec::new());
    for ph in phdrs {
        if ph.p_type == libc::PT_LOAD {
            start = start.min(bias + ph.p_vaddr);
            end = end.max(bias + ph.p_vaddr + ph.p_memsz);
        }
        if ph.p_type == libc::PT_NOTE && build_id.is_empty() {
            // SAFETY: a note segment of a loaded object: mapped, `p_memsz` bytes.
            let note = unsafe {
                std::slice::from_raw_parts((bias + ph.p_vaddr) as *const u8, ph.p_memsz as usize)
            };
            build_id = find_build_id(note);
        }
    }
    out.push(Object {
        bias,
        start,
        end,
        name,
        build_id,
    });
    0
}

/// The GNU build-id in a note segment.
fn find_build_id(mut n: &[u8]) -> Vec<u8> {
    let word = |b: &[u8]| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
    while n.len() >= 12 {
        let (namesz, descsz, ty) = (word(n), word(&n[4..]), word(&n[8..]));
        let name_end = 12 + namesz.div_ceil(4) * 4;
        let desc_end = name_end + descsz.div_ceil(4) * 4;
        if desc_end > n.len() {
            break;
        }
        if ty == 3 && namesz == 4 && &n[12..16] == b"GNU\0" {
            return n[name_end..name_end + descsz].to_vec();
        }
        n = &n[desc_end..];
    }
    Vec::new()
}

/// Map `path` (read-only, or shared read-write), for the rest of the process's life.
fn map(path: &CStr, write: bool) -> Option<&'static mut [u8]> {
    let flags = if write { libc::O_RDWR } else { libc::O_RDONLY } | libc::O_CLOEXEC;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe { libc::open(path.as_ptr(), flags) };
    if fd < 0 {
        return None;
    }
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is a stat buffer to fill; read only when the call succeeded.
    let len = if unsafe { libc::fstat(fd, st.as_mut_ptr()) } == 0 {
        // SAFETY: filled by the successful `fstat`.
        unsafe { st.assume_init() }.st_size as usize
    } else {
        0
    };
    let prot = if write {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_READ
    };
    let m = if len > 0 {
        // SAFETY: a new mapping of the file, at an address the kernel picks.
        unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) }
    } else {
        libc::MAP_FAILED
    };
    // SAFETY: the descriptor opened above (the mapping keeps the file).
    unsafe { libc::close(fd) };
    // SAFETY: `len` bytes mapped here, never unmapped, referenced by nothing else.
    (m != libc::MAP_FAILED).then(|| unsafe { std::slice::from_raw_parts_mut(m.cast(), len) })
}

/// Read-only file mappings of the process now.
/// Where the main thread's stack starts (the C library's `__libc_stack_end`: the stack
/// pointer `_start` was given; nothing above it is a frame); 0 when unknown.
fn main_stack_end() -> u64 {
    // SAFETY: a NUL-terminated name; the answer is the variable's address or null.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__libc_stack_end".as_ptr()) };
    if p.is_null() {
        return 0;
    }
    // SAFETY: glibc's `void *__libc_stack_end`, set before any constructor runs.
    unsafe { p.cast::<u64>().read() }
}

/// The mappings of the objects loaded at start-up, which stay until a `dlclose`: every
/// readable private file mapping (code, constants, data) and the anonymous one right
/// after an object's data (its `.bss`); adjacent ones merged. Not the heap, stacks or
/// other anonymous memory, which the program may unmap at any time.
fn startup_mappings() -> Vec<(u64, u64)> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let mut out: Vec<(u64, u64)> = Vec::new();
    // The end of the last private writable file mapping (an object's data).
    let mut data_end = None;
    for l in maps.lines() {
        let mut f = l.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let path = f.nth(3);
        let Some((a, b)) = range.split_once('-').and_then(|(a, b)| {
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        }) else {
            continue;
        };
        let p = perms.as_bytes();
        let (readable, writable, private) = (
            p.first() == Some(&b'r'),
            p.get(1) == Some(&b'w'),
            p.get(3) == Some(&b'p'),
        );
        let file = path.is_some_and(|p| p.starts_with('/'));
        let bss = path.is_none() && writable && data_end == Some(a);
        data_end = (file && writable).then_some(b);
        if !(readable && private && (file || bss)) {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == a => last.1 = b,
            _ => out.push((a, b)),
        }
    }
    out.sort_unstable();
    out
}

/// The plan dcg wrote, mapped for the process's life.
pub struct Plan {
    header: PlanHeader,
    targets: &'static [TargetDesc],
    /// Its functions.
    pub funcs: &'static [FuncDesc],
    ops: &'static [FetchOp],
    conds: &'static [CondTest],
    strings: &'static [u8],
}

impl Plan {
    /// The plan in `bytes`, if whole.
    fn parse(bytes: &'static [u8]) -> Option<Plan> {
        let (header, rest) = PlanHeader::read_from_prefix(bytes).ok()?;
        if header.magic != PLAN_MAGIC {
            return None;
        }
        let (targets, rest) =
            <[TargetDesc]>::ref_from_prefix_with_elems(rest, header.ntargets as usize).ok()?;
        let (funcs, rest) =
            <[FuncDesc]>::ref_from_prefix_with_elems(rest, header.nfuncs as usize).ok()?;
        let (ops, rest) =
            <[FetchOp]>::ref_from_prefix_with_elems(rest, header.nops as usize).ok()?;
        let (conds, rest) =
            <[CondTest]>::ref_from_prefix_with_elems(rest, header.nconds as usize).ok()?;
        let strings = rest.get(..header.strings_len as usize)?;
        Some(Plan {
            header,
            targets,
            funcs,
            ops,
            conds,
            strings,
        })
    }

    /// Each target's loaded object (by build-id, else by path; `exe`: the main program's).
    fn find<'o>(&self, objects: &'o [Object], exe: &str) -> Vec<Option<&'o Object>> {
        let strings = self.strings;
        self.targets
            .iter()
            .map(|t| {
                let id = &t.build_id[..(t.build_id_len as usize).min(40)];
                let path = strings
                    .get(t.path_off as usize..(t.path_off + t.path_len) as usize)
                    .and_then(|p| std::str::from_utf8(p).ok())
                    .unwrap_or("");
                objects.iter().find(|o| {
                    if !id.is_empty() {
                        o.build_id == id
                    } else {
                        let name = if o.name.is_empty() { exe } else { &o.name };
                        name == path
                    }
                })
            })
            .collect()
    }
}

/// The ring file dcg made, if whole.
fn ring_file(bytes: &'static mut [u8]) -> Option<Shm> {
    let (h, _) = ShmHeader::read_from_prefix(bytes).ok()?;
    if h.magic != SHM_MAGIC || bytes.len() < ring_offset(h.nrings, h.ring_size) {
        return None;
    }
    let base = NonNull::new(bytes.as_mut_ptr())?.cast();
    // SAFETY: a shared mapping of the whole ring file, never unmapped; this process
    // writes it from here on through `Shm` only, dcg and other processes atomically.
    Some(unsafe { Shm::new(base, h.nrings, h.ring_size) })
}

/// The objects loaded now.
fn loaded_objects() -> Vec<Object> {
    let mut objects: Vec<Object> = Vec::new();
    // SAFETY: `each_object` fills the vector passed, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each_object), (&raw mut objects).cast()) };
    objects
}

/// Set the recorder up from the environment; nothing happens without it. Run once, by
/// the library's constructor.
pub fn init() {
    let (Some(plan_path), Some(shm_path)) = (getenv(ENV_PLAN), getenv(ENV_SHM)) else {
        return;
    };
    let (Some(plan), Some(shm)) = (map(plan_path, false), map(shm_path, true)) else {
        return;
    };
    let (Some(plan), Some(shm)) = (Plan::parse(plan), ring_file(shm)) else {
        return;
    };
    let objects = loaded_objects();
    let exe = std::fs::read_link("/proc/self/exe")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let found = plan.find(&objects, &exe);
    if found.iter().all(Option::is_none) {
        return;
    }
    let mut hooks = Hooks::default();
    for (t, obj) in found.iter().enumerate() {
        if let Some(obj) = obj {
            hooks.target(&plan, t, obj);
        }
    }
    hooks.sites.sort_unstable();
    // SAFETY: a system call without arguments.
    let pid = unsafe { libc::getpid() };
    for o in &objects {
        let name = if o.name.is_empty() { &exe } else { &o.name };
        if name.starts_with('/') && !shm.publish_object(pid as u32, o.bias, name) {
            break;
        }
    }
    shm.attached();
    for i in hooks.unhooked {
        shm.unhooked(i);
    }
    let follow = plan.header.flags & PLAN_FOLLOW_FORKS != 0;
    let mut thread_key: libc::pthread_key_t = 0;
    let exit: unsafe extern "C" fn(*mut libc::c_void) = crate::record::thread_exit;
    // SAFETY: a key for the process's life, its destructor a function of this library.
    if unsafe { libc::pthread_key_create(&mut thread_key, Some(exit)) } != 0 {
        // No destructor: rings are not given back when threads end.
        thread_key = libc::pthread_key_t::MAX;
    }
    // The counter unless the process made `rdtsc` fault (PR_SET_TSC).
    let mut tsc_state: libc::c_int = 0;
    let tsc = plan.header.flags & PLAN_TSC != 0
        // SAFETY: PR_GET_TSC writes one int, `tsc_state`.
        && unsafe { libc::prctl(libc::PR_GET_TSC, &mut tsc_state as *mut libc::c_int) } == 0
        && tsc_state == libc::PR_TSC_ENABLE;
    publish(State {
        shm,
        funcs: plan.funcs,
        ops: plan.ops,
        conds: plan.conds,
        sites: hooks.sites,
        ro: startup_mappings(),
        pid: core::sync::atomic::AtomicI32::new(pid),
        follow,
        thread_key,
        tsc,
        stacks: plan.header.flags & PLAN_STACK != 0,
        stack_end: main_stack_end(),
    });
    if let Some(st) = crate::state::state() {
        crate::record::image_started(st);
    }
    if !follow {
        crate::scrub_environment();
    }
}

/// The environment variable `name`, for the process's life (start-up: nothing changes
/// the environment meanwhile).
fn getenv(name: &str) -> Option<&'static CStr> {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    // SAFETY: a NUL-terminated name.
    let p = unsafe { libc::getenv(n.as_ptr().cast()) };
    // SAFETY: a non-null answer is a NUL-terminated string of the environment, which the
    // recorder only changes at the end of start-up (`scrub_environment`, done with it).
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) })
}
