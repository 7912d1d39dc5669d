#!/usr/bin/env bash
# The test kernel: Debian's linux-source-7.2 (7.2.13-1, pinned in ../pins) with dcg's
# Kbuild patch (dwarfscan/kbuild/linux-7.2.patch), built with config.sh into the cache.
# It has what Debian's kernels lack (funcgraph-retval, funcgraph-retaddr, funcgraph-args),
# is small enough to boot in seconds under TCG, and is configured
# CONFIG_DEBUG_INFO_DCG=m: the kernel build itself runs dwarfscan on vmlinux and the
# modules and builds the db module, dcg_sigdb.ko, which `make modules_install` installs.
#
#   build.sh          prints $DCG_KCACHE/testkernel-dcg (default ~/.cache/dcg-kernels/...):
#                     vmlinuz  vmlinux  config  System.map  release  build-id
#                     dbg-modules/*.ko (the four modules, with DWARF)
#                     modules/lib/modules/RELEASE/ (what `make modules_install` installed:
#                     the modules, kernel/dcg/dcg_sigdb.ko, modules.dep)
#
# The kernel build runs $DWARFSCAN (default: this checkout's target/release/dwarfscan,
# built with cargo when missing). The build tree is kept in the cache
# (testkernel-dcg-tree): when dwarfscan changes, only `make modules modules_install` runs
# again (the db module is remade; vmlinux is untouched).
#
# The build is reproducible: a fixed tree path (DW_AT_comp_dir), build user, host and
# timestamp, and Debian 12's toolchain (gcc 12.2.0, binutils 2.40, pahole 1.24). The
# result must have the build-id in ./build-id: the captures in tests/data/captures were
# taken on that kernel, and their addresses only mean something on it. ~7 min on 2 cores
# plus a 157 MiB download; needs root (the tree lives at /usr/src/linux-source-7.2 while it
# builds) and the packages of .ci/install-deps.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
source "$here/../debs.sh"
want=$(cat "$here/build-id")
dir=$kcache/testkernel-dcg
tree=$kcache/testkernel-dcg-tree
patch=$repo/dwarfscan/kbuild/linux-7.2.patch

dwarfscan=${DWARFSCAN:-${CARGO_TARGET_DIR:-$repo/target}/release/dwarfscan}
if [ -z "${DWARFSCAN:-}" ] && [ ! -x "$dwarfscan" ]; then
  (cd "$repo" && cargo build --release --quiet -p dwarfscan-cli) >&2 ||
    die "building dwarfscan failed (cargo build --release -p dwarfscan-cli)"
fi
[ -x "$dwarfscan" ] || die "DWARFSCAN=$dwarfscan is not an executable"
dwarfscan=$(cd "$(dirname "$dwarfscan")" && pwd)/$(basename "$dwarfscan")

# The stamp ties a build to this recipe: editing config.sh, this script, the pins or the
# patch rebuilds. The db module is tied to the dwarfscan that wrote it.
stamp=$(cat "$here/build.sh" "$here/config.sh" "$here/../pins" "$patch" | sha256sum | cut -d' ' -f1)
tool=$(sha256sum < "$dwarfscan" | cut -d' ' -f1)
complete() { [ "$(cat "$dir/.recipe" 2>/dev/null)" = "$stamp" ] && [ -s "$dir/vmlinuz" ]; }
current() { complete && [ "$(cat "$dir/.dwarfscan" 2>/dev/null)" = "$tool" ]; }
if current; then echo "$dir"; exit 0; fi
with_lock testkernel
if current; then echo "$dir"; exit 0; fi
for t in make gcc flex bison bc pahole xz cpio depmod; do
  command -v $t >/dev/null || die "$t not found (run .ci/install-deps.sh as root)"
done
[ -e /usr/include/libelf.h ] || die "libelf-dev missing (run .ci/install-deps.sh as root)"

src=${DCG_TESTKERNEL_TREE:-/usr/src/linux-source-7.2}
log=$kcache/testkernel-build.log
export KBUILD_BUILD_USER=dcg KBUILD_BUILD_HOST=dcg KBUILD_BUILD_TIMESTAMP=2026-11-21
export DWARFSCAN=$dwarfscan
# The tree is built at $src and kept as $tree between builds, whatever way this ends.
trap '[ -d "$src" ] && [ -e "$src/.dcg-recipe" ] && [ ! -e "$tree" ] && mv "$src" "$tree"' EXIT
if [ "$(cat "$tree/.dcg-recipe" 2>/dev/null)" = "$stamp" ]; then
  echo "build.sh: remaking the test kernel's db module in $src (log: $log)" >&2
  rm -rf "$src"; mkdir -p "$(dirname "$src")"; mv "$tree" "$src"
  # Kbuild remakes the db when the dwarfscan binary is newer than it; cargo can hand back
  # an older build of it with its old time, so the db goes and is made again for sure.
  rm -f "$src/kernel/dcg/sigdb.bin"
else
  echo "build.sh: building the test kernel in $src (~7 min on 2 cores; log: $log)" >&2
  tmp=$(mktemp -d "$kcache/.testkernel-deb.XXXXXX")
  deb_extract linux-source-7.2 "$tmp"
  rm -rf "$src" "$tree"; mkdir -p "$(dirname "$src")"
  tar -xf "$tmp/usr/src/linux-source-7.2.tar.xz" -C "$tmp"
  mv "$tmp/linux-source-7.2" "$src"
  rm -rf "$tmp"
  (
    cd "$src"
    patch -p1 -s < "$patch"
    sh "$here/config.sh"
    for o in FUNCTION_GRAPH_RETVAL FUNCTION_GRAPH_RETADDR FUNCTION_TRACE_ARGS DEBUG_INFO_BTF; do
      grep -q "^CONFIG_$o=y" .config || die "config.sh did not enable CONFIG_$o"
    done
    grep -q "^CONFIG_DEBUG_INFO_DCG=m" .config ||
      die "config.sh did not enable CONFIG_DEBUG_INFO_DCG=m (does '$DWARFSCAN --version' run?)"
  ) > "$log" 2>&1 || die "configuring the kernel failed (last lines of $log):$(tail -5 "$log" | sed 's/^/\n  /')"
  echo "$stamp" > "$src/.dcg-recipe"
fi
out=$kcache/.testkernel-dcg.new
rm -rf "$out"; mkdir -p "$out/dbg-modules" "$out/modules"
(
  cd "$src"
  make -j"$(nproc)" DWARFSCAN="$DWARFSCAN" bzImage modules
  make DWARFSCAN="$DWARFSCAN" modules_install INSTALL_MOD_PATH="$out/modules"
  rm -f "$out"/modules/lib/modules/*/build   # a link to this tree, which moves
) >> "$log" 2>&1 || die "kernel build failed (last lines of $log):$(tail -5 "$log" | sed 's/^/\n  /')"

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
  (tree kept in $tree; a different compiler, binutils or pahole than Debian 12's changes the build)"
ko=$out/modules/lib/modules/$(cat "$out/release")/kernel/kernel/dcg/dcg_sigdb.ko
[ -s "$ko" ] || die "make modules_install did not install the db module ($ko)"
echo "$stamp" > "$out/.recipe"
echo "$tool" > "$out/.dwarfscan"
rm -rf "$dir"; mv "$out" "$dir"
echo "$dir"
