#!/usr/bin/env bash
# Install the Debian packages the dcg tests need (compilers, pahole, bpftool, qemu,
# busybox for guest initramfs images, compressors, graphviz, ELF tools, what the test
# kernel's build needs (kmod: depmod for its modules_install), curl for Debian's package
# registry, libc6-dbg for libc's DWARF, libc6-dev for static test programs, llvm for
# llvm-dwarfdump, the inline instances' oracle), debootstrap, lintian and man-db for the
# package test; then the pinned cargo tools (cargo-deb).
#
#   .ci/install-deps.sh            # as root; idempotent, non-interactive
#
# Packages already installed are skipped, so a rerun costs one dpkg query.
# `apt-get update` runs at most once per invocation, and only when something is missing
# (or when the package lists are absent / older than a day).
# Env: DCG_DEPS_EXTRA  extra package names to install (space-separated).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

die() { echo "install-deps: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (apt-get install)"
command -v apt-get >/dev/null || die "apt-get not found (Debian/Ubuntu only)"

# Wanted packages. Alternatives are separated by '|': the first that apt knows is used.
# bpftool: its own package on Debian >= 12; older releases shipped it in linux-bpf-tools
# or linux-tools-common.
wanted=(
  gcc clang dwarves "bpftool|linux-bpf-tools|linux-tools-common"
  qemu-system-x86 busybox-static cpio xz-utils zstd gzip graphviz
  binutils elfutils file curl libc6-dbg libc6-dev llvm uftrace g++ chromium debuginfod strace
  make flex bison bc libelf-dev libssl-dev zlib1g-dev pkg-config kmod time python3
  debootstrap lintian man-db dpkg-dev
)
# shellcheck disable=SC2206
[ -n "${DCG_DEPS_EXTRA:-}" ] && wanted+=(${DCG_DEPS_EXTRA})

installed() { # PKG -> 0 if installed (status "install ok installed")
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}
known() { # PKG -> 0 if apt has a candidate for it
  local c
  c=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/{print $2; exit}')
  [ -n "$c" ] && [ "$c" != "(none)" ]
}

updated=0
update_once() {
  [ $updated = 1 ] && return 0
  echo "install-deps: apt-get update" >&2
  apt-get update -qq >&2 || die "apt-get update failed"
  updated=1
}

install_apt() {
# First pass: anything already satisfied is skipped without touching apt.
missing=()
for w in "${wanted[@]}"; do
  ok=0
  IFS='|' read -r -a alts <<< "$w"
  for p in "${alts[@]}"; do installed "$p" && { ok=1; break; }; done
  [ $ok = 1 ] || missing+=("$w")
done
if [ ${#missing[@]} = 0 ]; then
  echo "install-deps: all ${#wanted[@]} packages already installed" >&2
  return 0
fi

# Lists missing or stale: refresh before resolving names (apt-cache needs current lists).
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
  update_once
fi

resolve() { # ALT1|ALT2|... -> first name apt knows, or empty
  local p
  IFS='|' read -r -a alts <<< "$1"
  for p in "${alts[@]}"; do known "$p" && { echo "$p"; return 0; }; done
  return 0
}

to_install=()
for w in "${missing[@]}"; do
  p=$(resolve "$w")
  if [ -z "$p" ] && [ $updated = 0 ]; then update_once; p=$(resolve "$w"); fi
  [ -n "$p" ] || die "no package for '$w' in the apt sources"
  to_install+=("$p")
done

echo "install-deps: installing ${to_install[*]}" >&2
if ! apt-get install -y -qq --no-install-recommends "${to_install[@]}" >&2; then
  # A mirror that moved on since the last update gives 404s: refresh once and retry.
  [ $updated = 1 ] && die "apt-get install failed: ${to_install[*]}"
  update_once
  apt-get install -y -qq --no-install-recommends "${to_install[@]}" >&2 \
    || die "apt-get install failed: ${to_install[*]}"
fi
echo "install-deps: done" >&2
}
install_apt

# Cargo tools, pinned: cargo-deb builds the Debian package (the package test).
cargo_tool() { # CRATE VERSION
  if [ "$(cargo install --list 2>/dev/null | awk -v c="$1" '$1 == c {print $2}')" = "v$2:" ]; then
    return 0
  fi
  echo "install-deps: cargo install $1 $2" >&2
  cargo install --quiet --locked "$1" --version "$2" >&2 || die "cargo install $1 $2 failed"
}
cargo_tool cargo-deb 3.8.0
