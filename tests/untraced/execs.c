/* An exec from inside traced calls: main calls ex_first, which execs this program again
 * with the argument `second`; the new image's main calls ex_second. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline, noipa)) int ex_second(int x)
{
	return x * 2;
}

__attribute__((noinline, noipa)) int ex_first(const char *self)
{
	execl("/proc/self/exe", self, "second", (char *)NULL);
	return -1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "second") == 0) {
		printf("second %d\n", ex_second(21));
		return 0;
	}
	fflush(stdout);
	return ex_first(argv[0]);
}
