/* Ends inside traced calls: `ends exit` calls exit(3) two traced frames down, `ends
 * abort` calls abort() there, `ends signal` counts `tick` calls until SIGINT or SIGTERM
 * and then prints how many returned. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile long ticks;

NOINLINE long tick(long i)
{
	long r = i & 0xff;
	ticks++;
	return r;
}

NOINLINE void finish(int how)
{
	if (how == 0)
		exit(3);
	abort();
}

NOINLINE int work(int how)
{
	tick(how);
	finish(how);
	return 1;
}

static volatile sig_atomic_t stopping;

/* The loop ends after the call in flight has returned: a count taken in the handler
 * itself would include a `tick` interrupted between its `ticks++` and its return, whose
 * return no tracer can have seen. */
static void stop(int sig)
{
	(void)sig;
	stopping = 1;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "exit";
	if (strcmp(what, "signal") == 0) {
		signal(SIGINT, stop);
		signal(SIGTERM, stop);
		for (long i = 0;; i++) {
			tick(i);
			if (stopping) {
				char b[64];
				int n = snprintf(b, sizeof b, "ticks=%ld\n", ticks);

				write(1, b, n);
				_exit(0);
			}
			/* Paced (at most ~160,000 ticks a second): the test is about what a signal
			 * flushes, not whether dcg's reader keeps up with a busy loop on a loaded
			 * machine (its ring filled once when the whole suite ran beside it). */
			if ((i & 15) == 0)
				usleep(100);
		}
	}
	return work(strcmp(what, "exit") == 0 ? 0 : 1);
}
