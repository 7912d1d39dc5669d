/* Two threads calling the same functions: one call tree per thread. */
#include <pthread.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int leaf(int x) { sink++; return x * 2; }
NOINLINE int work(int id)
{
	int r = leaf(id);
	return r + leaf(id + 10);
}
NOINLINE void *thread_main(void *arg)
{
	work((int)(long)arg);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_create(&a, NULL, thread_main, (void *)1L);
	pthread_join(a, NULL);
	pthread_create(&b, NULL, thread_main, (void *)2L);
	pthread_join(b, NULL);
	printf("done %d\n", sink);
	return 0;
}
