//! The db as a kernel module, without inserting one (that needs root and a kernel built
//! for it; `tests/tests/kernel_module.rs` does it in qemu): the Kbuild directory, the
//! `.modinfo` of a module, and every refusal `dcg load FILE.ko` makes before the kernel
//! sees the module (corrupted db, db for another kernel, not a module).

mod common;

use std::path::Path;

use common::*;
use loader::module::{self, ModInfo};
use object::write::Object;
use object::{Architecture, BinaryFormat, Endianness, SectionKind};

/// A relocatable ELF file shaped like a db module: `.modinfo` and `.dcg_sigdb`.
fn fake_ko(modinfo: &[u8], db: &[u8]) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    for (name, data) in [(&b".modinfo"[..], modinfo), (b".dcg_sigdb", db)] {
        let s = obj.add_section(Vec::new(), name.to_vec(), SectionKind::ReadOnlyData);
        obj.set_section_data(s, data, 8);
    }
    obj.write().unwrap()
}

const MODINFO: &[u8] =
    b"license=GPL\0name=dcg_sigdb\0vermagic=9.9.9-test SMP preempt mod_unload \0";

#[test]
fn modinfo_and_is_module() {
    let db = kernel_db(&bid(1), &["f"]);
    let ko = fake_ko(MODINFO, &db);
    assert_eq!(
        module::modinfo(Path::new("x.ko"), &ko).unwrap(),
        ModInfo {
            name: "dcg_sigdb".into(),
            vermagic: "9.9.9-test SMP preempt mod_unload".into(),
        }
    );
    assert!(module::is_module(&ko));
    // A linkable db object is not a module; neither is a db.
    assert!(!module::is_module(&loader::emit_object(&db).unwrap()));
    assert!(!module::is_module(&db));
    let e = module::modinfo(Path::new("x.o"), &loader::emit_object(&db).unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.o: not a kernel module (no .modinfo section with a name)"
    );
}

/// The default places with the running kernel's notes at `notes`.
fn places(notes: &std::path::Path) -> loader::Places {
    loader::Places {
        notes: notes.to_path_buf(),
        ..loader::Places::default()
    }
}

#[test]
fn insert_refuses_before_the_kernel_sees_the_module() {
    let dir = tempfile::tempdir().unwrap();
    let notes = write_notes(dir.path(), &bid(1));
    let db = kernel_db(&bid(1), &["f"]);

    // One byte of the embedded db flipped: the usual one-line refusal naming the .ko.
    let mut bad = db.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let ko = write(dir.path(), "bad.ko", &fake_ko(MODINFO, &bad));
    let e = module::insert(&ko, &places(&notes), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}: refusing to load: ", ko.display())),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "{e}");

    // A db for another kernel: refused with both build-ids (--force skips only this).
    let other = write(
        dir.path(),
        "other.ko",
        &fake_ko(MODINFO, &kernel_db(&bid(2), &["f"])),
    );
    let e = module::insert(&other, &places(&notes), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "db is for kernel build-id {}, but the running kernel is {}",
            sigdb::hex(&bid(2)),
            sigdb::hex(&bid(1))
        )),
        "{e}"
    );

    // Not a module at all.
    let plain = write(dir.path(), "plain.o", &loader::emit_object(&db).unwrap());
    let e = module::insert(&plain, &places(&notes), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a kernel module"), "{e}");
}

#[test]
fn module_dir_names_the_sysfs_file_and_validates_the_db() {
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("k");
    assert_eq!(
        module::write_module_dir(&k, &kernel_db(&bid(1), &["f"])).unwrap(),
        "vmlinux"
    );
    let m = dir.path().join("m");
    let mods = modules_db(&bid(1), &[("ext4", &["ext4_fill_super"])]);
    assert_eq!(module::write_module_dir(&m, &mods).unwrap(), "modules");
    assert_eq!(std::fs::read(m.join(module::BLOB_FILE)).unwrap(), mods);
    let kbuild = std::fs::read_to_string(m.join("Kbuild")).unwrap();
    assert!(kbuild.contains("-DDCG_SIGDB_NAME=modules\n"), "{kbuild}");
    assert!(!kbuild.contains('@'), "{kbuild}");

    // An invalid db writes nothing.
    let bad = dir.path().join("bad");
    assert!(module::write_module_dir(&bad, b"DCGSIGDB junk").is_err());
    assert!(!bad.exists());
}

#[test]
fn sysfs_db_for_another_kernel_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let notes = write_notes(dir.path(), &bid(1));
    let path = dir.path().join("vmlinux");
    let ok = module::open_sysfs_db(
        module::ModuleDb {
            path: path.clone(),
            bytes: kernel_db(&bid(1), &["f"]),
        },
        &notes,
    )
    .unwrap();
    assert_eq!(ok.function_count(), 1);
    let e = module::open_sysfs_db(
        module::ModuleDb {
            path: path.clone(),
            bytes: kernel_db(&bid(2), &["f"]),
        },
        &notes,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(&format!("{}: db is for kernel build-id", path.display())),
        "{e}"
    );
}
