#!/usr/bin/env bash
# Per-call cost of tracing a user-space function with `dcg trace` versus the same uprobes
# placed by hand in a tracefs instance. Same program (tests/uprobe/loop.c: a loop calling
# `long tick(long i, const char *tag)`), same call count, one run each:
#
#   (a) untraced
#   (b) by hand: uprobe + uretprobe with dcg's fetch args in an instance, trace_pipe
#       read by cat into /dev/null
#   (c) dcg trace --show-retvals --args --func loop:tick -- loop N, output to /dev/null
#
# The program times its own loop (no startup, no probe setup). Prints us/call for
# (b)-(a) and (c)-(a) and their ratio (goal: <= 1.2). Root only.
#
#   bench/uprobe-cost.sh [N]        (default N = 200000)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-200000}
[ "$(id -u)" = 0 ] || { echo "uprobe-cost: needs root" >&2; exit 1; }
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T
[ -e $T/uprobe_events ] || { echo "uprobe-cost: no uprobe_events" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dcg --bin dcg --manifest-path "$here/Cargo.toml"
dcg=$CARGO_TARGET_DIR/release/dcg
tmp=$(mktemp -d)
inst=$T/instances/bench-$$
group=bench_$$
cleanup() {
  [ -n "${catpid:-}" ] && kill "$catpid" 2>/dev/null || true
  if [ -d "$inst" ]; then
    echo 0 > "$inst/tracing_on" 2>/dev/null || true
    rmdir "$inst" 2>/dev/null || true
  fi
  echo "-:$group/tick" >> $T/uprobe_events 2>/dev/null || true
  echo "-:$group/tick_ret" >> $T/uprobe_events 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
gcc -O2 -g -o "$tmp/loop" "$here/tests/uprobe/loop.c"
prog=$tmp/loop

us_per_call() { # stderr of loop -> us/call
  awk '/ calls .* us\/call/ { print $(NF-1) }' "$1" | tail -1
}

# (a) untraced
"$prog" "$n" 2> "$tmp/a.err" > /dev/null
a=$(us_per_call "$tmp/a.err")

# (b) by hand: file offset of tick from its symbol and the PT_LOAD segments.
vaddr=$(nm "$prog" | awk '$3 == "tick" { print $1 }')
off=
while read -r type o va _ fs _; do
  [ "$type" = LOAD ] || continue
  if (( 16#$vaddr >= va && 16#$vaddr < va + fs )); then
    off=$(printf '0x%x' $(( 16#$vaddr - va + o )))
    break
  fi
done < <(readelf -lW "$prog")
[ -n "$off" ] || { echo "uprobe-cost: no segment holds tick" >&2; exit 1; }
mkdir "$inst"
echo "p:$group/tick $prog:$off a0=%di:x64 a1=%si:x64 s1=+0(%si):ustring" >> $T/uprobe_events
echo "r:$group/tick_ret $prog:$off ret=\$retval:x64" >> $T/uprobe_events
echo 1 > "$inst/events/$group/enable"
cat "$inst/trace_pipe" > /dev/null &
catpid=$!
"$prog" "$n" 2> "$tmp/b.err" > /dev/null
sleep 0.2
kill "$catpid"; wait "$catpid" 2>/dev/null || true; catpid=
b_lost=$(cat "$inst"/per_cpu/cpu*/stats | awk '/^overrun:/ { s += $2 } END { print s + 0 }')
echo 0 > "$inst/events/$group/enable"
rmdir "$inst"
echo "-:$group/tick" >> $T/uprobe_events
echo "-:$group/tick_ret" >> $T/uprobe_events
b=$(us_per_call "$tmp/b.err")

# (c) dcg
"$dcg" trace --show-retvals --args --func "$prog:tick" -- "$prog" "$n" > /dev/null 2> "$tmp/c.err"
c=$(us_per_call "$tmp/c.err")
grep -E 'LOST|could not' "$tmp/c.err" >&2 || true

awk -v n="$n" -v a="$a" -v b="$b" -v c="$c" -v bl="$b_lost" 'BEGIN {
  printf "calls: %d\n", n
  printf "(a) untraced:           %8.3f us/call\n", a
  printf "(b) uprobes by hand:    %8.3f us/call  -> probe cost %.3f us/call (overruns %d)\n", b, b - a, bl
  printf "(c) dcg trace:          %8.3f us/call  -> probe cost %.3f us/call\n", c, c - a
  printf "ratio (c-a)/(b-a):      %8.3f  (goal <= 1.2)\n", (c - a) / (b - a)
}'
