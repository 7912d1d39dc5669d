#!/usr/bin/env bash
# A baseline dwarfscan against this tree's, in one sitting, on the Debian kernels: wall
# time, peak RSS and db size for the 6.12 and 7.2 cloud vmlinux and the whole 7.2 kernel
# (vmlinux + every debug module), next to pahole on the same inputs and the .BTF sizes.
#
#   bench/compare-dwarfscan.sh BASELINE_DWARFSCAN [-j N]
#
# Build the baseline from the commit to compare with, e.g.
#   git worktree add /tmp/base main && cargo build --release -p dwarfscan-cli \
#       --manifest-path /tmp/base/Cargo.toml --target-dir /tmp/base/target
# Each command runs once, after one warm-up read of its inputs; runs alternate (baseline,
# this tree, pahole) per input so that a change in the machine's load hits all three.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
base=${1:?usage: compare-dwarfscan.sh BASELINE_DWARFSCAN [-j N]}
jobs=$(nproc)
[ "${2:-}" = "-j" ] && jobs=${3:?}
command -v pahole >/dev/null || { echo "compare-dwarfscan: pahole not installed" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compare-dwarfscan: /usr/bin/time not installed" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dwarfscan-cli --manifest-path "$here/Cargo.toml"
new=$CARGO_TARGET_DIR/release/dwarfscan
d612=$("$here/tests/kernels/fetch-debian-kernel.sh" 6.12-cloud)
d72=$("$here/tests/kernels/fetch-debian-kernel.sh" 7.2-cloud)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

measure() { # NAME CMD... -> prints "wall_s rss_mb"
  local out=$tmp/$1.time; shift
  /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>"$out.err" || { cat "$out.err" >&2; exit 1; }
  awk '{printf "%.2f %.1f\n", $1, $2/1024}' "$out"
}
btf_of() { # VMLINUX -> bytes of its .BTF section
  readelf -SW "$1" | awk '$2==".BTF"{print $6}' | head -1 | { read -r h; echo $((0x${h:-0})); }
}
mb() { awk -v b="$1" 'BEGIN{printf "%.2f", b/1e6}'; }

printf 'date: %s; machine: %d cores, load %s; pahole %s; -j %d\n' "$(date -u '+%F %H:%M UTC')" \
  "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(pahole --version)" "$jobs"
printf '%-26s %-9s %8s %8s %12s %10s\n' input tool "wall s" "RSS MB" "db bytes" "db MB"
for input in 612 72 all72; do
  case $input in
    612) files=("$d612/vmlinux"); btf=$(btf_of "$d612/vmlinux"); label="6.12 vmlinux" ;;
    72) files=("$d72/vmlinux"); btf=$(btf_of "$d72/vmlinux"); label="7.2 vmlinux" ;;
    all72) files=("$d72/vmlinux" "$d72/dbg-modules/"); btf=; label="7.2 vmlinux + modules" ;;
  esac
  find -L "${files[@]}" -type f -exec cat {} + >/dev/null
  for tool in baseline new; do
    bin=$base; [ $tool = new ] && bin=$new
    read -r w r < <(measure "$input-$tool" "$bin" -q -j "$jobs" "${files[@]}" -o "$tmp/$input-$tool.sigdb")
    s=$(stat -c %s "$tmp/$input-$tool.sigdb")
    printf '%-26s %-9s %8s %8s %12s %10s\n' "$label" "$tool" "$w" "$r" "$s" "$(mb "$s")"
  done
  if [ "$input" != all72 ]; then
    read -r w r < <(measure "$input-pahole" pahole -J -j"$jobs" --btf_encode_detached="$tmp/$input.btf" "${files[0]}")
    printf '%-26s %-9s %8s %8s %12s %10s\n' "$label" "pahole -J" "$w" "$r" "$btf" "$(mb "$btf") (.BTF)"
  fi
done
