#!/usr/bin/env bash
# The kernel's own style checker, scripts/checkpatch.pl (with the spelling.txt and
# const_structs.checkpatch it reads), from Debian's linux-source-6.12 package (pinned in
# `pins`), extracted into $DCG_KCACHE/checkpatch once (~150 MB download, ~1 min to unpack
# the tarball). Prints the script's path.
set -euo pipefail
source "$(dirname "$0")/debs.sh"
out=$kcache/checkpatch
if [ -s "$out/scripts/checkpatch.pl" ]; then echo "$out/scripts/checkpatch.pl"; exit 0; fi
with_lock checkpatch
if [ -s "$out/scripts/checkpatch.pl" ]; then echo "$out/scripts/checkpatch.pl"; exit 0; fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
deb=$(deb_fetch linux-source-6.12)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './usr/src/linux-source-6.12.tar.xz'
s=linux-source-6.12/scripts
tar -xJf "$tmp/usr/src/linux-source-6.12.tar.xz" -C "$tmp" \
  "$s/checkpatch.pl" "$s/spelling.txt" "$s/const_structs.checkpatch"
rm -rf "$out.tmp"; mkdir -p "$out.tmp"; mv "$tmp/$s" "$out.tmp/scripts"
rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out/scripts/checkpatch.pl"
