// SPDX-License-Identifier: GPL-2.0
/* capture.bpf.c: the per-CPU batch of records, its way into the ring, and the
 * count of the runs the kernel skipped. Included by capture.bpf.c only. */
#ifndef DCG_CAPTURE_BATCH_H
#define DCG_CAPTURE_BATCH_H

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
 * more now, unless one of its reads failed (`faulted`). A read that faults runs the
 * kernel's fault path and the exception table's fixup inside the program (about ten
 * traced functions for a kernel address on 7.2), each a run the kernel skips: the
 * program's calls, not the task's. An interrupt's skipped calls during such a run go
 * uncounted with them. */
static __always_inline void check_skipped(void *ctx, struct batch *b, bool entry, __u32 tid,
					  __u64 before, bool faulted)
{
	__u64 now;
	struct loss_rec *r;

	if (faulted)
		return;
	now = skipped_here(entry);
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

#endif
