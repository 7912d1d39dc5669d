//! What the loaded programs run in the kernel besides their own instructions, read back
//! from the kernel's translation of them ([`Loaded::footprint`]): dcg leaves those
//! functions out of what it attaches to.

use libbpf_rs::{AsRawLibbpf, MapCore};

use crate::Loaded;

impl Loaded {
    /// What the loaded programs run in the kernel, read back from the kernel's own
    /// translation of them (what the verifier made of the code, with every call resolved).
    pub fn footprint(&self) -> Footprint {
        let progs = [
            &self.skel.progs.dcg_call,
            &self.skel.progs.dcg_entry,
            &self.skel.progs.dcg_exit,
            &self.skel.progs.dcg_inline,
            &self.skel.progs.dcg_fork,
            &self.skel.progs.dcg_switch,
        ];
        let mut fp = Footprint::default();
        for p in progs {
            // SAFETY: a program of the skeleton; negative when it was not loaded.
            let fd = unsafe { libbpf_sys::bpf_program__fd(p.as_libbpf_object().as_ptr()) };
            if fd < 0 {
                continue;
            }
            let Some((calls, jited)) = translated_calls(fd) else {
                fp.unreadable = true;
                continue;
            };
            fp.calls.extend(calls);
            fp.interpreted |= !jited;
        }
        fp.calls.sort_unstable();
        fp.calls.dedup();
        let maps = [
            &self.skel.maps.events,
            &self.skel.maps.batches,
            &self.skel.maps.active,
            &self.skel.maps.plans,
            &self.skel.maps.planned,
            &self.skel.maps.procs,
            &self.skel.maps.lost,
            &self.skel.maps.config,
            &self.skel.maps.kaddrs,
        ];
        for m in maps {
            if let Some(ops) = map_ops(m.map_type()) {
                if !fp.map_ops.contains(&ops) {
                    fp.map_ops.push(ops);
                }
            }
        }
        fp
    }
}

/// What the loaded programs run in the kernel besides their own instructions.
#[derive(Debug, Default, Clone)]
pub struct Footprint {
    /// The kernel functions their code calls (helpers, kfuncs, and the map operations
    /// the verifier turned helper calls into), as offsets from the kernel's
    /// `__bpf_call_base`, where a translated call points.
    pub calls: Vec<i32>,
    /// Some program runs in the kernel's interpreter (not JIT-compiled).
    pub interpreted: bool,
    /// The kernel's operation tables (`struct bpf_map_ops` symbols) of the maps the
    /// programs use: a helper left generic (the interpreter) calls through them.
    pub map_ops: Vec<&'static str>,
    /// Some program's translation could not be read (no `CAP_SYS_ADMIN`, or
    /// `kptr_restrict` hides the addresses).
    pub unreadable: bool,
}

impl Footprint {
    /// The called functions' addresses, given `__bpf_call_base`'s.
    pub fn call_addrs(&self, call_base: u64) -> Vec<u64> {
        self.calls
            .iter()
            .map(|&off| call_base.wrapping_add_signed(i64::from(off)))
            .collect()
    }
}

/// The call instructions of a loaded program as the kernel translated it: the callees'
/// offsets from `__bpf_call_base` (helpers and kfuncs; not calls of the program's own
/// subprograms) and whether the program is JIT-compiled. `None` when the kernel does not
/// show the translation or hides the addresses in it.
fn translated_calls(fd: i32) -> Option<(Vec<i32>, bool)> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: info is a plain struct of len bytes the kernel fills.
    if unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) } != 0 {
        return None;
    }
    let jited = info.jited_prog_len > 0;
    let n = info.xlated_prog_len as usize / 8;
    if n == 0 {
        return None;
    }
    let mut insns = vec![0u64; n];
    let mut info = libbpf_sys::bpf_prog_info {
        xlated_prog_len: (n * 8) as u32,
        xlated_prog_insns: insns.as_mut_ptr() as u64,
        ..Default::default()
    };
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: as above; the kernel writes at most xlated_prog_len bytes into insns.
    if unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) } != 0 {
        return None;
    }
    let calls = calls_in(&insns)?;
    Some((calls, jited))
}

/// `BPF_JMP | BPF_CALL`.
const OP_CALL: u8 = 0x85;
/// `src_reg` of a call to another function of the program itself.
const PSEUDO_CALL: u8 = 1;

/// The callee offsets of the call instructions in `insns` (each one `struct bpf_insn`
/// as a little-endian word: code, registers, offset, immediate); `None` when the kernel
/// zeroed them (addresses hidden from this reader).
fn calls_in(insns: &[u64]) -> Option<Vec<i32>> {
    let mut calls = Vec::new();
    let mut hidden = false;
    for &w in insns {
        let code = w as u8;
        let src = (w >> 12) as u8 & 0xf;
        if code != OP_CALL || src == PSEUDO_CALL {
            continue;
        }
        let imm = (w >> 32) as u32 as i32;
        if imm == 0 {
            hidden = true;
        } else {
            calls.push(imm);
        }
    }
    (!hidden || !calls.is_empty()).then_some(calls)
}

/// The kernel's operation table of a map type (`kernel/bpf/`, as `bpf_types.h` pairs
/// them), for the map types the programs use.
fn map_ops(t: libbpf_rs::MapType) -> Option<&'static str> {
    use libbpf_rs::MapType as M;
    Some(match t {
        M::Hash => "htab_map_ops",
        M::Array => "array_map_ops",
        M::PercpuArray => "percpu_array_map_ops",
        M::RingBuf => "ringbuf_map_ops",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `struct bpf_insn` as the kernel dumps it, read as a little-endian word.
    fn insn(code: u8, src: u8, imm: i32) -> u64 {
        u64::from(code) | u64::from(src & 0xf) << 12 | u64::from(imm as u32) << 32
    }

    #[test]
    fn calls_of_helpers_and_kfuncs_not_subprograms() {
        let prog = [
            insn(0xb7, 0, 1),         // r0 = 1
            insn(OP_CALL, 0, -4096),  // a helper, below __bpf_call_base
            insn(OP_CALL, 2, 81_920), // a kfunc
            insn(OP_CALL, PSEUDO_CALL, 7),
            insn(0x95, 0, 0), // exit
        ];
        assert_eq!(calls_in(&prog), Some(vec![-4096, 81_920]));
        let fp = Footprint {
            calls: vec![-4096, 81_920],
            ..Footprint::default()
        };
        assert_eq!(
            fp.call_addrs(0xffff_ffff_8100_0000),
            [0xffff_ffff_80ff_f000, 0xffff_ffff_8101_4000]
        );
    }

    #[test]
    fn hidden_addresses_are_no_answer() {
        // Without the right to see kernel addresses the kernel zeroes every call's target.
        assert_eq!(calls_in(&[insn(OP_CALL, 0, 0), insn(0x95, 0, 0)]), None);
        assert_eq!(calls_in(&[insn(0x95, 0, 0)]), Some(vec![]));
    }
}
