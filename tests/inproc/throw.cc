// C++ exceptions unwinding through traced frames: caught, rethrown, caught again; the
// program prints what it computed so a traced run can be compared with an untraced one.
#include <cstdio>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int thrower(int x)
{
	sink += x;
	if (x > 2)
		throw std::runtime_error("too big");
	return x * 10;
}

NOINLINE int middle(int x)
{
	int r = thrower(x);
	sink += r;
	return r + 1;
}

NOINLINE int catcher(int x)
{
	try {
		return middle(x);
	} catch (const std::exception &) {
		return -1;
	}
}

NOINLINE int rethrower(int x)
{
	try {
		return middle(x);
	} catch (...) {
		sink++;
		throw;
	}
}

int main()
{
	int s = 0;
	for (int i = 0; i < 5; i++)
		s += catcher(i);
	try {
		s += rethrower(7);
	} catch (const std::exception &) {
		s += 100;
	}
	s += catcher(1);
	std::printf("s=%d\n", s);
	return 0;
}
