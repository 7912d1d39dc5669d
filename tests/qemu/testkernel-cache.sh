#!/usr/bin/env bash
# Give the shared test kernel the same cache layout as fetch-debian-kernel.sh, so tests
# can treat all kernels alike. shared/ is read-only, hence the cache.
#
#   testkernel-cache.sh [TESTKERNEL_DIR]     (default: ../shared/testkernel next to the repo,
#                                             or $DCG_TESTKERNEL)
# Prints the cache directory ($DCG_KCACHE or $HOME/.cache/dcg-kernels)/testkernel with
#   vmlinuz (-> bzImage)  vmlinux (xz -d of vmlinux.xz)  config  System.map  release
#   build-id  dbg-modules/ (the unstripped .ko files)
# Idempotent: vmlinux is decompressed again only when the source changed.
set -euo pipefail
die() { echo "testkernel-cache: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
src=${1:-${DCG_TESTKERNEL:-}}
if [ -z "$src" ]; then
  for c in "$here/../../../shared/testkernel"; do
    [ -r "$c/bzImage" ] && { src=$c; break; }
  done
fi
[ -n "$src" ] && [ -r "$src/bzImage" ] || die "test kernel not found (give its directory or set DCG_TESTKERNEL)"
[ -r "$src/vmlinux.xz" ] || die "no vmlinux.xz in $src"
command -v xz >/dev/null || die "xz not found (apt-get install xz-utils)"
src=$(cd "$src" && pwd)

dir=${DCG_KCACHE:-$HOME/.cache/dcg-kernels}/testkernel
mkdir -p "$dir"
stamp="$(stat -c '%s %Y' "$src/vmlinux.xz") $src"
if [ ! -s "$dir/vmlinux" ] || [ "$(cat "$dir/.source" 2>/dev/null)" != "$stamp" ]; then
  xz -dc "$src/vmlinux.xz" > "$dir/vmlinux.tmp" || die "cannot decompress $src/vmlinux.xz"
  mv -f "$dir/vmlinux.tmp" "$dir/vmlinux"
  rm -f "$dir/release" "$dir/build-id"
  echo "$stamp" > "$dir/.source"
fi
ln -sfn "$src/bzImage" "$dir/vmlinuz"
ln -sfn "$src/config" "$dir/config"
ln -sfn "$src/System.map" "$dir/System.map"
ln -sfn "$src/modules" "$dir/dbg-modules"
# release = the uname -r of the build (the string after "Linux version" in the image)
if [ ! -s "$dir/release" ] || [ ! -s "$dir/build-id" ]; then
rel=$(strings -n 8 "$dir/vmlinux" | sed -n 's/^Linux version \([^ ]*\) .*/\1/p' | head -1)
[ -n "$rel" ] || die "no 'Linux version' string in vmlinux"
echo "$rel" > "$dir/release"
readelf -n "$dir/vmlinux" | awk '/Build ID/{print $3; exit}' > "$dir/build-id"
[ -s "$dir/build-id" ] || die "vmlinux has no GNU build-id note"
fi
echo "$dir"
