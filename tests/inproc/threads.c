/* 200 threads over the program's life, at most 8 at a time (more than the recorder has
 * rings): each calls `work` 10 times. Prints the sum of what they computed. */
#include <pthread.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
#define THREADS 200
#define AT_ONCE 8

NOINLINE long work(long i) { return i * 3 + 1; }

static void *run(void *arg)
{
	long i = (long)arg, s = 0;
	for (int k = 0; k < 10; k++)
		s += work(i + k);
	return (void *)s;
}

int main(void)
{
	long total = 0;
	for (long b = 0; b < THREADS; b += AT_ONCE) {
		pthread_t t[AT_ONCE];
		for (long i = 0; i < AT_ONCE; i++)
			pthread_create(&t[i], NULL, run, (void *)(b + i));
		for (long i = 0; i < AT_ONCE; i++) {
			void *r;
			pthread_join(t[i], &r);
			total += (long)r;
		}
	}
	printf("total %ld\n", total);
	return 0;
}
