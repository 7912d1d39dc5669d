//! The x86-64 registers by DWARF number: the one table every part of dcg names them from —
//! display names (`rdi`), the fetch syntax of kprobe and uprobe events (`%di`), the System V
//! order of integer argument registers (fprobe's `$argN`), and each register's offset in
//! the kernel's `struct pt_regs` (what a BPF program reads).

/// One register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reg {
    /// DWARF register number (x86-64 psABI).
    pub dwarf: u8,
    /// Name as dcg prints it (`rdi`, `xmm0`).
    pub name: &'static str,
    /// Fetch syntax of kprobe and uprobe events (`%di`); `None` for vector registers.
    pub fetch: Option<&'static str>,
    /// Byte offset in the x86-64 `struct pt_regs`; `None` for vector registers.
    pub pt_regs: Option<u16>,
}

const fn gpr(dwarf: u8, name: &'static str, fetch: &'static str, pt_regs: u16) -> Reg {
    Reg {
        dwarf,
        name,
        fetch: Some(fetch),
        pt_regs: Some(pt_regs),
    }
}

const fn xmm(dwarf: u8, name: &'static str) -> Reg {
    Reg {
        dwarf,
        name,
        fetch: None,
        pt_regs: None,
    }
}

/// Every register with a DWARF number below 33, indexed by it.
pub const X86_64: [Reg; 33] = [
    gpr(0, "rax", "%ax", 80),
    gpr(1, "rdx", "%dx", 96),
    gpr(2, "rcx", "%cx", 88),
    gpr(3, "rbx", "%bx", 40),
    gpr(4, "rsi", "%si", 104),
    gpr(5, "rdi", "%di", 112),
    gpr(6, "rbp", "%bp", 32),
    gpr(7, "rsp", "%sp", 152),
    gpr(8, "r8", "%r8", 72),
    gpr(9, "r9", "%r9", 64),
    gpr(10, "r10", "%r10", 56),
    gpr(11, "r11", "%r11", 48),
    gpr(12, "r12", "%r12", 24),
    gpr(13, "r13", "%r13", 16),
    gpr(14, "r14", "%r14", 8),
    gpr(15, "r15", "%r15", 0),
    gpr(16, "rip", "%ip", 128),
    xmm(17, "xmm0"),
    xmm(18, "xmm1"),
    xmm(19, "xmm2"),
    xmm(20, "xmm3"),
    xmm(21, "xmm4"),
    xmm(22, "xmm5"),
    xmm(23, "xmm6"),
    xmm(24, "xmm7"),
    xmm(25, "xmm8"),
    xmm(26, "xmm9"),
    xmm(27, "xmm10"),
    xmm(28, "xmm11"),
    xmm(29, "xmm12"),
    xmm(30, "xmm13"),
    xmm(31, "xmm14"),
    xmm(32, "xmm15"),
];

/// DWARF register numbers of the System V AMD64 integer argument registers, in order:
/// rdi, rsi, rdx, rcx, r8, r9.
pub const SYSV_INT_ARG_REGS: [u8; 6] = [5, 4, 1, 2, 8, 9];

/// The register of a DWARF number.
pub fn reg(dwarf: u8) -> Option<&'static Reg> {
    X86_64.get(dwarf as usize)
}

/// Which integer argument (0-based) a register carries at a System V call, if any.
pub fn sysv_arg_index(dwarf: u8) -> Option<usize> {
    SYSV_INT_ARG_REGS.iter().position(|&r| r == dwarf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_dwarf_number() {
        for (i, r) in X86_64.iter().enumerate() {
            assert_eq!(r.dwarf as usize, i);
        }
        assert_eq!(reg(5).map(|r| r.name), Some("rdi"));
        assert_eq!(reg(5).and_then(|r| r.fetch), Some("%di"));
        assert_eq!(reg(17).map(|r| r.name), Some("xmm0"));
        assert_eq!(reg(33), None);
        assert_eq!(sysv_arg_index(2), Some(3));
        assert_eq!(sysv_arg_index(0), None);
    }

    #[test]
    fn pt_regs_offsets_are_the_kernel_layout() {
        // struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs
        // flags sp ss, 8 bytes each.
        let order = [15, 14, 13, 12, 6, 3, 11, 10, 9, 8, 0, 2, 1, 4, 5];
        for (slot, &d) in order.iter().enumerate() {
            assert_eq!(reg(d).and_then(|r| r.pt_regs), Some(slot as u16 * 8));
        }
        assert_eq!(reg(16).and_then(|r| r.pt_regs), Some(16 * 8));
        assert_eq!(reg(7).and_then(|r| r.pt_regs), Some(19 * 8));
    }
}
