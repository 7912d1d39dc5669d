/*
 * A load for the kernel engines' load test and benchmark: N failing access(2) calls in a
 * loop, timed by the program itself.
 *
 *   syscall-loop now        print CLOCK_MONOTONIC in ns (the guest script's clock)
 *   syscall-loop mmap       one anonymous mmap(2) of 8 KiB, its address printed (do_mmap
 *                           has parameters passed on the stack)
 *   syscall-loop open PATH FLAGS MODE
 *                           one openat(AT_FDCWD, PATH, FLAGS, MODE) (numbers as C reads
 *                           them: 0x241, 0640), printing "open flags=F mode=M fd=FD" in
 *                           decimal (--fields' oracle)
 *   syscall-loop pipe       one pipe2(2), printing "pipe fds=R,W" (an output parameter's
 *                           oracle: do_pipe2 writes the two numbers through fildes)
 *   syscall-loop N [PATH [EVERY]]
 *                           call access(PATH, F_OK) N times (PATH defaults to a file that
 *                           does not exist, so every call fails with ENOENT; "-" names
 *                           that default; "@unmapped" passes the address of a page
 *                           it unmapped, so every call fails with EFAULT and a read of
 *                           the path faults) and print
 *                           "loop start=NS end=NS calls=N failed=K per_call_ns=X";
 *                           with EVERY, every EVERY-th call asks R_OK instead (a filter
 *                           on the mode keeps 1 in EVERY)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *path = argc > 2 && strcmp(argv[2], "-") ? argv[2] : "/dcg-load-nonexistent";
	long every = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	long n, i, failed = 0;
	long long start, end;

	if (argc < 2) {
		fprintf(stderr, "usage: %s now | mmap | pipe | open PATH FLAGS MODE | N [PATH]\n", argv[0]);
		return 2;
	}
	if (argv[1][0] == 'n') {
		printf("%lld\n", now_ns());
		return 0;
	}
	if (strcmp(argv[1], "open") == 0 && argc == 5) {
		int flags = (int)strtol(argv[3], NULL, 0), mode = (int)strtol(argv[4], NULL, 0);
		int fd = openat(AT_FDCWD, argv[2], flags, mode);

		printf("open flags=%d mode=%d fd=%d\n", flags, mode, fd);
		return fd < 0;
	}
	if (strcmp(argv[1], "pipe") == 0) {
		int fds[2] = { -1, -1 };
		int r = pipe2(fds, O_CLOEXEC);

		printf("pipe fds=%d,%d\n", fds[0], fds[1]);
		return r != 0;
	}
	if (argv[1][0] == 'm') {
		void *p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		printf("mmap %p\n", p);
		return p == MAP_FAILED;
	}
	n = strtol(argv[1], NULL, 10);
	if (n <= 0) {
		fprintf(stderr, "%s: bad count %s\n", argv[0], argv[1]);
		return 2;
	}
	if (strcmp(path, "@unmapped") == 0) {
		char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || munmap(p, 4096) != 0) {
			perror("mmap");
			return 2;
		}
		path = p;
	}
	start = now_ns();
	for (i = 0; i < n; i++)
		if (access(path, every > 0 && i % every == 0 ? R_OK : F_OK) != 0 && errno == ENOENT)
			failed++;
	end = now_ns();
	printf("loop start=%lld end=%lld calls=%ld failed=%ld per_call_ns=%lld\n", start, end, n,
	       failed, (end - start) / n);
	return 0;
}
