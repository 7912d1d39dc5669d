#!/usr/bin/env bash
# Boot one kernel with tests/qemu/guest/probe-tracing.sh and save the guest's output
# (from DCG-GUEST-START to DCG-GUEST-EXIT) with a comment header.
#
#   probe-kernel.sh KERNEL_DIR OUT.txt [--smp N] [--title TEXT]
#
# KERNEL_DIR: a cache directory as printed by tests/kernels/fetch-debian-kernel.sh or
# tests/kernels/testkernel/build.sh
# (needs vmlinuz; release and build-id are put in the header when present).
# Under TCG the probe takes ~2 min on the test kernel and ~6 min on a Debian cloud kernel
# (each switch to function_graph patches ~50,000 functions: 10-20 s).
set -euo pipefail
die() { echo "probe-kernel: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)

[ $# -ge 2 ] || die "usage: probe-kernel.sh KERNEL_DIR OUT.txt [--smp N] [--title TEXT]"
kdir=$1; out=$2; shift 2
smp=2; title=""
while [ $# -gt 0 ]; do
  case "$1" in
    --smp) [ $# -ge 2 ] || die "--smp needs a number"; smp=$2; shift 2 ;;
    --title) [ $# -ge 2 ] || die "--title needs text"; title=$2; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ -r "$kdir/vmlinuz" ] || die "no vmlinuz in $kdir"
rel=$(cat "$kdir/release" 2>/dev/null || echo unknown)
bid=$(cat "$kdir/build-id" 2>/dev/null || echo unknown)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dcg-probe.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$here/mkinitramfs.sh" "$tmp/probe.cpio.gz" --init "$here/guest/probe-tracing.sh" --timeout 900 >/dev/null
set +e
"$here/run-guest.sh" --kernel "$kdir/vmlinuz" --initrd "$tmp/probe.cpio.gz" --smp "$smp" \
  --timeout 1000 --log "$tmp/console.log" >/dev/null 2>"$tmp/run.err"
rc=$?
set -e
cat "$tmp/run.err" >&2
if [ "$rc" != 0 ]; then cp "$tmp/console.log" "$out.console"; die "guest failed (exit $rc); console kept in $out.console"; fi
{
  echo "# dcg guest capture: ${title:-$(basename "$kdir")} -- kernel release $rel, vmlinux build-id $bid"
  echo "# produced by: tests/qemu/probe-kernel.sh $kdir $(basename "$out") --smp $smp"
  echo "#   = mkinitramfs.sh --init tests/qemu/guest/probe-tracing.sh; run-guest.sh --smp $smp"
  echo "#   (qemu-system-x86_64 -accel tcg,thread=single -cpu max -m 1024, append \"console=ttyS0 quiet panic=-1 oops=panic\")"
  echo "# $(grep '^run-guest:' "$tmp/run.err" | tail -1)"
  echo "# sections: =====BEGIN name===== ... =====END name=====; guest output verbatim below"
  sed -n '/DCG-GUEST-START$/,/DCG-GUEST-EXIT=/{s/^.*DCG-GUEST-START$/DCG-GUEST-START/;p}' "$tmp/console.log"
} > "$out"
echo "$out"
