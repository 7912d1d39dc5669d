/*
 * System calls whose kernel code inlines the functions issue 16 traces (static, for
 * guests without a libc).
 *
 *   inline-calls pidfd     pidfd_open(2) three times: on itself (works), on a pid that
 *                          does not exist (-ESRCH: pidfd_create never runs), with bad
 *                          flags (-EINVAL: it never runs either)
 *   inline-calls paths     path system calls that copy a path in with getname(), inlined
 *                          into each of them: chdir, chroot, stat, mkdir, rmdir, unlink
 *
 * Prints one line per call: its name and what it returned (or -errno).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static void show(const char *what, long r)
{
	printf("%s = %ld\n", what, r < 0 ? -(long)errno : r);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "pidfd")) {
		show("pidfd_open(self, 0)", syscall(SYS_pidfd_open, getpid(), 0));
		show("pidfd_open(4000000, 0)", syscall(SYS_pidfd_open, 4000000, 0));
		show("pidfd_open(self, 0x55)", syscall(SYS_pidfd_open, getpid(), 0x55));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "paths")) {
		struct stat st;

		show("chdir(/nonexistent)", chdir("/nonexistent"));
		show("chroot(/nonexistent)", chroot("/nonexistent"));
		show("stat(/nonexistent)", stat("/nonexistent", &st));
		show("mkdir(/tmp/dcg-inline)", mkdir("/tmp/dcg-inline", 0700));
		show("rmdir(/tmp/dcg-inline)", rmdir("/tmp/dcg-inline"));
		show("unlink(/nonexistent)", unlink("/nonexistent"));
		return 0;
	}
	fprintf(stderr, "usage: inline-calls pidfd|paths\n");
	return 2;
}
