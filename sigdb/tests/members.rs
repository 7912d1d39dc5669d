//! Struct and union members: the sample db's, read back; a version 5 db, which has none.

mod common;

use common::*;
use sigdb::*;

/// `name type @byte[:bit/size]`, one line per member.
fn member_lines(t: Type<'_>) -> Vec<String> {
    t.members()
        .unwrap()
        .map(|m| {
            let m = m.unwrap();
            let bits = if m.is_bitfield() {
                format!(":{}/{}", m.bit_offset() % 8, m.bit_size())
            } else {
                String::new()
            };
            format!("{} @{}{bits}", m.ty().declare(m.name()), m.offset())
        })
        .collect()
}

#[test]
fn sample_members() {
    let db = Db::from_bytes(sample_builder().finish().unwrap()).unwrap();
    let open = db.by_name("do_sys_openat2").next().unwrap();
    let file = open.params().nth(2).unwrap().ty().target().unwrap();
    assert_eq!(file.display(), "struct file");
    assert_eq!(
        member_lines(file),
        [
            "struct file *next @0",
            "int f_flags @8",
            "int ready @12:0/1",
            "int level @12:1/3",
            "enum mode f_mode @16",
            "int (*f_op)(struct file *, size_t, ...) @24",
            "union <anon> @32",
            "char f_name[16] @40",
            "char f_data[] @232",
        ]
    );
    let next = file.members().unwrap().find("next").unwrap().unwrap();
    assert_eq!(next.ty().target().unwrap().index(), file.index());
    let anon = file.members().unwrap().nth(6).unwrap().unwrap().ty();
    assert_eq!(
        member_lines(anon),
        ["long int count @0", "struct file *next_free @0"]
    );
    assert!(file.members().unwrap().find("nope").unwrap().is_none());
    // Not an aggregate: no members.
    assert_eq!(open.ret().members().unwrap().count(), 0);
    assert!(db.member_count() >= 11);
}

#[test]
fn version_5_reads_without_members() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/point-v5.sigdb"
    ))
    .unwrap();
    let db = Db::from_bytes(bytes).unwrap();
    db.check_frames().unwrap();
    assert_eq!((db.version(), db.member_count()), (5, 0));
    let norm = db.by_name("norm").next().unwrap();
    let p = norm.params().next().unwrap();
    assert_eq!(p.ty().declare(p.name()), "struct point *p");
    let err = p.ty().target().unwrap().members().unwrap_err();
    assert!(matches!(err, Error::MembersNotRecorded { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("members are not recorded in this db (format version 5)"),
        "{err}"
    );
}

/// A version 6 db (the sample, written by the version 6 writer): function records in
/// place, parameter blocks not transposed. It reads as the same db in version 7.
#[test]
fn version_6_reads_as_version_7() {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sample-v6.sigdb"
    ))
    .unwrap();
    let old = Db::from_bytes(bytes).unwrap();
    old.check_frames().unwrap();
    let new = Db::from_bytes(common::sample_builder().finish().unwrap()).unwrap();
    assert_eq!((old.version(), new.version()), (6, 7));
    assert_eq!(old.function_count(), new.function_count());
    let show = |db: &Db| -> Vec<String> {
        db.functions()
            .map(|f| {
                let members: Vec<String> = f
                    .params()
                    .filter_map(|p| p.ty().resolve().target())
                    .filter_map(|t| t.members().ok())
                    .flat_map(|m| m.map(|m| m.map(|m| format!("{}@{}", m.name(), m.bit_offset()))))
                    .map(|m| m.unwrap())
                    .collect();
                format!(
                    "{} {:?} {} {}",
                    common::db_function(f),
                    f.flags(),
                    f.addr(),
                    members.join(",")
                )
            })
            .collect()
    };
    assert_eq!(show(&old), show(&new));
    for f in new.functions() {
        let found: Vec<u32> = old.by_name(f.name()).map(|f| f.index()).collect();
        assert!(found.contains(&f.index()), "{}", f.name());
    }
}
