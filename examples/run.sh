#!/usr/bin/env bash
# The main job end to end:
#   1. user space, on this host: build dcg → compile examples/demo.c with DWARF →
#      dwarfscan it into a signature db → show its signatures → trace it live in process
#      (root) → report the call graph;
#   2. the kernel, in qemu: the test kernel (tests/kernels/testkernel, built from Debian's
#      linux-source-7.2 on the first run, with dwarfscan/kbuild's patch and
#      CONFIG_DEBUG_INFO_DCG=m: the kernel build itself runs dwarfscan on vmlinux and the
#      modules and makes the db module dcg_sigdb.ko) → in the guest `modprobe dcg_sigdb`
#      and `dcg trace --show-retvals --func pidfd_create -- inline-calls pidfd` with no
#      --db (pidfd_create is inlined into the pidfd_open syscall), then a tree with
#      arguments under do_sys_openat2 (root).
#
#   bash examples/run.sh
#
# First run: ~10 min more for the kernel (a 157 MiB download and a kernel build, cached in
# ~/.cache/dcg-kernels); afterwards about a minute for both parts.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/example
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

# dcg's BPF program is compiled by clang against libelf at build time: packages first
# (root; without root, what is installed is used).
if [ "$(id -u)" = 0 ]; then
	step "packages (.ci/install-deps.sh)"
	bash .ci/install-deps.sh
fi

step "build dcg and dwarfscan (release)"
cargo build --release --quiet -p dwarfscan-cli -p dcg -p dcg-recorder
bin=target/release

step "compile examples/demo.c with gcc -O2 -g"
gcc -O2 -g examples/demo.c -o "$out/demo"

step "dwarfscan $out/demo -o $out/demo.sigdb --stats"
"$bin/dwarfscan" "$out/demo" -o "$out/demo.sigdb" --stats

step "dcg sig: the signatures, with where each parameter lives at entry"
"$bin/dcg" sig --db "$out/demo.sigdb" parse_line is_comment classify find_entry log_entry

step "dcg dump --json (first 2 functions)"
"$bin/dcg" dump --db "$out/demo.sigdb" --json | head -n 2

if [ "$(id -u)" = 0 ] && { [ -e /sys/kernel/tracing/uprobe_events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; } && [ -e /sys/kernel/tracing/uprobe_events ]; then
	step "dcg trace: every demo function, live (in process), with typed arguments and return values"
	echo "(the demo's own output first; the call tree is written to $out/demo.tree)"
	"$bin/dcg" trace --db "$out/demo.sigdb" --show-retvals --args \
		--func "$out/demo:parse_line" --func "$out/demo:is_comment" --func "$out/demo:classify" \
		--func "$out/demo:find_entry" --func "$out/demo:log_entry" \
		--trace-output "$out/demo.tree" --output "$out/demo.calls" -- "$out/demo"
	step "the call tree"
	cat "$out/demo.tree"
	step "dcg report: calls, errors by errno, caller → callee edges"
	"$bin/dcg" report "$out/demo.calls"
else
	echo
	echo "(skipping the live trace: it needs root and uprobes)"
fi

if [ "$(id -u)" != 0 ]; then
	echo
	echo "(skipping the kernel part: it needs root to install qemu and build the test kernel)"
	exit 0
fi
step "the kernel: the test kernel, built with CONFIG_DEBUG_INFO_DCG=m (first run: download + ~7 min build)"
kernel=$(bash tests/kernels/testkernel/build.sh)
release=$(cat "$kernel/release")
echo "test kernel: $kernel (release $release, build-id $(cat "$kernel/build-id"))"
grep '^CONFIG_DEBUG_INFO_DCG=' "$kernel/config"
modroot=$kernel/modules/lib/modules/$release
echo "the kernel build ran dwarfscan on vmlinux and its modules; make modules_install installed:"
(cd "$modroot" && ls -l kernel/kernel/dcg/dcg_sigdb.ko && grep dcg_sigdb modules.dep)
gcc -O2 -static -o "$out/inline-calls" tests/qemu/progs/inline-calls.c

step "boot it in qemu (TCG): modprobe dcg_sigdb, dcg trace --show-retvals --func pidfd_create"
bash tests/qemu/mkinitramfs.sh "$out/guest.cpio.gz" --add "$bin/dcg:/bin/dcg" \
	--add "$modroot:/lib/modules/$release" --add "$out/inline-calls:/dcg/inline-calls" \
	--init examples/kernel-guest.sh --timeout 500
rc=0
bash tests/qemu/run-guest.sh --kernel "$kernel/vmlinuz" --initrd "$out/guest.cpio.gz" \
	--smp 2 --timeout 700 --append dcg.printk=1 > "$out/guest.log" 2>&1 || rc=$?
sed -n '/^DCG-GUEST-START/,/^DCG-GUEST-EXIT/p' "$out/guest.log" | sed '1d;$d'
[ $rc = 0 ] || { echo "the guest failed (exit $rc); console log: $out/guest.log" >&2; exit 1; }
