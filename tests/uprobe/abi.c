/* Argument and return values of every ABI class, each checked against the program
 * itself: every traced function prints, on stdout, an oracle line in dcg's own syntax
 *   = NAME(arg=value, ...)      at entry
 *   = NAME ret=value            before it returns
 * and the uprobe tests assert that each value dcg prints equals the oracle's (a value dcg
 * says it cannot read, `?…`, is counted apart and never compared). */
#include <complex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

enum color { RED, GREEN, BLUE = 5 };
struct sd { double d; };               /* one SSE eightbyte: xmm0 */
struct ld { long l; double d; };       /* INTEGER + SSE: rdi and xmm0 */
struct two { int a; int b; };          /* one INTEGER eightbyte */
struct wide { long lo; long hi; };     /* two INTEGER eightbytes */
struct big { long a, b, c; };          /* MEMORY */
struct __attribute__((packed)) pk { char c; int i; };
struct empty { };

static int static_var = 7;
volatile int sink;

/* The oracle's renderings, in dcg's syntax. */
static void words(const char *label, const void *p, size_t n)
{
	uint64_t w[4] = { 0 };
	memcpy(w, p, n);
	if (n <= 8) {
		printf("(%s)0x%llx", label, (unsigned long long)w[0]);
		return;
	}
	printf("(%s){", label);
	for (size_t i = 0; i < (n + 7) / 8; i++)
		printf("%s0x%llx", i ? ", " : "", (unsigned long long)w[i]);
	printf("}");
}
#define RET_INT(name, v) printf("= %s ret=%d\n", name, (int)(v))

NOINLINE int add_ints(int a, int b)
{
	printf("= add_ints(a=%d, b=%d)\n", a, b);
	RET_INT("add_ints", a + b);
	return a + b;
}

NOINLINE unsigned long ulong_id(unsigned long u, short s, unsigned char b, bool f)
{
	printf("= ulong_id(u=%lu, s=%d, b=%u, f=%s)\n", u, s, b, f ? "true" : "false");
	printf("= ulong_id ret=%lu\n", u + 1);
	return u + 1;
}

NOINLINE char next_char(char c)
{
	printf("= next_char(c='%c')\n", c);
	printf("= next_char ret='%c'\n", c + 1);
	return (char)(c + 1);
}

NOINLINE const char *skip_word(const char *s)
{
	const char *r = strchr(s, ' ') ? strchr(s, ' ') + 1 : s;
	printf("= skip_word(s=\"%s\")\n", s);
	printf("= skip_word ret=\"%s\"\n", r);
	return r;
}

NOINLINE enum color pick(enum color c)
{
	enum color r = c == RED ? BLUE : GREEN;
	printf("= pick(c=%s)\n", c == RED ? "RED" : c == GREEN ? "GREEN" : "BLUE");
	printf("= pick ret=%s\n", r == BLUE ? "BLUE" : "GREEN");
	return r;
}

NOINLINE int minus(int a, int b)
{
	printf("= minus(a=%d, b=%d)\n", a, b);
	RET_INT("minus", a - b);
	return a - b;
}

NOINLINE long double ld_ret(int a, int b)
{
	printf("= ld_ret(a=%d, b=%d)\n", a, b);
	printf("= ld_ret ret=%Lg\n", (long double)a / b);
	return (long double)a / b;
}

NOINLINE double dsum(double x, float y)
{
	printf("= dsum(x=%g, y=%g)\n", x, (double)y);
	printf("= dsum ret=%g\n", x + y);
	return x + y;
}

NOINLINE float fhalf(float f, int k)
{
	printf("= fhalf(f=%g, k=%d)\n", (double)f, k);
	printf("= fhalf ret=%g\n", (double)(f / 2));
	return f / 2;
}

NOINLINE int ld_arg(long double x, int k)
{
	printf("= ld_arg(x=%Lg, k=%d)\n", x, k);
	RET_INT("ld_arg", (int)x + k);
	return (int)x + k;
}

NOINLINE double sd_get(struct sd s, int k)
{
	printf("= sd_get(s=");
	words("struct sd", &s, sizeof s);
	printf(", k=%d)\n", k);
	printf("= sd_get ret=%g\n", s.d * k);
	return s.d * k;
}

NOINLINE long ld_get(struct ld s, int k)
{
	printf("= ld_get(s=");
	words("struct ld", &s, sizeof s);
	printf(", k=%d)\n", k);
	printf("= ld_get ret=%ld\n", s.l + k);
	return s.l + k;
}

NOINLINE struct two two_swap(struct two t)
{
	struct two r = { t.b, t.a };
	printf("= two_swap(t=");
	words("struct two", &t, sizeof t);
	printf(")\n= two_swap ret=");
	words("struct two", &r, sizeof r);
	printf("\n");
	return r;
}

NOINLINE long wide_sum(struct wide w)
{
	printf("= wide_sum(w=");
	words("struct wide", &w, sizeof w);
	printf(")\n= wide_sum ret=%ld\n", w.lo + w.hi);
	return w.lo + w.hi;
}

NOINLINE long big_sum(struct big b, int k)
{
	printf("= big_sum(b=");
	words("struct big", &b, sizeof b);
	printf(", k=%d)\n= big_sum ret=%ld\n", k, b.a + b.b + b.c + k);
	return b.a + b.b + b.c + k;
}

NOINLINE int packed_get(struct pk p, int index)
{
	printf("= packed_get(p=");
	words("struct pk", &p, sizeof p);
	printf(", index=%d)\n", index);
	RET_INT("packed_get", p.i + index);
	return p.i + index;
}

NOINLINE int empty_get(struct empty e, int index)
{
	(void)e;
	printf("= empty_get(e=(struct empty){}, index=%d)\n", index);
	RET_INT("empty_get", index + 1);
	return index + 1;
}

NOINLINE int var_sum(int n, ...)
{
	va_list ap;
	int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	printf("= var_sum(n=%d, ...)\n", n);
	RET_INT("var_sum", s);
	return s;
}

/* Complex and quad floats: shown by their bytes (their labels as each compiler's DWARF
 * names the types). */
#ifdef __clang__
#define COMPLEX_DOUBLE "complex"
#define QUAD "__float128"
#else
#define COMPLEX_DOUBLE "complex double"
#define QUAD "_Float128"
#endif

NOINLINE double cx_re(double complex z, int k)
{
	printf("= cx_re(z=");
	words(COMPLEX_DOUBLE, &z, sizeof z);
	printf(", k=%d)\n= cx_re ret=%g\n", k, creal(z) * k);
	return creal(z) * k;
}

NOINLINE __float128 quad_id(__float128 x, int k)
{
	printf("= quad_id(x=");
	words(QUAD, &x, sizeof x);
	printf(", k=%d)\n= quad_id ret=?\n", k);
	return x * k;
}

struct cz { double complex z; };       /* two SSE eightbytes: returned in xmm0:xmm1 */

NOINLINE struct cz make_cz(double a)
{
	struct cz r = { a + a * I };
	printf("= make_cz(a=%g)\n= make_cz ret=", a);
	words("struct cz", &r, sizeof r);
	printf("\n");
	return r;
}

NOINLINE const int *where(const int *p, FILE *f)
{
	printf("= where(p=&static_var, f=&_IO_2_1_stdout_)\n");
	printf("= where ret=&static_var\n");
	sink += *p + (f != NULL);
	return p;
}

int main(void)
{
	struct sd sd = { 1.5 };
	struct ld ld = { 5, 2.25 };
	struct two two = { 1, 2 };
	struct wide wide = { 3, 4 };
	struct big big = { 10, 20, 30 };
	struct pk pk = { 'x', 33 };
	struct empty e;
	setvbuf(stdout, NULL, _IOLBF, 0);
	add_ints(3, 4);
	ulong_id(4000000000ul, -3, 200, true);
	next_char('a');
	skip_word("hello world");
	pick(RED);
	pick(GREEN);
	minus(1, 2);
	minus(1, 3);
	ld_ret(3, 4);
	dsum(1.5, 2.25f);
	fhalf(5.0f, 9);
	ld_arg(2.5L, 4);
	sd_get(sd, 2);
	ld_get(ld, 6);
	two_swap(two);
	wide_sum(wide);
	big_sum(big, 1);
	packed_get(pk, 55);
	empty_get(e, 44);
	var_sum(3, 10, 20, 30);
	cx_re(1.5 + 2.25 * I, 2);
	quad_id(1, 3);
	make_cz(0.5);
	where(&static_var, stdout);
	return 0;
}
