#!/usr/bin/env bash
# A real Debian kernel in the cache: bootable image, config, System.map, the -dbg
# package's DWARF vmlinux and debug modules, at the versions pinned in `pins`.
#
#   fetch-debian-kernel.sh FLAVOR [--no-dbg]
#
# FLAVOR: 6.12-cloud  Debian 12 (bookworm-security) 6.12.117+deb12-cloud-amd64
#         7.2-cloud   Debian sid                    7.2.13+deb14-cloud-amd64
# Prints the kernel's directory, $DCG_KCACHE/FLAVOR (default ~/.cache/dcg-kernels):
#   vmlinuz  config  System.map  release  build-id  vmlinux  dbg-modules/  root/
# Idempotent (a complete directory is reused), safe to run concurrently.
set -euo pipefail
source "$(dirname "$0")/debs.sh"

flavor=${1:-}
want_dbg=1; [ "${2:-}" = "--no-dbg" ] && want_dbg=0
case "$flavor" in
  6.12-cloud) rel=6.12.117+deb12-cloud-amd64; pkgs=("linux-image-$rel-unsigned") ;;
  7.2-cloud)  rel=7.2.13+deb14-cloud-amd64;   pkgs=("linux-binary-$rel" "linux-base-$rel") ;;
  *) die "usage: fetch-debian-kernel.sh 6.12-cloud|7.2-cloud [--no-dbg] (got '$flavor')" ;;
esac
[ $want_dbg = 1 ] && pkgs+=("linux-image-$rel-dbg")
dir=$kcache/$flavor
complete() { [ "$(cat "$dir/release" 2>/dev/null)" = "$rel" ] && [ -s "$dir/vmlinuz" ] &&
  { [ $want_dbg = 0 ] || [ -s "$dir/vmlinux" ]; }; }
if complete; then echo "$dir"; exit 0; fi
with_lock "$flavor"
if complete; then echo "$dir"; exit 0; fi

rm -rf "$dir"; mkdir -p "$dir/root"
for p in "${pkgs[@]}"; do deb_extract "$p" "$dir/root"; done
# bookworm ships /boot/vmlinuz-REL and /boot/config-REL; newer releases keep vmlinuz and
# config in /usr/lib/modules/REL/. System.map: the largest copy (the -dbg one is complete).
img=$(find "$dir/root" -name "vmlinuz*" -type f | head -1)
[ -n "$img" ] || die "no vmlinuz in ${pkgs[*]}"
ln -f "$img" "$dir/vmlinuz"
cfg=$(find "$dir/root" \( -name "config-$rel" -o -path "*/modules/$rel/config" \) -type f | head -1)
[ -n "$cfg" ] && ln -f "$cfg" "$dir/config"
map=$(find "$dir/root" -name "System.map*" -type f -printf "%s %p\n" | sort -n | tail -1 | cut -d" " -f2-)
[ -n "$map" ] && ln -f "$map" "$dir/System.map"
if [ $want_dbg = 1 ]; then
  vml=$(find "$dir/root/usr/lib/debug" -name "vmlinux*" -type f | head -1)
  [ -n "$vml" ] || die "linux-image-$rel-dbg has no vmlinux"
  ln -f "$vml" "$dir/vmlinux"
  mods=$(find "$dir/root/usr/lib/debug" -type d -path "*/modules/$rel" | head -1)
  [ -n "$mods" ] && ln -sfn "$mods" "$dir/dbg-modules"
  readelf -n "$dir/vmlinux" | awk '/Build ID/{print $3; exit}' > "$dir/build-id"
fi
echo "$rel" > "$dir/release"    # last: marks the directory complete
echo "$dir"
