# Sourced by the kernel scripts: one way to get a pinned Debian package.
#
#   deb_fetch PACKAGE      prints the path of PACKAGE's .deb in $DCG_KCACHE/debs,
#                          downloading it first if needed; its SHA-256 must match `pins`
#   deb_extract PACKAGE DIR  dpkg-deb -x of that .deb into DIR
#
# Env: DCG_KCACHE          cache root (default ~/.cache/dcg-kernels)
#      DCG_DEBIAN_MIRROR   mirror root (default http://deb.debian.org); for a release the
#                          mirror no longer carries, a snapshot such as
#                          https://snapshot.debian.org/archive/debian/20261122T000000Z
#                          (then the archive column is not appended)
kcache=${DCG_KCACHE:-$HOME/.cache/dcg-kernels}
pins_file=$(dirname "${BASH_SOURCE[0]}")/pins

die() { echo "${0##*/}: $*" >&2; exit 1; }

deb_fetch() {
  local pkg=$1 line ver archive path size sha out url
  line=$(awk -v p="$pkg" '$1 == p' "$pins_file")
  [ -n "$line" ] || die "$pkg: no pinned version in $pins_file"
  read -r _ ver archive path size sha <<< "$line"
  mkdir -p "$kcache/debs"
  out=$kcache/debs/${path##*/}
  # A verified file leaves a stamp with its checksum, so reruns do not hash 350 MB again.
  if [ -s "$out" ] && [ "$(cat "$out.sha256" 2>/dev/null)" = "$sha" ]; then echo "$out"; return; fi
  if [ ! -s "$out" ]; then
    if [ -n "${DCG_DEBIAN_MIRROR:-}" ]; then url=$DCG_DEBIAN_MIRROR/$path
    else url=http://deb.debian.org/$archive/$path; fi
    echo "${0##*/}: downloading $pkg $ver ($((size / 1048576)) MiB) from $url" >&2
    curl -fsSL --retry 3 --connect-timeout 20 -o "$out.part" "$url" \
      || { rm -f "$out.part"; die "$pkg $ver: download from $url failed (is Debian's package registry reachable? a release gone from the mirror is still on snapshot.debian.org: set DCG_DEBIAN_MIRROR)"; }
    mv -f "$out.part" "$out"
  fi
  if [ "$(sha256sum "$out" | cut -d' ' -f1)" != "$sha" ]; then
    mv -f "$out" "$out.bad"
    die "$out: SHA-256 differs from the pinned $sha (moved to $out.bad)"
  fi
  echo "$sha" > "$out.sha256"
  echo "$out"
}

deb_extract() {
  local deb
  deb=$(deb_fetch "$1") || exit 1
  dpkg-deb -x "$deb" "$2" || die "$deb: dpkg-deb -x failed"
}

# with_lock NAME: the rest of the calling script runs under an exclusive lock on
# $DCG_KCACHE/.NAME.lock (tests fetch the same kernel from several threads at once).
with_lock() {
  mkdir -p "$kcache"
  exec 9> "$kcache/.$1.lock"
  flock 9
}
