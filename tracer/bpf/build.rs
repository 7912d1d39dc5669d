//! Compile the BPF programs (`src/bpf/capture.bpf.c` with its headers in
//! `src/bpf/capture/`, `src/bpf/peek.bpf.c`) with clang
//! (Debian's, `.ci/install-deps.sh`) and generate their libbpf skeletons into OUT_DIR.

use std::path::PathBuf;

fn main() {
    skeleton("capture");
    skeleton("peek");
}

fn skeleton(name: &str) {
    let src = format!("src/bpf/{name}.bpf.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"))
        .join(format!("{name}.skel.rs"));
    libbpf_cargo::SkeletonBuilder::new()
        .source(&src)
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
    // The headers a program includes, in the directory of its name.
    let headers = format!("src/bpf/{name}");
    if std::path::Path::new(&headers).is_dir() {
        println!("cargo:rerun-if-changed={headers}");
    }
}
