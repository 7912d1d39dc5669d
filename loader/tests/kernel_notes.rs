//! Reading the running kernel's build-id from ELF notes.

mod common;

use std::path::Path;

use common::*;
use loader::kernel::{build_id_from_notes, parse_build_id_notes, running_build_id, DEFAULT_NOTES};

#[test]
fn host_sys_kernel_notes_has_a_20_byte_build_id() {
    if !Path::new(DEFAULT_NOTES).exists() {
        eprintln!("skipped: {DEFAULT_NOTES} does not exist here");
        return;
    }
    let id = running_build_id().unwrap();
    assert_eq!(id.len(), 20, "sha1 build-id");
    // Cross-check with a plain scan for the "GNU\0" note of type 3.
    let raw = std::fs::read(DEFAULT_NOTES).unwrap();
    let at = raw
        .windows(16)
        .position(|w| w[..12] == [4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0] && &w[12..] == b"GNU\0")
        .expect("GNU build-id note present");
    assert_eq!(id, raw[at + 16..at + 36]);
}

#[test]
fn crafted_notes_parse() {
    let id = bid(0x33);
    assert_eq!(parse_build_id_notes(&notes_bytes(&id)), Some(id.clone()));
    // Odd-sized build-ids and names are padded to 4 bytes.
    let odd = vec![1, 2, 3, 4, 5, 6, 7];
    assert_eq!(parse_build_id_notes(&notes_bytes(&odd)), Some(odd));

    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(
        build_id_from_notes(&write_notes(tmp.path(), &id)).unwrap(),
        id
    );
}

#[test]
fn malformed_notes_are_rejected() {
    let id = bid(0x44);
    let good = notes_bytes(&id);
    // Cut inside the build-id descriptor.
    let gnu = good.windows(4).position(|w| w == b"GNU\0").unwrap();
    assert_eq!(parse_build_id_notes(&good[..gnu + 4 + 10]), None);
    assert_eq!(parse_build_id_notes(&[]), None);
    assert_eq!(
        parse_build_id_notes(&[0xff; 12]),
        None,
        "huge sizes do not overflow"
    );
    // A type-3 note with another name is not a GNU build-id.
    let mut other = good.clone();
    other[gnu..gnu + 3].copy_from_slice(b"GNX");
    assert_eq!(parse_build_id_notes(&other), None);
    // Wrong type.
    let mut other = good.clone();
    other[gnu - 4] = 4;
    assert_eq!(parse_build_id_notes(&other), None);

    let tmp = tempfile::tempdir().unwrap();
    let p = write(tmp.path(), "notes", &good[..20]);
    let msg = build_id_from_notes(&p).unwrap_err().to_string();
    assert!(
        msg.contains("notes") && msg.contains("no GNU build-id note"),
        "{msg}"
    );
    let msg = build_id_from_notes(&tmp.path().join("absent"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("absent") && msg.contains("No such file"),
        "{msg}"
    );
}
