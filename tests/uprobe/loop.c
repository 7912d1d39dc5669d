/* Calls `tick` in a loop: `dcg trace -p` attaches to it; the cost benchmark runs it with
 * a fixed count. Usage: loop [COUNT [SLEEP_US]] (COUNT 0: forever). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile long sink;

NOINLINE long tick(long i, const char *tag)
{
	sink += i + tag[0];
	return sink & 0xff;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	long pause = argc > 2 ? atol(argv[2]) : 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; n == 0 || i < n; i++) {
		tick(i, "tick");
		if (pause)
			usleep(pause);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
	fprintf(stderr, "%ld calls %.0f us %.3f us/call\n", n, us, n ? us / n : 0.0);
	return 0;
}
