#!/usr/bin/env bash
# Every performance figure of dcg, measured on this machine against its reference in the
# same run, and BENCHMARKS.md rewritten as the current standing.
#
#   bash bench/run.sh              # every measure (downloads the Debian kernels on first use)
#   bash bench/run.sh decode sigdb # only these; the others keep their last result
#   bash bench/run.sh --list       # the measures
#   bash bench/run.sh --write-only # rewrite BENCHMARKS.md from bench/results/, measure nothing
#
# Each measure's last output is kept in bench/results/NAME.txt, its first line saying when
# and on what machine it was taken; BENCHMARKS.md is made from those files (one section a
# measure, its goal beside it), so it always shows the newest figure of each. Older
# figures are in git: `git log -p -- bench/results BENCHMARKS.md`.
#
# Each figure comes from its own script, which can also be run alone:
#   bench/scan-vs-pahole.sh      dwarfscan vs pahole -J on the Debian 6.12 cloud vmlinux
#   bench/whole-kernel.sh        Debian 7.2 cloud: vmlinux plus all its debug modules
#   cargo bench -p sigdb         sigdb open / by_addr / by_name (criterion)
#   bench/members.sh             struct members: vmlinux dbs vs .BTF, member lookup
#   bench/decode-throughput.sh   dcg decode vs wc -l on the same >= 1 M-line file
#   bench/uprobe-cost.sh         dcg trace vs the same uprobes placed by hand
#   bench/user-engines.sh        the in-process and uprobe engines vs uftrace
#   bench/kernel-engines.sh      the kernel engines under load vs raw function_graph (qemu,
#                                on the guest's instruction clock: DCG_BENCH_ICOUNT=1), and
#                                retsnoop (bench/build-retsnoop.sh) on the same loop
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
results=bench/results
mkdir -p "$results"

# The measures, in the order BENCHMARKS.md shows them; for each: title, goal, command.
names=(scan kernel sigdb members decode uprobe userengines engines72 engines612 enginestk filters72 deref72 joint72)
title() {
	case $1 in
	scan) echo "dwarfscan vs pahole -J (Debian 6.12 cloud vmlinux)" ;;
	kernel) echo "The whole Debian 7.2 cloud kernel: vmlinux plus every debug module" ;;
	sigdb) echo "sigdb lookups (criterion; a synthetic 100,000-function db, and a real kernel db when DCG_BENCH_DB names one)" ;;
	members) echo "Struct members in the db: Debian 6.12 and 7.2 cloud vmlinux dbs vs their .BTF, member lookup (criterion)" ;;
	decode) echo "dcg decode throughput vs wc -l" ;;
	uprobe) echo "User-space tracing cost: dcg trace vs hand-placed uprobes" ;;
	userengines) echo "User-space engines vs uftrace (in process: -pg, patchable, plain builds; uprobes)" ;;
	engines72) echo "Kernel engines under load vs raw function_graph: Debian 7.2 cloud (qemu, instruction clock)" ;;
	engines612) echo "Kernel engines under load vs raw function_graph: Debian 6.12 cloud (qemu, instruction clock)" ;;
	enginestk) echo "Kernel engines under load vs raw function_graph: the test kernel (qemu, instruction clock)" ;;
	filters72) echo "Kernel filters and stacks, and retsnoop on the same loop: Debian 7.2 cloud, one vCPU (qemu, instruction clock)" ;;
	deref72) echo "Kernel structs behind pointers (--deref) against --args: Debian 7.2 cloud, one vCPU (qemu, instruction clock)" ;;
	joint72) echo "User and kernel calls in one session against each side alone: Debian 7.2 cloud, one vCPU (qemu, instruction clock)" ;;
	esac
}
goal() {
	case $1 in
	scan) echo ">= 6x faster than pahole -J, peak RSS <= 250 MB, db no larger than the vmlinux's .BTF section (issue 27)" ;;
	kernel) echo "peak RSS <= 300 MB, db <= 12.6 MB, >= 20x faster than pahole -J over the same files (issue 27)" ;;
	sigdb) echo "by_addr <= 100 ns, by_name <= 200 ns, open + validate <= 5 ms, first parameter access <= 1 us (issue 15)" ;;
	members) echo "each vmlinux db, members included, <= its .BTF section; a struct's members from a cold block <= 2 us; open + validate <= 5 ms (issue 41)" ;;
	decode) echo ">= 2 M lines/s on one core" ;;
	uprobe) echo "dcg's probe cost <= 1.2x that of the same uprobes placed by hand" ;;
	userengines) echo "in process <= uftrace on both instrumented builds, <= 2 us a call on a plain build (issue 25); in process, a call rejected at entry by --filter <= 0.2x a recorded one, a filter keeping 1 % of the calls <= 0.2x the unfiltered session's overhead with exactly the matching calls kept, --stack's cost stated beside a call's own (issue 40); a call with --deref <= 1.5x the same call with --args, both engines (issue 41)" ;;
	engines72) echo "a call <= 1.0x raw function_graph, no record lost; start and stop within function_graph's own switch on and off (issue 26); the user's invocation (ENGINE/user) <= 1.1x on one CPU and two (issue 39)" ;;
	engines612 | enginestk) echo "as for Debian 7.2" ;;
	filters72) echo "a call rejected at entry by --filter <= 0.2x a recorded one, a filter keeping 1 % of 100,000 calls <= 0.2x the unfiltered session's overhead with exactly the matching calls kept, --stack's cost stated beside a call's own, dcg with --stack and a return filter <= retsnoop's stack mode recording every matching tree (issue 40)" ;;
	deref72) echo "a call with --deref <= 1.5x the same call with --args, over the untraced loop (issue 41)" ;;
	joint72) echo "a user call with --kernel costs no more than the same call traced user-only plus its system calls traced kernel-only (issue 42)" ;;
	esac
}
command_of() {
	case $1 in
	scan) echo "bench/scan-vs-pahole.sh" ;;
	kernel) echo "bench/whole-kernel.sh" ;;
	sigdb) echo "cargo bench -q -p sigdb --bench lookup 2>&1 | grep -E '^(by_addr|by_name|open|from_bytes|first|instances|db:)|time:'" ;;
	members) echo "bench/members.sh" ;;
	decode) echo "bench/decode-throughput.sh" ;;
	uprobe) echo "bench/uprobe-cost.sh" ;;
	userengines) echo "bench/user-engines.sh" ;;
	engines72) echo "DCG_BENCH_ICOUNT=1 bench/kernel-engines.sh 7.2-cloud" ;;
	engines612) echo "DCG_BENCH_ICOUNT=1 bench/kernel-engines.sh 6.12-cloud" ;;
	enginestk) echo "DCG_BENCH_ICOUNT=1 bench/kernel-engines.sh testkernel" ;;
	filters72) echo "DCG_BENCH_SMP=1 DCG_BENCH_ICOUNT=1 DCG_BENCH_ENGINES=bpf,bpf/filter,bpf/filter1,bpf/stack,bpf/stackret,retsnoop/stack,retsnoop/T bench/kernel-engines.sh 7.2-cloud" ;;
	deref72) echo "DCG_BENCH_SMP=1 DCG_BENCH_ICOUNT=1 DCG_BENCH_ENGINES=bpf/args,bpf/deref,bpf/deref64 bench/kernel-engines.sh 7.2-cloud" ;;
	joint72) echo "bench/joint-cost.sh" ;;
	esac
}

if [ "${1:-}" = --list ]; then
	for n in "${names[@]}"; do printf '%-12s %s\n' "$n" "$(title "$n")"; done
	exit 0
fi
want=("$@")
if [ "${1:-}" = --write-only ]; then
	want=()
elif [ ${#want[@]} -eq 0 ]; then
	want=("${names[@]}")
fi
for w in ${want[@]+"${want[@]}"}; do
	[[ " ${names[*]} " == *" $w "* ]] || { echo "bench/run.sh: no measure '$w' (bench/run.sh --list)" >&2; exit 2; }
done

machine() {
	echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB RAM, kernel $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in "${names[@]}"; do
	[[ " ${want[*]-} " == *" $name "* ]] || continue
	cmd=$(command_of "$name")
	echo "== $name: $cmd" >&2
	head="measured $(date -u '+%Y-%m-%d %H:%M UTC') at $(git rev-parse --short HEAD) by \`$cmd\`; $(machine)"
	if bash -c "$cmd" >"$tmp/out" 2>"$tmp/err"; then
		cat "$tmp/out" >&2
		{ echo "$head"; cat "$tmp/out"; } >"$results/$name.txt"
	else
		# A failed run keeps the last good figure; say so and go on with the others.
		echo "bench/run.sh: $name failed (its last result is kept):" >&2
		tail -5 "$tmp/err" >&2
	fi
done

{
	echo "# Benchmarks"
	echo
	echo "Where dcg stands, one section a measure: the newest figure of each, measured against"
	echo "its reference in the same run on the machine named, and its goal. Written by"
	echo "\`bash bench/run.sh [MEASURE...]\` from \`bench/results/\`; the figures of earlier runs"
	echo "and the notes of the issues that moved them are in git:"
	echo "\`git log -p -- BENCHMARKS.md bench/results\` (the file as a log of every pass ends at"
	echo "commit be947c4)."
	for name in "${names[@]}"; do
		f=$results/$name.txt
		echo
		echo "## $(title "$name")"
		echo
		echo "Goal: $(goal "$name")."
		echo
		if [ -f "$f" ]; then
			echo "$(head -1 "$f" | sed 's/^./\U&/')."
			echo
			echo '```'
			tail -n +2 "$f"
			echo '```'
		else
			echo "Not measured yet: \`bash bench/run.sh $name\`."
		fi
	done
} >"$tmp/BENCHMARKS.md"
mv "$tmp/BENCHMARKS.md" BENCHMARKS.md
echo "wrote BENCHMARKS.md ($(wc -l <BENCHMARKS.md) lines)" >&2
