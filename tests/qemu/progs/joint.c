/* A dynamically linked program for sessions tracing user and kernel functions together
 * (issue 42): main opens an existing file and a missing one through load_config, reads a
 * file in a loop through read_all, and starts a thread that does its own reads. Prints
 * what each call returned, for the test to check the trees against. With `FILE wait` it
 * waits for /tmp/go first. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int load_config(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

__attribute__((noinline)) long read_all(const char *path)
{
	char buf[256];
	long total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	return total;
}

static const char *self;

__attribute__((noinline)) void *worker(void *arg)
{
	long n = read_all((const char *)arg);

	printf("worker tid=%d read_all=%ld\n", gettid(), n);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	int ok, missing, err;
	/* On the stack, as a program builds paths: a kernel-only BPF session reads the name
	 * from user memory without faulting pages in, which a literal's page may not be. */
	char path[64];

	self = argc > 1 ? argv[1] : argv[0];
	/* `wait`: a process a session attaches to with -p, which starts once told (the file
	 * /tmp/go exists). */
	if (argc > 2 && !strcmp(argv[2], "wait"))
		while (access("/tmp/go", F_OK))
			usleep(20000);
	snprintf(path, sizeof(path), "/dcg/%s.conf", "missing");
	ok = load_config(self);
	missing = load_config(path);
	err = errno;
	printf("main tid=%d load_config=%d,%d errno=%s\n", gettid(), ok, missing, strerrorname_np(err));
	printf("main read_all=%ld\n", read_all(self));
	if (pthread_create(&t, NULL, worker, (void *)self) || pthread_join(t, NULL))
		return 1;
	return 0;
}
