#!/usr/bin/env bash
# Struct members in the sigdb (issue 41): the Debian 6.12 and 7.2 cloud vmlinux dbs beside
# their .BTF sections (with the bytes of the sections that hold types and members), the
# scan's time and RSS, and the criterion figures of a member lookup and of open + validate.
#
#   bench/members.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x /usr/bin/time ] || { echo "members: /usr/bin/time not installed" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dwarfscan-cli --manifest-path "$here/Cargo.toml"
scan=$CARGO_TARGET_DIR/release/dwarfscan
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '%-10s %10s %12s %12s %12s %8s\n' kernel "scan s" "peak RSS MB" "db bytes" ".BTF bytes" "db/BTF"
for flavor in 6.12-cloud 7.2-cloud; do
	vmlinux=$("$here/tests/kernels/fetch-debian-kernel.sh" "$flavor")/vmlinux
	cat "$vmlinux" >/dev/null
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$scan" -q -j 2 --stats "$vmlinux" -o "$tmp/$flavor.sigdb" \
		>/dev/null 2>"$tmp/$flavor.stats"
	read -r wall rss <"$tmp/time"
	db=$(stat -c %s "$tmp/$flavor.sigdb")
	btf=$(readelf -SW "$vmlinux" | awk '$2==".BTF"{print $6}' | head -1)
	btf=$((0x$btf))
	printf '%-10s %10.2f %12.1f %12d %12d %8.3f\n' "$flavor" "$wall" "$(echo "$rss / 1024" | bc -l)" "$db" "$btf" \
		"$(echo "$db / $btf" | bc -l)"
done
for flavor in 6.12-cloud 7.2-cloud; do
	echo "$flavor sections:"
	grep -E '^ +(strings|types|params|members|member_blocks|type_blocks|instance_data|functions|function_blocks|code|names) ' "$tmp/$flavor.stats" || true
done
DCG_BENCH_DB=$tmp/6.12-cloud.sigdb cargo bench -q -p sigdb --bench lookup -- --warm-up-time 1 \
	--measurement-time 3 '^open|struct member|^first param record \(real db in memory' 2>&1 | grep -E '^(open|from_bytes|struct|first)|time:'
