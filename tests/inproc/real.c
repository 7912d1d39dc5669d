/* What a program does that a tracer must not change: threads, recursion, setjmp and
 * longjmp, a signal handler calling traced code, fork (the child calls traced code) and
 * exec (of itself), every traced function's value printed by the program itself on
 * stdout so a traced run can be compared with an untraced one.
 * Usage: real            the whole run
 *        real exec N     the exec'd image: prints fib(N) */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 4
#define CALLS 500

volatile long sink;
static jmp_buf jump;

NOINLINE long work(long n, long salt)
{
	long s = salt;
	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	sink += s;
	return s;
}

NOINLINE long fib(int n)
{
	long r = n < 2 ? n : fib(n - 1) + fib(n - 2);
	sink += r;
	return r;
}

NOINLINE void dive(int depth)
{
	sink += depth;
	if (depth == 0)
		longjmp(jump, 7);
	dive(depth - 1);
	sink--;
}

NOINLINE int jumper(int depth)
{
	int r = setjmp(jump);
	if (r == 0) {
		dive(depth);
		return -1;
	}
	return r;
}

NOINLINE int after_jump(int x)
{
	sink += x;
	return x * 3;
}

NOINLINE int in_handler(int sig)
{
	sink += sig;
	return sig + 100;
}

static volatile int handled;
static void on_signal(int sig) { handled += in_handler(sig); }

static void *thread_main(void *arg)
{
	long id = (long)arg, total = 0;
	for (int i = 0; i < CALLS; i++)
		total += work(10 + i % 5, id);
	return (void *)total;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "exec") == 0) {
		printf("exec fib=%ld\n", fib(atoi(argv[2])));
		/* Whether a recorder was preloaded into this image (stderr: not compared). */
		FILE *maps = fopen("/proc/self/maps", "r");
		char line[512];
		int found = 0;
		while (maps && fgets(line, sizeof line, maps))
			found |= strstr(line, "libdcg_recorder") != NULL;
		if (maps)
			fclose(maps);
		fprintf(stderr, "exec recorder=%s\n", found ? "yes" : "no");
		return 4;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_t t[THREADS];
	long totals = 0;
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		totals += (long)r;
	}
	printf("threads total=%ld\n", totals);
	printf("fib=%ld\n", fib(12));
	int j = jumper(5);
	printf("jumper=%d after=%d\n", j, after_jump(j));
	signal(SIGUSR1, on_signal);
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	printf("handled=%d\n", handled);
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		printf("child work=%ld\n", work(7, 1));
		execl("/proc/self/exe", argv[0], "exec", "10", (char *)NULL);
		_exit(1);
	}
	int st = 0;
	waitpid(p, &st, 0);
	printf("child exit=%d\n", WEXITSTATUS(st));
	return 0;
}
