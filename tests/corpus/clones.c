/* Functions GCC clones at -O2: .isra (scalar replacement), .constprop, .part, .cold. */
#include <stdlib.h>
#include <string.h>

struct ctx { int used; int unused[64]; };

extern volatile int sink;
__attribute__((noinline)) void ext(int v) { sink = v; }

static __attribute__((noinline)) int isra_target(struct ctx *c, int k)
{
	return c->used * k + sink;
}

int call_isra(struct ctx *c) { return isra_target(c, 3) + isra_target(c, 5); }

static __attribute__((noinline)) int constprop_target(int mode, int v)
{
	if (mode == 7)
		return v * sink;
	return v + mode + sink;
}

int call_constprop(int v) { return constprop_target(7, v) + constprop_target(7, v + 1); }

static int part_target(int *p)
{
	if (__builtin_expect(p == 0, 1))
		return 0;
	int s = 0;
	for (int i = 0; i < 100; i++) {
		s += p[i] * sink;
		ext(s);
		if (s > 1000)
			s -= sink;
	}
	ext(s);
	ext(s + 1);
	return s;
}

int call_part1(int *p) { return part_target(p) + 1; }
int call_part2(int *p) { return part_target(p) + 2; }
int call_part3(int *p) { return part_target(p) + 3; }

int cold_split(int x)
{
	if (__builtin_expect(x < 0, 0)) {
		sink = x;
		abort();
	}
	return x * 2;
}

volatile int sink;
