//! Struct and union members (`tests/corpus/members.c`): compiled with gcc at -O0 and -O2,
//! DWARF 4 (bit-fields by `DW_AT_bit_offset`) and 5 (`DW_AT_data_bit_offset`), and with
//! clang when installed; every variant's members must be the expected ones, and those of
//! pahole's BTF of the same program.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/members.c")
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compile the corpus program with `cc` and `flags` into `dir`.
fn build(cc: &str, flags: &[&str], dir: &Path) -> PathBuf {
    let out = dir.join(format!("members-{cc}{}", flags.join("")));
    let status = Command::new(cc)
        .args(flags)
        .arg(source())
        .arg("-o")
        .arg(&out)
        .status()
        .expect("run the compiler");
    assert!(status.success(), "{cc} {flags:?}");
    out
}

/// The structs and unions the functions reach, members one a line: `@byte[:bit/width]
/// declaration`, the structs sorted by name (anonymous ones by their first member).
fn render(db: &sigdb::Db) -> String {
    let mut blocks = vec![];
    for i in 0..db.type_count() as u32 {
        let t = db.type_at(i).unwrap();
        if !matches!(t.kind(), sigdb::TypeKind::Struct | sigdb::TypeKind::Union) {
            continue;
        }
        let mut s = format!("{} ({} bytes)\n", t.display(), t.size());
        for m in t.members().unwrap() {
            let m = m.unwrap();
            let bits = if m.is_bitfield() {
                format!(":{}/{}", m.bit_offset() % 8, m.bit_size())
            } else {
                String::new()
            };
            s += &format!("  @{}{bits} {}\n", m.offset(), m.ty().declare(m.name()));
        }
        blocks.push(s);
    }
    blocks.sort();
    blocks.concat()
}

const EXPECTED: &str = "\
struct <anon> (4 bytes)
  @0 short int x
  @2 short int y
struct conf (88 bytes)
  @0 int port
  @4 char name[16]
  @20 enum mode m
  @24 struct inner in
  @36:0/1 unsigned int ready
  @36:1/3 unsigned int level
  @37:0/5 signed char sbits
  @40 union <anon>
  @48 struct <anon> pos
  @56 struct node *list
  @64 struct opaque *priv
  @72 int (*cb)(struct conf *)
  @80 size_t n
  @88 unsigned char data[]
struct inner (12 bytes)
  @0 int a
  @4 char tag[8]
struct node (16 bytes)
  @0 struct node *next
  @8 int value
struct opaque (0 bytes)
union <anon> (8 bytes)
  @0 long int count
  @0 void *ptr
union value (16 bytes)
  @0 int i
  @0 double d
  @0 char s[12]
";

#[test]
fn members_in_every_variant() {
    if !have("gcc") {
        eprintln!("skipped: no gcc");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut variants: Vec<(&str, Vec<&str>)> = vec![];
    for opt in ["-O0", "-O2"] {
        for dwarf in ["-gdwarf-4", "-gdwarf-5"] {
            variants.push(("gcc", vec![opt, dwarf]));
            if have("clang") {
                variants.push(("clang", vec![opt, dwarf]));
            }
        }
    }
    for (cc, flags) in variants {
        let prog = build(cc, &flags, tmp.path());
        let (db, _) = common::scan_to_db(&[prog]);
        // clang spells `long int` as `long`, `short int` as `short`.
        let got = render(&db)
            .replace("long int", "long")
            .replace("short int", "short");
        let want = EXPECTED
            .replace("long int", "long")
            .replace("short int", "short");
        assert_eq!(got, want, "{cc} {flags:?}");
        // The list's member points back at its own struct.
        let apply = db.by_name("apply").next().unwrap();
        let conf = apply.params().next().unwrap().ty().target().unwrap();
        let list = conf.members().unwrap().find("list").unwrap().unwrap();
        let node = list.ty().target().unwrap();
        let next = node.members().unwrap().find("next").unwrap().unwrap();
        assert_eq!(next.ty().target().unwrap().index(), node.index());
        // A declaration has no members.
        let private = conf.members().unwrap().find("priv").unwrap().unwrap();
        let opaque = private.ty().target().unwrap();
        assert!(opaque.flags().contains(sigdb::TypeFlags::DECLARATION));
        assert_eq!(opaque.members().unwrap().count(), 0);
    }
}

/// pahole's BTF of the same program has the same members.
#[test]
fn members_agree_with_pahole() {
    if !have("pahole") || !have("gcc") {
        eprintln!("skipped: needs pahole and gcc");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        for dwarf in ["-gdwarf-4", "-gdwarf-5"] {
            let prog = build("gcc", &[opt, dwarf, "-g"], tmp.path());
            let btf_path = tmp.path().join("out.btf");
            let out = Command::new("pahole")
                .arg("-J")
                .arg(format!("--btf_encode_detached={}", btf_path.display()))
                .arg(&prog)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "pahole: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let btf = common::btf::Btf::parse(&std::fs::read(&btf_path).unwrap()).unwrap();
            let (db, _) = common::scan_to_db(&[prog]);
            let a =
                common::btf::compare_members(&btf.aggregates(), &common::btf::db_aggregates(&db));
            eprint!("{opt} {dwarf}: {}", a.report());
            assert!(a.compared >= 4, "{}", a.report());
            assert_eq!(a.identical, a.compared, "{}", a.report());
        }
    }
}

/// A struct one unit only declares (`tests/corpus/decl_only.c`: `struct shape;`) and
/// another defines (`decl_full.c`): the db writes the definition in the declaration's
/// place, so the function of the first unit gets the complete struct, members and all,
/// whichever unit comes first.
#[test]
fn declared_struct_gets_its_definition() {
    if !have("gcc") {
        eprintln!("skipped: no gcc");
        return;
    }
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let tmp = tempfile::tempdir().unwrap();
    let units = [corpus.join("decl_only.c"), corpus.join("decl_full.c")];
    for opt in ["-O0", "-O2"] {
        for order in [[0, 1], [1, 0]] {
            let prog = tmp.path().join(format!("decl{opt}{}", order[0]));
            let status = Command::new("gcc")
                .args([opt, "-g"])
                .args(order.map(|i| &units[i]))
                .arg("-o")
                .arg(&prog)
                .status()
                .expect("run gcc");
            assert!(status.success());
            let (db, _) = common::scan_to_db(&[prog]);
            let what = format!("{opt} units {order:?}");
            for f in ["use_shape", "shape_area", "make_shape"] {
                let f = db.by_name(f).next().unwrap_or_else(|| panic!("{f} {what}"));
                let ty = match f.params().next() {
                    Some(p) if f.name() != "make_shape" => p.ty(),
                    _ => f.ret(),
                };
                let shape = ty.resolve().target().unwrap().resolve();
                assert_eq!(shape.display(), "struct shape", "{what}");
                assert!(
                    !shape.flags().contains(sigdb::TypeFlags::DECLARATION),
                    "{what}"
                );
                assert_eq!(shape.size(), 16, "{what}");
                let names: Vec<String> = shape
                    .members()
                    .unwrap()
                    .map(|m| m.unwrap().name().to_string())
                    .collect();
                assert_eq!(names, ["w", "h", "name"], "{} {what}", f.name());
            }
            // One struct shape in the db: the declaration is not written apart.
            let shapes = (0..db.type_count() as u32)
                .filter(|&i| db.type_at(i).unwrap().display() == "struct shape")
                .count();
            assert_eq!(shapes, 1, "{what}");
        }
    }
}
