/* Known call paths into one function, for `dcg trace --stack` (tests/tests/user_stack.rs).
 * Built at -O2 without frame pointers: the stacks can only be unwound from .eh_frame.
 * Every function but main and helper is noipa (neither inlined nor cloned); helper is
 * always inlined. target's top-level calls, in order:
 *   1. main -> direct -> target
 *   2. main -> via_middle -> middle -> target
 *   3. main -> recurse(3) -> recurse(2) -> recurse(1) -> recurse(0) -> target
 *   4. main -> tail, which jumps to target (a tail call): target's caller is main
 *   5. main -> with_inline -> helper (inlined) -> target
 *   6. main -> deep(40) -> ... -> deep(0) -> target: 40 frames of over 512 bytes, more
 *      stack than dcg copies (16 KiB): the stack is cut short
 *   7. a thread: start_thread -> thread_main -> target
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))

NOIPA int target(int x)
{
	return x * 3 + 1;
}

NOIPA int direct(int x)
{
	int r = target(x);
	return r + 2;
}

NOIPA int middle(int x)
{
	int r = target(x + 1);
	return r ^ 5;
}

NOIPA int via_middle(int x)
{
	int r = middle(x * 2);
	return r - 1;
}

/* XOR with a value from before the call: no tail recursion to turn into a loop; and
 * no tail call in the base case either. */
NOIPA int recurse(int n)
{
	int a = n * 7;
	if (n == 0)
		return target(100) + 1;
	int r = recurse(n - 1);
	return (r ^ a) + 1;
}

NOIPA int tail(int x)
{
	return target(x + 7);
}

static inline __attribute__((always_inline)) int helper(int x)
{
	int r = target(x);
	return r * 2;
}

NOIPA int with_inline(int x)
{
	int r = helper(x + 5);
	return r - 3;
}

NOIPA int deep(int n)
{
	volatile char pad[512];
	pad[n] = (char)n;
	if (n == 0)
		return target(pad[0]) + 1;
	return deep(n - 1) + pad[n];
}

NOIPA void *thread_main(void *arg)
{
	int r = target((int)(long)arg);
	return (void *)(long)(r + 1);
}

/* `hold`: wait until stdin closes first (a tracer attaches meanwhile); `linger`: stay
 * a second after the calls (a tracer reading the process's maps late finds them). */
int main(int argc, char **argv)
{
	int hold = argc > 1 && strcmp(argv[1], "hold") == 0;
	int linger = hold || (argc > 1 && strcmp(argv[1], "linger") == 0);
	if (hold)
		while (getchar() != EOF)
			;
	int sum = direct(1);
	sum += via_middle(2);
	sum += recurse(3);
	sum += tail(4);
	sum += with_inline(5);
	sum += deep(40);
	pthread_t t;
	void *ret;
	if (pthread_create(&t, NULL, thread_main, (void *)6L) != 0)
		return 1;
	pthread_join(t, &ret);
	sum += (int)(long)ret;
	printf("sum %d\n", sum);
	if (linger)
		sleep(1);
	return 0;
}
