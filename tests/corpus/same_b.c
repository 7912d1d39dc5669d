/* A static function with the same name as one in same_a.c, other signature. */
__attribute__((noinline)) static long same_name(long x, long y) { return x * y; }
int helper_b(int x) { return (int)same_name(x, 3) + 2; }
