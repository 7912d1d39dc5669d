/* Structs behind a pointer, for `dcg trace --deref[=N]` (tests/tests/fields.rs): before
 * each call of apply the program prints the argument as dcg should show it N levels
 * deep (`deref2 &top{port=8080, name="dcg", …}`), the oracle: ints, a string member,
 * an enum, a nested struct with a char array, a union, a bool, bit-fields signed and
 * unsigned, a linked list (next) ending in NULL, a function pointer; global structs
 * (named by their symbols), one on the stack and one on the heap (by their addresses),
 * and NULL. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

enum mode { MODE_SLOW, MODE_FAST = 7 };

struct inner {
	int a;
	char tag[8];
};

union num {
	int i;
	float f;
};

struct conf {
	int port;
	const char *name;
	enum mode m;
	struct inner in;
	union num u;
	bool on;
	unsigned ready : 1;
	int level : 4;
	struct conf *next;
	int (*cb)(int);
};

NOINLINE int handler(int x)
{
	return x + 1;
}

struct conf last = { 7070, "last", MODE_SLOW, { 33, "end" }, { .i = 3 }, false, 0, 2, NULL, NULL };
struct conf mid = { 9090, "mid", MODE_FAST, { 22, "middle" }, { .i = 65 }, true, 1, -1, &last, handler };
struct conf top = { 8080, "dcg", MODE_FAST, { 7, "hello" }, { .i = 65 }, true, 1, -3, &mid, handler };

volatile int sink;

static const char *symbol(const struct conf *c)
{
	return c == &top ? "top" : c == &mid ? "mid" : c == &last ? "last" : NULL;
}

/* c as dcg shows it at pointer level `level` of `depth`. */
static void show(const struct conf *c, int level, int depth)
{
	const char *s = symbol(c);
	if (!c) {
		printf("NULL");
		return;
	}
	if (level > depth) {
		if (s)
			printf("&%s", s);
		else
			printf("%p", (void *)c);
		return;
	}
	if (s)
		printf("&%s{", s);
	else
		printf("(struct conf *)%p{", (void *)c);
	printf("port=%d, name=", c->port);
	if (level < depth)
		printf("\"%s\"", c->name);
	else
		printf("%p", (void *)c->name);
	printf(", m=%s, in={a=%d, tag=\"%s\"}, u={i=%d /* union */}, on=%s, ready=%u, level=%d, next=",
	       c->m == MODE_FAST ? "MODE_FAST" : "MODE_SLOW", c->in.a, c->in.tag, c->u.i,
	       c->on ? "true" : "false", c->ready, c->level);
	show(c->next, level + 1, depth);
	printf(", cb=%s}", c->cb == handler ? "handler" : c->cb ? "?" : "NULL");
}

NOINLINE int apply(struct conf *c, int k)
{
	if (!c)
		return k;
	sink += c->port + k;
	return c->port + k;
}

static void call(struct conf *c, int k)
{
	for (int depth = 1; depth <= 3; depth++) {
		printf("deref%d ", depth);
		show(c, 1, depth);
		printf("\n");
	}
	fflush(stdout);
	apply(c, k);
}

int main(void)
{
	struct conf local = top;
	local.next = &last;
	call(&top, 1);
	call(&mid, 2);
	call(NULL, 3);
	call(&local, 4);
	struct conf *heap = malloc(sizeof(*heap));
	if (!heap)
		return 1;
	*heap = mid;
	call(heap, 5);
	free(heap);
	return 0;
}
