//! Start-up, before `main`: map the plan and the rings, find the traced binaries among the
//! loaded objects, hook their functions, publish the state.
//!
//! Hooks: a `-pg` function calls `mcount`/`__fentry__` itself (nothing to patch); a
//! `-fpatchable-function-entry` NOP pad becomes a call of a jump to the entry thunk; a
//! plain function's first whole instructions move to a trampoline (re-encoded for their
//! new address by iced-x86) that calls the entry thunk, runs them and jumps back, and
//! the entry becomes a jump to it. Trampolines live in a page mapped within ±2 GiB of
//! the binary. A function that cannot be hooked is counted (`unhooked`) and left as it is.

use std::ffi::CStr;
use std::ptr::NonNull;

use dcg_inproc::layout::*;
use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Decoder, DecoderOptions, FlowControl, InstructionBlock,
    OpKind,
};
use zerocopy::FromBytes;

use crate::ring::Shm;
use crate::state::{publish, State};
use crate::thunks::dcg_entry_thunk;

/// Bytes of one trampoline.
const STUB: usize = 64;
/// Where trampolines start in their page (the thunk's address, then the NOP pads' jump).
const STUBS_AT: usize = 64;

/// A loaded object: its load bias, address range, name and build-id.
struct Object {
    bias: u64,
    start: u64,
    end: u64,
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
fn readonly_mappings() -> Vec<(u64, u64)> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let mut out: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            let path = f.nth(3)?;
            if !perms.starts_with('r') || perms.as_bytes().get(1) == Some(&b'w') {
                return None;
            }
            if !path.starts_with('/') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    out.sort_unstable();
    out
}

/// Make `[addr, addr + len)` writable, run `f`, make it read-only and executable again.
///
/// # Safety
/// The range is code of a loaded object (its pages are read-only and executable, and
/// nothing else relies on them being otherwise).
unsafe fn with_writable_text(addr: u64, len: usize, f: impl FnOnce()) -> bool {
    let page = 4096u64;
    let start = addr & !(page - 1);
    let end = (addr + len as u64).div_ceil(page) * page;
    let n = (end - start) as usize;
    let p = start as *mut libc::c_void;
    let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
    // SAFETY: code pages (the caller's promise) made writable too, no byte changed.
    if unsafe { libc::mprotect(p, n, rwx) } != 0 {
        return false;
    }
    f();
    // SAFETY: the same pages back to what code pages are.
    unsafe { libc::mprotect(p, n, libc::PROT_READ | libc::PROT_EXEC) == 0 }
}

/// A page of trampolines for one binary, within ±2 GiB of `[start, end)`.
struct Stubs {
    base: *mut u8,
    len: usize,
    used: usize,
}

impl Stubs {
    /// A page for `count` trampolines within reach of `[start, end)`, if one is free.
    fn near(start: u64, end: u64, count: usize) -> Option<Stubs> {
        let len = (STUBS_AT + count * STUB).div_ceil(4096) * 4096;
        let reach =
            |p: u64| p.abs_diff(start) < (1 << 31) - 4096 && p.abs_diff(end) < (1 << 31) - 4096;
        // Below the binary first (the heap grows above an executable), then above it.
        let below = (0..256u64).map(|k| (start & !0xffff).wrapping_sub(len as u64 + k * 0x10_0000));
        let above =
            (0..256u64).map(|k| end.div_ceil(0x10000) * 0x10000 + 0x100_0000 + k * 0x10_0000);
        for hint in below.chain(above) {
            if hint < 0x10000 || !reach(hint) {
                continue;
            }
            // SAFETY: a new anonymous mapping that replaces nothing (`NOREPLACE`).
            let m = unsafe {
                libc::mmap(
                    hint as *mut libc::c_void,
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                )
            };
            if m == libc::MAP_FAILED {
                continue;
            }
            if m as u64 != hint {
                // SAFETY: the mapping just made, unused.
                unsafe { libc::munmap(m, len) };
                continue;
            }
            let base = m as *mut u8;
            // The thunk's address, then `jmp [rip - 14]` (jumps through it): the NOP pads'
            // call target.
            let jmp: [u8; 6] = [0xff, 0x25, 0xf2, 0xff, 0xff, 0xff];
            // SAFETY: the first 14 bytes of the new, writable, page-aligned mapping.
            unsafe {
                (base as *mut u64).write(dcg_entry_thunk as *const () as u64);
                std::ptr::copy_nonoverlapping(jmp.as_ptr(), base.add(8), 6);
            }
            return Some(Stubs { base, len, used: 0 });
        }
        None
    }

    fn pad_jump(&self) -> u64 {
        self.base as u64 + 8
    }

    /// A trampoline for the function at `at` whose first `n` bytes move: returns its
    /// hook site.
    ///
    /// # Safety
    /// `[at, at + n)` is code of a loaded object.
    unsafe fn trampoline(&mut self, at: u64, n: usize) -> Option<u64> {
        if !(5..=32).contains(&n) || STUBS_AT + (self.used + 1) * STUB > self.len {
            return None;
        }
        let stub = self.base.wrapping_add(STUBS_AT + self.used * STUB);
        let site = stub as u64 + 6;
        // SAFETY: mapped code (the caller's promise), read only.
        let code = unsafe { std::slice::from_raw_parts(at as *const u8, n) };
        let mut dec = Decoder::with_ip(64, code, at, DecoderOptions::NONE);
        let mut ins = Vec::new();
        while dec.can_decode() {
            let i = dec.decode();
            if i.is_invalid() {
                return None;
            }
            ins.push(i);
        }
        if dec.position() != n {
            return None;
        }
        // A call ending the moved bytes is made as if from its own place: its return
        // address is the original one (in the function, where unwinders and backtraces
        // find it), pushed by hand, then a jump to the callee.
        let call = ins
            .last()
            .filter(|i| {
                matches!(
                    i.flow_control(),
                    FlowControl::Call | FlowControl::IndirectCall
                )
            })
            .copied();
        if call.is_some() {
            ins.pop();
        }
        if ins.iter().any(|i| {
            matches!(
                i.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            )
        }) {
            return None;
        }
        let moved = if ins.is_empty() {
            Vec::new()
        } else {
            BlockEncoder::encode(
                64,
                InstructionBlock::new(&ins, site),
                BlockEncoderOptions::NONE,
            )
            .ok()?
            .code_buffer
        };
        // call [thunk]
        let disp = (self.base as i64 - (stub as i64 + 6)) as i32;
        let mut b = vec![0xff, 0x15];
        b.extend_from_slice(&disp.to_le_bytes());
        b.extend_from_slice(&moved);
        let jump_to = match call {
            Some(c) => {
                let ret = c.next_ip();
                // lea rsp, [rsp-8]; mov dword [rsp], lo; mov dword [rsp+4], hi
                b.extend_from_slice(&[0x48, 0x8d, 0x64, 0x24, 0xf8, 0xc7, 0x04, 0x24]);
                b.extend_from_slice(&(ret as u32).to_le_bytes());
                b.extend_from_slice(&[0xc7, 0x44, 0x24, 0x04]);
                b.extend_from_slice(&((ret >> 32) as u32).to_le_bytes());
                match c.op0_kind() {
                    OpKind::NearBranch64 => c.near_branch64(),
                    OpKind::Memory if c.is_ip_rel_memory_operand() => {
                        // jmp [rip+disp] to the same pointer.
                        let from = stub as i64 + b.len() as i64 + 6;
                        let d = i32::try_from(c.ip_rel_memory_address() as i64 - from).ok()?;
                        b.extend_from_slice(&[0xff, 0x25]);
                        b.extend_from_slice(&d.to_le_bytes());
                        return self.emit(&b).then_some(site);
                    }
                    _ => return None,
                }
            }
            // Back after the moved instructions.
            None => at + n as u64,
        };
        let from = stub as i64 + b.len() as i64 + 5;
        b.push(0xe9);
        b.extend_from_slice(&i32::try_from(jump_to as i64 - from).ok()?.to_le_bytes());
        self.emit(&b).then_some(site)
    }

    /// Write `b` as the next trampoline; false when it is too long or none is left.
    fn emit(&mut self, b: &[u8]) -> bool {
        let at = STUBS_AT + self.used * STUB;
        if b.len() > STUB || at + STUB > self.len {
            return false;
        }
        // SAFETY: the next free trampoline, in this writable mapping of `len` bytes,
        // `STUB >= b.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.base.add(at), b.len()) };
        self.used += 1;
        true
    }

    /// Make the trampolines executable (and no longer writable).
    fn seal(&self) {
        // SAFETY: this page's own mapping.
        unsafe {
            libc::mprotect(
                self.base.cast(),
                self.len,
                libc::PROT_READ | libc::PROT_EXEC,
            )
        };
    }
}

/// `rel32` from the end of a 5-byte instruction at `at` to `to`, if in reach.
fn rel32(at: u64, to: u64) -> Option<[u8; 4]> {
    let d = to as i64 - (at as i64 + 5);
    i32::try_from(d).ok().map(i32::to_le_bytes)
}

/// The bytes that turn a function's entry into a jump to its hook.
struct Patch {
    at: u64,
    len: usize,
    bytes: [u8; 32],
}

impl Patch {
    /// Write it. Its trampoline must be executable already: the recorder's own code
    /// (`free` of a `Vec`) may call the function the moment the write ends.
    ///
    /// # Safety
    /// `at` is the entry (or NOP pad) of a function of a loaded object that the patch
    /// was prepared for ([`prepare_hook`]), `len <= 32` bytes of its code.
    unsafe fn apply(&self) -> bool {
        let copy = || {
            // SAFETY: code made writable for this write; the bytes it replaces are ones
            // `prepare_hook` checked (a NOP pad) or moved to the trampoline.
            unsafe {
                std::ptr::copy_nonoverlapping(self.bytes.as_ptr(), self.at as *mut u8, self.len)
            }
        };
        // SAFETY: code of a loaded object (the caller's promise).
        unsafe { with_writable_text(self.at, self.len, copy) }
    }
}

/// Prepare the hook of function `f` loaded at `bias` (its trampoline written, its entry
/// not yet): its hook site, and the patch of its entry when it needs one.
///
/// # Safety
/// `f` is a function of the plan whose object is loaded at `bias`: its code is mapped.
unsafe fn prepare_hook(
    f: &FuncDesc,
    bias: u64,
    stubs: &mut Option<Stubs>,
) -> Option<(u64, Option<Patch>)> {
    let at = bias + f.addr;
    match f.mode {
        mode::MCOUNT => Some((at + u64::from(f.site_off), None)),
        mode::PATCHABLE => {
            let pad = at + u64::from(f.site_off);
            // SAFETY: the function's NOP pad, mapped code (the caller's promise).
            let cur = unsafe { std::slice::from_raw_parts(pad as *const u8, 5) };
            if cur != [0x90; 5] && cur != [0x0f, 0x1f, 0x44, 0x00, 0x00] {
                return None;
            }
            let rel = rel32(pad, stubs.as_ref()?.pad_jump())?;
            let mut bytes = [0u8; 32];
            bytes[..5].copy_from_slice(&[0xe8, rel[0], rel[1], rel[2], rel[3]]);
            Some((
                pad + 5,
                Some(Patch {
                    at: pad,
                    len: 5,
                    bytes,
                }),
            ))
        }
        mode::PLAIN => {
            let n = usize::from(f.patch_len);
            if !(5..=32).contains(&n) {
                return None;
            }
            let s = stubs.as_mut()?;
            // SAFETY: the function's first `n` bytes, mapped code.
            let site = unsafe { s.trampoline(at, n) }?;
            let rel = rel32(at, site - 6)?;
            let mut bytes = [0xccu8; 32];
            bytes[..5].copy_from_slice(&[0xe9, rel[0], rel[1], rel[2], rel[3]]);
            Some((site, Some(Patch { at, len: n, bytes })))
        }
        _ => None,
    }
}

/// The plan dcg wrote, mapped for the process's life.
struct Plan {
    header: PlanHeader,
    targets: &'static [TargetDesc],
    funcs: &'static [FuncDesc],
    ops: &'static [FetchOp],
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
        let strings = rest.get(..header.strings_len as usize)?;
        Some(Plan {
            header,
            targets,
            funcs,
            ops,
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

/// Hooks made: the hook sites (where the hook call returns) with their functions, and
/// the plan indices of the functions that could not be hooked.
#[derive(Default)]
struct Hooks {
    sites: Vec<(u64, u32)>,
    unhooked: Vec<u32>,
}

impl Hooks {
    /// Hook the functions of target `t`, loaded as `obj`.
    fn target(&mut self, plan: &Plan, t: usize, obj: &Object) {
        let mine: Vec<(usize, &FuncDesc)> = plan
            .funcs
            .iter()
            .enumerate()
            .filter(|(_, f)| f.target as usize == t)
            .collect();
        let patched = mine
            .iter()
            .filter(|(_, f)| f.mode == mode::PLAIN || f.mode == mode::PATCHABLE)
            .count();
        let mut stubs = if patched > 0 {
            Stubs::near(obj.start, obj.end, patched)
        } else {
            None
        };
        let mut patches: Vec<(Patch, u32)> = Vec::new();
        // The implementation the last IFUNC's resolver chose (and the IFUNC), until one
        // is hooked.
        let mut chosen: Option<(u64, u32)> = None;
        for (i, f) in mine {
            if f.mode == mode::IFUNC {
                if let Some((_, ifunc)) = chosen {
                    self.unhooked.push(ifunc);
                }
                // SAFETY: an IFUNC resolver of a loaded object: the dynamic linker
                // calls these with no arguments before any code of the object runs.
                let resolve: extern "C" fn() -> u64 =
                    unsafe { std::mem::transmute((obj.bias + f.addr) as usize) };
                chosen = Some((resolve(), i as u32));
                continue;
            }
            if f.flags & fflags::IFUNC_IMPL != 0 {
                if chosen.map(|c| c.0) != Some(obj.bias + f.addr) {
                    continue;
                }
                chosen = None;
            }
            // SAFETY: a function of the plan's target loaded as `obj`.
            match unsafe { prepare_hook(f, obj.bias, &mut stubs) } {
                Some((site, patch)) => {
                    self.sites.push((site, i as u32));
                    patches.extend(patch.map(|p| (p, i as u32)));
                }
                None => self.unhooked.push(i as u32),
            }
        }
        if let Some((_, ifunc)) = chosen {
            self.unhooked.push(ifunc);
        }
        // Trampolines executable before any entry jumps to them.
        if let Some(s) = &stubs {
            s.seal();
        }
        for (p, i) in patches {
            // SAFETY: prepared above for a function of `obj`.
            if !unsafe { p.apply() } {
                self.sites.retain(|&(_, j)| j != i);
                self.unhooked.push(i);
            }
        }
    }
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
        sites: hooks.sites,
        ro: readonly_mappings(),
        pid: core::sync::atomic::AtomicI32::new(pid),
        follow,
        thread_key,
        tsc,
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
