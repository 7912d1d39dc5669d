/* Non-local jumps with libc's own setjmp and longjmp traced: two jmp_bufs, longjmps from
 * one and two levels down, each back into main. Prints what each setjmp returned. */
#include <setjmp.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf outer, inner;

NOINLINE int leave(int how)
{
	if (how == 1)
		longjmp(outer, 1);
	longjmp(inner, how);
	return 0;
}

NOINLINE int deeper(int how)
{
	return leave(how) + 1;
}

static volatile int jumps;

int main(void)
{
	int r = setjmp(outer);
	getpid();
	printf("outer %d\n", r);
	if (r == 0) {
		r = setjmp(inner);
		printf("inner %d\n", r);
	}
	/* leave(1) back to outer (1), deeper(5) to inner (5), deeper(0) to inner (1). */
	if (++jumps > 3)
		return 0;
	if (r == 0)
		leave(1);
	else if (r == 1 && jumps == 2)
		deeper(5);
	else if (r == 5)
		deeper(0);
	return 0;
}
