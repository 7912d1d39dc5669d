//! Issue 18 on the host (no module is inserted here; `kernel_module.rs` does that in
//! qemu): `dwarfscan --emit-module` writes the Kbuild directory with the db and the right
//! sysfs file name, and the discovery order `--db`, then the sysfs directory of module dbs
//! (`DCG_SYSFS_DIR` stands in for `/sys/kernel/dcg`), then the store, with sysfs dbs
//! validated like any file and refused when not for the running kernel.

use dcg_tests::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dwarfscan(args: &[&Path]) {
    let out = Command::new(dwarfscan_bin())
        .arg("-q")
        .args(args)
        .output()
        .expect("spawn dwarfscan");
    assert!(
        out.status.success(),
        "dwarfscan {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The test kernel's db and a db of its modules alone (keyed to the kernel), with
/// `--emit-module` directories for both.
struct Dbs {
    dir: tempfile::TempDir,
    base: PathBuf,
    mods: PathBuf,
}

fn dbs() -> Dbs {
    let dir = tempfile::tempdir().unwrap();
    let vmlinux = testkernel_vmlinux();
    let base = dir.path().join("vmlinux.sigdb");
    let mods = dir.path().join("modules.sigdb");
    let p = |s: &str| dir.path().join(s);
    dwarfscan(&[
        &vmlinux,
        "-o".as_ref(),
        &base,
        "--emit-module".as_ref(),
        &p("mod-kernel"),
    ]);
    dwarfscan(&[
        &testkernel_dir().join("dbg-modules"),
        "--base".as_ref(),
        &vmlinux,
        "-o".as_ref(),
        &mods,
        "--emit-module".as_ref(),
        &p("mod-modules"),
    ]);
    Dbs { dir, base, mods }
}

/// `dcg ARGS` with the sysfs directory, notes and store of `dir`.
fn dcg(dir: &Path, args: &[&str]) -> Output {
    Command::new(dcg_bin())
        .args(args)
        .env("DCG_SYSFS_DIR", dir.join("sysfs"))
        .env("DCG_KERNEL_NOTES", dir.join("notes"))
        .env("DCG_STORE", dir.join("store"))
        .output()
        .expect("spawn dcg")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn emit_module_writes_kbuild_dir_with_db() {
    let d = dbs();
    for (sub, db, name) in [
        ("mod-kernel", &d.base, "vmlinux"),
        ("mod-modules", &d.mods, "modules"),
    ] {
        let m = d.dir.path().join(sub);
        let mut files: Vec<String> = std::fs::read_dir(&m)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "Kbuild",
                "Makefile",
                "dcg_sigdb.h",
                "dcg_sigdb_blob.S",
                "dcg_sigdb_main.c",
                "sigdb.bin"
            ]
        );
        assert_eq!(
            std::fs::read(m.join("sigdb.bin")).unwrap(),
            std::fs::read(db).unwrap(),
            "{sub}: the embedded db is the -o db"
        );
        let kbuild = std::fs::read_to_string(m.join("Kbuild")).unwrap();
        assert!(
            kbuild.contains(&format!("-DDCG_SIGDB_NAME={name}\n")),
            "{sub}: {kbuild}"
        );
        let c = std::fs::read_to_string(m.join("dcg_sigdb_main.c")).unwrap();
        assert!(c.starts_with("// SPDX-License-Identifier: GPL-2.0\n"));
        assert!(c.contains("MODULE_LICENSE(\"GPL\");"));
    }
}

#[test]
fn discovery_db_then_sysfs_then_store() {
    let d = dbs();
    let dir = d.dir.path();
    let base = sigdb::Db::open(&d.base).unwrap();
    let mods = sigdb::Db::open(&d.mods).unwrap();
    let mod_func = mods.functions().next().unwrap().name().to_string();
    std::fs::write(dir.join("notes"), kernel_notes_with(base.build_id())).unwrap();

    // Nothing in sysfs, nothing in the store: the store's error.
    let o = dcg(dir, &["sig", "do_sys_openat2"]);
    assert!(!o.status.success());
    assert!(text(&o)
        .1
        .contains("no signature db for the running kernel"));

    // Module dbs in sysfs: found without --db, kernel and modules alike.
    let sysfs = dir.join("sysfs");
    std::fs::create_dir(&sysfs).unwrap();
    std::fs::copy(&d.base, sysfs.join("vmlinux")).unwrap();
    std::fs::copy(&d.mods, sysfs.join("modules")).unwrap();
    let o = dcg(dir, &["sig", "do_sys_openat2", &mod_func]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("do_sys_openat2("), "{out}");
    assert!(out.contains(&format!("{mod_func}(")), "{out}");
    let (list, _) = text(&dcg(dir, &["list"]));
    let id = sigdb::hex(base.build_id());
    for f in ["vmlinux", "modules"] {
        let line = list
            .lines()
            .find(|l| l.ends_with(&format!("/sysfs/{f}  ?")))
            .unwrap_or_else(|| panic!("no line for {f}:\n{list}"));
        assert!(line.starts_with(&format!("{id}  module")), "{line}");
    }

    // A corrupted sysfs db: the usual one-line error naming the file; --db still wins.
    let mut bytes = std::fs::read(&d.base).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(sysfs.join("vmlinux"), &bytes).unwrap();
    let o = dcg(dir, &["sig", "do_sys_openat2"]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "dcg: {}: refusing to load: checksum mismatch",
            sysfs.join("vmlinux").display()
        )),
        "{err}"
    );
    let o = dcg(
        dir,
        &["sig", "--db", d.base.to_str().unwrap(), "do_sys_openat2"],
    );
    assert!(o.status.success(), "{}", text(&o).1);

    // A sysfs db for another kernel is refused, naming both build-ids.
    std::fs::copy(&d.base, sysfs.join("vmlinux")).unwrap();
    std::fs::write(dir.join("notes"), kernel_notes_with(&[0x11; 20])).unwrap();
    let o = dcg(dir, &["sig", "do_sys_openat2"]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!(
            "db is for kernel build-id {id}, but the running kernel is {}",
            "11".repeat(20)
        )),
        "{err}"
    );

    // `dcg load` of a file that is not a module still goes to the store.
    std::fs::write(dir.join("notes"), kernel_notes_with(base.build_id())).unwrap();
    std::fs::remove_dir_all(&sysfs).unwrap();
    let o = dcg(dir, &["load", d.base.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o).1);
    let o = dcg(dir, &["sig", "do_sys_openat2"]);
    assert!(o.status.success(), "{}", text(&o).1);
}
