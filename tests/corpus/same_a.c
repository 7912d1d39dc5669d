/* A static function with the same name as one in same_b.c. */
__attribute__((noinline)) static int same_name(int x) { return x * 11; }
int helper_a(int x) { return same_name(x) + 1; }
