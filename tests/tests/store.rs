//! The store end to end through the binaries: dwarfscan builds a kernel db and a db of
//! its modules alone, `dcg load` installs both (matched by build-id), and `dcg sig`
//! finds functions of both without `--db`; the embedded-object form links into a C
//! program and loads too.

use dcg_tests::*;
use std::path::Path;
use std::process::{Command, Output};

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn load_base_and_modules_then_sig_without_db() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let vmlinux = testkernel_vmlinux();
    let base = dir.path().join("vmlinux.sigdb");
    let mods = dir.path().join("modules.sigdb");
    run(Command::new(dwarfscan_bin())
        .arg("-q")
        .arg(&vmlinux)
        .arg("-o")
        .arg(&base));
    run(Command::new(dwarfscan_bin())
        .arg("-q")
        .arg(testkernel_dir().join("dbg-modules"))
        .arg("--base")
        .arg(&vmlinux)
        .arg("-o")
        .arg(&mods));
    let db = sigdb::Db::open(&base).unwrap();
    let mdb = sigdb::Db::open(&mods).unwrap();
    assert!(mdb.flags().contains(sigdb::DbFlags::MODULES_ONLY));
    assert_eq!(
        mdb.build_id(),
        db.build_id(),
        "module db keyed to its kernel"
    );

    // The "running kernel" is the test kernel.
    let notes = dir.path().join("notes");
    std::fs::write(&notes, kernel_notes_with(db.build_id())).unwrap();
    let dcg = |args: &[&str]| {
        let mut c = Command::new(dcg_bin());
        c.args(args)
            .env("DCG_STORE", &store)
            .env("DCG_KERNEL_NOTES", &notes);
        c
    };

    // Without a db, the error says what to do.
    let out = dcg(&["sig", "do_sys_openat2"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dcg load"), "{err}");

    for f in [&base, &mods] {
        let out = run(&mut dcg(&["load", f.to_str().unwrap()]));
        assert!(String::from_utf8_lossy(&out.stdout).contains("installed"));
    }
    // Twice is a no-op.
    let out = run(&mut dcg(&["load", base.to_str().unwrap()]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("already loaded"));

    let out = run(&mut dcg(&["sig", "do_sys_openat2", "bm_status_write"]));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("int do_sys_openat2(int dfd /* rdi */, const char *filename /* rsi */, struct open_how *how /* rdx */)  [vmlinux 0x"),
        "{text}"
    );
    assert!(
        text.contains("bm_status_write(") && text.contains("[binfmt_misc 0x"),
        "{text}"
    );

    let out = run(&mut dcg(&["list"]));
    let list = String::from_utf8(out.stdout).unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.contains("[running kernel]"), "{list}");

    // A db for another kernel is refused without --force, and the store is unchanged.
    let other = dir.path().join("notes-other");
    std::fs::write(&other, kernel_notes_with(&[0x11; 20])).unwrap();
    let out = Command::new(dcg_bin())
        .args(["load", base.to_str().unwrap()])
        .env("DCG_STORE", dir.path().join("store2"))
        .env("DCG_KERNEL_NOTES", &other)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);

    let out = run(&mut dcg(&["unload", "all"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("unloaded"));
    assert!(!dcg(&["sig", "do_sys_openat2"])
        .output()
        .unwrap()
        .status
        .success());
}

#[test]
fn embedded_object_links_into_a_program_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    run(Command::new("gcc")
        .args(["-O2", "-g"])
        .arg(repo_root().join("examples/demo.c"))
        .arg("-o")
        .arg(&demo));
    let db = dir.path().join("demo.sigdb");
    let obj = dir.path().join("demo-sigs.o");
    run(Command::new(dwarfscan_bin())
        .arg("-q")
        .arg(&demo)
        .arg("-o")
        .arg(&db)
        .arg("--emit-object")
        .arg(&obj));
    let c = dir.path().join("blob.c");
    std::fs::write(
        &c,
        r#"#include <stdio.h>
#include <string.h>
extern const char dcg_sigdb_start[], dcg_sigdb_end[];
int main(void) {
    if (memcmp(dcg_sigdb_start, "DCGSIGDB", 8)) { puts("bad magic"); return 1; }
    printf("%ld\n", (long)(dcg_sigdb_end - dcg_sigdb_start));
    return 0;
}
"#,
    )
    .unwrap();
    let prog = dir.path().join("blob");
    run(Command::new("gcc").arg(&c).arg(&obj).arg("-o").arg(&prog));
    let out = run(&mut Command::new(&prog));
    let size: u64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(size, std::fs::metadata(&db).unwrap().len());

    let store = dir.path().join("store");
    let load = |f: &Path| {
        Command::new(dcg_bin())
            .arg("load")
            .arg(f)
            .env("DCG_STORE", &store)
            .output()
            .unwrap()
    };
    let out = load(&obj);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("installed"));
    // The same db embedded in the linked program is the same db.
    let out = load(&prog);
    assert!(String::from_utf8_lossy(&out.stdout).contains("already loaded"));
    // And dcg sig finds it through --db on the object as well.
    let out = run(Command::new(dcg_bin())
        .arg("sig")
        .arg("--db")
        .arg(&obj)
        .arg("parse_line"));
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with("int parse_line(const char *line /* rdi */)"));
}
