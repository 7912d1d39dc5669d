#!/usr/bin/env bash
# The kernel's own style checker, scripts/checkpatch.pl (with the spelling.txt and
# const_structs.checkpatch it reads), from Debian's linux-source-6.12 package: downloaded
# with `apt-get download` into $DCG_KCACHE/debs and extracted into $DCG_KCACHE/checkpatch
# once (~150 MB download, ~1 min to unpack the tarball). Prints the script's path.
set -euo pipefail
cache=${DCG_KCACHE:-$HOME/.cache/dcg-kernels}
out=$cache/checkpatch
if [ -s "$out/scripts/checkpatch.pl" ]; then echo "$out/scripts/checkpatch.pl"; exit 0; fi
mkdir -p "$cache/debs"
( cd "$cache/debs" && { ls linux-source-6.12_*.deb >/dev/null 2>&1 || apt-get -o APT::Sandbox::User=root download linux-source-6.12 >&2; } )
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
deb=$(ls "$cache"/debs/linux-source-6.12_*.deb | sort -V | tail -1)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './usr/src/linux-source-6.12.tar.xz'
s=linux-source-6.12/scripts
tar -xJf "$tmp/usr/src/linux-source-6.12.tar.xz" -C "$tmp" \
  "$s/checkpatch.pl" "$s/spelling.txt" "$s/const_structs.checkpatch"
rm -rf "$out.tmp"; mkdir -p "$out.tmp"; mv "$tmp/$s" "$out.tmp/scripts"
rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out/scripts/checkpatch.pl"
