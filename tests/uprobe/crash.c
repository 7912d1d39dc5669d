/* Crashes with SIGSEGV inside traced calls: the trace shows the calls that never
 * returned, and dcg removes its probes. */
#include <stddef.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int ok(int x) { sink++; return x + 1; }
NOINLINE int deref(int *p) { sink++; return *p; }
NOINLINE int process(int *p)
{
	int r = ok(1);
	return r + deref(p);
}

int main(void)
{
	int v = 5;
	process(&v);
	setvbuf(stdout, NULL, _IONBF, 0);
	printf("about to crash\n");
	process(NULL);
	printf("not reached\n");
	return 0;
}
