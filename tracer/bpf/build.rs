//! Compile `src/bpf/capture.bpf.c` with clang (Debian's, `.ci/install-deps.sh`) and
//! generate its libbpf skeleton into OUT_DIR.

use std::path::PathBuf;

fn main() {
    let src = "src/bpf/capture.bpf.c";
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("capture.skel.rs");
    libbpf_cargo::SkeletonBuilder::new()
        .source(src)
        .clang_args([
            "-I/usr/include/x86_64-linux-gnu",
            "-D__TARGET_ARCH_x86",
            "-Wall",
            "-O2",
            "-mcpu=v3",
        ])
        .build_and_generate(&out)
        .unwrap_or_else(|e| {
            panic!("{src}: {e:#} (needs clang and libelf-dev: .ci/install-deps.sh)")
        });
    println!("cargo:rerun-if-changed={src}");
}
