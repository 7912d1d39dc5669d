#!/usr/bin/env bash
# dwarfscan on a whole distribution kernel: Debian's 7.2 cloud vmlinux plus every one of
# its debug modules, in one run: wall time, peak RSS, functions, db size.
#
#   bench/whole-kernel.sh [FLAVOR]     (default 7.2-cloud)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
flavor=${1:-7.2-cloud}
dir=$("$here/tests/kernels/fetch-debian-kernel.sh" "$flavor")
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dwarfscan-cli -p dcg --manifest-path "$here/Cargo.toml"
bin=$CARGO_TARGET_DIR/release
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mods=$(find -L "$dir/dbg-modules" -name '*.ko*' | wc -l)
/usr/bin/time -f '%e %M' -o "$tmp/time" "$bin/dwarfscan" -q -j "$(nproc)" --stats \
	"$dir/vmlinux" "$dir/dbg-modules/" -o "$tmp/all.sigdb" 2>"$tmp/stats"
read -r wall rss <"$tmp/time"
funcs=$("$bin/dcg" dump --db "$tmp/all.sigdb" --json | wc -l)
size=$(stat -c %s "$tmp/all.sigdb")
dinfo=$(grep -m1 'debug_info bytes' "$tmp/stats" | awk '{print $NF}')
printf 'input: %s (release %s): vmlinux + %d debug modules, %.0f MB of .debug_info\n' \
	"$flavor" "$(cat "$dir/release")" "$mods" "$(awk -v b="${dinfo:-0}" 'BEGIN{print b/1048576}')"
printf '%-10s %10s %12s %12s %10s\n' "" "wall s" "peak RSS MB" "functions" "db MB"
printf '%-10s %10.2f %12.1f %12d %10.2f\n' dwarfscan "$wall" "$(awk -v r="$rss" 'BEGIN{print r/1024}')" "$funcs" "$(awk -v s="$size" 'BEGIN{print s/1048576}')"
