#!/usr/bin/env bash
# The cost of tracing both sides in one session (issue 42), in qemu (TCG, one vCPU, the
# instruction clock): a dynamically linked loop whose user function makes one failing
# access(2) (tests/qemu/progs/joint-loop.c), untraced, with its user function traced in
# process, with its system calls traced by the BPF engine (every system call's subtree,
# `--func '__x64_sys_*'`), and with both in one session (`--kernel`). Prints each
# session's cost a call over the untraced loop and the joint session's against the sum of
# the two alone (issue 42's target: no more).
#
# R rounds (default 3) of the four runs in turn, each session's cost taken over its own
# round's untraced loop (TCG's speed drifts within a boot: the same untraced loop measured
# 15.7 then 3.4 us a call in one): the ratio is the median of the rounds'.
#
#   bench/joint-cost.sh [N [R]]   (default 3000 calls, 3 rounds)
#   DCG_BENCH_CONSOLE=FILE keeps the guest's output; DCG_BENCH_REPLAY=FILE reads it again
#   DCG_BENCH_BASELINE=DIR: DIR/dcg, an older build that speaks this tree's recorder's
#   plan (the recorder is this tree's), runs the joint session too, in each
#   round next to this tree's (ABBA): a change's before and after in one boot, where
#   boots differ by more than many changes (1.02x and 1.12x at one commit)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-3000}
rounds=${2:-3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
kdir=$(bash "$here/tests/kernels/fetch-debian-kernel.sh" 7.2-cloud)
if [ -n "${DCG_BENCH_REPLAY:-}" ]; then
	# DCG_BENCH_REPLAY=FILE: the figures of a console kept by DCG_BENCH_CONSOLE.
	cp "$DCG_BENCH_REPLAY" "$tmp/console.txt"
else
	cargo build --release -q -p dcg --bin dcg -p dcg-recorder --lib -p dwarfscan-cli \
		--bin dwarfscan --manifest-path "$here/Cargo.toml"
	"$CARGO_TARGET_DIR/release/dwarfscan" -q "$kdir/vmlinux" -o "$tmp/k.sigdb"
	gcc -O2 -g -o "$tmp/joint-loop" "$here/tests/qemu/progs/joint-loop.c"
	base=()
	if [ -n "${DCG_BENCH_BASELINE:-}" ]; then
		[ -x "$DCG_BENCH_BASELINE/dcg" ] || { echo "joint-cost: no $DCG_BENCH_BASELINE/dcg" >&2; exit 1; }
		base=(--add "$DCG_BENCH_BASELINE/dcg:/bin/dcg-base")
	fi
	bash "$here/tests/qemu/mkinitramfs.sh" "$tmp/g.cpio.gz" "${base[@]}" \
		--add "$CARGO_TARGET_DIR/release/dcg:/bin/dcg" \
		--add "$CARGO_TARGET_DIR/release/libdcg_recorder.so:/dcg/libdcg_recorder.so" \
		--add "$here/tests/qemu/e2e/lib.sh:/dcg/lib.sh" \
		--add "$tmp/k.sigdb:/dcg/k.sigdb" \
		--add "$tmp/joint-loop:/dcg/joint-loop" \
		--init "$here/tests/qemu/e2e/joint-cost.sh" --timeout 3600 >/dev/null
	bash "$here/tests/qemu/run-guest.sh" --kernel "$kdir/vmlinuz" --initrd "$tmp/g.cpio.gz" \
		--smp 1 --timeout 3660 --append "dcg.printk=1 dcg.calls=$n dcg.rounds=$rounds" \
		-- -icount shift=0,sleep=off >"$tmp/console.txt"
fi
# DCG_BENCH_CONSOLE=FILE keeps the guest's whole output.
[ -z "${DCG_BENCH_CONSOLE:-}" ] || cp "$tmp/console.txt" "$DCG_BENCH_CONSOLE"
sec() { # NAME: the section's text
	awk -v b="=====BEGIN $1=====" -v e="=====END $1=====" \
		'$0 == b {on = 1; next} $0 == e {on = 0} on' "$tmp/console.txt"
}
per_call() { sec "$1" | sed -n 's/.*per_call_ns=\([0-9]*\).*/\1/p' | head -1; }
median() {
	sort -n | awk '{v[NR] = $1}
		END {if (NR % 2) print v[(NR + 1) / 2]; else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
us() { awk -v a="$1" 'BEGIN {printf "%.1f", a / 1000}'; }
echo "Kernel: 7.2-cloud ($(cat "$kdir/release")), qemu TCG, 1 vCPU, clock: -icount shift=0;"
echo "loop: $n calls of a user function making one failing access(2); $rounds rounds of"
echo "untraced, user, kernel, joint; each session's cost over its round's untraced loop."
echo
printf '%-6s %10s %10s %10s %10s %8s\n' round "untraced" "user" "kernel" "joint" "ratio"
ratios=""
declare -A all
for r in $(seq 1 "$rounds"); do
	base=$(per_call "untraced$r")
	[ -n "$base" ] || { echo "joint-cost: the untraced loop of round $r did not run" >&2; tail -30 "$tmp/console.txt" >&2; exit 1; }
	declare -A cost
	for s in user kernel joint; do
		v=$(per_call "$s$r")
		if [ -z "$v" ]; then
			printf '%-10s refused: %s\n' "$s" "$(sec "$s$r" | grep -m1 '^dcg' | cut -c1-150)"
			exit 1
		fi
		cost[$s]=$((v - base))
		all[$s]="${all[$s]:-} ${cost[$s]}"
	done
	ratio=$(awk -v a="${cost[joint]}" -v b="$((cost[user] + cost[kernel]))" 'BEGIN {printf "%.2f", a / b}')
	ratios="$ratios $ratio"
	printf '%-6s %10s %10s %10s %10s %7sx\n' "$r" "$(us "$base")" "$(us "${cost[user]}")" \
		"$(us "${cost[kernel]}")" "$(us "${cost[joint]}")" "$ratio"
done
echo "(us a call: the untraced loop's, then each session's over it)"
echo
sec counts
ratio=$(printf '%s\n' $ratios | median)
joint=$(printf '%s\n' ${all[joint]} | median)
sum=$(awk -v u="$(printf '%s\n' ${all[user]} | median)" -v k="$(printf '%s\n' ${all[kernel]} | median)" 'BEGIN {print u + k}')
verdict=$(awk -v r="$ratio" 'BEGIN {print (r <= 1.0) ? "met" : "NOT met"}')
echo
echo "issue 42 (median of $rounds rounds): a call traced on both sides costs $(us "$joint") us over the loop, ${ratio}x the sum of the user side alone and the kernel side alone (medians $(us "$sum") us; goal <= 1.00x): $verdict"
# The baseline's joint sessions, each against this tree's in the same round.
if [ -n "$(per_call joint-base1)" ]; then
	echo
	printf '%-6s %12s %12s %8s\n' round "joint@base" "joint" "change"
	for r in $(seq 1 "$rounds"); do
		b=$(per_call "joint-base$r")
		j=$(per_call "joint$r")
		[ -n "$b" ] && [ -n "$j" ] || continue
		printf '%-6s %12s %12s %7s%%\n' "$r" "$(us "$b")" "$(us "$j")" \
			"$(awk -v a="$j" -v b="$b" 'BEGIN {printf "%+.1f", (a - b) * 100 / b}')"
	done
	echo "(us a call, the loop's time under each; switches in the sections' lines)"
fi
echo "kernel warnings: $(sec after | sed -n 's/^kernel warnings: //p')"
