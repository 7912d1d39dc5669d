/* The definition of struct shape, which decl_only.c only declares. */
#include <stdlib.h>

struct shape {
	int w, h;
	const char *name;
};

struct shape *make_shape(int w, int h)
{
	struct shape *s = malloc(sizeof *s);
	if (s) {
		s->w = w;
		s->h = h;
		s->name = "box";
	}
	return s;
}

__attribute__((noinline)) int shape_area(const struct shape *s) { return s->w * s->h; }
