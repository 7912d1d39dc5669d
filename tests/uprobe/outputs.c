/* Output parameters for `dcg trace --deref` (tests/tests/outputs.rs): each function
 * writes through the non-const pointers it is given, and each call prints what they hold
 * when it returns (`out parse ret=1 out=8087`), the oracle the values dcg reads at the
 * return are compared with. A NULL output pointer has no value; a const pointer is an
 * input; a fifth output is past what the recorder keeps per call. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

enum mode { MODE_SLOW, MODE_FAST = 7 };

struct point {
	int x;
	int y;
	enum mode m;
};

static struct point table[3] = { { 1, 2, MODE_SLOW }, { 3, 4, MODE_FAST }, { 5, 6, MODE_SLOW } };

volatile int sink;

NOINLINE int parse(const char *s, int *out)
{
	int v = atoi(s);

	if (out)
		*out = v;
	sink += v;
	return v > 0;
}

NOINLINE int lookup(int key, struct point **found)
{
	*found = key >= 0 && key < 3 ? &table[key] : NULL;
	return *found != NULL;
}

NOINLINE void move(struct point *p, int dx, const struct point *by)
{
	p->x += dx + by->x;
	p->y += by->y;
	p->m = MODE_FAST;
}

NOINLINE int split(long v, short *lo, enum mode *m, double *half, long *twice, int *five)
{
	*lo = (short)(v & 0x7fff);
	*m = v & 1 ? MODE_FAST : MODE_SLOW;
	*half = v / 2.0;
	*twice = v * 2;
	*five = 5;
	return 0;
}

int main(int argc, char **argv)
{
	int out = -1;
	struct point *found = NULL;
	struct point p = { 10, 20, MODE_SLOW };
	short lo;
	enum mode m;
	double half;
	long twice;
	int five;
	const char *num = argc > 1 ? argv[1] : "8087";

	int r = parse(num, &out);
	printf("out parse ret=%d out=%d\n", r, out);
	r = parse("12", NULL);
	printf("out parse ret=%d\n", r);
	r = lookup(1, &found);
	printf("out lookup ret=%d found=%s\n", r, found == &table[1] ? "&table[1]" : "?");
	r = lookup(7, &found);
	printf("out lookup ret=%d found=%s\n", r, found ? "?" : "NULL");
	move(&p, 2, &table[2]);
	printf("out move p={x=%d, y=%d, m=%s}\n", p.x, p.y, p.m == MODE_FAST ? "MODE_FAST" : "MODE_SLOW");
	r = split(70001, &lo, &m, &half, &twice, &five);
	printf("out split ret=%d lo=%d m=%s half=%g twice=%ld\n", r, lo,
	       m == MODE_FAST ? "MODE_FAST" : "MODE_SLOW", half, twice);
	return 0;
}
