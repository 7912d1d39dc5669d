//! Real kernels. The test kernel (small, shipped in `../shared/testkernel` beside the
//! repository) always runs; Debian's 6.12 cloud kernel runs with `DCG_KERNEL_TESTS=1` (`.ci/run`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// `../shared` beside the repository (or `$DCG_SHARED`).
fn shared() -> PathBuf {
    std::env::var_os("DCG_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

/// The decompressed test-kernel vmlinux, in the cache.
fn testkernel_vmlinux() -> Option<PathBuf> {
    let xz = shared().join("testkernel").join("vmlinux.xz");
    if !xz.exists() {
        return None;
    }
    let dir = common::cache_dir().join("testkernel");
    let out = dir.join("vmlinux");
    if out.exists() {
        return Some(out);
    }
    std::fs::create_dir_all(&dir).ok()?;
    let tmp = dir.join(format!(".vmlinux.{}", std::process::id()));
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("xz -dc '{}' > '{}'", xz.display(), tmp.display()))
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    std::fs::rename(&tmp, &out).ok()?;
    Some(out)
}

fn sig(db: &sigdb::Db, name: &str) -> Vec<String> {
    db.by_name(name)
        .map(|f| dwarfscan::render::render_function(&f))
        .collect()
}

#[test]
fn testkernel_vmlinux_and_modules() {
    let vmlinux = testkernel_vmlinux().unwrap_or_else(|| {
        panic!(
            "no test kernel at {} (the repository expects ../shared beside it; set DCG_SHARED)",
            shared().join("testkernel").display()
        )
    });
    let mut inputs = vec![vmlinux.clone()];
    inputs.push(shared().join("testkernel").join("modules"));
    let (db, stats) = common::scan_to_db(&inputs);
    eprint!("{}", stats.report());
    assert!(db.flags().contains(sigdb::DbFlags::KERNEL));
    assert_eq!(db.module(0).unwrap().name(), "vmlinux");
    assert!(db.module_by_name("binfmt_misc").is_some());
    assert_eq!(
        sig(&db, "do_sys_openat2"),
        vec!["[static] do_sys_openat2 -> int (int dfd@rdi, const char *filename@rsi, struct open_how *how@rdx)"]
    );
    assert_eq!(
        sig(&db, "bm_status_write"),
        vec!["[static] bm_status_write -> ssize_t (struct file *file@rdi, const char *buffer@rsi, size_t count@rdx, loff_t *ppos@rcx)"]
    );
    let f = db.by_name("bm_status_write").next().unwrap();
    assert_eq!(f.module().unwrap().name(), "binfmt_misc");
    assert_eq!(
        f.addr(),
        0xe50,
        "module functions are laid out with .text at 0"
    );

    let btf = common::btf_funcs_of(&vmlinux);
    let a = common::btf::compare(&btf, &db);
    eprint!("{}", a.report());
    assert!(a.percent() >= 99.0, "{}", a.report());
}

fn debian_kernel() -> Option<PathBuf> {
    let out = Command::new(shared().join("scripts/fetch-debian-kernel.sh"))
        .arg("6.12-cloud")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    ))
}

#[test]
fn debian_612_cloud() {
    if !common::kernel_tests_enabled() {
        eprintln!("skipped: set DCG_KERNEL_TESTS=1");
        return;
    }
    let dir = debian_kernel().expect("fetch-debian-kernel.sh 6.12-cloud");
    let vmlinux = dir.join("vmlinux");
    let inputs = vec![vmlinux.clone(), dir.join("dbg-modules")];
    let (db, stats) = common::scan_to_db(&inputs);
    eprint!("{}", stats.report());
    let with_code = db
        .functions()
        .filter(|f| !f.flags().contains(sigdb::FuncFlags::INLINE_ONLY))
        .count();
    assert!(with_code >= 50_000, "{with_code} functions with code");
    let btf = common::btf_funcs_of(&vmlinux);
    let a = common::btf::compare(&btf, &db);
    eprint!("{}", a.report());
    assert!(a.percent() >= 99.0, "{}", a.report());
}
