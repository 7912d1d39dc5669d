/* The data behind pointers (tracer/deref/tests/corpus.rs): a struct of every kind of
 * member (char arrays, an enum, a bool, a nested struct, bit-fields, an anonymous union,
 * a union, a linked list with strings, a function pointer, a double, a flexible array),
 * and a main that writes the bytes of each object with its address to argv[1]:
 * records of a 16-byte name, the address and size (8 bytes each, little-endian), then the
 * bytes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum mode { MODE_SLOW, MODE_FAST = 3 };

struct inner {
	int a;
	char tag[8];
};

struct node {
	struct node *next;
	int value;
	const char *label;
};

union value {
	int i;
	double d;
	char s[12];
};

struct conf {
	int port;
	char name[16];
	enum mode m;
	_Bool on;
	struct inner in;
	unsigned ready : 1, level : 3;
	signed char sbits : 5;
	union {
		long count;
		void *ptr;
	};
	union value v;
	struct node *list;
	int (*cb)(struct conf *);
	double ratio;
	unsigned char data[];
};

int handler(struct conf *c)
{
	return c->port;
}

struct node tail = { 0, 2, "tail" };
struct node head = { &tail, 1, "head" };
struct conf table = { .port = 8080, .name = "dcg", .m = MODE_FAST, .on = 1,
		      .in = { 7, "hello" }, .ready = 1, .level = 5, .sbits = -3,
		      .count = 42, .v = { .i = 7 }, .list = &head, .cb = handler,
		      .ratio = 1.5 };

__attribute__((noinline)) int apply(struct conf *c)
{
	int sum = c->port + c->v.i + c->cb(c);
	for (struct node *n = c->list; n; n = n->next)
		sum += n->value;
	return sum;
}

static void dump(FILE *f, const char *name, const void *p, size_t n)
{
	char buf[16] = { 0 };
	uint64_t a = (uintptr_t)p, s = n;
	strncpy(buf, name, sizeof buf - 1);
	fwrite(buf, sizeof buf, 1, f);
	fwrite(&a, 8, 1, f);
	fwrite(&s, 8, 1, f);
	if (n)
		fwrite(p, n, 1, f);
}

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "wb") : NULL;
	if (!f)
		return 2;
	dump(f, "table", &table, sizeof table);
	dump(f, "head", &head, sizeof head);
	dump(f, "tail", &tail, sizeof tail);
	dump(f, "handler", (const void *)(uintptr_t)&handler, 0);
	dump(f, "head.label", head.label, strlen(head.label) + 1);
	dump(f, "tail.label", tail.label, strlen(tail.label) + 1);
	fclose(f);
	return apply(&table) == 0;
}
