// SPDX-License-Identifier: GPL-2.0
/* capture.bpf.c: the kernel structures it reads, only the fields it reads.
 * Included by capture.bpf.c only. */
#ifndef DCG_CAPTURE_KERNEL_H
#define DCG_CAPTURE_KERNEL_H

/* x86-64 struct pt_regs, the kprobe context (arch/x86/include/asm/ptrace.h). */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

/* Only the fields read here; CO-RE finds them in the running kernel's BTF. */
struct task_struct {
	int pid;
	int tgid;
	void *bpf_ctx;
} __attribute__((preserve_access_index));

/* The path from a running kprobe_multi program to its recursion-miss counter:
 * current->bpf_ctx is the link's run context, whose link holds the program, whose
 * per-CPU stats count the runs the kernel skipped. Only the fields read. */
struct dcg_u64_stats {
	__u64 v;
};
struct bpf_prog_stats {
	struct dcg_u64_stats misses;
} __attribute__((preserve_access_index));
struct bpf_prog {
	struct bpf_prog_stats *stats;
} __attribute__((preserve_access_index));
struct bpf_link {
	struct bpf_prog *prog;
} __attribute__((preserve_access_index));
struct bpf_kprobe_multi_link {
	struct bpf_link link;
} __attribute__((preserve_access_index));
struct bpf_kprobe_multi_run_ctx {
	struct bpf_kprobe_multi_link *link;
} __attribute__((preserve_access_index));

#endif
