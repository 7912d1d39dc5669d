/* The user-space engines' benchmark: a hot loop calling
 * `double f(long, const char *, double)`. The program times its own loop and prints
 * `N calls T us X us/call` on stderr. Usage: hot [COUNT] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

volatile double sink;

NOINLINE double f(long n, const char *tag, double scale)
{
	double r = (double)(n & 0xff) * scale + tag[0];
	sink += r;
	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		f(i, "hot", 0.5);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
	fprintf(stderr, "%ld calls %.0f us %.3f us/call\n", n, us, n ? us / n : 0.0);
	return 0;
}
