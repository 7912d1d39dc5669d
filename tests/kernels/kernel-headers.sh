#!/usr/bin/env bash
# A Debian kernel's module build tree, without installing anything system-wide:
#
#   kernel-headers.sh KDIR
#
# KDIR is a kernel cache directory of fetch-debian-kernel.sh (its `release` file names the
# exact release, e.g. 6.12.117+deb12-cloud-amd64). Fetches linux-headers-REL, its -common
# part and linux-kbuild (pinned in `pins`) into $DCG_KCACHE/debs, extracts them into KDIR/headers/, and
# points the flavour Makefile's absolute `include /usr/src/...` at the extracted tree.
# Prints the directory to pass to `make -C DIR M=MODDIR modules`. Idempotent.
set -euo pipefail
source "$(dirname "$0")/debs.sh"
kdir=${1:?usage: kernel-headers.sh KDIR}
rel=$(cat "$kdir/release")
root=$kdir/headers
build=$root/usr/src/linux-headers-$rel
if [ -s "$build/Makefile" ] && [ -s "$build/Module.symvers" ]; then echo "$build"; exit 0; fi
base=${rel%-*-*}            # 6.12.117+deb12-cloud-amd64 -> 6.12.117+deb12
pkgs=("linux-headers-$rel" "linux-headers-$base-common" "linux-kbuild-$base")
with_lock "headers-$rel"
if [ -s "$build/Makefile" ] && [ -s "$build/Module.symvers" ]; then echo "$build"; exit 0; fi
rm -rf "$root.tmp"; mkdir -p "$root.tmp"
for p in "${pkgs[@]}"; do deb_extract "$p" "$root.tmp"; done
sed -i "s|^include /usr/src/|include $root/usr/src/|" "$root.tmp/usr/src/linux-headers-$rel/Makefile"
rm -rf "$root"; mv "$root.tmp" "$root"
echo "$build"
