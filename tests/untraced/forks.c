/* A function too short for the in-process engine to patch (a bare `ret`: it falls back
 * to uprobes), called twice by the process and twice by a child it forks. */
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline, noipa)) void fk_tiny(void)
{
}

int main(void)
{
	fk_tiny();
	pid_t p = fork();
	if (p == 0) {
		fk_tiny();
		fk_tiny();
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	fk_tiny();
	return 0;
}
