/* The user-space engines' benchmark: a hot loop calling
 * `double f(long, const char *, double)`, or with `struct` `long g(struct conf *, long)`
 * (a 48-byte struct with a string, a nested struct and a list: `--deref`'s cost). The
 * program times its own loop and prints `N calls T us X us/call` on stderr.
 * Usage: hot [COUNT [struct]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

volatile double sink;

NOINLINE double f(long n, const char *tag, double scale)
{
	double r = (double)(n & 0xff) * scale + tag[0];
	sink += r;
	return r;
}

struct conf {
	int port;
	const char *name;
	int mode;
	struct {
		int a;
		char tag[8];
	} in;
	struct conf *next;
};

struct conf tail = { 7070, "tail", 1, { 2, "end" }, NULL };
struct conf head = { 8080, "head", 3, { 1, "hot" }, &tail };

volatile long lsink;

NOINLINE long g(struct conf *c, long n)
{
	long r = c->port + c->in.a + n;
	lsink += r;
	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int structs = argc > 2 && strcmp(argv[2], "struct") == 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		if (structs)
			g(&head, i);
		else
			f(i, "hot", 0.5);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
	fprintf(stderr, "%ld calls %.0f us %.3f us/call\n", n, us, n ? us / n : 0.0);
	return 0;
}
