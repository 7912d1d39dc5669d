/* Maps the file named by argv[1] (a 2 GB sparse file in the test) and passes pointers
 * to `take`: dcg trace --args names pointers by the symbols of the files the process
 * maps, and must read only their ELF headers, never a 2 GB data file. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static char marker[16] = "marker";

__attribute__((noinline)) int take(const void *p, long n)
{
	return ((const char *)p)[0] + (int)n;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return 3;
	off_t size = lseek(fd, 0, SEEK_END);
	char *m = mmap(0, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return 4;
	int r = take(marker, 1) + take(m + 4096, 2);
	/* Alive while dcg reads the trace and this process's mappings. */
	sleep(2);
	printf("%d\n", r);
	return 0;
}
