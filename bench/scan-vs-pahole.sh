#!/usr/bin/env bash
# dwarfscan vs pahole on the same vmlinux: wall time, peak RSS, output size.
#
#   bench/scan-vs-pahole.sh [VMLINUX] [-j N]
#
# Default VMLINUX: Debian's 6.12 cloud kernel (fetched by tests/kernels/fetch-debian-kernel.sh).
# Runs `dwarfscan -j N` and `pahole -J -jN --btf_encode_detached` three times each
# (DCG_SCAN_RUNS), after one warm-up read of the file (so both see a warm page cache), and
# prints a table.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
vmlinux=${1:-}
jobs=2
[ "${2:-}" = "-j" ] && jobs=${3:?}
if [ -z "$vmlinux" ]; then
  dir=$("$here/tests/kernels/fetch-debian-kernel.sh" 6.12-cloud)
  vmlinux=$dir/vmlinux
fi
command -v pahole >/dev/null || { echo "scan-vs-pahole: pahole not installed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "scan-vs-pahole: /usr/bin/time not installed" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dwarfscan-cli --manifest-path "$here/Cargo.toml"
scan=$CARGO_TARGET_DIR/release/dwarfscan
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat "$vmlinux" > /dev/null

# Each side runs RUNS times, alternating (the machine's load drifts): the median wall
# time and the largest peak RSS. The speed ratio is also taken run by run, each dwarfscan
# run over the pahole run right after it, and its median printed: on a shared machine
# whose speed drifts by 10-20% within a minute, a pair run back to back sees the same
# speed, where the two medians may come from different moments.
runs=${DCG_SCAN_RUNS:-5}
measure() { # OUTFILE CMD... -> "wall_s rss_kb" of one run
  local out=$1; shift
  /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>"$out.err" || { cat "$out.err" >&2; exit 1; }
  cat "$out"
}
summarize() { # FILE of "wall rss" lines -> "median_wall max_rss"
  sort -n "$1" | awk '{w[NR]=$1; if ($2>r) r=$2} END {print w[int((NR+1)/2)], r}'
}
for _ in $(seq "$runs"); do
  measure "$tmp/scan.time" "$scan" -q -j "$jobs" "$vmlinux" -o "$tmp/vmlinux.sigdb" >> "$tmp/scan.all"
  measure "$tmp/pahole.time" pahole -J -j"$jobs" --btf_encode_detached="$tmp/vmlinux.btf" "$vmlinux" >> "$tmp/pahole.all"
done
pair=$(paste -d' ' "$tmp/scan.all" "$tmp/pahole.all" | awk '{print $3/$1}' | sort -n |
  awk '{r[NR]=$1} END {print r[int((NR+1)/2)], r[1], r[NR]}')
read -r sw sr < <(summarize "$tmp/scan.all")
read -r pw pr < <(summarize "$tmp/pahole.all")
dbsize=$(stat -c %s "$tmp/vmlinux.sigdb")
btfsize=$(stat -c %s "$tmp/vmlinux.btf")
secbtf=$(readelf -SW "$vmlinux" | awk '$2==".BTF"{print $6}' | head -1); secbtf=$(( ${secbtf:+0x$secbtf} + 0 ))
awk -v sw="$sw" -v sr="$sr" -v pw="$pw" -v pr="$pr" -v db="$dbsize" -v btf="$btfsize" -v sec="${secbtf:-0}" -v j="$jobs" -v n="$runs" -v f="$vmlinux" -v pair="$pair" 'BEGIN {
  printf "input: %s (-j %d, %s; median wall and largest RSS of %d runs each)\n", f, j, "pahole " "'"$(pahole --version)"'", n
  printf "%-12s %10s %12s %12s\n", "", "wall s", "peak RSS MB", "output MB"
  printf "%-12s %10.2f %12.1f %12.2f\n", "dwarfscan", sw, sr/1024, db/1048576
  printf "%-12s %10.2f %12.1f %12.2f\n", "pahole -J", pw, pr/1024, btf/1048576
  printf "%-12s %9.2fx %11.2fx %11.2fx\n", "ratio", pw/sw, pr/sr, btf/db
  split(pair, p, " ")
  printf "speed ratio run by run (pahole over the dwarfscan run before it): median %.2fx, range %.2fx-%.2fx\n", p[1], p[2], p[3]
  if (sec > 0) printf ".BTF section of the vmlinux: %.2f MB\n", sec/1048576
  printf "targets (issue 27): >= 6x faster, RSS <= 250 MB, db <= the .BTF section\n"
}'
