/* Structs behind a pointer for `dcg trace --filter` on member paths
 * (tests/tests/fields.rs): serve is called once for each connection of a table, and each
 * call prints the members it was given (`serve k=0 port=8080 tag=hello mode=MODE_FAST`),
 * the oracle the calls dcg keeps are compared with. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

enum mode { MODE_SLOW, MODE_FAST = 7 };

struct inner {
	short b;
	char tag[8];
};

struct conn {
	int port;
	struct inner in;
	enum mode mode;
	struct conn *next;
};

volatile int sink;

NOINLINE int serve(struct conn *c, int k)
{
	printf("serve k=%d port=%d tag=%s mode=%s\n", k, c->port, c->in.tag,
	       c->mode == MODE_FAST ? "MODE_FAST" : "MODE_SLOW");
	sink += c->port + k;
	return k;
}

int main(void)
{
	struct conn conns[] = {
		{ 8080, { 1, "hello" }, MODE_FAST, NULL },
		{ 9090, { 2, "world" }, MODE_SLOW, NULL },
		{ 8080, { 3, "help" }, MODE_SLOW, NULL },
		{ 7070, { 4, "hello" }, MODE_FAST, NULL },
		{ 8080, { 5, "" }, MODE_FAST, NULL },
	};
	for (int k = 0; k < 5; k++) {
		conns[k].next = k < 4 ? &conns[k + 1] : NULL;
		serve(&conns[k], k);
	}
	return 0;
}
