/* Structs and unions whose members dwarfscan records (dwarfscan/tests/members.rs):
 * nested structs, bit-fields, a flexible array, anonymous unions and structs, a union,
 * char arrays, enum members, a self-referential linked list, a declaration only. */
#include <stddef.h>

enum mode { MODE_SLOW, MODE_FAST = 3 };

struct inner {
	int a;
	char tag[8];
};

struct node {
	struct node *next;
	int value;
};

struct opaque;

struct conf {
	int port;
	char name[16];
	enum mode m;
	struct inner in;
	unsigned ready : 1, level : 3;
	signed char sbits : 5;
	union {
		long count;
		void *ptr;
	};
	struct {
		short x, y;
	} pos;
	struct node *list;
	struct opaque *priv;
	int (*cb)(struct conf *);
	size_t n;
	unsigned char data[];
};

union value {
	int i;
	double d;
	char s[12];
};

int apply(struct conf *c, union value *v)
{
	int sum = c->port + v->i;
	for (struct node *n = c->list; n; n = n->next)
		sum += n->value;
	return sum + c->in.a + c->ready + c->level + c->sbits;
}

int main(void)
{
	struct node tail = { 0, 2 }, head = { &tail, 1 };
	struct conf c = { .port = 8080, .name = "dcg", .m = MODE_FAST, .list = &head };
	union value v = { .i = 7 };
	return apply(&c, &v) == 0;
}
