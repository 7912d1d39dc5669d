//! Embedding a db in a linkable ELF object, linking it into a C program with gcc, and
//! loading the object and the program.

mod common;

use std::process::Command;

use common::*;
use loader::blob::{emit_object, extract_from_elf, END_SYMBOL, SECTION, START_SYMBOL};
use loader::{LoadOptions, LoadStatus, Store};
use object::{Object, ObjectSection, ObjectSymbol};

const MAIN_C: &str = r#"
#include <stdio.h>
#include <string.h>

extern const unsigned char dcg_sigdb_start[];
extern const unsigned char dcg_sigdb_end[];

int main(void)
{
	unsigned long size = (unsigned long)(dcg_sigdb_end - dcg_sigdb_start);
	printf("%lu\n", size);
	if (size < 8 || memcmp(dcg_sigdb_start, "DCGSIGDB", 8) != 0) {
		fprintf(stderr, "bad magic\n");
		return 1;
	}
	return 0;
}
"#;

#[test]
fn emitted_object_is_a_relocatable_with_the_section_and_symbols() {
    let db = user_db(&bid(0x61), &["main", "helper"]);
    let obj = emit_object(&db).unwrap();
    let file = object::File::parse(&*obj).unwrap();
    assert_eq!(file.kind(), object::ObjectKind::Relocatable);
    assert_eq!(file.architecture(), object::Architecture::X86_64);
    assert!(file.is_64());
    let sec = file.section_by_name(SECTION).unwrap();
    assert_eq!(sec.data().unwrap(), db.as_slice());
    assert_eq!(sec.align(), 8);
    assert!(matches!(
        sec.flags(),
        object::SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_ALLOC) != 0
    ));
    for (name, value) in [(START_SYMBOL, 0), (END_SYMBOL, db.len() as u64)] {
        let sym = file.symbol_by_name(name).unwrap();
        assert!(sym.is_global(), "{name} global");
        assert_eq!(sym.address(), value, "{name}");
        assert_eq!(sym.section_index(), Some(sec.index()));
    }
    assert!(file.section_by_name(".note.GNU-stack").is_some());
    assert_eq!(extract_from_elf("x.o".as_ref(), &obj).unwrap(), db);

    // Invalid input is refused.
    let mut bad = db.clone();
    bad.truncate(100);
    assert!(emit_object(&bad)
        .unwrap_err()
        .to_string()
        .contains("truncated"));
}

#[test]
fn object_links_into_a_c_program_and_both_load() {
    if !have("gcc") {
        eprintln!("skipped: gcc not found");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0x62);
    let db = kernel_db(&k, &["schedule", "do_sys_open", "vfs_read"]);
    let obj_path = tmp.path().join("sigs.o");
    loader::write_object(&obj_path, &db).unwrap();
    let c = write(tmp.path(), "main.c", MAIN_C.as_bytes());
    let prog = tmp.path().join("prog");
    let out = Command::new("gcc")
        .arg("-Wall")
        .arg("-o")
        .arg(&prog)
        .arg(&c)
        .arg(&obj_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "gcc failed: {stderr}");
    assert!(!stderr.contains("warning"), "linker warnings: {stderr}");

    let run = Command::new(&prog).output().unwrap();
    assert!(
        run.status.success(),
        "magic check failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let printed: usize = String::from_utf8_lossy(&run.stdout).trim().parse().unwrap();
    assert_eq!(printed, db.len(), "embedded size equals the db size");

    // `dcg load` accepts the object and any ELF file carrying the section.
    let notes = write_notes(tmp.path(), &k);
    let store = Store::open(tmp.path().join("store"))
        .unwrap()
        .with_kernel_notes(notes);
    let loaded = store.load(&obj_path, &LoadOptions::default()).unwrap();
    assert_eq!(loaded.status, LoadStatus::Installed);
    assert_eq!(std::fs::read(&loaded.path).unwrap(), db);
    let again = store.load(&prog, &LoadOptions::default()).unwrap();
    assert_eq!(
        again.status,
        LoadStatus::AlreadyLoaded,
        "same db inside the program"
    );
    let dbs = store.find_for_kernel().unwrap().open().unwrap();
    assert_eq!(dbs[0].by_name("vfs_read").count(), 1);
}

#[test]
fn user_space_binary_found_by_its_build_id() {
    if !have("gcc") {
        eprintln!("skipped: gcc not found");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let c = write(tmp.path(), "hello.c", b"int main(void) { return 0; }\n");
    let prog = tmp.path().join("hello");
    let st = Command::new("gcc")
        .arg("-Wl,--build-id=sha1")
        .arg("-o")
        .arg(&prog)
        .arg(&c)
        .status()
        .unwrap();
    assert!(st.success());
    let id = loader::binary::build_id_of(&prog).unwrap();
    assert_eq!(id.len(), 20);
    if have("readelf") {
        let out = Command::new("readelf")
            .arg("-n")
            .arg(&prog)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("Build ID: {}", sigdb::hex(&id))),
            "{text}"
        );
    }

    let store = Store::open(tmp.path().join("store")).unwrap();
    let msg = store.find_for_binary(&prog).unwrap_err().to_string();
    assert!(
        msg.contains("hello") && msg.contains(&sigdb::hex(&id)),
        "{msg}"
    );
    assert!(
        msg.contains("dwarfscan") && msg.contains("dcg load hello.sigdb"),
        "{msg}"
    );

    let f = write(tmp.path(), "hello.sigdb", &user_db(&id, &["main"]));
    let out = store.load(&f, &LoadOptions::default()).unwrap();
    assert_eq!(store.find_for_binary(&prog).unwrap().base, Some(out.path));

    let no_id = tmp.path().join("noid");
    let st = Command::new("gcc")
        .arg("-Wl,--build-id=none")
        .arg("-o")
        .arg(&no_id)
        .arg(&c)
        .status()
        .unwrap();
    assert!(st.success());
    let msg = store.find_for_binary(&no_id).unwrap_err().to_string();
    assert!(
        msg.contains("noid") && msg.contains("no GNU build-id"),
        "{msg}"
    );
}
