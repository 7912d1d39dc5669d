// SPDX-License-Identifier: GPL-2.0
/* capture.bpf.c: what an entry or a return reads beyond its registers: C strings,
 * output parameters, members (`--fields`), structs (`--deref`) and a root's condition
 * (`--filter`). Included by capture.bpf.c only. */
#ifndef DCG_CAPTURE_READS_H
#define DCG_CAPTURE_READS_H

/* Whether `p` may point somewhere: not in the first page (NULL, or NULL plus a member's
 * offset) and not an error value (-4095..-1). A read through any other pointer is made;
 * one through these would fault every time, and the kernel's fault path, which is
 * traced, would run inside the program (see check_skipped). */
static __always_inline bool points(__u64 p)
{
	return p >= 4096 && p < (__u64)-4095;
}

/* Every read below returns (or adds to the run's) `faulted`: the read failed, which a
 * fault and its fixup usually caused. */

/* The C string argument `arg` points to (`p`): its record, none where `p` points
 * nowhere. */
static __always_inline bool emit_string(struct batch *b, __u32 tid, __u32 arg, __u64 p)
{
	struct str_rec *s;

	if (!points(p))
		return false;
	s = reserve(b, sizeof(*s), REC_STRING);
	if (!s)
		return false;
	s->tid = tid;
	s->arg = arg;
	if (p < USER_TOP)
		s->len = bpf_probe_read_user_str(s->s, STR_MAX, (void *)p);
	else
		s->len = bpf_probe_read_kernel_str(s->s, STR_MAX, (void *)p);
	return s->len < 0;
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
static __always_inline bool emit_out(struct batch *b, __u32 tid, void *ctx, __u64 plan)
{
	__u64 *c = cookie(ctx);
	__u32 size = (plan >> PLAN_OUT_SIZE_SHIFT) & 15;
	struct out_rec *r = reserve(b, sizeof(*r), REC_OUT);

	if (!r)
		return false;
	r->tid = tid;
	r->ptr = c ? *c : 0;
	r->value = 0;
	r->len = 0;
	r->pad = 0;
	if (points(r->ptr) && size) {
		if (size > 8)
			size = 8;
		r->len = read_at(&r->value, size, r->ptr);
		if (r->len)
			return true;
		r->len = size;
	}
	return false;
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

/* The fields record of the function at `ctx` (`--fields`), whose slot is `slot`. */
static __always_inline bool emit_fields(struct batch *b, __u32 tid, struct pt_regs *ctx,
					__u32 slot)
{
	struct field_fetches *f = bpf_map_lookup_elem(&fields, &slot);
	struct fields_rec *r;
	struct args6 a;
	bool faulted = false;

	if (!f)
		return false;
	r = reserve(b, sizeof(*r), REC_FIELDS);
	if (!r)
		return false;
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
			if (!points(v)) {
				good = false;
				break;
			}
			if (read_at(&v, 8, v + x->off[h])) {
				good = false;
				faulted = true;
				break;
			}
		}
		if (good && x->hops) {
			__u64 w = 0;

			good = points(v);
			if (good && read_at(&w, x->size, v + x->off[(x->hops - 1) & (FIELD_HOPS - 1)])) {
				good = false;
				faulted = true;
			}
			v = w;
		}
		r->v[i] = good ? v : 0;
		if (good)
			r->ok |= 1U << i;
	}
	return faulted;
}

/* Item `i` (`x`) of a function's reads from its register's value `v`: its deref record,
 * or none where a pointer on its way points nowhere, or a read faults. A function of
 * its own, verified once rather than in each turn of the items' loop (the branches of
 * the pointer walk and of the batch multiply there); 0, 1 when a read failed, or -1 when
 * the batch took no record. */
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
		if (!points(v))
			return 0;
		if (read_at(&v, 8, v + x->off[h]))
			return 1;
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
	if (r->len)
		return 1;
	r->len = len;
	return 0;
}

/* The deref records of the function at `ctx` (`--deref`), whose slot is `slot`. */
static __always_inline bool emit_derefs(struct batch *b, __u32 tid, struct pt_regs *ctx,
					__u32 slot)
{
	struct deref_items *f = bpf_map_lookup_elem(&derefs, &slot);
	struct args6 a;
	bool faulted = false;
	int rc;

	if (!f)
		return false;
	a = read_args(ctx);
	for (int i = 0; i < DEREF_ITEMS; i++) {
		if (i >= f->n)
			break;
		rc = emit_deref(b, tid, i, &f->d[i], arg_reg(&a, f->d[i].reg));
		if (rc < 0)
			break;
		if (rc)
			faulted = true;
	}
	return faulted;
}

/* Whether the root call at `ctx`, entered at `ip`, meets its condition (a root without
 * one does). */
static __always_inline bool cond_holds(struct pt_regs *ctx, __u64 ip)
{
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

#endif
