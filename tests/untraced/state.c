/* What a process inherited, written to the file argv[1]: its signal mask, ignored and
 * caught signals (/proc/self/status), its environment (sorted, without dcg's preloading:
 * LD_PRELOAD and DCG_INPROC_*), its open file descriptors (number and kind: a path, or
 * pipe/socket/anon_inode without the inode) and its resource limits. It calls
 * st_mark() once, the function the tests trace. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

extern char **environ;

__attribute__((noinline, noipa)) int st_mark(int x)
{
	volatile int y = x;
	return y + 1;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	FILE *out = fopen(argv[1], "w");
	if (!out)
		return 3;
	/* The fd of `out` is the program's own: left out below. */
	int own = fileno(out);
	FILE *st = fopen("/proc/self/status", "r");
	char line[512];
	while (st && fgets(line, sizeof line, st))
		if (!strncmp(line, "SigBlk:", 7) || !strncmp(line, "SigIgn:", 7) ||
		    !strncmp(line, "SigCgt:", 7))
			fputs(line, out);
	if (st)
		fclose(st);
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 1, sizeof *env);
	memcpy(env, environ, n * sizeof *env);
	qsort(env, n, sizeof *env, by_text);
	for (size_t i = 0; i < n; i++)
		if (strncmp(env[i], "LD_PRELOAD=", 11) && strncmp(env[i], "DCG_INPROC_", 11))
			fprintf(out, "env %s\n", env[i]);
	DIR *d = opendir("/proc/self/fd");
	while (d) {
		struct dirent *e = readdir(d);
		if (!e)
			break;
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd == dirfd(d) || fd == own)
			continue;
		char path[64], target[512];
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t len = readlink(path, target, sizeof target - 1);
		target[len < 0 ? 0 : len] = 0;
		char *inode = strchr(target, '[');
		if (inode && target[0] != '/')
			*inode = 0;
		fprintf(out, "fd %d %s\n", fd, target);
	}
	if (d)
		closedir(d);
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit l;
		if (getrlimit(r, &l) == 0)
			fprintf(out, "rlimit %d %llu %llu\n", r, (unsigned long long)l.rlim_cur,
				(unsigned long long)l.rlim_max);
	}
	fprintf(out, "mark %d\n", st_mark(41));
	fclose(out);
	return 0;
}
