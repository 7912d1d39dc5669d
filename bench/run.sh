#!/usr/bin/env bash
# Every performance figure of dcg, measured on this machine against its reference in the
# same run, written to BENCHMARKS.md (table + machine info + date).
#
#   bash bench/run.sh            # all benchmarks (downloads the Debian kernels on first use)
#
# Each figure comes from its own script, which can also be run alone:
#   bench/scan-vs-pahole.sh      dwarfscan vs pahole -J on the Debian 6.12 cloud vmlinux
#   bench/whole-kernel.sh        Debian 7.2 cloud: vmlinux plus all its debug modules
#   cargo bench -p sigdb         sigdb open / by_addr / by_name (criterion)
#   bench/decode-throughput.sh   dcg decode vs wc -l on the same ≥ 1 M-line file
#   bench/uprobe-cost.sh         dcg trace vs the same uprobes placed by hand
#   bench/user-engines.sh        the in-process and uprobe engines vs uftrace
#   bench/kernel-engines.sh      the kernel engines under load vs raw function_graph (qemu)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # NAME CMD...: run one benchmark, keep its output, never stop the others
	local name=$1; shift
	echo "== $name" >&2
	if "$@" >"$out/$name.txt" 2>"$out/$name.err"; then
		cat "$out/$name.txt" >&2
	else
		{ echo "(failed: $*)"; tail -5 "$out/$name.err"; } | tee -a "$out/$name.txt" >&2
	fi
}

run scan bench/scan-vs-pahole.sh
run kernel bench/whole-kernel.sh
run sigdb bash -c "cargo bench -q -p sigdb --bench lookup 2>&1 | grep -E '^(by_addr|by_name|open|from_bytes|db:)|time:'"
run decode bench/decode-throughput.sh
if [ -x bench/uprobe-cost.sh ]; then run uprobe bench/uprobe-cost.sh; fi
run userengines bench/user-engines.sh
run engines72 bench/kernel-engines.sh 7.2-cloud
run engines612 bench/kernel-engines.sh 6.12-cloud
run enginestk bench/kernel-engines.sh testkernel

{
	echo "# Benchmarks"
	echo
	echo "Written by \`bash bench/run.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Every figure is"
	echo "measured against its reference in the same run, on the same machine."
	echo
	echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')),"
	echo "$(free -g | awk '/Mem:/{print $2}') GiB RAM, kernel $(uname -r), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	for name in scan kernel sigdb decode uprobe userengines engines72 engines612 enginestk; do
		[ -f "$out/$name.txt" ] || continue
		case $name in
			scan) echo "## dwarfscan vs pahole (Debian 6.12 cloud vmlinux)" ;;
			kernel) echo "## The whole Debian 7.2 cloud kernel: vmlinux plus every debug module" ;;
			sigdb) echo "## sigdb lookups (criterion, 100,000-function db; open of a 2 MB db)" ;;
			decode) echo "## dcg decode throughput vs wc -l" ;;
			uprobe) echo "## User-space tracing cost: dcg trace vs hand-placed uprobes" ;;
			userengines) echo "## User-space engines vs uftrace (in process: -pg, patchable, plain builds; uprobes)" ;;
			engines72) echo "## Kernel engines under load vs raw function_graph: Debian 7.2 cloud (qemu)" ;;
			engines612) echo "## Kernel engines under load vs raw function_graph: Debian 6.12 cloud (qemu)" ;;
			enginestk) echo "## Kernel engines under load vs raw function_graph: the test kernel (qemu)" ;;
		esac
		echo
		echo '```'
		cat "$out/$name.txt"
		echo '```'
		echo
	done
} >BENCHMARKS.md.tmp
mv BENCHMARKS.md.tmp BENCHMARKS.md
echo "wrote BENCHMARKS.md" >&2
