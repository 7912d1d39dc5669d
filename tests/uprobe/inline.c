/* An inline function inlined into three callers, calling a noinline helper from inside
 * its copies; two callers also call the helper from outside the copy, the third runs its
 * copy in a loop. Then a function both inlined (in the copy of another inline function)
 * and out of line. The program prints the arguments each copy gets, which the uprobe
 * tests compare with dcg's inline frames. Compiled with -O2 -g. */
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

/* A loop: the copy runs once per iteration. */
NOINLINE int third(int n, int k)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += scale(i + n, k);
	return s;
}

/* Inlined into user (inside the copy of outer) and also out of line, called through a
 * pointer. */
int twice(int v)
{
	return helper(v) + v;
}

/* An inline function holding another one's copy. */
static inline __attribute__((always_inline)) int outer(int a)
{
	return twice(a + 1) * 3;
}

NOINLINE int user(int a)
{
	return outer(a) + 7;
}

int (*volatile twice_ptr)(int) = twice;

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
	int m = n - 1;
	for (int i = 0; i < m; i++)
		printf("third: scale(%d, %d)\n", i + m, n);
	fflush(stdout);
	printf("results %d\n", third(m, n));
	printf("user: outer(%d) twice(%d)\n", n, n + 1);
	fflush(stdout);
	int u = user(n);
	printf("twice: %d\n", n);
	fflush(stdout);
	int w = twice_ptr(n);
	printf("results %d %d\n", u, w);
	return 0;
}
