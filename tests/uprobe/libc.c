/* libc functions by their public names: the program prints what they returned, the
 * uprobe tests find the same values in the trace. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
	/* Called through a pointer: out of line although <stdlib.h> inlines atoi. */
	int (*volatile to_int)(const char *) = atoi;
	void *p = malloc(100);
	void *q = calloc(3, 8);
	int k, c;
	printf("pid=%d\nmalloc=%p\ncalloc=%p\n", (int)getpid(), p, q);
	free(p);
	free(q);
	k = kill(getpid(), 0);
	c = chmod("/nonexistent/dcg-test", 0644);
	printf("kill=%d\nchmod=%d\n", k, c);
	printf("atoi=%d\n", to_int("42"));
	puts("done");
	return 0;
}
