#!/usr/bin/env bash
# Decode throughput: `dcg decode` on ≥ 1 M function_graph lines (the test kernel's real
# captures repeated), on one core, beside `wc -l` on the same file. Goal: ≥ 2 M lines/s.
#
#   bench/decode-throughput.sh [REPEATS]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
caps=$here/tests/data/captures
reps=${1:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dcg -p dwarfscan-cli
bin=$CARGO_TARGET_DIR/release
kernel=$("$here/tests/kernels/testkernel/build.sh")
"$bin/dwarfscan" -q "$kernel/vmlinux" "$kernel/dbg-modules" -o "$work/tk.sigdb"
for _ in $(seq "$reps"); do cat "$caps/a.txt" "$caps/c.txt" "$caps/d.txt"; done > "$work/big.txt"
lines=$(wc -l < "$work/big.txt")

secs() { # user+sys CPU seconds of a command pinned to one core; fails if the command does
	/usr/bin/time -f "%U %S" -o "$work/time" taskset -c 0 "$@" >/dev/null 2>"$work/err" ||
		{ echo "decode-throughput: $* failed: $(cat "$work/err")" >&2; exit 1; }
	awk '{print $1 + $2}' "$work/time"
}
best() { # the best of three runs
	local b=
	for _ in 1 2 3; do
		local t; t=$(secs "$@")
		if [ -z "$b" ] || awk -v a="$t" -v b="$b" 'BEGIN{exit !(a < b)}'; then b=$t; fi
	done
	echo "$b"
}
t_wc=$(best wc -l "$work/big.txt")
t_dcg=$(best "$bin/dcg" decode --db "$work/tk.sigdb" "$work/big.txt")
awk -v n="$lines" -v d="$t_dcg" -v w="$t_wc" 'BEGIN {
	printf "decode throughput: %d lines (a+c+d captures x reps)\n", n
	printf "  %-28s %8.3f s CPU  %8.2f M lines/s\n", "wc -l", w, (w > 0 ? n / w / 1e6 : 0)
	printf "  %-28s %8.3f s CPU  %8.2f M lines/s  (goal >= 2)\n", "dcg decode (1 core)", d, n / d / 1e6
	printf "  ratio dcg/wc: %.1fx\n", (w > 0 ? d / w : 0)
}'
