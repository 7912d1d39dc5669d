//! Issue 18 end to end on Debian's 6.12 cloud kernel in qemu (TCG): `dwarfscan
//! --emit-module` on the kernel's vmlinux, `dcg_sigdb.ko` built with the kernel's own
//! `linux-headers` (downloaded from Debian's package registry into the cache and extracted
//! there by `tests/kernels/kernel-headers.sh`, nothing installed system-wide) and the host's
//! gcc-12, then `e2e/module612.sh` in the guest: `dcg load` of the module, the sysfs file
//! byte-identical to the db, `dcg sig` and `dcg trace` without `--db`, `dcg unload`, a
//! module carrying a corrupted db refused by dcg, `dcg unload all`, no kernel warning;
//! the same module refused on Debian's 7.2 kernel; the C template checkpatch-clean.
//! Runs only with `DCG_KERNEL_TESTS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use dcg_tests::guest::{self, debian_kernel, enabled, initramfs, must, section};

/// Run `cmd`, panicking with its output when it fails; returns its stdout.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({:?}):\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `make -C BUILD M=DIR modules`; returns DIR/dcg_sigdb.ko.
fn build_module(build: &Path, dir: &Path) -> PathBuf {
    run(Command::new("make")
        .arg("-C")
        .arg(build)
        .arg(format!("M={}", dir.display()))
        .arg("modules"));
    let ko = dir.join("dcg_sigdb.ko");
    assert!(ko.is_file(), "no {}", ko.display());
    ko
}

/// What the tests boot with: a db of 6.12's vmlinux, `dcg_sigdb.ko` built from it with
/// 6.12's headers, and the same module with one byte of its db flipped.
struct Modules {
    _tmp: tempfile::TempDir,
    db: PathBuf,
    good_ko: PathBuf,
    bad_ko: PathBuf,
}

fn modules_612(kdir: &Path) -> Modules {
    let build = dcg_tests::kernel_script("kernel-headers.sh", &[kdir.to_str().unwrap()]);
    // The module directory from dwarfscan, and a copy whose db is corrupted.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("k.sigdb");
    let good = tmp.path().join("good");
    run(Command::new(dcg_tests::dwarfscan_bin())
        .arg("-q")
        .arg(kdir.join("vmlinux"))
        .arg("-o")
        .arg(&db)
        .arg("--emit-module")
        .arg(&good));
    let bad = tmp.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    for e in std::fs::read_dir(&good).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), bad.join(e.file_name())).unwrap();
    }
    let blob = bad.join(loader::module::BLOB_FILE);
    let mut bytes = std::fs::read(&blob).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    Modules {
        good_ko: build_module(&build, &good),
        bad_ko: build_module(&build, &bad),
        db,
        _tmp: tmp,
    }
}

/// Boot `kernel` with the modules and the db (`/dcg/dcg_sigdb.ko`, `/dcg/bad/dcg_sigdb.ko`,
/// `/dcg/k.sigdb`) and guest script `script`; returns the console.
fn boot(kernel: &Path, m: &Modules, script: &str) -> String {
    let files = [
        (m.db.as_path(), "/dcg/k.sigdb"),
        (m.good_ko.as_path(), "/dcg/dcg_sigdb.ko"),
        (m.bad_ko.as_path(), "/dcg/bad/dcg_sigdb.ko"),
    ];
    boot_with(kernel, &files, script)
}

/// Boot `kernel` with `files` (host path, guest path) and guest script `script`; returns
/// the console.
fn boot_with(kernel: &Path, files: &[(&Path, &str)], script: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let initrd = tmp.path().join("guest.cpio.gz");
    initramfs(&initrd, files, script, 600);
    guest::boot(kernel, &initrd, 660, "", &format!("kernel-module-{script}"))
}

#[test]
fn debian612_db_module() {
    if !enabled() {
        return;
    }
    let kdir = debian_kernel("6.12-cloud");
    let m = modules_612(&kdir);
    let text = boot(&kdir.join("vmlinuz"), &m, "module612.sh");

    let build_id = std::fs::read_to_string(kdir.join("build-id")).unwrap();
    must(
        section(&text, "mod-load"),
        "mod-load",
        &[
            "inserted module dcg_sigdb",
            "-> /sys/kernel/dcg/vmlinux",
            "rc=0",
            "-r--r--r--",
            "sysfs identical: yes",
            build_id.trim(),
        ],
    );
    must(
        section(&text, "mod-sig"),
        "mod-sig",
        &["do_sys_openat2(", "rc=0"],
    );
    must(
        section(&text, "mod-trace"),
        "mod-trace",
        &[
            "rc=0",
            "do_sys_openat2() {",
            "} /* do_sys_openat2 ret=-ENOENT",
            "dcg instances: 0",
        ],
    );
    // The default engine there is BPF: no probe events.
    let t = section(&text, "mod-trace");
    assert!(
        t.contains("dcg: tracing 1 function (command pid") && !t.contains("probes; Ctrl-C"),
        "mod-trace did not use the BPF engine:\n{t}"
    );
    must(
        section(&text, "mod-twice"),
        "mod-twice",
        &["the kernel refused module dcg_sigdb: EEXIST", "rc=1"],
    );
    must(
        section(&text, "mod-unload"),
        "mod-unload",
        &[
            "unloaded module dcg_sigdb",
            "rc=0",
            "sysfs file: gone",
            "sysfs dir: gone",
            "module: gone",
            "proc/modules: 0",
            "sig without db rc=1",
            "cannot remove module dcg_sigdb: ENOENT",
            "unload again rc=1",
        ],
    );
    must(
        section(&text, "mod-corrupt"),
        "mod-corrupt",
        &[
            "/dcg/bad/dcg_sigdb.ko: refusing to load: checksum mismatch",
            "rc=1",
            "module: gone",
        ],
    );
    let corrupt = section(&text, "mod-corrupt");
    assert_eq!(
        corrupt.lines().filter(|l| l.starts_with("dcg:")).count(),
        1,
        "one error line:\n{corrupt}"
    );
    must(
        section(&text, "mod-unload-all"),
        "mod-unload-all",
        &["load rc=0", "rc=0", "module: gone", "sysfs dir: gone"],
    );
    clean_ending(&text, "mod-dmesg");
}

/// A module built for another kernel: 6.12's module on Debian's 7.2 kernel. dcg refuses
/// it first because its db is for another build-id; with --force the kernel refuses it
/// (ENOEXEC) and dcg names both releases.
#[test]
fn debian72_refuses_612_module() {
    if !enabled() {
        return;
    }
    let k612 = debian_kernel("6.12-cloud");
    let m = modules_612(&k612);
    let k72 = debian_kernel("7.2-cloud");
    let text = boot(&k72.join("vmlinuz"), &m, "module-foreign.sh");
    let release = |k: &Path| std::fs::read_to_string(k.join("release")).unwrap();
    let build_id = std::fs::read_to_string(k612.join("build-id")).unwrap();
    let refused = format!(
        "/dcg/dcg_sigdb.ko: db is for kernel build-id {}",
        build_id.trim()
    );
    let why = format!(
        "it was built for kernel {}, this is {}",
        release(&k612).trim(),
        release(&k72).trim()
    );
    must(
        section(&text, "foreign"),
        "foreign",
        &[
            &refused,
            "rc=1",
            "/dcg/dcg_sigdb.ko: the kernel refused module dcg_sigdb: ENOEXEC",
            &why,
            "module: gone",
            "sysfs dir: gone",
            "kernel warnings: 0",
        ],
    );
}

/// The C module `--emit-module` writes is clean by the kernel's own checkpatch
/// (`--strict`; 6.12's, from Debian's linux-source via `tests/kernels/kernel-checkpatch.sh`).
#[test]
fn module_template_is_checkpatch_clean() {
    if !enabled() {
        return;
    }
    let checkpatch = dcg_tests::kernel_script("kernel-checkpatch.sh", &[]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    let db = std::fs::read(dcg_tests::testkernel_db()).unwrap();
    loader::module::write_module_dir(&dir, &db).unwrap();
    for f in [
        "dcg_sigdb_main.c",
        "dcg_sigdb.h",
        "dcg_sigdb_blob.S",
        "Kbuild",
        "Makefile",
    ] {
        let out = Command::new("perl")
            .arg(&checkpatch)
            .args(["--no-tree", "--strict", "--show-types", "-f"])
            .arg(dir.join(f))
            .output()
            .expect("running checkpatch.pl");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("total: 0 errors, 0 warnings, 0 checks"),
            "checkpatch {f}:\n{text}"
        );
    }
}

/// Issue 27: the test kernel is built with `dwarfscan/kbuild/linux-7.2.patch` and
/// `CONFIG_DEBUG_INFO_DCG=m`. Its `make modules_install` tree has `dcg_sigdb.ko` (in
/// modules.dep), whose db carries the vmlinux build-id and is byte for byte what dwarfscan
/// writes for that vmlinux and its modules. Booted: `modprobe dcg_sigdb`, `dcg trace` with
/// no `--db` and an empty store, `modprobe -r`, no kernel warning.
#[test]
fn testkernel_build_makes_the_db_module() {
    if !enabled() {
        return;
    }
    let kdir = dcg_tests::testkernel_dir();
    let config = std::fs::read_to_string(kdir.join("config")).unwrap();
    assert!(
        config.lines().any(|l| l == "CONFIG_DEBUG_INFO_DCG=m"),
        "the test kernel's .config has no CONFIG_DEBUG_INFO_DCG=m"
    );
    let release = std::fs::read_to_string(kdir.join("release")).unwrap();
    let modroot = kdir.join("modules/lib/modules").join(release.trim());
    let ko = modroot.join("kernel/kernel/dcg/dcg_sigdb.ko");
    let dep = std::fs::read_to_string(modroot.join("modules.dep")).unwrap();
    assert!(
        dep.lines()
            .any(|l| l.starts_with("kernel/kernel/dcg/dcg_sigdb.ko:")),
        "modules.dep does not list the db module:\n{dep}"
    );
    let embedded = loader::extract_from_elf(&ko, &std::fs::read(&ko).unwrap()).unwrap();
    let db = sigdb::Db::from_bytes(embedded.clone()).unwrap();
    let build_id = std::fs::read_to_string(kdir.join("build-id")).unwrap();
    let hex: String = db.build_id().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        build_id.trim(),
        "the module's db is for another kernel"
    );
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("k.sigdb");
    run(Command::new(dcg_tests::dwarfscan_bin())
        .arg("-q")
        .arg(kdir.join("vmlinux"))
        .args(dcg_tests::testkernel_modules())
        .arg("-o")
        .arg(&fresh));
    assert!(
        std::fs::read(&fresh).unwrap() == embedded,
        "the db in {} differs from dwarfscan's for the same vmlinux and modules",
        ko.display()
    );

    let guest_modroot = format!("/lib/modules/{}", release.trim());
    let text = boot_with(
        &kdir.join("vmlinuz"),
        &[(modroot.as_path(), guest_modroot.as_str())],
        "kbuild-module.sh",
    );
    must(
        section(&text, "kb-modprobe"),
        "kb-modprobe",
        &[
            "kernel/kernel/dcg/dcg_sigdb.ko:",
            "rc=0",
            "dcg_sigdb",
            "-r--r--r--",
            "vmlinux",
        ],
    );
    must(
        section(&text, "kb-trace"),
        "kb-trace",
        &[
            "rc=0",
            "do_sys_openat2(",
            "} /* do_sys_openat2 ret=-ENOENT",
            "dcg instances: 0",
        ],
    );
    must(
        section(&text, "kb-unload"),
        "kb-unload",
        &["rc=0", "proc/modules: 0", "sysfs file: gone"],
    );
    clean_ending(&text, "kb-dmesg");
}

/// How every boot here ends: no kernel warning in section `dmesg`, and the global tracing
/// state as the guest found it.
fn clean_ending(text: &str, dmesg: &str) {
    must(section(text, dmesg), dmesg, &["kernel warnings: 0"]);
    must(
        section(text, "after"),
        "after",
        &["global state unchanged: yes"],
    );
}

/// The Kbuild patches (`dwarfscan/kbuild/`) by the kernel's own checkpatch (`--strict`):
/// no errors; the two warnings the README names are the only ones.
#[test]
fn kbuild_patches_are_checkpatch_clean() {
    if !enabled() {
        return;
    }
    let checkpatch = dcg_tests::kernel_script("kernel-checkpatch.sh", &[]);
    for v in ["7.2", "6.12"] {
        let patch = dcg_tests::repo_root().join(format!("dwarfscan/kbuild/linux-{v}.patch"));
        let out = Command::new("perl")
            .arg(&checkpatch)
            .args(["--no-tree", "--strict"])
            .arg(&patch)
            .output()
            .expect("running checkpatch.pl");
        let text = String::from_utf8_lossy(&out.stdout);
        let warnings: Vec<&str> = text.lines().filter(|l| l.starts_with("WARNING:")).collect();
        assert!(
            text.contains("total: 0 errors, 2 warnings, 0 checks")
                && warnings.iter().all(|w| w.contains("filename in the file")
                    || w.contains("MAINTAINERS need updating")),
            "checkpatch {v}:\n{text}"
        );
    }
}
