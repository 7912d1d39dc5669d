/* The traced program of tests/tests/hardening.rs: calls hk_alpha, hk_beta, hk_gamma and
 * hk_delta once per iteration. Usage: spin [COUNT [SLEEP_US]]: COUNT iterations (0:
 * forever), sleeping SLEEP_US microseconds after each (default 1000). */
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile long sink;

NOINLINE long hk_alpha(long i)
{
	sink += i;
	return sink & 0xff;
}

NOINLINE int hk_beta(int i, const char *tag)
{
	sink += i * tag[0];
	return (int)(sink & 0x7f);
}

NOINLINE unsigned hk_gamma(unsigned i)
{
	sink ^= i;
	return i * 3u;
}

NOINLINE long hk_delta(long a, long b)
{
	sink -= a;
	return a - b;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	long pause = argc > 2 ? atol(argv[2]) : 1000;
	for (long i = 0; n == 0 || i < n; i++) {
		hk_alpha(i);
		hk_beta((int)i, "beta");
		hk_gamma((unsigned)i);
		hk_delta(i, 7);
		if (pause)
			usleep(pause);
	}
	return 0;
}
