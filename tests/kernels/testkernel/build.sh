#!/usr/bin/env bash
# The test kernel: Debian's linux-source-7.2 (7.2.13-1, pinned in ../pins) built with
# config.sh into the cache, once. It has what Debian's kernels lack (funcgraph-retval,
# funcgraph-retaddr, funcgraph-args) and is small enough to boot in seconds under TCG.
#
#   build.sh          prints $DCG_KCACHE/testkernel (default ~/.cache/dcg-kernels/testkernel):
#                     vmlinuz  vmlinux  config  System.map  release  build-id  dbg-modules/*.ko
#
# The build is reproducible: a fixed tree path (DW_AT_comp_dir), build user, host and
# timestamp, and Debian 12's toolchain (gcc 12.2.0, binutils 2.40, pahole 1.24). The
# result must have the build-id in ./build-id: the captures in tests/data/captures were
# taken on that kernel, and their addresses only mean something on it. ~6 min on 2 cores
# plus a 157 MiB download; needs root (the tree lives at /usr/src/linux-source-7.2 while it
# builds) and the packages of .ci/install-deps.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../debs.sh"
want=$(cat "$here/build-id")
dir=$kcache/testkernel
# The stamp ties a build to this recipe: editing config.sh or this script rebuilds.
stamp=$(cat "$here/build.sh" "$here/config.sh" "$here/../pins" | sha256sum | cut -d' ' -f1)
complete() { [ "$(cat "$dir/.recipe" 2>/dev/null)" = "$stamp" ] && [ -s "$dir/vmlinuz" ]; }
if complete; then echo "$dir"; exit 0; fi
with_lock testkernel
if complete; then echo "$dir"; exit 0; fi
for t in make gcc flex bison bc pahole xz cpio; do
  command -v $t >/dev/null || die "$t not found (run .ci/install-deps.sh as root)"
done
[ -e /usr/include/libelf.h ] || die "libelf-dev missing (run .ci/install-deps.sh as root)"

src=${DCG_TESTKERNEL_TREE:-/usr/src/linux-source-7.2}
log=$kcache/testkernel-build.log
echo "build.sh: building the test kernel in $src (~6 min on 2 cores; log: $log)" >&2
tmp=$(mktemp -d "$kcache/.testkernel-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
deb_extract linux-source-7.2 "$tmp"
rm -rf "$src"; mkdir -p "$(dirname "$src")"
tar -xf "$tmp/usr/src/linux-source-7.2.tar.xz" -C "$tmp"
mv "$tmp/linux-source-7.2" "$src"
export KBUILD_BUILD_USER=dcg KBUILD_BUILD_HOST=dcg KBUILD_BUILD_TIMESTAMP=2026-11-21
(
  cd "$src"
  sh "$here/config.sh"
  for o in FUNCTION_GRAPH_RETVAL FUNCTION_GRAPH_RETADDR FUNCTION_TRACE_ARGS DEBUG_INFO_BTF; do
    grep -q "^CONFIG_$o=y" .config || die "config.sh did not enable CONFIG_$o"
  done
  make -j"$(nproc)" bzImage modules
) > "$log" 2>&1 || die "kernel build failed (last lines of $log):$(tail -5 "$log" | sed 's/^/\n  /')"

out=$kcache/.testkernel.new
rm -rf "$out"; mkdir -p "$out/dbg-modules"
cp "$src/arch/x86/boot/bzImage" "$out/vmlinuz"
cp "$src/vmlinux" "$src/System.map" "$out/"
cp "$src/.config" "$out/config"
cp "$src/fs/binfmt_misc.ko" "$src/samples/kprobes/kprobe_example.ko" \
   "$src/samples/kprobes/kretprobe_example.ko" \
   "$src/samples/trace_events/trace-events-sample.ko" "$out/dbg-modules/"
cat "$src/include/config/kernel.release" > "$out/release"
readelf -n "$out/vmlinux" | awk '/Build ID/{print $3; exit}' > "$out/build-id"
got=$(cat "$out/build-id")
[ "$got" = "$want" ] || die "the build is not the known one: vmlinux build-id $got, expected $want
  (tree $src kept; a different compiler, binutils or pahole than Debian 12's changes the build)"
rm -rf "$src"
echo "$stamp" > "$out/.recipe"
rm -rf "$dir"; mv "$out" "$dir"
echo "$dir"
