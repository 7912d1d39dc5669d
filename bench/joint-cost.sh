#!/usr/bin/env bash
# The cost of tracing both sides in one session (issue 42), in qemu (TCG, one vCPU, the
# instruction clock): a dynamically linked loop whose user function makes one failing
# access(2) (tests/qemu/progs/joint-loop.c), untraced, with its user function traced in
# process, with its system calls traced by the BPF engine (every system call's subtree,
# `--func '__x64_sys_*'`), and with both in one session (`--kernel`). Prints each
# session's cost a call over the untraced loop and the joint session's against the sum of
# the two alone (issue 42's target: no more).
#
#   bench/joint-cost.sh [N]   (default 3000 calls)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-3000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dcg --bin dcg -p dcg-recorder --lib -p dwarfscan-cli --bin dwarfscan \
	--manifest-path "$here/Cargo.toml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kdir=$(bash "$here/tests/kernels/fetch-debian-kernel.sh" 7.2-cloud)
"$CARGO_TARGET_DIR/release/dwarfscan" -q "$kdir/vmlinux" -o "$tmp/k.sigdb"
gcc -O2 -g -o "$tmp/joint-loop" "$here/tests/qemu/progs/joint-loop.c"
bash "$here/tests/qemu/mkinitramfs.sh" "$tmp/g.cpio.gz" \
	--add "$CARGO_TARGET_DIR/release/dcg:/bin/dcg" \
	--add "$CARGO_TARGET_DIR/release/libdcg_recorder.so:/dcg/libdcg_recorder.so" \
	--add "$here/tests/qemu/e2e/lib.sh:/dcg/lib.sh" \
	--add "$tmp/k.sigdb:/dcg/k.sigdb" \
	--add "$tmp/joint-loop:/dcg/joint-loop" \
	--init "$here/tests/qemu/e2e/joint-cost.sh" --timeout 2400 >/dev/null
bash "$here/tests/qemu/run-guest.sh" --kernel "$kdir/vmlinuz" --initrd "$tmp/g.cpio.gz" \
	--smp 1 --timeout 2460 --append "dcg.printk=1 dcg.calls=$n" \
	-- -icount shift=0,sleep=off >"$tmp/console.txt"
# DCG_BENCH_CONSOLE=FILE keeps the guest's whole output.
[ -z "${DCG_BENCH_CONSOLE:-}" ] || cp "$tmp/console.txt" "$DCG_BENCH_CONSOLE"
sec() { # NAME: the section's text
	awk -v b="=====BEGIN $1=====" -v e="=====END $1=====" \
		'$0 == b {on = 1; next} $0 == e {on = 0} on' "$tmp/console.txt"
}
per_call() { sec "$1" | sed -n 's/.*per_call_ns=\([0-9]*\).*/\1/p' | head -1; }
base=$(per_call untraced)
[ -n "$base" ] || { echo "joint-cost: the untraced loop did not run" >&2; tail -30 "$tmp/console.txt" >&2; exit 1; }
echo "Kernel: 7.2-cloud ($(cat "$kdir/release")), qemu TCG, 1 vCPU, clock: -icount shift=0;"
echo "loop: $n calls of a user function making one failing access(2); untraced $((base / 1000)) us/call."
echo
printf '%-10s %10s %12s\n' session "us/call" "over loop"
declare -A cost
for s in user kernel joint; do
	v=$(per_call "$s")
	if [ -z "$v" ]; then
		printf '%-10s refused: %s\n' "$s" "$(sec "$s" | grep -m1 '^dcg' | cut -c1-150)"
		exit 1
	fi
	cost[$s]=$((v - base))
	printf '%-10s %10.1f %12.1f\n' "$s" "$(awk -v a="$v" 'BEGIN {print a / 1000}')" \
		"$(awk -v a="${cost[$s]}" 'BEGIN {print a / 1000}')"
done
echo
sec counts
sum=$((cost[user] + cost[kernel]))
ratio=$(awk -v a="${cost[joint]}" -v b="$sum" 'BEGIN {printf "%.2f", a / b}')
verdict=$([ "${cost[joint]}" -le "$sum" ] && echo met || echo "NOT met")
echo
echo "issue 42: a call traced on both sides costs $((cost[joint] / 1000)) us over the loop, ${ratio}x the sum of the user side alone and the kernel side alone ($((sum / 1000)) us; goal <= 1.00x): $verdict"
echo "kernel warnings: $(sec after | sed -n 's/^kernel warnings: //p')"
