/* Every value kind dcg renders, called in a fixed order: the uprobe tests assert the
 * decoded trace of this program exactly. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

enum color { RED, GREEN, BLUE = 5 };
struct pair { int a; int b; };
struct wide { long lo; long hi; };

static int global_value = 42;
volatile int sink;

NOINLINE void do_nothing(void) { sink++; }
NOINLINE bool is_even(int n) { sink++; return n % 2 == 0; }
NOINLINE uint8_t next_byte(uint8_t b) { sink++; return (uint8_t)(b + 1); }
NOINLINE int check_arg(int x) { sink++; return x < 0 ? -EINVAL : x; }
NOINLINE unsigned int twice(unsigned int u) { sink++; return u * 2; }
NOINLINE enum color pick(enum color c) { sink++; return c == RED ? BLUE : GREEN; }
NOINLINE void *lookup(int kind)
{
	sink++;
	if (kind == 0)
		return NULL;
	if (kind == 1)
		return (void *)(intptr_t)-ENOMEM;
	return &global_value;
}
NOINLINE const char *greet(const char *name, size_t len) { sink++; return len ? name : NULL; }
NOINLINE struct pair swap(struct pair p) { struct pair r = { p.b, p.a }; sink++; return r; }
NOINLINE long sum_wide(struct wide w) { sink++; return w.lo + w.hi; }
NOINLINE long many(long a, long b, long c, long d, long e, long f, long g, long h)
{
	sink++;
	return a + b + c + d + e + f + g + h;
}
NOINLINE int inner(int x) { sink++; return check_arg(x - 10); }
NOINLINE int outer(int x)
{
	int r = inner(x);
	if (is_even(r))
		do_nothing();
	return r;
}
NOINLINE int fact(int n) { sink++; return n <= 1 ? 1 : n * fact(n - 1); }

int main(void)
{
	struct pair p = { 1, 2 };
	struct wide w = { 3, 4 };
	do_nothing();
	is_even(3);
	is_even(4);
	next_byte('A');
	next_byte(255);
	check_arg(-5);
	check_arg(7);
	twice(4000000000u);
	pick(RED);
	pick(GREEN);
	lookup(0);
	lookup(1);
	lookup(2);
	greet("world", 5);
	greet(NULL, 0);
	greet("two\nlines \"quoted\"", 9);
	swap(p);
	sum_wide(w);
	many(1, 2, 3, 4, 5, 6, 7, 8);
	outer(3);
	outer(12);
	fact(3);
	printf("done %d\n", sink);
	return 0;
}
