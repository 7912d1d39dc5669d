/* Compiled with -O2: GCC splits `classify` into a hot part and `classify.cold`, and
 * clones `scale` into `scale.constprop.0` (its `factor` is always 3). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE __attribute__((cold)) void report_bad(int v)
{
	fprintf(stderr, "bad value %d\n", v);
}

NOINLINE int classify(int v)
{
	if (__builtin_expect(v < 0, 0)) {
		report_bad(v);
		sink += v * 7;
		fprintf(stderr, "classify: %d is negative\n", v);
		return -ERANGE;
	}
	return v & 1;
}

static NOINLINE int scale(int x, int factor)
{
	sink++;
	return x * factor;
}

int main(int argc, char **argv)
{
	int n = argc > 5 ? atoi(argv[1]) : 2;
	int r = classify(n);
	r += classify(-n);
	r += scale(n, 3);
	r += scale(n + 1, 3);
	printf("done %d %d\n", sink, r);
	return 0;
}
