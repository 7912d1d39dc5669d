#!/usr/bin/env bash
# The main job end to end on the bundled example (examples/demo.c):
#   build dcg → compile the demo with DWARF → dwarfscan it into a signature db →
#   show its signatures → trace it live with uprobes (root) → report the call graph.
#
#   bash examples/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/example
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "build dcg and dwarfscan (release)"
cargo build --release --quiet -p dwarfscan-cli -p tracer
bin=target/release

step "compile examples/demo.c with gcc -O2 -g"
gcc -O2 -g examples/demo.c -o "$out/demo"

step "dwarfscan $out/demo -o $out/demo.sigdb --stats"
"$bin/dwarfscan" "$out/demo" -o "$out/demo.sigdb" --stats

step "dcg sig: the signatures, with where each parameter lives at entry"
"$bin/dcg" sig --db "$out/demo.sigdb" parse_line is_comment classify find_entry log_entry

step "dcg dump --json (first 2 functions)"
"$bin/dcg" dump --db "$out/demo.sigdb" --json | head -n 2

if [ "$(id -u)" = 0 ] && { [ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; } && [ -e /sys/kernel/tracing/uprobe_events ]; then
	step "dcg trace: every demo function, live, with typed arguments and return values"
	"$bin/dcg" trace --db "$out/demo.sigdb" --show-retvals --args \
		--func "$out/demo:parse_line" --func "$out/demo:is_comment" --func "$out/demo:classify" \
		--func "$out/demo:find_entry" --func "$out/demo:log_entry" \
		--output "$out/demo.calls" -- "$out/demo"
	step "dcg report: calls, errors by errno, caller → callee edges"
	"$bin/dcg" report "$out/demo.calls"
else
	echo
	echo "(skipping the live trace: it needs root and uprobes)"
fi
