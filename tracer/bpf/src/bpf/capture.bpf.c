// SPDX-License-Identifier: GPL-2.0
/*
 * dcg's kernel call capture: one kprobe.session program attached to many functions by
 * address. A task starts being recorded when it enters a root function (plan bit
 * PLAN_ROOT) and stops when its last root returns; every function it enters in between
 * gives an entry record (function, call site, the six argument registers, the strings
 * and stack words its plan asks for) and a return record (rax, rdx). Everything else
 * returns at once and asks for no return call.
 *
 * Records are gathered in a per-CPU batch and reach the ring buffer a batch at a time
 * (one ring commit for dozens of records): when the batch is full, when a root returns
 * and when the CPU switches tasks, so that each task's records reach the ring in the
 * order they were made. dcg reads what is left in the batches after detaching.
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "capture/kernel.h"
#include "capture/records.h"
#include "capture/maps.h"

static __always_inline struct settings *settings(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&config, &k);
}

static __always_inline bool want_stacks(void)
{
	struct settings *s = settings();

	return s && s->stacks;
}

static __always_inline bool filter_procs(void)
{
	struct settings *s = settings();

	return s && s->filter_procs;
}

/* The kernel's cgroup type, by name only: a kernel built without cgroups (the test
 * kernel) has none, and no bpf_get_current_cgroup_id helper either, which the verifier
 * would refuse; libbpf resolves the test below to a constant and the call goes with the
 * dead code there. */
struct cgroup___dcg {
	int unused;
};

/* Whether the current task is one a root may start recording (procs aside). */
static __always_inline bool task_wanted(void)
{
	struct settings *s = settings();
	char comm[16];

	if (!s)
		return true;
	if (bpf_core_type_exists(struct cgroup___dcg) && s->cgroup &&
	    bpf_get_current_cgroup_id() != s->cgroup)
		return false;
	if (!s->filter_comm)
		return true;
	if (bpf_get_current_comm(comm, sizeof(comm)))
		return false;
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (comm[i] != s->comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* bpf_session_is_return takes no argument on 6.12 and the context on newer kernels. */
extern bool bpf_session_is_return___ctx(void *ctx) __ksym __weak;
extern bool bpf_session_is_return___void(void) __ksym __weak;

static __always_inline bool is_return(void *ctx)
{
	if (bpf_ksym_exists(bpf_session_is_return___ctx))
		return bpf_session_is_return___ctx(ctx);
	return bpf_session_is_return___void();
}

/* bpf_session_cookie too: the call's word, kept from its entry to its return. */
extern __u64 *bpf_session_cookie___ctx(void *ctx) __ksym __weak;
extern __u64 *bpf_session_cookie___void(void) __ksym __weak;

static __always_inline __u64 *cookie(void *ctx)
{
	if (bpf_ksym_exists(bpf_session_cookie___ctx))
		return bpf_session_cookie___ctx(ctx);
	return bpf_session_cookie___void();
}

/* The preempt count: its own per-CPU variable since 6.15, a field of pcpu_hot before
 * (x86). Whichever this kernel has; the other is a weak ksym left unresolved. */
extern const int __preempt_count __ksym __weak;
struct pcpu_hot {
	int preempt_count;
} __attribute__((preserve_access_index));
extern const struct pcpu_hot pcpu_hot __ksym __weak;

/* What the CPU is running: NMI, hard interrupt, softirq or a task (preempt count bits
 * 20-23, 16-19 and 8, as include/linux/preempt.h lays them out). */
static __always_inline __u32 context(void)
{
	int count = 0;

	if (bpf_ksym_exists(&__preempt_count)) {
		const int *p = bpf_this_cpu_ptr(&__preempt_count);

		count = *p;
	} else if (bpf_ksym_exists(&pcpu_hot)) {
		const struct pcpu_hot *h = bpf_this_cpu_ptr(&pcpu_hot);

		count = h->preempt_count;
	}
	if (count & 0x00f00000)
		return CTX_NMI;
	if (count & 0x000f0000)
		return CTX_IRQ;
	if (count & 0x00000100)
		return CTX_SOFTIRQ;
	return CTX_TASK;
}

/* Whether `ip`'s bit is set in `bits_map` (`planned`, `rooted`). */
static __always_inline bool bit_at(void *bits_map, __u64 ip)
{
	__u32 w = (ip >> 7) & (PLAN_WORDS - 1);
	__u32 *bits = bpf_map_lookup_elem(bits_map, &w);

	return bits && (*bits & (1U << ((ip >> 2) & 31)));
}

/* The plan of the function entered at `ip` (0: none): bits, and its slot above them. */
static __always_inline __u64 plan_at(__u64 ip)
{
	__u64 *v;

	if (!bit_at(&planned, ip))
		return 0;
	v = bpf_map_lookup_elem(&plans, &ip);
	return v ? *v : 0;
}

static __always_inline __u64 plan_of(void *ctx)
{
	return plan_at(bpf_get_func_ip(ctx));
}

#include "capture/batch.h"
#include "capture/reads.h"

/* A return of a recorded call: its record; the task's root nesting when a root returns,
 * and the batch into the ring when the last one does (the tree is whole). */
static __always_inline void on_exit(struct pt_regs *ctx, bool entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u32 *depth = bpf_map_lookup_elem(&active, &tid);
	struct batch *b;
	struct call_rec *r;
	__u64 before, ip;
	__u64 plan;
	bool faulted = false;

	if (!depth || !*depth)
		return;
	if (*depth & REJECTED) {
		/* A session runs no other return inside a rejected root (see on_entry): the root
		 * returns. Without one, the root or one nested in it. */
		if (entry)
			*depth = 0;
		else if ((plan_of(ctx) & PLAN_ROOT) &&
			 __sync_fetch_and_add(depth, -1) == (REJECTED | 1))
			*depth = 0;
		return;
	}
	b = this_batch();
	if (!b)
		return;
	before = skipped_here(entry);
	ip = bpf_get_func_ip(ctx);
	plan = plan_at(ip);
	/* `entry`: a session, whose cookie kept the output parameter's pointer. */
	if (entry && ((plan >> PLAN_OUT_SHIFT) & 7))
		faulted = emit_out(b, tid, ctx, plan);
	r = reserve(b, EXIT_SIZE, REC_EXIT | context() << CTX_SHIFT);
	if (r) {
		r->tid = tid;
		r->tgid = id >> 32;
		r->cpu = bpf_get_smp_processor_id();
		r->ts = bpf_ktime_get_ns();
		r->ip = ip;
		r->a = ctx->ax;
		r->b = ctx->dx;
	}
	check_skipped(ctx, b, entry, tid, before, faulted);
	if ((plan & PLAN_ROOT) && __sync_fetch_and_add(depth, -1) == 1) {
		__u32 k = 0;
		__u64 *n = bpf_map_lookup_elem(&trees, &k);

		if (!*(volatile __u32 *)&b->flushing)
			flush(b);
		if (n)
			__sync_fetch_and_add(n, 1);
	} else
		ran(b, tid);
}

/* An entry: 1 when the task is not recorded (no return wanted), else its records and 0. */
/* `session`: the kprobe.session link, where an entry returning 1 gets no return run. */
static __always_inline int on_entry(struct pt_regs *ctx, bool session)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	__u32 *depth = bpf_map_lookup_elem(&active, &tid);
	struct batch *b;
	__u64 plan, ip;
	struct call_rec *r;
	__u64 before;
	bool faulted = false;

	if (!depth)
		return 1;	/* a tid beyond pid_max: not recorded */
	if (*depth & REJECTED) {
		/* Inside a rejected root call: nothing recorded. With a session link nothing
		 * here gets a return run, so the root's own is the only one that comes: no
		 * test of the function (most of a rejected call's cost is these early returns).
		 * Without, the return program runs for every function: the roots nested in it
		 * are counted, so that its return is told from theirs. */
		if (session || !(plan_of(ctx) & PLAN_ROOT))
			return 1;
		__sync_fetch_and_add(depth, 1);
		return 0;
	}
	if (!*depth) {
		/* Most hits: a task not recorded; only a root starts recording. */
		ip = bpf_get_func_ip(ctx);
		if (!bit_at(&rooted, ip))
			return 1;
		plan = plan_at(ip);
		if (!(plan & PLAN_ROOT))
			return 1;
		if (filter_procs() && !bpf_map_lookup_elem(&procs, &tgid))
			return 1;
		if (!task_wanted())
			return 1;
		if (!cond_holds(ctx, ip)) {
			/* Its return clears the state (0: the session asks for it). */
			*depth = REJECTED | 1;
			return 0;
		}
		b = this_batch();
		if (!b)
			return 1;
		__sync_fetch_and_add(depth, 1);
		{
			struct comm_rec *c = reserve(b, sizeof(*c), REC_COMM);

			if (c) {
				c->tid = tid;
				bpf_get_current_comm(c->comm, sizeof(c->comm));
			}
		}
		if (want_stacks()) {
			/* At the root's entry, before anything is attached below it on the
			 * stack: the kernel's unwinder walks the root's callers only. */
			struct callers_rec *k = reserve(b, sizeof(*k), REC_CALLERS);

			if (k) {
				k->tid = tid;
				k->pad = 0;
				k->ip = ip;
				k->len = bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
			}
		}
	} else {
		b = this_batch();
		if (!b)
			return 0;
		ip = bpf_get_func_ip(ctx);
		plan = plan_at(ip);
		if (plan & PLAN_ROOT)
			__sync_fetch_and_add(depth, 1);
	}
	if (session && ((plan >> PLAN_OUT_SHIFT) & 7)) {
		/* The output parameter's pointer, for the return (emit_out). */
		__u64 *c = cookie(ctx);
		struct args6 a = read_args(ctx);

		if (c)
			*c = arg_reg(&a, ((plan >> PLAN_OUT_SHIFT) & 7) - 1);
	}
	before = skipped_here(true);

	r = reserve(b, sizeof(*r), REC_ENTRY | context() << CTX_SHIFT);
	if (!r) {
		ran(b, tid);
		return 0;
	}
	r->tid = tid;
	r->tgid = tgid;
	r->cpu = bpf_get_smp_processor_id();
	r->ts = bpf_ktime_get_ns();
	r->ip = ip;
	r->a = 0;
	bpf_probe_read_kernel(&r->a, sizeof(r->a), (void *)ctx->sp);
	r->b = 0;
	r->args[0] = ctx->di;
	r->args[1] = ctx->si;
	r->args[2] = ctx->dx;
	r->args[3] = ctx->cx;
	r->args[4] = ctx->r8;
	r->args[5] = ctx->r9;

	if (plan & PLAN_STACK) {
		struct stack_rec *k = reserve(b, sizeof(*k), REC_STACK);

		if (k) {
			k->tid = tid;
			if (bpf_probe_read_kernel(k->words, sizeof(k->words), (void *)(ctx->sp + 8)))
				__builtin_memset(k->words, 0, sizeof(k->words));
		}
	}
	if (plan & 0x3f) {
		if ((plan & 1) && emit_string(b, tid, 0, ctx->di))
			faulted = true;
		if ((plan & 2) && emit_string(b, tid, 1, ctx->si))
			faulted = true;
		if ((plan & 4) && emit_string(b, tid, 2, ctx->dx))
			faulted = true;
		if ((plan & 8) && emit_string(b, tid, 3, ctx->cx))
			faulted = true;
		if ((plan & 16) && emit_string(b, tid, 4, ctx->r8))
			faulted = true;
		if ((plan & 32) && emit_string(b, tid, 5, ctx->r9))
			faulted = true;
	}
	if ((plan & PLAN_FIELDS) && emit_fields(b, tid, ctx, plan >> 32))
		faulted = true;
	if ((plan & PLAN_DEREF) && emit_derefs(b, tid, ctx, plan >> 32))
		faulted = true;
	check_skipped(ctx, b, true, tid, before, faulted);
	ran(b, tid);
	return 0;
}

/* One link for entries and returns (kprobe.session, 6.10+); calling the kfunc needs the
 * BPF JIT. */
SEC("kprobe.session")
int dcg_call(struct pt_regs *ctx)
{
	if (is_return(ctx)) {
		on_exit(ctx, true);
		return 0;
	}
	return on_entry(ctx, true);
}

/* Without the JIT: an entry link and a return link. */
SEC("kprobe.multi")
int dcg_entry(struct pt_regs *ctx)
{
	on_entry(ctx, false);
	return 0;
}

SEC("kretprobe.multi")
int dcg_exit(struct pt_regs *ctx)
{
	on_exit(ctx, false);
	return 0;
}

/* The first instruction of an inlined copy, in a recorded task. */
SEC("kprobe")
int dcg_inline(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 *depth = bpf_map_lookup_elem(&active, &tid);
	struct batch *b;
	struct inline_rec *r;

	if (!depth || !*depth)
		return 0;
	b = this_batch();
	if (!b)
		return 0;
	r = reserve(b, sizeof(*r), REC_INLINE);
	if (!r) {
		ran(b, tid);
		return 0;
	}
	r->tid = tid;
	r->ts = bpf_ktime_get_ns();
	r->cookie = bpf_get_attach_cookie(ctx);
	r->cpu = bpf_get_smp_processor_id();
	r->pad = 0;
	r->regs[0] = ctx->ax;
	r->regs[1] = ctx->dx;
	r->regs[2] = ctx->cx;
	r->regs[3] = ctx->bx;
	r->regs[4] = ctx->si;
	r->regs[5] = ctx->di;
	r->regs[6] = ctx->bp;
	r->regs[7] = ctx->sp;
	r->regs[8] = ctx->r8;
	r->regs[9] = ctx->r9;
	r->regs[10] = ctx->r10;
	r->regs[11] = ctx->r11;
	r->regs[12] = ctx->r12;
	r->regs[13] = ctx->r13;
	r->regs[14] = ctx->r14;
	r->regs[15] = ctx->r15;
	if (bpf_probe_read_kernel(r->stack, sizeof(r->stack), (void *)ctx->sp))
		__builtin_memset(r->stack, 0, sizeof(r->stack));
	ran(b, tid);
	return 0;
}

/* The CPU switches tasks: its batch goes into the ring first, so the task switched out
 * (which may next run on another CPU) has all its records there before any later one,
 * and what it still records here before the switch goes in at once (`leaving`). Runs
 * with interrupts off (__schedule). */
SEC("tp_btf/sched_switch")
int BPF_PROG(dcg_switch, bool preempt, struct task_struct *prev)
{
	struct batch *b = this_batch();

	if (!b)
		return 0;
	b->leaving = (__u32)prev->pid + 1;
	if (!b->len)
		return 0;
	*(volatile __u32 *)&b->flushing = 1;
	flush(b);
	*(volatile __u32 *)&b->flushing = 0;
	return 0;
}

/* A traced process's children are traced too. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(dcg_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (filter_procs() && bpf_map_lookup_elem(&procs, &ptgid))
		bpf_map_update_elem(&procs, &ctgid, &one, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
