/* An inline function inlined into two callers, calling a noinline helper from inside
 * its copies; each caller also calls the helper from outside the copy. The program
 * prints the arguments each copy gets, which the uprobe tests compare with dcg's inline
 * frames. Compiled with -O2 -g. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int helper(int x)
{
	sink++;
	return x * 2 + 1;
}

static inline __attribute__((always_inline)) int scale(int v, int k)
{
	int r = helper(v) * k;
	return r + v;
}

/* The copy first: the call after it is outside. */
NOINLINE int first(int a)
{
	int s = scale(a, 3);
	return helper(s) ^ a;
}

/* The call before the copy is outside it. */
NOINLINE int second(int a, int b)
{
	int t = helper(b);
	return scale(a + t, b) - 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	for (int i = 0; i < 2; i++) {
		int a = n + i;
		printf("first: scale(%d, %d)\n", a, 3);
		fflush(stdout);
		int x = first(a);
		int b = n + 10 * i + 1;
		printf("second: scale(%d, %d)\n", a + (b * 2 + 1), b);
		fflush(stdout);
		int y = second(a, b);
		printf("results %d %d\n", x, y);
		fflush(stdout);
	}
	return 0;
}
