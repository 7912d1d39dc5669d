/* Declares struct shape without defining it: decl_full.c, the other unit of the same
 * program, defines it. The db must give use_shape's parameter the complete struct
 * (dwarfscan/tests/members.rs). */
struct shape;
struct shape *make_shape(int w, int h);
int shape_area(const struct shape *s);

__attribute__((noinline)) int use_shape(struct shape *s) { return shape_area(s) + 1; }

int main(void) { return use_shape(make_shape(2, 3)) == 7 ? 0 : 1; }
