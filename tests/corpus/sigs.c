#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef unsigned int gfp_t;

enum color { RED = 0, GREEN = 1, BLUE = 2 };
enum sign { NEG = -2, ZERO = 0, POS = 5 };

struct small { int a; int b; };
struct big { long x[4]; };

typedef int (*callback_t)(int, void *);

#define NOINLINE __attribute__((noinline, used))

NOINLINE void ret_void(int x) { asm volatile("" :: "r"(x)); }
NOINLINE bool ret_bool(int x) { return x > 3; }
NOINLINE u8 ret_u8(u8 v) { return v + 1; }
NOINLINE u16 ret_u16(u16 v) { return v * 2; }
NOINLINE int ret_int(int a, int b) { return a - b; }
NOINLINE long ret_long(long a) { return -a; }
NOINLINE unsigned ret_unsigned(unsigned a) { return a * 3; }
NOINLINE enum color ret_enum(enum sign s) { return s < 0 ? RED : BLUE; }
NOINLINE const char *ret_ptr(const char *s, size_t n) { return s + n; }
NOINLINE int call_cb(callback_t cb, void *arg) { return cb(1, arg); }
NOINLINE int by_value(struct small s, struct big b) { return s.a + s.b + (int)b.x[0]; }
NOINLINE struct big ret_big(long v) { struct big b = {{v, v, v, v}}; return b; }
NOINLINE int seven(int a, int b, int c, int d, int e, int f, int g) { return a + b + c + d + e + f + g; }
NOINLINE double mixed(int a, double d, float f) { return a + d + f; }
NOINLINE gfp_t with_typedef(gfp_t flags) { return flags | 1; }

NOINLINE int sum(int n, ...)
{
	va_list ap;
	int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

static inline int inline_only_add(int a, int b) { return a + b; }

int uses_inline(int x) { return inline_only_add(x, 2) * inline_only_add(x, 3); }

int helper_a(int x);
int helper_b(int x);

int main(int argc, char **argv)
{
	(void)argv;
	return helper_a(argc) + helper_b(argc) + uses_inline(argc);
}
