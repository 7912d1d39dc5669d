#!/usr/bin/env bash
# The user-space engines against uftrace, one run, same machine, same hot loop
# (bench/progs/hot.c: `double f(long, const char *, double)`, N calls, timed by the
# program itself), each figure the best of three runs:
#
#   untraced                      the -pg, -fpatchable-function-entry=5 and plain builds
#   uftrace (Debian's package)    -pg build, arguments and return value asked for by hand
#   dcg --engine inproc           the -pg, patchable and plain builds (every value)
#   dcg --engine uprobe           the plain build
#
# Prints µs per call (the traced loop's), the overhead over the untraced build, and
# dcg's ratios to uftrace. Goals (issue 25): in-process ≤ uftrace on both instrumented
# builds, ≤ 2 µs per call on the plain build. Root only (uprobes).
#
#   bench/user-engines.sh [N]       (default N = 100000)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100000}
[ "$(id -u)" = 0 ] || { echo "user-engines: needs root" >&2; exit 1; }
command -v uftrace >/dev/null || { echo "user-engines: uftrace missing (apt-get install uftrace)" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dcg -p dcg-recorder --manifest-path "$here/Cargo.toml"
dcg=$CARGO_TARGET_DIR/release/dcg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$here/bench/progs/hot.c
gcc -O2 -g -pg -o "$tmp/pg" "$src"
gcc -O2 -g -fpatchable-function-entry=5 -o "$tmp/patch" "$src"
gcc -O2 -g -o "$tmp/plain" "$src"

per_call() { # CMD... -> the program's µs/call (best of 3)
	local best=
	for _ in 1 2 3; do
		"$@" >/dev/null 2>"$tmp/err" || { echo "user-engines: $* failed:" >&2; tail -3 "$tmp/err" >&2; exit 1; }
		# A dropped record costs less than a written one: a run that lost any does not count.
		if grep -q "LOST" "$tmp/err"; then echo "user-engines: $* lost records:" >&2; grep LOST "$tmp/err" >&2; exit 1; fi
		local v
		v=$(awk '/ calls .* us\/call/ { print $(NF-1) }' "$tmp/err" | tail -1)
		[ -n "$v" ] || { echo "user-engines: no timing from $*" >&2; tail -3 "$tmp/err" >&2; exit 1; }
		if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$v; fi
	done
	echo "$best"
}
cd "$tmp"
u_pg=$(per_call ./pg "$n")
u_patch=$(per_call ./patch "$n")
u_plain=$(per_call ./plain "$n")
uft=$(per_call uftrace record -d "$tmp/uftrace.data" -A 'f@arg1,arg2/s,fparg1' -R 'f@retval/f64' ./pg "$n")
d_pg=$(per_call "$dcg" trace --engine inproc --show-retvals --args --func ./pg:f -- ./pg "$n")
d_patch=$(per_call "$dcg" trace --engine inproc --show-retvals --args --func ./patch:f -- ./patch "$n")
d_plain=$(per_call "$dcg" trace --engine inproc --show-retvals --args --func ./plain:f -- ./plain "$n")
d_up=$(per_call "$dcg" trace --engine uprobe --show-retvals --args --func ./plain:f -- ./plain "$n")
# Every value present: the last traced call has its double argument and return value.
"$dcg" trace --engine inproc --show-retvals --args --func ./plain:f -- ./plain 3 2>/dev/null \
	| grep -q 'f(n=2, tag="hot", scale=0.5); /\* ret=105 \*/' \
	|| { echo "user-engines: the in-process trace lacks f's values" >&2; exit 1; }
awk -v n="$n" -v upg="$u_pg" -v upa="$u_patch" -v upl="$u_plain" -v uft="$uft" \
	-v dpg="$d_pg" -v dpa="$d_patch" -v dpl="$d_plain" -v dup="$d_up" 'BEGIN {
	printf "user-space engines: %d calls of double f(long, const char *, double), us per call (best of 3)\n", n
	printf "  %-44s %8s %10s\n", "", "us/call", "overhead"
	row("untraced, -pg build", upg, upg)
	row("untraced, -fpatchable-function-entry=5", upa, upa)
	row("untraced, plain build", upl, upl)
	row("uftrace 0.13, -pg, args + retval", uft, upg)
	row("dcg inproc, -pg build", dpg, upg)
	row("dcg inproc, patchable build", dpa, upa)
	row("dcg inproc, plain build", dpl, upl)
	row("dcg uprobe, plain build", dup, upl)
	printf "  dcg inproc / uftrace: -pg %.2fx, patchable %.2fx (goal <= 1)\n", dpg / uft, dpa / uft
	printf "  dcg inproc, plain build: %.3f us/call (goal <= 2); uprobe / inproc: %.1fx\n", dpl, dup / dpl
}
function row(name, v, base) { printf "  %-44s %8.3f %10.3f\n", name, v, v - base }'
