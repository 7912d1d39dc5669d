#!/usr/bin/env bash
# Create the seed corpora of the fuzz targets (corpus/ is not committed):
#   sigdb_open     the sample db of sigdb's tests, and the db (with inline instances) of a
#                  small -O2 object with nested inlining
#   dwarfscan_elf  small gcc objects: DWARF 4 and 5, -O0/-O2, compressed sections
#   fgraph_line    lines of the test kernel's real captures (tests/data/captures)
#   decode_stream  runs of 30 lines of those captures, each after an option byte; and
#                  decode.sigdb, the test kernel's db the target decodes with
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/sigdb_open corpus/dwarfscan_elf corpus/fgraph_line corpus/decode_stream
DCG_FUZZ_SEED="$PWD/corpus/sigdb_open/sample" \
	cargo test --quiet --manifest-path ../Cargo.toml -p sigdb --test corruption write_fuzz_seed -- --ignored >/dev/null
src=$(mktemp --suffix=.c)
trap 'rm -f "$src"' EXIT
cat >"$src" <<'C'
int add(int a, int b) { return a + b; }
static _Bool f(const char *s) { return !s; }
enum e { A = -1, B };
struct s { long x, y; };
long h(struct s v, ...) { return v.x; }
enum e g(enum e x, _Bool (*cb)(const char *)) { return cb(0) ? x : B; }
C
for o in "-O0 -gdwarf-4" "-O2 -gdwarf-5" "-O1 -gdwarf-5 -gz=zlib"; do
	gcc $o -c "$src" -o "corpus/dwarfscan_elf/seed$(echo "$o" | tr -d ' =-').o"
done
cat >"$src" <<'C'
extern int g(int);
static inline int sq(int x) { return g(x) * x; }
static inline int sum3(int a, int b, int c) { return sq(a) + sq(b) + g(c); }
int outer(int a, int b) { return sum3(a, b, 1) * sum3(b, a, 2); }
long big(long x, long y, long z, long u, long v, long w, long s) { return sum3(x, y, s) + z + u + v + w; }
C
gcc -O2 -g -c "$src" -o "$src.o"
cargo run --quiet --release --manifest-path ../Cargo.toml -p dwarfscan-cli -- -q \
	--all-inline-instances "$src.o" -o corpus/sigdb_open/inline-instances
rm -f "$src.o"
caps=../tests/data/captures
{
	i=0
	for f in a c d e h; do
		grep -v '^$' "$caps/$f.txt" | shuf -n 40 --random-source=<(yes) | while IFS= read -r line; do
			i=$((i + 1)); printf '%s\n' "$line" >"corpus/fgraph_line/$f-$i"
		done
	done
	kernel=$(../tests/kernels/testkernel/build.sh)
	cargo run --quiet --release --manifest-path ../Cargo.toml -p dwarfscan-cli -- -q \
		"$kernel/vmlinux" "$kernel/dbg-modules" -o decode.sigdb
	for f in a0 a b c d e g2-text h; do
		n=0
		while [ $n -lt 5 ]; do
			# option byte: low bits = decoder options, high nibble = read block size
			{ printf "\\$(printf '%03o' $((n * 35)))"; sed -n "$((n * 30 + 1)),$((n * 30 + 30))p" "$caps/$f.txt"; } \
				>"corpus/decode_stream/$f-$n"
			n=$((n + 1))
		done
	done
}
echo "seeds in $(pwd)/corpus"
