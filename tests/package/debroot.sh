#!/usr/bin/env bash
# A clean Debian 12 root for the package test, made once by debootstrap from Debian's
# package registry and kept as a tarball: every test run unpacks a fresh copy, so what
# the test installs and removes starts from the same untouched root.
#
#   tests/package/debroot.sh     # prints the tarball's path
#
# minbase plus man-db (to render the man pages) with its package lists fetched, so that
# `apt-get install ./dcg_*.deb` inside it resolves dependencies like a user's system.
# Env: DCG_PKGCACHE (default ~/.cache/dcg-package), DCG_DEBIAN_MIRROR (default
# http://deb.debian.org).
set -euo pipefail

die() { echo "debroot: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "debootstrap is missing (.ci/install-deps.sh installs it)"

cache=${DCG_PKGCACHE:-$HOME/.cache/dcg-package}
mirror=${DCG_DEBIAN_MIRROR:-http://deb.debian.org}/debian
suite=bookworm
tarball=$cache/$suite-minbase.tar
mkdir -p "$cache"
exec 9>"$cache/.debroot.lock"
flock 9
if [ -s "$tarball" ]; then
  echo "$tarball"
  exit 0
fi

work=$(mktemp -d "$cache/.root.XXXXXX")
trap 'umount -l "$work/root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
log=$work/debootstrap.log
echo "debroot: debootstrap --variant=minbase $suite from $mirror (a few minutes, once)" >&2
debootstrap --variant=minbase --include=man-db "$suite" "$work/root" "$mirror" >"$log" 2>&1 \
  || { tail -n 20 "$log" >&2; die "debootstrap $suite from $mirror failed (log above)"; }
cp /etc/resolv.conf "$work/root/etc/resolv.conf"
chroot "$work/root" apt-get update -qq >"$log" 2>&1 \
  || { tail -n 20 "$log" >&2; die "apt-get update in the new root failed (log above)"; }
tar -C "$work/root" -cf "$tarball.part" . || die "writing $tarball.part failed"
mv "$tarball.part" "$tarball"
echo "$tarball"
