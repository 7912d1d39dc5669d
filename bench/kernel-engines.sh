#!/usr/bin/env bash
# The kernel engines under load, in qemu (TCG), one boot: a loop of failing access(2)
# calls (tests/qemu/progs/syscall-loop.c) untraced, and for each engine: under raw
# function_graph with set_graph_function=do_faccessat, under `dcg trace --show-retvals
# --func do_faccessat --json --trace-output F -- loop N` (and as a user types it, row
# ENGINE/user: `--show-retvals --output F -- loop N > tree.txt`), and under raw
# function_graph again (the guest script is the load test's, tests/qemu/e2e/load.sh). Prints per engine:
# the loop's time per call, its ratio to the mean of the two raw function_graph runs
# around it, session start (dcg launched -> loop starts) and stop (loop ends -> dcg
# exits) times against function_graph's own switch times (the mean of the switches of
# the runs before and after it), records lost and calls missed, and issue 26's targets.
#
#   bench/kernel-engines.sh [7.2-cloud|6.12-cloud|testkernel] [N]   (default 7.2-cloud 3000)
#
# DCG_BENCH_SMP=1 boots one vCPU (default 2).
#
# Engines: bpf and fgraph on every kernel (fgraph on the Debian kernels adds probe events
# for values, on the test kernel it reads funcgraph-retval). Issue 40's rows
# (DCG_BENCH_ENGINES=...): bpf/filter (every call rejected at entry by --filter),
# bpf/filter1 (a loop of 100,000 calls, a filter keeping 1 %), bpf/stack, bpf/stackret
# (--stack and a return filter every call meets), issue 41's bpf/args and bpf/deref
# (--args, and --deref: the structs behind every pointer parameter), and the peer, retsnoop/stack and
# retsnoop/T (its stack mode and -T on the same root and the functions function_graph
# shows under it): DCG_BENCH_RETSNOOP=FILE, else ~/.cache/dcg-retsnoop/retsnoop, which
# bench/build-retsnoop.sh builds (from GitHub, or from the git directories it is given).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kernel=${1:-7.2-cloud}
n=${2:-3000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build --release -q -p dcg --bin dcg -p dwarfscan-cli --bin dwarfscan \
	--manifest-path "$here/Cargo.toml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $kernel in
testkernel)
	kdir=$(bash "$here/tests/kernels/testkernel/build.sh")
	engines=fgraph,bpf,bpf/user ;;
*)
	kdir=$(bash "$here/tests/kernels/fetch-debian-kernel.sh" "$kernel")
	engines=bpf,bpf/user,fgraph ;;
esac
# DCG_BENCH_ENGINES=bpf measures one engine only.
engines=${DCG_BENCH_ENGINES:-$engines}
# DCG_BENCH_BASELINE=DIR: DIR/dcg, an older build, runs each engine too, just before this
# tree's, in the same boot (rows ENGINE@base): a change's before and after on one clock;
# with DIR/dwarfscan, on a db of its own format.
base=()
if [ -n "${DCG_BENCH_BASELINE:-}" ]; then
	[ -x "$DCG_BENCH_BASELINE/dcg" ] || { echo "kernel-engines: no $DCG_BENCH_BASELINE/dcg" >&2; exit 1; }
	base=(--add "$DCG_BENCH_BASELINE/dcg:/bin/dcg-base")
	# The older build reads the db its own dwarfscan writes (the format may have moved
	# on since): /dcg/k-base.sigdb, when DIR/dwarfscan is there.
	if [ -x "$DCG_BENCH_BASELINE/dwarfscan" ]; then
		"$DCG_BENCH_BASELINE/dwarfscan" -q "$kdir/vmlinux" -o "$tmp/k-base.sigdb"
		base+=(--add "$tmp/k-base.sigdb:/dcg/k-base.sigdb")
	fi
	engines=$(echo "$engines" | tr , '\n' | sed 's/.*/&@base,&/' | paste -sd,)
fi
# DCG_BENCH_ICOUNT=1: the guest's clock counts instructions (qemu -icount shift=0: one
# instruction a nanosecond, idle time skipped), so its times and ratios do not move with
# the host's load; time spent in qemu itself (its soft TLB refilled after each of the
# kernel's text pokes) is not counted. Without it, wall time on a quiet host.
qextra=()
[ "${DCG_BENCH_ICOUNT:-0}" = 0 ] || qextra=(-- -icount shift=0,sleep=off)
peer=()
if [[ ",$engines," == *,retsnoop/* ]]; then
	rs=${DCG_BENCH_RETSNOOP:-$HOME/.cache/dcg-retsnoop/retsnoop}
	[ -x "$rs" ] || rs=$(bash "$here/bench/build-retsnoop.sh")
	peer=(--add "$rs:/bin/retsnoop")
fi
"$CARGO_TARGET_DIR/release/dwarfscan" -q "$kdir/vmlinux" -o "$tmp/k.sigdb"
gcc -O2 -static -o "$tmp/syscall-loop" "$here/tests/qemu/progs/syscall-loop.c"
bash "$here/tests/qemu/mkinitramfs.sh" "$tmp/g.cpio.gz" \
	--add "$CARGO_TARGET_DIR/release/dcg:/bin/dcg" \
	--add "$here/tests/qemu/e2e/lib.sh:/dcg/lib.sh" \
	--add "$tmp/k.sigdb:/dcg/k.sigdb" \
	--add "$tmp/syscall-loop:/dcg/syscall-loop" "${base[@]}" "${peer[@]}" \
	--init "$here/tests/qemu/e2e/load.sh" --timeout 2400 >/dev/null
bash "$here/tests/qemu/run-guest.sh" --kernel "$kdir/vmlinuz" --initrd "$tmp/g.cpio.gz" \
	--smp "${DCG_BENCH_SMP:-2}" --timeout 2460 --append "dcg.printk=1 dcg.engines=$engines dcg.calls=$n" \
	"${qextra[@]}" >"$tmp/console.txt"
# DCG_BENCH_CONSOLE=FILE keeps the guest's whole output.
[ -z "${DCG_BENCH_CONSOLE:-}" ] || cp "$tmp/console.txt" "$DCG_BENCH_CONSOLE"

sec() { # NAME: the section's text
	awk -v b="=====BEGIN $1=====" -v e="=====END $1=====" \
		'$0 == b {on = 1; next} $0 == e {on = 0} on' "$tmp/console.txt"
}
val() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" | head -1; } # KEY < text
untraced=$(sec untraced | val per_call_ns)
after=$(sec untraced-after | val per_call_ns)
settled=$(sec untraced | sed -n 's/^settled after \([0-9]*\) s/\1/p')
echo "Kernel: $kernel ($(cat "$kdir/release" 2>/dev/null || basename "$kdir")), qemu TCG, ${DCG_BENCH_SMP:-2} vCPUs${qextra[*]:+, clock: -icount shift=0};"
echo "loop: $n failing access(2) calls, traced root do_faccessat; untraced $((untraced / 1000)) us/call" \
	"(once the boot's work was done, after ${settled:-?} s; $((${after:-0} / 1000)) us after the sessions)."
echo
# PHASE < stderr: the time of dcg's debug line for PHASE (DCG_KTRACE_DEBUG).
at() { sed -n "s/^dcg debug \[dcg_ktrace\] *\([0-9.]*\): $1.*/\1/p" | head -1; }
secs() { awk -v a="$1" -v b="${2:-$1}" 'BEGIN {printf "%.1f", (a + b) / 2000}'; } # MS [MS]
printf '%-11s %7s %10s %9s %9s %9s %9s %9s %8s %8s\n' engine "us/call" "raw fg" ratio start_s stop_s \
	fg_on_s fg_off_s lost missed
met=()
declare -A per_ns ratio_of
for e in ${engines//,/ }; do
	d=$(sec "dcg-$e")
	rb=$(sec "raw-$e-before")
	ra=$(sec "raw-$e-after")
	raw=$(( ($(echo "$rb" | val per_call_ns) + $(echo "$ra" | val per_call_ns)) / 2 ))
	mine=$(echo "$d" | val per_call_ns)
	if [ -z "$mine" ]; then
		# dcg refused or failed before the loop ran: say why instead of a row of zeros.
		printf '%-8s refused: %s\n' "$e" "$(echo "$d" | grep -v '^dcg debug' | grep -m1 '^dcg' | cut -c1-150)"
		met+=("$e: not run")
		continue
	fi
	lost=$(echo "$d" | sed -n 's/.*events were lost: \([0-9]*\).*/\1/p' | head -1)
	# Calls the kernel skipped while the BPF program recorded (dcg's note).
	missed=$(echo "$d" | sed -n 's/.*note: \([0-9]*\) calls of the traced tasks are missing.*/\1/p' | head -1)
	ratio=$(awk -v a="$mine" -v b="$raw" 'BEGIN {printf "%.2f", a / b}')
	start=$(secs "$(echo "$d" | val start_ms)")
	stop=$(secs "$(echo "$d" | val stop_ms)")
	fg_on=$(secs "$(echo "$rb" | val start_ms)" "$(echo "$ra" | val start_ms)")
	fg_off=$(secs "$(echo "$rb" | val stop_ms)" "$(echo "$ra" | val stop_ms)")
	printf '%-11s %7s %10s %9s %9s %9s %9s %9s %8s %8s\n' "$e" "$((mine / 1000))" "$((raw / 1000))" \
		"${ratio}x" "$start" "$stop" "$fg_on" "$fg_off" "${lost:-0}" "${missed:-0}"
	per_ns[$e]=$mine
	ratio_of[$e]=$ratio
	# The BPF engine's stop: detaching, then decoding the records deferred while the
	# command ran (detach_s+decode_s, under stop_s).
	t1=$(echo "$d" | at detaching)
	t2=$(echo "$d" | at detached)
	t3=$(echo "$d" | at "loop ended")
	[ -z "$t1$t2$t3" ] || printf '%-11s %7s %10s %9s %9s %9s\n' "" "" "" "" "" \
		"$(awk -v a="$t1" -v b="$t2" -v c="$t3" 'BEGIN {printf "%.1f+%.1f", b - a, c - b}')"
	# The user's invocation: issue 39's 1.1x; the benchmark's: issue 26's 1.3x.
	lim=1.3
	case $e in */user*) lim=1.1 ;; esac
	met+=("$e: $(awk -v r="$ratio" -v lim="$lim" -v s="$start" -v on="$fg_on" -v t="$stop" -v off="$fg_off" \
		-v l="${lost:-0}" -v m="${missed:-0}" 'BEGIN {
		printf "start %s, stop %s, per-call %s, lost %s",
			(s <= on ? "met" : "NOT met"), (t <= off ? "met" : "NOT met"),
			(r <= lim ? "met" : "NOT met"), (l + m == 0 ? "met" : "NOT met") }')")
done
# Issue 40: a call rejected at entry by a filter against a recorded one (both over the
# untraced loop), and what --stack adds to each top-level call (every call is one here).
if [ -n "${per_ns[bpf]:-}" ]; then
	own=$((per_ns[bpf] - untraced))
	if [ -n "${per_ns[bpf/filter]:-}" ]; then
		rej=$((per_ns[bpf/filter] - untraced))
		echo
		echo "issue 40: a call rejected at entry (bpf/filter) costs $((rej / 1000)) us over the untraced loop," \
			"$(awk -v a=$rej -v b=$own 'BEGIN {printf "%.2f", a / b}')x a recorded call's $((own / 1000)) us (bpf; goal <= 0.2x)"
	fi
	if [ -n "${per_ns[bpf/filter1]:-}" ]; then
		one=$((per_ns[bpf/filter1] - untraced))
		d=$(sec dcg-bpf/filter1)
		echo "issue 40: a filter keeping 1 % (bpf/filter1) costs $((one / 1000)) us a call over the untraced loop," \
			"$(awk -v a=$one -v b=$own 'BEGIN {printf "%.2f", a / b}')x the unfiltered session's (bpf; goal <= 0.2x);" \
			"trees kept: $(echo "$d" | sed -n 's/^roots: //p'), $(echo "$d" | sed -n 's/^kept: //p')"
	fi
	if [ -n "${per_ns[bpf/stack]:-}" ]; then
		echo "issue 40: --stack (bpf/stack) adds $(((per_ns[bpf/stack] - per_ns[bpf]) / 1000)) us per top-level call," \
			"beside the recorded call's own $((own / 1000)) us (bpf)"
	fi
fi
# Issue 41: --deref against --args, both over the untraced loop.
if [ -n "${per_ns[bpf/args]:-}" ] && [ -n "${per_ns[bpf/deref]:-}" ]; then
	a=$((per_ns[bpf/args] - untraced))
	d=$((per_ns[bpf/deref] - untraced))
	echo
	echo "issue 41: --deref (bpf/deref) costs $((d / 1000)) us a call over the untraced loop," \
		"$(awk -v a=$d -v b=$a 'BEGIN {printf "%.2f", a / b}')x the same call with --args (bpf/args, $((a / 1000)) us; goal <= 1.5x);" \
		"deref records: $(sec dcg-bpf/deref | sed -n 's/^deref records: //p')"
	if [ -n "${per_ns[bpf/deref64]:-}" ]; then
		d64=$((per_ns[bpf/deref64] - untraced))
		echo "issue 41: --deref cut at 64 bytes an argument (bpf/deref64) costs $((d64 / 1000)) us," \
			"$(awk -v a=$d64 -v b=$a 'BEGIN {printf "%.2f", a / b}')x --args: the same reads and records, fewer bytes"
	fi
fi
# Issue 40 against the peer: dcg with --stack and a return filter, every matching tree
# recorded, at or below retsnoop's stack mode.
if [ -n "${ratio_of[bpf/stackret]:-}" ] && [ -n "${ratio_of[retsnoop/stack]:-}" ]; then
	echo "issue 40: dcg --stack --filter 'ret == -ENOENT' (bpf/stackret) ${ratio_of[bpf/stackret]}x raw function_graph," \
		"$(sec dcg-bpf/stackret | sed -n 's/^roots: //p') of $n trees; retsnoop's stack mode ${ratio_of[retsnoop/stack]}x," \
		"$(sec dcg-retsnoop/stack | sed -n 's/^sessions: //p') sessions${ratio_of[retsnoop/T]:+; retsnoop -T ${ratio_of[retsnoop/T]}x, $(sec dcg-retsnoop/T | sed -n 's/^sessions: //p') sessions}" \
		"(retsnoop given the root and the $(sec dcg-retsnoop/stack | sed -n 's/^callees of .* for retsnoop: //p' | head -1) functions function_graph showed under it)" \
		"(goal: dcg <= retsnoop's stack mode, every tree)"
fi
echo
echo "ratio: the loop's time per call under dcg over raw function_graph's (same boot, same"
echo "graph filter, mean of the runs before and after); start_s/stop_s: dcg launched to the"
echo "loop's first call, and the loop's end to dcg's exit; fg_on_s/fg_off_s: switching"
echo "current_tracer to function_graph and back (mean of the runs before and after dcg);"
echo "lost: records dropped (ring full); missed: calls the kernel skipped while the BPF"
echo "program recorded (dcg's note); under stop_s, detach_s+decode_s: the BPF engine"
echo "detaching its programs, then decoding the records it deferred while the command ran"
echo "(about 1 us a record natively, 25-30 times that on TCG). TCG's speed drifts between"
echo "boots: compare several runs."
echo "Targets (issue 26): start_s <= fg_on_s, stop_s <= fg_off_s, ratio <= 1.3x (issue 39: 1.1x for"
echo "ENGINE/user), 0 lost (lost + missed)."
printf '  %s\n' "${met[@]}"
grep -q 'warnings: 0' <(sec dmesg) || { echo "kernel WARNING or BUG during the run" >&2; exit 1; }
