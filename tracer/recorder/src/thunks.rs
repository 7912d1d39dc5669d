//! The assembly entry points: the compiler's hooks (`mcount`, `__fentry__`), the thunk
//! patched entries call, the return thunks, and the shims in front of the unwinder.
//!
//! Each thunk saves every register a call may clobber (all general ones, `xmm0`-`xmm15`:
//! arguments and return values, `rax` the vector count of a variadic call, `r10` a static
//! chain, and whatever a caller keeps there because gcc's `-fipa-ra` saw the callee leave
//! it alone) into a [`Regs`] and the area after it on a 16-byte aligned stack, calls the
//! Rust handler, restores them and returns, so the traced code runs as if nothing
//! happened. `Regs::gpr[7]` (rsp) is the
//! stack pointer at the function's first instruction, where its return address is, and
//! `Regs::gpr[6]` (rbp) the frame pointer it had there.

/// Registers at a traced function's entry or return.
#[repr(C)]
pub struct Regs {
    /// General registers by DWARF number (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15).
    pub gpr: [u64; 16],
    /// xmm0-xmm7, low and high halves.
    pub xmm: [[u64; 2]; 8],
    /// st0 (80 bits in 16 bytes), at a return that reads it.
    pub st0: [u64; 2],
}

impl Regs {
    /// Every register zero: for records that read none.
    pub const ZERO: Regs = Regs {
        gpr: [0; 16],
        xmm: [[0; 2]; 8],
        st0: [0; 2],
    };
}

const _: () = assert!(size_of::<Regs>() == 272);

unsafe extern "C" {
    /// Entry thunk: called from a patched entry or a trampoline; its return address is
    /// the site, the word above it the traced function's return address.
    pub fn dcg_entry_thunk();
    /// Return thunk: traced functions return here.
    pub fn dcg_return_thunk();
    /// Return thunk of functions returning on the x87 stack.
    pub fn dcg_return_thunk_x87();
}

core::arch::global_asm!(
    // Save rax..r15 (less rbp, rsp) and xmm0-7 at rsp; the caller fills gpr[6], gpr[7].
    ".macro DCG_SAVE",
    "mov [rsp+0], rax",
    "mov [rsp+8], rdx",
    "mov [rsp+16], rcx",
    "mov [rsp+24], rbx",
    "mov [rsp+32], rsi",
    "mov [rsp+40], rdi",
    "mov [rsp+64], r8",
    "mov [rsp+72], r9",
    "mov [rsp+80], r10",
    "mov [rsp+88], r11",
    "mov [rsp+96], r12",
    "mov [rsp+104], r13",
    "mov [rsp+112], r14",
    "mov [rsp+120], r15",
    "movdqu [rsp+128], xmm0",
    "movdqu [rsp+144], xmm1",
    "movdqu [rsp+160], xmm2",
    "movdqu [rsp+176], xmm3",
    "movdqu [rsp+192], xmm4",
    "movdqu [rsp+208], xmm5",
    "movdqu [rsp+224], xmm6",
    "movdqu [rsp+240], xmm7",
    "movdqu [rsp+272], xmm8",
    "movdqu [rsp+288], xmm9",
    "movdqu [rsp+304], xmm10",
    "movdqu [rsp+320], xmm11",
    "movdqu [rsp+336], xmm12",
    "movdqu [rsp+352], xmm13",
    "movdqu [rsp+368], xmm14",
    "movdqu [rsp+384], xmm15",
    ".endm",
    ".macro DCG_RESTORE",
    "mov rax, [rsp+0]",
    "mov rdx, [rsp+8]",
    "mov rcx, [rsp+16]",
    "mov rsi, [rsp+32]",
    "mov rdi, [rsp+40]",
    "mov r8, [rsp+64]",
    "mov r9, [rsp+72]",
    "mov r10, [rsp+80]",
    "mov r11, [rsp+88]",
    "movdqu xmm0, [rsp+128]",
    "movdqu xmm1, [rsp+144]",
    "movdqu xmm2, [rsp+160]",
    "movdqu xmm3, [rsp+176]",
    "movdqu xmm4, [rsp+192]",
    "movdqu xmm5, [rsp+208]",
    "movdqu xmm6, [rsp+224]",
    "movdqu xmm7, [rsp+240]",
    "movdqu xmm8, [rsp+272]",
    "movdqu xmm9, [rsp+288]",
    "movdqu xmm10, [rsp+304]",
    "movdqu xmm11, [rsp+320]",
    "movdqu xmm12, [rsp+336]",
    "movdqu xmm13, [rsp+352]",
    "movdqu xmm14, [rsp+368]",
    "movdqu xmm15, [rsp+384]",
    ".endm",
    // __fentry__ (-pg -mfentry), patched NOP pads and trampolines: [rsp] is the site,
    // [rsp+8] the function's return address.
    ".globl dcg_entry_thunk",
    ".type dcg_entry_thunk,@function",
    "dcg_entry_thunk:",
    "push rbp",
    "mov rbp, rsp",
    "sub rsp, 416",
    "and rsp, -16",
    "DCG_SAVE",
    "mov rax, [rbp]",
    "mov [rsp+48], rax",
    "lea rax, [rbp+16]",
    "mov [rsp+56], rax",
    "mov rdi, rsp",
    "mov rsi, rax",
    "mov rdx, [rbp+8]",
    "call {entry}",
    "DCG_RESTORE",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".size dcg_entry_thunk, .-dcg_entry_thunk",
    // mcount (-pg): called after `push rbp; mov rbp, rsp`: [rbp] (ours) is the
    // function's frame pointer F, [F] the rbp it was entered with, F+8 its return
    // address.
    ".globl dcg_mcount_thunk",
    ".type dcg_mcount_thunk,@function",
    "dcg_mcount_thunk:",
    "push rbp",
    "mov rbp, rsp",
    "sub rsp, 416",
    "and rsp, -16",
    "DCG_SAVE",
    "mov rax, [rbp]",
    "mov rcx, [rax]",
    "mov [rsp+48], rcx",
    "lea rax, [rax+8]",
    "mov [rsp+56], rax",
    "mov rdi, rsp",
    "mov rsi, rax",
    "mov rdx, [rbp+8]",
    "call {entry}",
    "DCG_RESTORE",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".size dcg_mcount_thunk, .-dcg_mcount_thunk",
    // Return thunks: reached by the traced function's `ret`. The pushed word takes the
    // place of the return address; the handler gives the real one, which goes there.
    ".globl dcg_return_thunk",
    ".type dcg_return_thunk,@function",
    "dcg_return_thunk:",
    "push rax",
    "push rbp",
    "mov rbp, rsp",
    "sub rsp, 416",
    "and rsp, -16",
    "DCG_SAVE",
    "mov rdi, rsp",
    "lea rsi, [rbp+8]",
    "call {exit}",
    "mov [rbp+8], rax",
    "DCG_RESTORE",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".size dcg_return_thunk, .-dcg_return_thunk",
    ".globl dcg_return_thunk_x87",
    ".type dcg_return_thunk_x87,@function",
    "dcg_return_thunk_x87:",
    "push rax",
    "push rbp",
    "mov rbp, rsp",
    "sub rsp, 416",
    "and rsp, -16",
    "DCG_SAVE",
    // Copy st0 without popping it: the x87 stack is as the function left it.
    "fld st(0)",
    "fstp tbyte ptr [rsp+256]",
    "mov rdi, rsp",
    "lea rsi, [rbp+8]",
    "call {exit}",
    "mov [rbp+8], rax",
    "DCG_RESTORE",
    "mov rsp, rbp",
    "pop rbp",
    "ret",
    ".size dcg_return_thunk_x87, .-dcg_return_thunk_x87",
    // The unwinder starts: every hooked return address goes back in place first, so it
    // sees the real frames. The handler returns the real function to go on with.
    ".globl dcg_raise_shim",
    ".type dcg_raise_shim,@function",
    "dcg_raise_shim:",
    "push rdi",
    "xor edi, edi",
    "call {raise}",
    "pop rdi",
    "jmp rax",
    ".globl dcg_forced_shim",
    ".type dcg_forced_shim,@function",
    "dcg_forced_shim:",
    "push rdi",
    "push rsi",
    "push rdx",
    "mov edi, 1",
    "call {raise}",
    "pop rdx",
    "pop rsi",
    "pop rdi",
    "jmp rax",
    ".globl dcg_rethrow_shim",
    ".type dcg_rethrow_shim,@function",
    "dcg_rethrow_shim:",
    "push rdi",
    "mov edi, 2",
    "call {raise}",
    "pop rdi",
    "jmp rax",
    // A catch block starts: frames below the catching one are gone; the rest get their
    // hooks back. rsi: the catching frame's stack pointer.
    ".globl dcg_catch_shim",
    ".type dcg_catch_shim,@function",
    "dcg_catch_shim:",
    "push rdi",
    "lea rsi, [rsp+16]",
    "call {catch}",
    "pop rdi",
    "jmp rax",
    entry = sym crate::record::dcg_on_entry,
    exit = sym crate::record::dcg_on_exit,
    raise = sym crate::unwind::dcg_on_raise,
    catch = sym crate::unwind::dcg_on_catch,
);

/// The exported names the traced program's calls bind to (a cdylib exports Rust items
/// only, so each is a naked jump to its thunk or shim above).
macro_rules! export {
    ($($name:ident => $target:literal),* $(,)?) => {$(
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        /// Exported hook; see the module doc.
        pub extern "C" fn $name() {
            core::arch::naked_asm!(concat!("jmp ", $target))
        }
    )*};
}

export! {
    __fentry__ => "dcg_entry_thunk",
    mcount => "dcg_mcount_thunk",
    _mcount => "dcg_mcount_thunk",
    _Unwind_RaiseException => "dcg_raise_shim",
    _Unwind_ForcedUnwind => "dcg_forced_shim",
    _Unwind_Resume_or_Rethrow => "dcg_rethrow_shim",
    __cxa_begin_catch => "dcg_catch_shim",
}
