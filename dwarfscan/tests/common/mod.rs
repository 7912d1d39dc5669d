//! Helpers shared by the dwarfscan integration tests.
#![allow(dead_code)]

pub mod btf;

use std::path::{Path, PathBuf};

/// Scan `inputs` and open the resulting database in memory.
pub fn scan_to_db(inputs: &[PathBuf]) -> (sigdb::Db, dwarfscan::Stats) {
    let inputs: Vec<_> = inputs.iter().map(dwarfscan::Input::new).collect();
    let mut r = dwarfscan::scan(&inputs, &dwarfscan::Options::default()).expect("scan");
    let bytes = r.to_bytes().expect("serialize");
    (sigdb::Db::from_bytes(bytes).expect("valid db"), r.stats)
}

/// The `.BTF` section of an ELF file, parsed into functions.
pub fn btf_funcs_of(elf: &Path) -> Vec<btf::BtfFunc> {
    btf_of(elf).funcs()
}

/// The `.BTF` section of an ELF file, parsed.
pub fn btf_of(elf: &Path) -> btf::Btf {
    use object::{Object, ObjectSection};
    let data = std::fs::read(elf).expect("read elf");
    let file = object::File::parse(&*data).expect("parse elf");
    let sec = file.section_by_name(".BTF").expect(".BTF section");
    let b = sec.uncompressed_data().expect(".BTF data");
    btf::Btf::parse(&b).expect("valid BTF")
}

/// The download/build cache (`$DCG_KCACHE` or ~/.cache/dcg-kernels).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("DCG_KCACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/dcg-kernels")
        })
}

/// Run a `tests/kernels/` script of the repository; the directory it prints.
pub fn kernel_script(script: &str, args: &[&str]) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/kernels")
        .join(script);
    let out = std::process::Command::new("bash")
        .arg(&path)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
    assert!(out.status.success(), "{} {args:?} failed", path.display());
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether the opt-in kernel tests should run.
pub fn kernel_tests_enabled() -> bool {
    std::env::var_os("DCG_KERNEL_TESTS").is_some_and(|v| v == "1")
}
