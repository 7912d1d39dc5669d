/* A tiny config loader: the bundled example dcg scans, describes and traces.
 * Its functions return the value kinds dcg decodes: int errors, bool, enums,
 * pointers (NULL or valid), void, and take strings and structs. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { KIND_NONE = 0, KIND_NUMBER = 1, KIND_WORD = 2, KIND_BAD = -1 };

struct entry {
	char key[16];
	long value;
	enum kind kind;
};

static struct entry table[8];
static int used;

__attribute__((noinline)) bool is_comment(const char *line)
{
	return line[0] == '#';
}

__attribute__((noinline)) enum kind classify(const char *value)
{
	if (!*value)
		return KIND_BAD;
	if (value[0] >= '0' && value[0] <= '9')
		return KIND_NUMBER;
	return KIND_WORD;
}

__attribute__((noinline)) struct entry *find_entry(const char *key)
{
	for (int i = 0; i < used; i++)
		if (!strcmp(table[i].key, key))
			return &table[i];
	return NULL;
}

__attribute__((noinline)) void log_entry(const struct entry *e)
{
	printf("  %s = %ld\n", e->key, e->value);
}

__attribute__((noinline)) int parse_line(const char *line)
{
	char key[16], value[32];
	struct entry *e;

	if (is_comment(line))
		return 0;
	if (sscanf(line, "%15[^=]=%31s", key, value) != 2)
		return -EINVAL;
	if (find_entry(key))
		return -EEXIST;
	if (used == 8)
		return -ENOSPC;
	e = &table[used++];
	strcpy(e->key, key);
	e->kind = classify(value);
	e->value = e->kind == KIND_NUMBER ? atol(value) : (long)strlen(value);
	log_entry(e);
	return 1;
}

int main(void)
{
	static const char *lines[] = {
		"# demo config", "port=8080", "name=dcg", "port=9090", "broken line", "depth=3",
	};
	int loaded = 0;

	for (unsigned i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int r = parse_line(lines[i]);
		if (r < 0)
			fprintf(stderr, "line %u: %s\n", i + 1, strerror(-r));
		else
			loaded += r;
	}
	printf("%d entries\n", loaded);
	return find_entry("port") ? 0 : 1;
}
