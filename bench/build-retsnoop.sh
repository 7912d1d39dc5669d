#!/usr/bin/env bash
# Build retsnoop, the kernel benchmark's peer (bench/kernel-engines.sh, issue 40), as a
# single statically linked x86-64 executable for the busybox guest.
#
# Usage:
#   bench/build-retsnoop.sh [RETSNOOP_GIT LIBBPF_GIT BPFTOOL_GIT [OUT_DIR]]
#
# Without arguments: the three repositories on GitHub, OUT_DIR ~/.cache/dcg-retsnoop.
#
# Each *_GIT argument is anything "git clone" accepts: a local (bare or
# normal) repository path, or a URL such as https://github.com/libbpf/libbpf.
# retsnoop records the libbpf and bpftool commits it needs as submodule
# entries; those exact commits are checked out from LIBBPF_GIT / BPFTOOL_GIT.
#
# Optional environment variables:
#   RETSNOOP_REF   branch, tag or commit of retsnoop to build (default: a777df07,
#                  v0.11 and 7 commits, the one measured in BENCHMARKS.md)
#   KEEP_SCRATCH=1 keep OUT_DIR/build after a successful build
#   JOBS           build parallelism (default 2, capped at 2)
#
# Result: OUT_DIR/retsnoop plus OUT_DIR/retsnoop.commit (the retsnoop commit)
# and OUT_DIR/retsnoop.sources (all three commits actually used).
# The path of the binary is the last line printed on stdout; everything else
# goes to stderr.

set -euo pipefail

# Keep the real stdout on descriptor 3 and send all other output to stderr,
# so that only the final binary path ends up on stdout.
exec 3>&1 1>&2

log() { printf '[build-retsnoop] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

case $# in
0) set -- https://github.com/anakryiko/retsnoop https://github.com/libbpf/libbpf \
	https://github.com/libbpf/bpftool ;;
3 | 4) ;;
*) die "usage: $0 [RETSNOOP_GIT LIBBPF_GIT BPFTOOL_GIT [OUT_DIR]]" ;;
esac

RETSNOOP_GIT=$1
LIBBPF_GIT=$2
BPFTOOL_GIT=$3
OUT_DIR=${4:-$HOME/.cache/dcg-retsnoop}
RETSNOOP_REF=${RETSNOOP_REF:-a777df07e1b33aba6bae1f2b101f59b584a82f98}
JOBS=${JOBS:-2}
if [ "$JOBS" -gt 2 ]; then JOBS=2; fi

[ "$(uname -m)" = x86_64 ] || die "this script only builds for x86_64 hosts"

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
FINAL_BIN=$OUT_DIR/retsnoop
COMMIT_FILE=$OUT_DIR/retsnoop.commit

# A local source path given relatively must still work after we cd around.
absolutize() {
    if [ -e "$1" ]; then (cd "$1" && pwd); else printf '%s\n' "$1"; fi
}
RETSNOOP_GIT=$(absolutize "$RETSNOOP_GIT")
LIBBPF_GIT=$(absolutize "$LIBBPF_GIT")
BPFTOOL_GIT=$(absolutize "$BPFTOOL_GIT")

# Only one build per OUT_DIR at a time.
exec 9>"$OUT_DIR/.lock"
flock 9

# ---------------------------------------------------------------------------
# Step 1: work out which retsnoop commit is wanted, and stop early if that
# commit has already been built into OUT_DIR.
# ---------------------------------------------------------------------------
resolve_retsnoop_commit() {
    # A full 40-digit hash is taken as-is.
    if [[ "$RETSNOOP_REF" =~ ^[0-9a-f]{40}$ ]]; then
        printf '%s\n' "$RETSNOOP_REF"
        return
    fi
    # Otherwise ask the source. For annotated tags, ls-remote also prints a
    # "^{}" line holding the commit the tag points to; prefer that one.
    local lines
    lines=$(git ls-remote "$RETSNOOP_GIT" "$RETSNOOP_REF" "refs/tags/$RETSNOOP_REF" \
            "refs/heads/$RETSNOOP_REF" 2>/dev/null || true)
    local peeled plain
    peeled=$(printf '%s\n' "$lines" | awk '$2 ~ /\^\{\}$/ {print $1; exit}')
    plain=$(printf '%s\n' "$lines" | awk 'NF == 2 {print $1; exit}')
    if [ -n "$peeled" ]; then printf '%s\n' "$peeled"; return; fi
    if [ -n "$plain" ]; then printf '%s\n' "$plain"; return; fi
    # Fall back to asking a local repository directly (e.g. a short hash).
    git --git-dir="$RETSNOOP_GIT" rev-parse --verify "$RETSNOOP_REF^{commit}" 2>/dev/null ||
    git -C "$RETSNOOP_GIT" rev-parse --verify "$RETSNOOP_REF^{commit}" 2>/dev/null ||
    die "cannot resolve retsnoop ref '$RETSNOOP_REF' in $RETSNOOP_GIT"
}

WANT_COMMIT=$(resolve_retsnoop_commit)
log "retsnoop ref $RETSNOOP_REF -> $WANT_COMMIT"

if [ -x "$FINAL_BIN" ] && [ -f "$COMMIT_FILE" ] &&
   [ "$(cat "$COMMIT_FILE")" = "$WANT_COMMIT" ]; then
    log "already built for this commit, nothing to do"
    printf '%s\n' "$FINAL_BIN" >&3
    exit 0
fi

# ---------------------------------------------------------------------------
# Step 2: make sure the build tools and static libraries are installed.
# ---------------------------------------------------------------------------
pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

LIBDIR=/usr/lib/x86_64-linux-gnu
# git, compilers, llvm-strip, make, and the static archives retsnoop links
# against (libc.a comes with libc6-dev, libelf.a with libelf-dev, libz.a with
# zlib1g-dev).
NEEDED_PKGS=(git make gcc libc6-dev clang llvm libelf-dev zlib1g-dev pkg-config file)
# Some libelf builds use zstd for compressed sections; then libzstd.a is needed.
if [ -f "$LIBDIR/libelf.a" ] && nm "$LIBDIR/libelf.a" 2>/dev/null | grep -q ' U ZSTD_'; then
    NEEDED_PKGS+=(libzstd-dev)
fi

MISSING_PKGS=()
for p in "${NEEDED_PKGS[@]}"; do
    pkg_installed "$p" || MISSING_PKGS+=("$p")
done
if [ "${#MISSING_PKGS[@]}" -gt 0 ]; then
    log "installing missing packages: ${MISSING_PKGS[*]}"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${MISSING_PKGS[@]}"
fi
# libelf-dev may only just have been installed, so check zstd again.
NEED_ZSTD=0
if nm "$LIBDIR/libelf.a" 2>/dev/null | grep -q ' U ZSTD_'; then
    NEED_ZSTD=1
    if ! pkg_installed libzstd-dev; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y libzstd-dev
    fi
fi

for f in libc.a libelf.a libz.a; do
    [ -f "$LIBDIR/$f" ] || die "static library $LIBDIR/$f not found"
done

# Rust is needed for the address-resolving helper ("sidecar") that retsnoop
# embeds. We do not install Rust ourselves; rustup is the usual way to get it.
command -v cargo >/dev/null || die "cargo not found; install Rust (e.g. via rustup) first"
RUST_TARGET=x86_64-unknown-linux-gnu
if command -v rustup >/dev/null; then
    if ! rustup target list --installed 2>/dev/null | grep -qx "$RUST_TARGET"; then
        log "adding Rust target $RUST_TARGET"
        rustup target add "$RUST_TARGET"
    fi
fi

# ---------------------------------------------------------------------------
# Step 3: fetch sources into a fresh scratch directory.
# ---------------------------------------------------------------------------
SCRATCH=$OUT_DIR/build
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
SRC=$SCRATCH/retsnoop

# Check out COMMIT in repository DIR. If the commit is missing, try fetching
# it by hash from origin; if that fails too, use the newest release tag that
# is not newer than DATE (a unix time), and report that on stderr.
# Prints the commit actually checked out.
checkout_commit() {
    local dir=$1 commit=$2 date=$3 what=$4
    if ! git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
        git -C "$dir" fetch -q origin "$commit" 2>/dev/null || true
    fi
    if git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
        git -C "$dir" -c advice.detachedHead=false checkout -q --detach "$commit"
    else
        local tag
        tag=$(git -C "$dir" for-each-ref --sort=-creatordate \
                  --format='%(creatordate:unix) %(refname:short)' refs/tags |
              awk -v d="$date" '$1 <= d {print $2; exit}')
        [ -n "$tag" ] || die "$what: pinned commit $commit is missing and no older tag exists"
        log "WARNING: $what: pinned commit $commit not in source; using closest older tag $tag"
        git -C "$dir" -c advice.detachedHead=false checkout -q --detach "$tag^{commit}"
    fi
    git -C "$dir" rev-parse HEAD
}

# Read the commit a submodule path is pinned to inside repository DIR.
pinned_commit() {
    git -C "$1" ls-tree HEAD "$2" | awk '$2 == "commit" {print $3}'
}

log "cloning retsnoop from $RETSNOOP_GIT"
git clone -q --no-checkout "$RETSNOOP_GIT" "$SRC"
git -C "$SRC" cat-file -e "$WANT_COMMIT^{commit}" 2>/dev/null ||
    git -C "$SRC" fetch -q origin "$WANT_COMMIT"
git -C "$SRC" -c advice.detachedHead=false checkout -q --detach "$WANT_COMMIT"
RETSNOOP_DATE=$(git -C "$SRC" log -1 --format=%ct HEAD)

LIBBPF_PIN=$(pinned_commit "$SRC" libbpf)
BPFTOOL_PIN=$(pinned_commit "$SRC" bpftool)
[ -n "$LIBBPF_PIN" ] && [ -n "$BPFTOOL_PIN" ] ||
    die "retsnoop commit $WANT_COMMIT does not pin libbpf/bpftool submodules"
log "retsnoop pins libbpf $LIBBPF_PIN, bpftool $BPFTOOL_PIN"

# The submodule directories exist but are empty; clone straight into them.
log "cloning libbpf from $LIBBPF_GIT"
rm -rf "$SRC/libbpf"
git clone -q --no-checkout "$LIBBPF_GIT" "$SRC/libbpf"
LIBBPF_USED=$(checkout_commit "$SRC/libbpf" "$LIBBPF_PIN" "$RETSNOOP_DATE" libbpf)

log "cloning bpftool from $BPFTOOL_GIT"
rm -rf "$SRC/bpftool"
git clone -q --no-checkout "$BPFTOOL_GIT" "$SRC/bpftool"
BPFTOOL_USED=$(checkout_commit "$SRC/bpftool" "$BPFTOOL_PIN" "$RETSNOOP_DATE" bpftool)

# bpftool has its own libbpf submodule. retsnoop's Makefile builds bpftool
# against retsnoop's libbpf, but fill it in anyway (as a second work tree of
# the libbpf clone above) so the bpftool tree is complete.
BPFTOOL_LIBBPF_PIN=$(pinned_commit "$SRC/bpftool" libbpf)
BPFTOOL_LIBBPF_USED=none
if [ -n "$BPFTOOL_LIBBPF_PIN" ]; then
    rm -rf "$SRC/bpftool/libbpf"
    if git -C "$SRC/libbpf" cat-file -e "$BPFTOOL_LIBBPF_PIN^{commit}" 2>/dev/null; then
        git -C "$SRC/libbpf" worktree add -q --detach "$SRC/bpftool/libbpf" "$BPFTOOL_LIBBPF_PIN"
        BPFTOOL_LIBBPF_USED=$BPFTOOL_LIBBPF_PIN
    else
        log "note: bpftool's libbpf pin $BPFTOOL_LIBBPF_PIN not available (not needed for this build)"
        mkdir -p "$SRC/bpftool/libbpf"
    fi
fi

# ---------------------------------------------------------------------------
# Step 4: build the Rust sidecar as a static executable.
# ---------------------------------------------------------------------------
log "building sidecar (Rust, static)"
CARGO_LOCKED=()
[ -f "$SRC/sidecar/Cargo.lock" ] && CARGO_LOCKED=(--locked)
(
    cd "$SRC/sidecar"
    RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --release --target "$RUST_TARGET" -j "$JOBS" "${CARGO_LOCKED[@]}"
)
SIDECAR_BUILT=$SRC/sidecar/target/$RUST_TARGET/release/addr2line
[ -x "$SIDECAR_BUILT" ] || die "sidecar binary not found at $SIDECAR_BUILT"

# The Makefile derives linker symbol names from the sidecar path, replacing
# only '/' and '.', so the path must not contain '-' or other odd characters.
# A plain relative file name inside src/ sidesteps that entirely.
cp "$SIDECAR_BUILT" "$SRC/src/sidecarbin"

# ---------------------------------------------------------------------------
# Step 5: build retsnoop itself (this also builds libbpf and bpftool).
# ---------------------------------------------------------------------------
LDFLAGS_STATIC="-static"
if [ "$NEED_ZSTD" = 1 ]; then
    # The link line lists "-lelf -lz" after the objects and offers no hook to
    # add more libraries there. Provide a stand-in "libelf.a" linker script
    # that pulls in both the real libelf.a and libzstd.a.
    mkdir -p "$SCRATCH/linklibs"
    printf 'GROUP ( %s %s )\n' "$LIBDIR/libelf.a" "$LIBDIR/libzstd.a" \
        > "$SCRATCH/linklibs/libelf.a"
    LDFLAGS_STATIC="-static -L$SCRATCH/linklibs"
fi

log "building retsnoop (make -j$JOBS)"
make -C "$SRC/src" -j"$JOBS" retsnoop SIDECAR=sidecarbin LDFLAGS="$LDFLAGS_STATIC"

BUILT=$SRC/src/retsnoop
[ -x "$BUILT" ] || die "retsnoop binary was not produced"
if ! file "$BUILT" | grep -q 'statically linked'; then
    file "$BUILT"
    die "retsnoop was built but is not statically linked"
fi

# ---------------------------------------------------------------------------
# Step 6: install into OUT_DIR atomically and record what was built.
# ---------------------------------------------------------------------------
cp "$BUILT" "$OUT_DIR/retsnoop.tmp"
mv -f "$OUT_DIR/retsnoop.tmp" "$FINAL_BIN"
{
    echo "retsnoop $WANT_COMMIT"
    echo "libbpf $LIBBPF_USED (pinned $LIBBPF_PIN)"
    echo "bpftool $BPFTOOL_USED (pinned $BPFTOOL_PIN)"
    echo "bpftool/libbpf $BPFTOOL_LIBBPF_USED (pinned ${BPFTOOL_LIBBPF_PIN:-none})"
} > "$OUT_DIR/retsnoop.sources"
printf '%s\n' "$WANT_COMMIT" > "$COMMIT_FILE"

if [ "${KEEP_SCRATCH:-0}" != 1 ]; then
    rm -rf "$SCRATCH"
fi

log "done: $(file -b "$FINAL_BIN")"
printf '%s\n' "$FINAL_BIN" >&3
