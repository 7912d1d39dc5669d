#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
#
#   bash tests/run.sh
#
# Installs what the tests need (Debian packages; as root), checks formatting and lints,
# then runs every test: unit, property and golden tests, the C corpus against pahole,
# the real Debian kernels (downloaded into ~/.cache/dcg-kernels on first use) and the
# end-to-end tracing tests (uprobes on this host, the kernel tracer in qemu guests).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
bash .ci/install-deps.sh

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The fuzz targets are their own workspace (cargo-fuzz): they must keep compiling.
cargo check --quiet --manifest-path fuzz/Cargo.toml --bins

step "tests"
export DCG_KERNEL_TESTS=1
cargo test --workspace --release
