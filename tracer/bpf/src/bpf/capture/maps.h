// SPDX-License-Identifier: GPL-2.0
/* capture.bpf.c: its maps, what dcg tells it before it runs and what it keeps
 * between runs. Included by capture.bpf.c only. */
#ifndef DCG_CAPTURE_MAPS_H
#define DCG_CAPTURE_MAPS_H

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
 * one (roots, C strings, stack parameters, members or structs to read): the plan bits in
 * the low word, and in the high word the function's slot in `fields` and `derefs` (one
 * lookup finds all a call reads). Not the link's cookies: the kernel looks a cookie up by
 * the function's start when its endbr64 is live but by the address after it when IBT
 * sealed it, so dcg enters both addresses here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);	/* resized by dcg before loading */
	__type(key, __u64);
	__type(value, __u64);
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

/* The same bits for the roots alone. Most hits are of tasks outside any root, for which
 * only a root's entry matters: with structs or members to read (`--deref`, `--fields`)
 * thousands of functions have a plan, and this spares each such hit the hash lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PLAN_WORDS);
	__type(key, __u32);
	__type(value, __u32);
} rooted SEC(".maps");

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

/* `--fields`: by a function's slot (its plan's high word), the members to read at
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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* resized by dcg before loading */
	__type(key, __u32);
	__type(value, struct field_fetches);
} fields SEC(".maps");

/* `--deref`: by a function's slot (its plan's high word), the reads of the structs
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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);	/* resized by dcg before loading */
	__type(key, __u32);
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

#endif
