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

#define REC_ENTRY 1
#define REC_EXIT 2
/* A record's first word: its kind (low byte), the context (second byte; entry and
 * return records) and its length in bytes (upper half), by which a batch is split. */
#define REC_LEN_SHIFT 16
#define CTX_TASK 0
#define CTX_SOFTIRQ 1
#define CTX_IRQ 2
#define CTX_NMI 3
#define CTX_SHIFT 8
#define REC_STRING 3
#define REC_STACK 4
#define REC_COMM 5
#define REC_INLINE 6
#define REC_LOSS 7
#define REC_CALLERS 8
#define REC_FIELDS 9
#define REC_DEREF 10
#define REC_OUT 11
#define STR_MAX 256
/* Words read above the return address for parameters passed on the stack. */
#define STACK_WORDS 8
/* Words read from the stack pointer up at an inlined copy's first instruction. */
#define INLINE_STACK 16
/* Return addresses of a root call's kernel stack (`--stack`): the record stays under
 * REC_MAX. */
#define CALLERS_MAX 48

/* Plan of a function: bits 0-5 say which arguments are C strings. */
#define PLAN_ROOT (1U << 8)
/* Some parameters are on the stack: a stack record follows the entry. */
#define PLAN_STACK (1U << 9)
/* Members are read behind some parameters (`--fields`): a fields record follows. */
#define PLAN_FIELDS (1U << 10)
/* Structs are read behind some pointer parameters (`--deref`): deref records follow. */
#define PLAN_DEREF (1U << 11)
/* An output parameter is read at the return (`--deref`, `--fields`; a session link
 * only): bits 12-14 its argument register + 1, bits 16-19 the bytes it points to. */
#define PLAN_OUT_SHIFT 12
#define PLAN_OUT_SIZE_SHIFT 16
/* Addresses below this are user space (x86-64, 4- and 5-level paging alike). */
#define USER_TOP 0x0100000000000000ULL

/* Kept in sync with dcg-bpf's `CallRec`, `StackRec`, `CommRec` and `StrRec`
 * (src/records.rs). A return record
 * is the first EXIT_SIZE bytes of a call_rec (no arguments). */
struct call_rec {
	__u32 kind;
	__u32 tid;
	__u64 ts;
	__u64 ip;
	__u64 a;	/* entry: the return address (call site); exit: rax */
	__u64 b;	/* exit: rdx */
	__u32 cpu;
	__u32 tgid;
	__u64 args[6];
};
#define EXIT_SIZE __builtin_offsetof(struct call_rec, args)

/* The words at the stack pointer + 8 (the first stack-passed argument) on. */
struct stack_rec {
	__u32 kind;
	__u32 tid;
	__u64 words[STACK_WORDS];
};

/* A task's name, when it starts being recorded (its /proc entry may be gone by the time
 * the records are decoded). */
struct comm_rec {
	__u32 kind;
	__u32 tid;
	char comm[16];
};

/* An inlined copy's first instruction ran (a kprobe there, its cookie naming the copy):
 * the general registers by DWARF number (rax rdx rcx rbx rsi rdi rbp rsp r8..r15) and the
 * stack words from the stack pointer up, where its parameters are. */
struct inline_rec {
	__u32 kind;
	__u32 tid;
	__u64 ts;
	__u64 cookie;
	__u32 cpu;
	__u32 pad;
	__u64 regs[16];
	__u64 stack[INLINE_STACK];
};

/* The kernel skipped the programs `n` times on this CPU while this run recorded a call
 * of `tid` (at function `ip`): what ran then (an interrupt) is missing from its tree. */
struct loss_rec {
	__u32 kind;
	__u32 tid;
	__u64 ts;
	__u64 ip;
	__u64 n;
	__u32 cpu;
	__u32 pad;
};

/* The kernel stack at a root's entry, when a tree begins (`--stack`): bpf_get_stack's
 * return addresses, innermost first (the root's own address, then its callers'), `len`
 * the bytes it filled or its error. Precedes the root's entry record. */
struct callers_rec {
	__u32 kind;
	__u32 tid;
	__s32 len;
	__u32 pad;
	__u64 ip;	/* the root's address (bpf_get_func_ip) */
	__u64 ips[CALLERS_MAX];
};

/* The members `--fields` reads at a function's entry (its `fields` entry): value i and,
 * bit i of `ok`, whether every read on its way succeeded (a NULL pointer's did not).
 * Follows the entry record. */
#define FIELDS_MAX 8
struct fields_rec {
	__u32 kind;
	__u32 tid;
	__u32 ok;
	__u32 n;
	__u64 v[FIELDS_MAX];
};

/* `--deref`: the bytes of one of a function's reads (its `derefs` entry's item `item`),
 * `len` of them read at `addr` (or the read's error). Follows the entry record. */
#define DEREF_ITEMS 8
#define DEREF_BYTES 480
struct deref_rec {
	__u32 kind;
	__u32 tid;
	__u32 item;
	__s32 len;
	__u64 addr;
	__u8 data[DEREF_BYTES];
};

/* An output parameter at a return (the pointer the entry kept in the session's cookie)
 * and the `len` bytes it points to then, or the read's error. Precedes the return
 * record. */
struct out_rec {
	__u32 kind;
	__u32 tid;
	__u64 ptr;
	__u64 value;
	__s32 len;
	__u32 pad;
};

struct str_rec {
	__u32 kind;
	__u32 tid;
	__u32 arg;
	__s32 len;
	char s[STR_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);	/* resized by dcg before loading */
} events SEC(".maps");

/* This CPU's records not yet in the ring. Only one of the programs runs on a CPU at a
 * time (the kernel skips a kprobe program hit while another runs there, and the
 * context-switch program runs with interrupts off), but for NMIs: `flushing` keeps an
 * NMI's run from writing while the context-switch program copies the batch out. The
 * slack after BATCH_BYTES lets the verifier see a masked offset plus a record's size
 * inside the value.
 *
 * `leaving` (tid + 1) is the task the CPU is switching away from, set at the
 * `sched_switch` tracepoint: from there until the switch itself that task still runs
 * here (the tracepoint iterator's return, the switch's own calls) and could next run on
 * another CPU, so each of its runs puts the batch into the ring at once. The next
 * `sched_switch` on this CPU names another task: a task never finds its own tid here
 * once it runs again, wherever that is (the switch to it set another). */
#define BATCH_BYTES 8192
#define REC_MAX 512
struct batch {
	__u32 len;	/* bytes of records in data */
	__u32 n;	/* records in data */
	__u32 flushing;
	__u32 leaving;
	__u8 data[BATCH_BYTES + REC_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} batches SEC(".maps");

/* tid -> how many roots the task is inside (0: not recorded). An array, sized by dcg to
 * the kernel's pid_max before loading: its lookup is inlined by the verifier, where a
 * hash map's would be a call on every hit. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u32);
} active SEC(".maps");

/* Function entry address (as bpf_get_func_ip gives it) -> plan, for the functions with
 * one (roots, C strings, stack parameters). Not the link's cookies: the kernel looks a
 * cookie up by the function's start when its endbr64 is live but by the address after
 * it when IBT sealed it, so dcg enters both addresses here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);	/* resized by dcg before loading */
	__type(key, __u64);
	__type(value, __u32);
} plans SEC(".maps");

/* A bit per 4-byte slot of kernel text, folded onto 2^20 bits: set for each address in
 * `plans`. Most functions have no plan; this array (its lookup inlined by the verifier)
 * says so without the hash lookup, which every call would pay. Slot of address a: bit
 * (a >> 2) mod 2^20, in word (a >> 7) mod 2^15. */
#define PLAN_WORDS 32768
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PLAN_WORDS);
	__type(key, __u32);
	__type(value, __u32);
} planned SEC(".maps");

/* The traced processes (tgid) when filter_procs is set; forks of them join. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} procs SEC(".maps");

/* Trees recorded whole: a task's last root returned (`--count` is decided on it while
 * the records wait undecoded). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} trees SEC(".maps");

/* `--filter` conditions a root's call must meet for the task to be recorded, by the
 * root's entry address (both, as `plans`): up to COND_TESTS tests on argument registers,
 * all of which must hold. What they cannot say is decided on the decoded calls; these
 * only spare the records of calls no filter can keep. */
#define COND_TESTS 4
enum { COND_TRUTH, COND_EQ, COND_NE, COND_LT, COND_LE, COND_GT, COND_GE };
#define COND_SIGNED 1
#define COND_MASK 2
struct cond_test {
	__u8 reg;	/* argument register: 0 rdi .. 5 r9 */
	__u8 op;
	__u8 size;	/* bytes of the register the parameter uses: 1, 2, 4, 8 */
	__u8 flags;
	__u32 pad;
	__u64 mask;
	__s64 value;
};
struct cond {
	__u32 n;
	__u32 pad;
	struct cond_test t[COND_TESTS];
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct cond);
} conds SEC(".maps");

/* `--fields`: by a function's entry address (both, as `plans`), the members to read at
 * its entry. Each starts from argument register `reg`; with `hops` > 0 it reads the
 * pointer at that address + off[h] for each hop but the last, then `size` bytes (1-8) at
 * address + off[hops - 1]; with none it is the register itself. A read below USER_TOP
 * is a user one. */
#define FIELD_HOPS 4
struct field_fetch {
	__u8 reg;
	__u8 hops;
	__u8 size;
	__u8 pad;
	__s32 off[FIELD_HOPS];
};
struct field_fetches {
	__u32 n;
	__u32 pad;
	struct field_fetch f[FIELDS_MAX];
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct field_fetches);
} fields SEC(".maps");

/* `--deref`: by a function's entry address (both, as `plans`), the reads of the structs
 * behind its pointer parameters, in order. Item i starts from argument register `reg`,
 * replaces it by the pointer stored at it + off[h] for each of its `hops` (a NULL or error
 * pointer, or a read that faults, ends the item: nothing read), then copies `len` bytes
 * (at most DEREF_BYTES) at it + `add`. Each item is read on its own: no state is carried
 * from one to the next, which keeps the verifier's walk of the loop short. */
#define DEREF_HOPS 3
struct deref_item {
	__u8 reg;
	__u8 hops;
	__u16 pad;
	__s32 off[DEREF_HOPS];
	__s32 add;
	__u32 len;
};
struct deref_items {
	__u32 n;
	__u32 pad;
	struct deref_item d[DEREF_ITEMS];
};
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);	/* resized by dcg before loading */
	__type(key, __u64);
	__type(value, struct deref_items);
} derefs SEC(".maps");

/* `active` of a task inside a root call its condition rejected: nothing is recorded until
 * it returns; without a session link, the roots nested in it (low bits) are counted so
 * that its return is told from theirs. */
#define REJECTED 0x80000000u

/* Calls of a root a condition rejected at entry (nothing recorded for them). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} rejected SEC(".maps");

/* Records the ring buffer had no room for. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* The kernel address of the entry (or session) program's per-CPU stats, which count
 * the entries it skipped: stored by that program on its first recorded run. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Per CPU: the address of that counter's copy for the CPU, once known. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counter_at SEC(".maps");

/* The address of the kernel's __per_cpu_offset array (0: unknown), from dcg's read of
 * /proc/kallsyms: a typeless __ksym extern would have libbpf read all of kallsyms once
 * more on every load, seconds under emulation. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} kaddrs SEC(".maps");

/* Which tasks a root starts recording: those of `procs` (when filter_procs), of the
 * cgroup v2 with this id (when not 0), with this comm (when filter_comm). Checked only
 * when a root is entered by a task not recorded yet. A map, not global data: libbpf
 * probes global data support with a socket filter, which kernels without CONFIG_NET
 * cannot load. The layout is dcg_bpf::Tasks::settings'. */
struct settings {
	__u32 filter_procs;
	__u32 filter_comm;
	__u64 cgroup;
	char comm[16];
	__u32 stacks;	/* each tree begins with its root's kernel stack */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct settings);
} config SEC(".maps");

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

static __always_inline __u32 plan_of(void *ctx)
{
	__u64 ip = bpf_get_func_ip(ctx);
	__u32 w = (ip >> 7) & (PLAN_WORDS - 1);
	__u32 *bits = bpf_map_lookup_elem(&planned, &w);
	__u32 *v;

	if (!bits || !(*bits & (1U << ((ip >> 2) & 31))))
		return 0;
	v = bpf_map_lookup_elem(&plans, &ip);
	return v ? *v : 0;
}

static __always_inline void count_lost(__u32 n)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&lost, &k);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline struct batch *this_batch(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&batches, &k);
}

/* The batch's records into the ring buffer (counted lost if it has no room). */
static __always_inline void flush(struct batch *b)
{
	__u32 len = b->len;

	if (len == 0)
		return;
	if (len <= BATCH_BYTES && bpf_ringbuf_output(&events, b->data, len, BPF_RB_NO_WAKEUP))
		count_lost(b->n);
	b->len = 0;
	b->n = 0;
}

/* The end of a run that recorded for `tid`: if the CPU is switching away from that task,
 * its records into the ring now (see `struct batch`). */
static __always_inline void ran(struct batch *b, __u32 tid)
{
	if (b->leaving == tid + 1 && !*(volatile __u32 *)&b->flushing)
		flush(b);
}

/* Room for a record of `size` bytes (a multiple of 8, at most REC_MAX) in the batch,
 * flushed first if it is full; NULL (the record counted lost) while the context-switch
 * program flushes it. The record's first word is set: `kind` and its length. */
static __always_inline void *reserve(struct batch *b, __u32 size, __u32 kind)
{
	__u32 off;
	__u32 *w;

	if (*(volatile __u32 *)&b->flushing) {
		count_lost(1);
		return NULL;
	}
	off = b->len;
	if (off > BATCH_BYTES - size) {
		flush(b);
		off = 0;
	}
	off &= BATCH_BYTES - 1;
	b->len = off + size;
	b->n++;
	w = (void *)(b->data + off);
	*w = kind | size << REC_LEN_SHIFT;
	return w;
}

/* This program's per-CPU stats, from its run context (0 where the kernel's structures
 * are not as expected). */
static __always_inline __u64 own_stats(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct bpf_kprobe_multi_run_ctx *rc;
	struct bpf_kprobe_multi_link *l;

	if (!bpf_core_field_exists(t->bpf_ctx) ||
	    !bpf_core_type_exists(struct bpf_kprobe_multi_run_ctx))
		return 0;
	rc = BPF_CORE_READ(t, bpf_ctx);
	l = BPF_CORE_READ(rc, link);
	return (__u64)BPF_CORE_READ(l, link.prog, stats);
}

/* The entries the kernel skipped so far on this CPU (each one a call not recorded: a
 * skipped return alone leaves its call open, which the tree shows). `entry`: this is the
 * entry (or session) program, which stores where its counter is. One read once the
 * CPU's counter address is known. */
static __always_inline __u64 skipped_here(bool entry)
{
	__u32 k = 0, cpu;
	__u64 *at = bpf_map_lookup_elem(&counter_at, &k);
	__u64 *p, base = 0, v = 0;

	if (!at)
		return 0;
	if (!*at) {
		__u64 *offsets = bpf_map_lookup_elem(&kaddrs, &k);

		p = bpf_map_lookup_elem(&stats, &k);
		cpu = bpf_get_smp_processor_id();
		if (!p || !offsets || !*offsets || cpu >= 8192)
			return 0;
		if (!*p && entry)
			*p = own_stats();
		if (!*p)
			return 0;
		if (bpf_probe_read_kernel(&base, sizeof(base), (const void *)(*offsets + cpu * 8)))
			return 0;
		*at = *p + base + bpf_core_field_offset(struct bpf_prog_stats, misses);
	}
	bpf_probe_read_kernel(&v, sizeof(v), (const void *)*at);
	return v;
}

/* A run that began with `before` skipped runs on this CPU ends: a record if there are
 * more now. */
static __always_inline void check_skipped(void *ctx, struct batch *b, bool entry, __u32 tid,
					  __u64 before)
{
	__u64 now = skipped_here(entry);
	struct loss_rec *r;

	if (now <= before)
		return;
	r = reserve(b, sizeof(*r), REC_LOSS);
	if (!r)
		return;
	r->tid = tid;
	r->ts = bpf_ktime_get_ns();
	r->ip = bpf_get_func_ip(ctx);
	r->n = now - before;
	r->cpu = bpf_get_smp_processor_id();
	r->pad = 0;
}

static __always_inline void emit_string(struct batch *b, __u32 tid, __u32 arg, __u64 p)
{
	struct str_rec *s = reserve(b, sizeof(*s), REC_STRING);

	if (!s)
		return;
	s->tid = tid;
	s->arg = arg;
	if (p < USER_TOP)
		s->len = bpf_probe_read_user_str(s->s, STR_MAX, (void *)p);
	else
		s->len = bpf_probe_read_kernel_str(s->s, STR_MAX, (void *)p);
}

/* `size` (1-8) bytes at `addr`, kernel or user, into `*v` (zero-extended); 0 or an error. */
static __always_inline long read_at(__u64 *v, __u32 size, __u64 addr)
{
	*v = 0;
	if (size > 8)
		size = 8;
	if (addr < USER_TOP)
		return bpf_probe_read_user(v, size, (void *)addr);
	return bpf_probe_read_kernel(v, size, (void *)addr);
}

/* The output parameter of the call returning at `ctx` (its plan's), through the pointer
 * its entry kept in the session's cookie. */
static __always_inline void emit_out(struct batch *b, __u32 tid, void *ctx, __u32 plan)
{
	__u64 *c = cookie(ctx);
	__u32 size = (plan >> PLAN_OUT_SIZE_SHIFT) & 15;
	struct out_rec *r = reserve(b, sizeof(*r), REC_OUT);

	if (!r)
		return;
	r->tid = tid;
	r->ptr = c ? *c : 0;
	r->value = 0;
	r->len = 0;
	r->pad = 0;
	if (r->ptr && size) {
		if (size > 8)
			size = 8;
		r->len = read_at(&r->value, size, r->ptr);
		if (!r->len)
			r->len = size;
	}
}

/* A return of a recorded call: its record; the task's root nesting when a root returns,
 * and the batch into the ring when the last one does (the tree is whole). */
static __always_inline void on_exit(struct pt_regs *ctx, bool entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u32 *depth = bpf_map_lookup_elem(&active, &tid);
	struct batch *b;
	struct call_rec *r;
	__u64 before;
	__u32 plan;

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
	plan = plan_of(ctx);
	/* `entry`: a session, whose cookie kept the output parameter's pointer. */
	if (entry && ((plan >> PLAN_OUT_SHIFT) & 7))
		emit_out(b, tid, ctx, plan);
	r = reserve(b, EXIT_SIZE, REC_EXIT | context() << CTX_SHIFT);
	if (r) {
		r->tid = tid;
		r->tgid = id >> 32;
		r->cpu = bpf_get_smp_processor_id();
		r->ts = bpf_ktime_get_ns();
		r->ip = bpf_get_func_ip(ctx);
		r->a = ctx->ax;
		r->b = ctx->dx;
	}
	check_skipped(ctx, b, entry, tid, before);
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

/* The argument registers, read at their fixed context offsets: choosing among loads by
 * a map value lets the compiler turn them into one load at a computed context offset,
 * which the verifier refuses. */
struct args6 {
	__u64 r[6];
};

static __always_inline struct args6 read_args(struct pt_regs *ctx)
{
	struct args6 a;
	__u64 a0 = ctx->di, a1 = ctx->si, a2 = ctx->dx, a3 = ctx->cx, a4 = ctx->r8, a5 = ctx->r9;

	/* Keep the six loads as they are (none sunk into the choice below). */
	barrier_var(a0);
	barrier_var(a1);
	barrier_var(a2);
	barrier_var(a3);
	barrier_var(a4);
	barrier_var(a5);
	a.r[0] = a0;
	a.r[1] = a1;
	a.r[2] = a2;
	a.r[3] = a3;
	a.r[4] = a4;
	a.r[5] = a5;
	return a;
}

static __always_inline __u64 arg_reg(const struct args6 *a, __u8 i)
{
	__u64 v = a->r[5];

	if (i == 0)
		v = a->r[0];
	else if (i == 1)
		v = a->r[1];
	else if (i == 2)
		v = a->r[2];
	else if (i == 3)
		v = a->r[3];
	else if (i == 4)
		v = a->r[4];
	return v;
}

static __always_inline bool test_holds(const struct args6 *a, const struct cond_test *t)
{
	__u64 v = arg_reg(a, t->reg);
	__u32 shift = t->size >= 8 ? 0 : 64 - 8 * (__u32)t->size;

	/* The parameter's bytes, sign-extended when signed. */
	if (shift) {
		v <<= shift;
		v = (t->flags & COND_SIGNED) ? (__u64)((__s64)v >> shift) : v >> shift;
	}
	if (t->flags & COND_MASK)
		v &= t->mask;
	if (t->op == COND_TRUTH)
		return v != 0;
	if (t->flags & COND_SIGNED) {
		__s64 s = (__s64)v;

		switch (t->op) {
		case COND_EQ: return s == t->value;
		case COND_NE: return s != t->value;
		case COND_LT: return s < t->value;
		case COND_LE: return s <= t->value;
		case COND_GT: return s > t->value;
		default: return s >= t->value;
		}
	}
	switch (t->op) {
	case COND_EQ: return v == (__u64)t->value;
	case COND_NE: return v != (__u64)t->value;
	case COND_LT: return v < (__u64)t->value;
	case COND_LE: return v <= (__u64)t->value;
	case COND_GT: return v > (__u64)t->value;
	default: return v >= (__u64)t->value;
	}
}

/* The fields record of the function at `ctx` (`--fields`). */
static __always_inline void emit_fields(struct batch *b, __u32 tid, struct pt_regs *ctx)
{
	__u64 ip = bpf_get_func_ip(ctx);
	struct field_fetches *f = bpf_map_lookup_elem(&fields, &ip);
	struct fields_rec *r;
	struct args6 a;

	if (!f)
		return;
	r = reserve(b, sizeof(*r), REC_FIELDS);
	if (!r)
		return;
	r->tid = tid;
	r->ok = 0;
	r->n = f->n;
	a = read_args(ctx);
	for (int i = 0; i < FIELDS_MAX; i++) {
		const struct field_fetch *x = &f->f[i];
		__u64 v;
		bool good = true;

		r->v[i] = 0;
		if (i >= f->n)
			continue;
		v = arg_reg(&a, x->reg);
		for (int h = 0; h + 1 < FIELD_HOPS; h++) {
			if (h + 1 >= x->hops)
				break;
			if (!v || read_at(&v, 8, v + x->off[h])) {
				good = false;
				break;
			}
		}
		if (good && x->hops) {
			__u64 w = 0;

			good = v && !read_at(&w, x->size, v + x->off[(x->hops - 1) & (FIELD_HOPS - 1)]);
			v = w;
		}
		r->v[i] = good ? v : 0;
		if (good)
			r->ok |= 1U << i;
	}
}

/* Whether `p` points somewhere: not NULL, not an error value (-4095..-1). */
static __always_inline bool points(__u64 p)
{
	return p && p < (__u64)-4095;
}

/* Item `i` (`x`) of a function's reads from its register's value `v`: its deref record,
 * or none where a pointer on its way is NULL or an error, or a read faults. A function of
 * its own, verified once rather than in each turn of the items' loop (the branches of
 * the pointer walk and of the batch multiply there); 0, or -1 when the batch took no
 * record. */
__noinline int emit_deref(struct batch *b, __u32 tid, __u32 i, const struct deref_item *x,
			  __u64 v)
{
	struct deref_rec *r;
	__u32 len;

	if (!b || !x)
		return -1;
	for (int h = 0; h < DEREF_HOPS; h++) {
		if (h >= x->hops)
			break;
		if (!points(v) || read_at(&v, 8, v + x->off[h]))
			return 0;
	}
	if (!points(v))
		return 0;
	v += x->add;
	len = x->len;
	if (len > DEREF_BYTES)
		len = DEREF_BYTES;
	r = reserve(b, (sizeof(*r) - DEREF_BYTES + len + 7) & ~7U, REC_DEREF);
	if (!r)
		return -1;
	r->tid = tid;
	r->item = i;
	r->addr = v;
	if (v < USER_TOP)
		r->len = bpf_probe_read_user(r->data, len, (void *)v);
	else
		r->len = bpf_probe_read_kernel(r->data, len, (void *)v);
	if (!r->len)
		r->len = len;
	return 0;
}

/* The deref records of the function at `ctx` (`--deref`). */
static __always_inline void emit_derefs(struct batch *b, __u32 tid, struct pt_regs *ctx)
{
	__u64 ip = bpf_get_func_ip(ctx);
	struct deref_items *f = bpf_map_lookup_elem(&derefs, &ip);
	struct args6 a;

	if (!f)
		return;
	a = read_args(ctx);
	for (int i = 0; i < DEREF_ITEMS; i++) {
		if (i >= f->n)
			break;
		if (emit_deref(b, tid, i, &f->d[i], arg_reg(&a, f->d[i].reg)))
			return;
	}
}

/* Whether the root call at `ctx` meets its condition (a root without one does). */
static __always_inline bool cond_holds(struct pt_regs *ctx)
{
	__u64 ip = bpf_get_func_ip(ctx);
	struct cond *c = bpf_map_lookup_elem(&conds, &ip);
	struct args6 a;

	if (!c)
		return true;
	a = read_args(ctx);
#pragma unroll
	for (int i = 0; i < COND_TESTS; i++) {
		if (i >= c->n)
			break;
		if (!test_holds(&a, &c->t[i])) {
			__u32 k = 0;
			__u64 *n = bpf_map_lookup_elem(&rejected, &k);

			if (n)
				__sync_fetch_and_add(n, 1);
			return false;
		}
	}
	return true;
}

/* An entry: 1 when the task is not recorded (no return wanted), else its records and 0. */
/* `session`: the kprobe.session link, where an entry returning 1 gets no return run. */
static __always_inline int on_entry(struct pt_regs *ctx, bool session)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	__u32 *depth = bpf_map_lookup_elem(&active, &tid);
	struct batch *b;
	__u32 plan;
	struct call_rec *r;
	__u64 before;

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
		plan = plan_of(ctx);
		if (!(plan & PLAN_ROOT))
			return 1;
		if (filter_procs() && !bpf_map_lookup_elem(&procs, &tgid))
			return 1;
		if (!task_wanted())
			return 1;
		if (!cond_holds(ctx)) {
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
				k->ip = bpf_get_func_ip(ctx);
				k->len = bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
			}
		}
	} else {
		b = this_batch();
		if (!b)
			return 0;
		plan = plan_of(ctx);
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
	r->ip = bpf_get_func_ip(ctx);
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
		if (plan & 1)
			emit_string(b, tid, 0, ctx->di);
		if (plan & 2)
			emit_string(b, tid, 1, ctx->si);
		if (plan & 4)
			emit_string(b, tid, 2, ctx->dx);
		if (plan & 8)
			emit_string(b, tid, 3, ctx->cx);
		if (plan & 16)
			emit_string(b, tid, 4, ctx->r8);
		if (plan & 32)
			emit_string(b, tid, 5, ctx->r9);
	}
	if (plan & PLAN_FIELDS)
		emit_fields(b, tid, ctx);
	if (plan & PLAN_DEREF)
		emit_derefs(b, tid, ctx);
	check_skipped(ctx, b, true, tid, before);
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
