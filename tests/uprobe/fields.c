/* Structs behind a pointer, for `dcg trace --fields` (tests/tests/fields.rs): each call
 * of apply prints the members it was given as dcg should show them (`c->port=8080`),
 * the oracle; a member behind a NULL pointer prints `?`. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

enum mode { MODE_SLOW, MODE_FAST = 7 };

struct inner {
	int a;
	short b;
};

struct conf {
	int port;
	unsigned ready : 1;
	int level : 4;
	struct inner in;
	enum mode mode;
	struct conf *next;
	const char *name;
};

volatile int sink;

static const char *mode_name(enum mode m)
{
	return m == MODE_FAST ? "MODE_FAST" : m == MODE_SLOW ? "MODE_SLOW" : "?";
}

NOINLINE int apply(struct conf *c, int k)
{
	printf("fields c->port=%d c->ready=%u c->level=%d c->in.a=%d c->in.b=%d c->mode=%s",
	       c->port, c->ready, c->level, c->in.a, c->in.b, mode_name(c->mode));
	if (c->next) {
		printf(" c->next->port=%d", c->next->port);
		if (c->next->next)
			printf(" c->next->next->in.a=%d\n", c->next->next->in.a);
		else
			printf(" c->next->next->in.a=?\n");
	} else {
		printf(" c->next->port=? c->next->next->in.a=?\n");
	}
	sink += c->port + k;
	return c->port + k;
}

int main(void)
{
	struct conf last = { 7070, 0, 2, { 33, 4 }, MODE_SLOW, NULL, "last" };
	struct conf mid = { 9090, 1, -1, { 22, -2 }, MODE_FAST, &last, "mid" };
	struct conf top = { 8080, 1, -3, { 5, 6 }, MODE_FAST, &mid, "top" };
	apply(&top, 1);
	apply(&mid, 2);
	apply(&last, 3);
	return 0;
}
