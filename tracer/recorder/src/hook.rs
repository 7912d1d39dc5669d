//! The hooks: a `-pg` function calls `mcount`/`__fentry__` itself (nothing to patch); a
//! `-fpatchable-function-entry` NOP pad becomes a call of a jump to the entry thunk; a
//! plain function's first whole instructions move to a trampoline (re-encoded for their
//! new address by iced-x86) that calls the entry thunk, runs them and jumps back, and
//! the entry becomes a jump to it. Trampolines live in a page mapped within ±2 GiB of
//! the binary. A function that cannot be hooked is counted (`unhooked`) and left as it is.

use dcg_inproc::layout::*;
use iced_x86::{
    BlockEncoder, BlockEncoderOptions, Decoder, DecoderOptions, FlowControl, InstructionBlock,
    OpKind,
};

use crate::setup::{Object, Plan};
use crate::thunks::dcg_entry_thunk;

/// Bytes of one trampoline.
const STUB: usize = 64;
/// Where trampolines start in their page (the thunk's address, then the NOP pads' jump).
const STUBS_AT: usize = 64;

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

/// Hooks made: the hook sites (where the hook call returns) with their functions, and
/// the plan indices of the functions that could not be hooked.
#[derive(Default)]
pub struct Hooks {
    /// Hook sites and plan indices, by address once sorted.
    pub sites: Vec<(u64, u32)>,
    /// Plan indices of the functions not hooked.
    pub unhooked: Vec<u32>,
}

impl Hooks {
    /// Hook the functions of target `t`, loaded as `obj`.
    pub fn target(&mut self, plan: &Plan, t: usize, obj: &Object) {
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
