/* The load of bench/joint-cost.sh (issue 42): a user function making one failing system
 * call, called N times (argv[1], default 3000) and timed on CLOCK_MONOTONIC, the guest's
 * instruction clock under -icount. Prints `per_call_ns=`. Dynamically linked, like the
 * programs the in-process recorder traces. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((noinline)) int check(const char *path)
{
	return access(path, R_OK);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3000;
	struct timespec a, b;
	struct rusage r0, r1;
	char path[64];
	long i, ns;

	/* On the stack: a BPF session reads it without faulting pages in. */
	snprintf(path, sizeof(path), "/dcg/%s", "nonexistent");
	check(path);
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		check(path);
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &r1);
	ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
	/* The loop's context switches: a session's own wakeups preempt it (one vCPU). */
	printf("calls=%ld per_call_ns=%ld switches=%ld/%ld\n", n, n > 0 ? ns / n : 0,
	       r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw);
	return 0;
}
