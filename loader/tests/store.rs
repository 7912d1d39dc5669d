//! Loading, listing, looking up and unloading through a real store directory.

mod common;

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;

use common::*;
use loader::{DbKind, Error, LoadOptions, LoadStatus, Store, Unload};
use sigdb::{hex, Db};

fn store_with_kernel(tmp: &Path, running: &[u8]) -> Store {
    let notes = write_notes(tmp, running);
    Store::open(tmp.join("store"))
        .unwrap()
        .with_kernel_notes(notes)
}

#[test]
fn load_kernel_db_then_list_lookup_and_reload() {
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0x10);
    let store = store_with_kernel(tmp.path(), &k);
    let bytes = kernel_db(&k, &["schedule", "do_sys_open"]);
    let file = write(tmp.path(), "vmlinux.sigdb", &bytes);

    let out = store.load(&file, &LoadOptions::default()).unwrap();
    assert_eq!(out.status, LoadStatus::Installed);
    assert_eq!(out.build_id, hex(&k));
    assert_eq!(out.db_build_id, hex(&k));
    assert_eq!(out.kind, DbKind::Kernel);
    assert_eq!(out.function_count, 2);
    assert_eq!(out.size, bytes.len() as u64);
    assert_eq!(
        out.path,
        tmp.path().join("store").join(hex(&k)).join("base.sigdb")
    );
    assert_eq!(std::fs::read(&out.path).unwrap(), bytes);

    // Modes: store and entry 0755, files 0644.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o7777;
    assert_eq!(mode(store.root()), 0o755);
    assert_eq!(mode(out.path.parent().unwrap()), 0o755);
    assert_eq!(mode(&out.path), 0o644);
    assert_eq!(mode(&out.path.with_extension("json")), 0o644);

    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    let e = &list[0];
    assert_eq!(e.build_id, hex(&k));
    assert_eq!(e.kind, DbKind::Kernel);
    assert_eq!(e.function_count, 2);
    assert_eq!(e.size, bytes.len() as u64);
    assert!(e.matches_running_kernel);
    assert_eq!(
        e.source.as_deref(),
        Some(file.canonicalize().unwrap().to_str().unwrap())
    );
    let age = std::time::SystemTime::now()
        .duration_since(e.loaded_at.unwrap())
        .unwrap();
    assert!(age.as_secs() < 60, "loaded_at is recent");
    assert_eq!(loader::format_utc(e.loaded_at.unwrap()).len(), 19);

    let found = store.find_for_kernel().unwrap();
    assert_eq!(found.base.as_deref(), Some(out.path.as_path()));
    assert!(found.modules.is_empty());
    let dbs = found.open().unwrap();
    assert_eq!(dbs[0].by_name("schedule").count(), 1);

    // Loading the same db again is a no-op: same file, same metadata.
    let before = snapshot(store.root());
    let again = store.load(&file, &LoadOptions::default()).unwrap();
    assert_eq!(again.status, LoadStatus::AlreadyLoaded);
    assert_eq!(snapshot(store.root()), before);
}

#[test]
fn different_db_for_same_build_id_replaces_it() {
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0x20);
    let store = store_with_kernel(tmp.path(), &k);
    let a = kernel_db(&k, &["old_fn"]);
    let b = kernel_db(&k, &["new_fn", "other_fn"]);
    let fa = write(tmp.path(), "a.sigdb", &a);
    let fb = write(tmp.path(), "b.sigdb", &b);
    store.load(&fa, &LoadOptions::default()).unwrap();
    let out = store.load(&fb, &LoadOptions::default()).unwrap();
    let old = Db::from_bytes(a).unwrap().checksum();
    assert_eq!(
        out.status,
        LoadStatus::Replaced {
            previous_checksum: old
        }
    );
    let dbs = store.find_for_kernel().unwrap().open().unwrap();
    assert_eq!(dbs[0].by_name("new_fn").count(), 1);
    assert_eq!(dbs[0].by_name("old_fn").count(), 0);
    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].function_count, 2);
    assert_eq!(
        list[0].source.as_deref().map(|s| s.ends_with("b.sigdb")),
        Some(true)
    );
}

#[test]
fn corrupt_truncated_and_foreign_files_are_refused_and_store_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0x30);
    let store = store_with_kernel(tmp.path(), &k);
    let good = kernel_db(&k, &["f", "g"]);
    store
        .load(
            &write(tmp.path(), "good.sigdb", &good),
            &LoadOptions::default(),
        )
        .unwrap();
    let before = snapshot(store.root());

    // A replacement candidate for the same kernel with one flipped body byte.
    let mut corrupt = kernel_db(&k, &["f", "g", "h"]);
    let last = corrupt.len() - 20;
    corrupt[last] ^= 0x55;
    let f = write(tmp.path(), "corrupt.sigdb", &corrupt);
    let err = store
        .load(
            &f,
            &LoadOptions {
                force: true,
                ..Default::default()
            },
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::InvalidDb { .. }), "{msg}");
    assert!(
        msg.contains("corrupt.sigdb") && msg.contains("checksum mismatch"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");

    let f = write(tmp.path(), "trunc.sigdb", &good[..good.len() / 2]);
    let msg = store
        .load(&f, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("trunc.sigdb") && msg.contains("truncated"),
        "{msg}"
    );

    let f = write(tmp.path(), "tiny.sigdb", b"DCG");
    let msg = store
        .load(&f, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("tiny.sigdb") && msg.contains("truncated"),
        "{msg}"
    );

    let f = write(
        tmp.path(),
        "junk.txt",
        b"hello, this is not a database at all",
    );
    let msg = store
        .load(&f, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("junk.txt") && msg.contains("not a dcg signature db"),
        "{msg}"
    );

    let f = write(tmp.path(), "empty.sigdb", b"");
    assert!(matches!(
        store.load(&f, &LoadOptions::default()),
        Err(Error::NotADb { .. })
    ));

    let msg = store
        .load(&tmp.path().join("missing.sigdb"), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("missing.sigdb") && msg.contains("No such file"),
        "{msg}"
    );

    // An ELF file without the section.
    let exe = std::env::current_exe().unwrap();
    let msg = store
        .load(&exe, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("no .dcg_sigdb section"), "{msg}");

    assert_eq!(snapshot(store.root()), before, "store unchanged");
}

#[test]
fn wrong_kernel_build_id_refused_unless_forced_or_targeted() {
    let tmp = tempfile::tempdir().unwrap();
    let running = bid(0x40);
    let other = bid(0x50);
    let store = store_with_kernel(tmp.path(), &running);
    let f = write(tmp.path(), "other.sigdb", &kernel_db(&other, &["f"]));

    let err = store.load(&f, &LoadOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::WrongBuildId { .. }), "{msg}");
    assert!(
        msg.contains("other.sigdb")
            && msg.contains(&hex(&other))
            && msg.contains(&hex(&running))
            && msg.contains("running kernel")
            && msg.contains("--force"),
        "{msg}"
    );
    assert!(!store.root().exists(), "nothing created");

    // --kernel-build-id that does not match is refused too.
    let third = bid(0x60);
    let msg = store
        .load(
            &f,
            &LoadOptions {
                force: false,
                kernel_build_id: Some(third.clone()),
            },
        )
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("--kernel-build-id") && msg.contains(&hex(&third)),
        "{msg}"
    );

    // --kernel-build-id naming the db's own kernel installs it for that kernel.
    let out = store
        .load(
            &f,
            &LoadOptions {
                force: false,
                kernel_build_id: Some(other.clone()),
            },
        )
        .unwrap();
    assert_eq!(out.build_id, hex(&other));
    assert!(!store.list().unwrap()[0].matches_running_kernel);
    assert!(matches!(
        store.find_for_kernel(),
        Err(Error::NoKernelDb { .. })
    ));

    // --force installs it for the running kernel.
    let out = store
        .load(
            &f,
            &LoadOptions {
                force: true,
                kernel_build_id: None,
            },
        )
        .unwrap();
    assert_eq!(out.status, LoadStatus::Installed);
    assert_eq!(out.build_id, hex(&running));
    assert_eq!(out.db_build_id, hex(&other));
    let list = store.list().unwrap();
    assert_eq!(list.len(), 2);
    let forced = list.iter().find(|e| e.build_id == hex(&running)).unwrap();
    assert!(forced.matches_running_kernel);
    assert_eq!(forced.db_build_id, hex(&other));
    assert!(store.find_for_kernel().is_ok());
}

#[test]
fn unreadable_kernel_notes_and_missing_build_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("store"))
        .unwrap()
        .with_kernel_notes(tmp.path().join("no-such-notes"));
    let k = bid(0x70);
    let f = write(tmp.path(), "k.sigdb", &kernel_db(&k, &["f"]));
    let msg = store
        .load(&f, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("no-such-notes") && msg.contains("--kernel-build-id"),
        "{msg}"
    );
    // --force keys it by its own build-id when the running kernel is unknown.
    let out = store
        .load(
            &f,
            &LoadOptions {
                force: true,
                kernel_build_id: None,
            },
        )
        .unwrap();
    assert_eq!(out.build_id, hex(&k));

    // A kernel db without a build-id needs its kernel named.
    let notes = write_notes(tmp.path(), &k);
    let store = store.with_kernel_notes(notes);
    let f = write(tmp.path(), "anonk.sigdb", &kernel_db(&[], &["f"]));
    let msg = store
        .load(&f, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("anonk.sigdb") && msg.contains("--kernel-build-id"),
        "{msg}"
    );
    let other = bid(0x71);
    let opts = LoadOptions {
        force: false,
        kernel_build_id: Some(other.clone()),
    };
    assert_eq!(store.load(&f, &opts).unwrap().build_id, hex(&other));

    let f = write(tmp.path(), "anon.sigdb", &user_db(&[], &["main"]));
    let msg = store
        .load(&f, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("anon.sigdb") && msg.contains("no build-id"),
        "{msg}"
    );
}

#[test]
fn module_dbs_load_beside_their_kernel_and_lookups_span_them() {
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0x80);
    let store = store_with_kernel(tmp.path(), &k);
    let opts = LoadOptions::default();

    // Modules first: no base yet, so the kernel lookup still asks for vmlinux.
    let ext4 = write(
        tmp.path(),
        "ext4.sigdb",
        &modules_db(&k, &[("ext4", &["ext4_fill_super"])]),
    );
    let out = store.load(&ext4, &opts).unwrap();
    assert_eq!(out.kind, DbKind::KernelModules);
    assert_eq!(out.modules, vec!["ext4".to_string()]);
    assert_eq!(
        out.path,
        store
            .root()
            .join(hex(&k))
            .join("modules")
            .join("ext4.sigdb")
    );
    let msg = store.find_for_kernel().unwrap_err().to_string();
    assert!(msg.contains("dcg load vmlinux.sigdb"), "{msg}");

    let set = write(
        tmp.path(),
        "set.sigdb",
        &modules_db(
            &k,
            &[("nf_tables", &["nft_do_chain"]), ("xfs", &["xfs_mount"])],
        ),
    );
    let out = store.load(&set, &opts).unwrap();
    assert!(out
        .path
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("set-"));
    assert_eq!(
        store.load(&set, &opts).unwrap().status,
        LoadStatus::AlreadyLoaded
    );

    let base = write(tmp.path(), "vmlinux.sigdb", &kernel_db(&k, &["schedule"]));
    store.load(&base, &opts).unwrap();

    let found = store.find_for_kernel().unwrap();
    assert_eq!(found.modules.len(), 2);
    let dbs = found.open().unwrap();
    assert_eq!(dbs.len(), 3);
    for name in ["schedule", "ext4_fill_super", "nft_do_chain", "xfs_mount"] {
        let hits: usize = dbs.iter().map(|d| d.by_name(name).count()).sum();
        assert_eq!(hits, 1, "{name} found once across base and modules");
    }

    let list = store.list().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].kind, DbKind::Kernel, "base first");
    assert!(list
        .iter()
        .all(|e| e.build_id == hex(&k) && e.matches_running_kernel));
    let kinds: Vec<_> = list.iter().map(|e| (e.kind, e.modules.clone())).collect();
    assert!(kinds.contains(&(DbKind::KernelModules, vec!["ext4".into()])));
    assert!(kinds.contains(&(
        DbKind::KernelModules,
        vec!["nf_tables".into(), "xfs".into()]
    )));

    // A module db for another kernel is refused like a base db.
    let foreign = write(
        tmp.path(),
        "foreign.sigdb",
        &modules_db(&bid(0x90), &[("ext4", &["x"])]),
    );
    assert!(matches!(
        store.load(&foreign, &opts),
        Err(Error::WrongBuildId { .. })
    ));

    // Unloading the kernel removes its modules too.
    assert_eq!(
        store.unload(&Unload::BuildId(hex(&k))).unwrap(),
        vec![hex(&k)]
    );
    assert!(store.list().unwrap().is_empty());
    assert!(store.lookup(&k).unwrap().is_none());
}

#[test]
fn user_space_db_is_keyed_by_its_binary() {
    let tmp = tempfile::tempdir().unwrap();
    // No kernel notes at all: user-space dbs never look at the kernel.
    let store = Store::open(tmp.path().join("store"))
        .unwrap()
        .with_kernel_notes(tmp.path().join("none"));
    let id = bid(0xb0);
    let f = write(tmp.path(), "prog.sigdb", &user_db(&id, &["main"]));
    let out = store.load(&f, &LoadOptions::default()).unwrap();
    assert_eq!((out.kind, out.build_id.clone()), (DbKind::User, hex(&id)));
    let e = &store.list().unwrap()[0];
    assert_eq!(e.kind, DbKind::User);
    assert!(!e.matches_running_kernel);
    assert_eq!(store.lookup(&id).unwrap().unwrap().base, Some(out.path));
}

#[test]
fn unload_one_prefix_all_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("store")).unwrap();
    assert!(matches!(
        store.unload(&Unload::BuildId("abcd".into())),
        Err(Error::NotLoaded { .. })
    ));
    assert_eq!(store.unload(&Unload::All).unwrap(), Vec::<String>::new());

    let ids = [bid(0x11), bid(0x12), vec![0x11, 0x22, 0x33]];
    for (i, id) in ids.iter().enumerate() {
        let f = write(tmp.path(), &format!("{i}.sigdb"), &user_db(id, &["main"]));
        store.load(&f, &LoadOptions::default()).unwrap();
    }
    assert_eq!(store.list().unwrap().len(), 3);

    // Unique prefixes select one entry each.
    let removed = store.unload(&"1112".parse().unwrap()).unwrap();
    assert_eq!(removed, vec![hex(&ids[0])]);
    let removed = store.unload(&Unload::BuildId("1122".into())).unwrap();
    assert_eq!(removed, vec![hex(&ids[2])]);
    assert!(matches!(
        store.unload(&Unload::BuildId(hex(&ids[0]))),
        Err(Error::NotLoaded { .. })
    ));
    let removed = store.unload(&"all".parse().unwrap()).unwrap();
    assert_eq!(removed, vec![hex(&ids[1])]);
    assert!(store.list().unwrap().is_empty());
    // Only the lock remains.
    let left: Vec<_> = std::fs::read_dir(store.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, vec![".lock".to_string()]);

    assert!("xyz!".parse::<Unload>().is_err());
    assert!("a".parse::<Unload>().is_err(), "too short");
    assert_eq!(loader::parse_build_id("0aFF").unwrap(), vec![0x0a, 0xff]);
    assert!(loader::parse_build_id("abc").is_err());
}

#[test]
fn ambiguous_unload_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("store")).unwrap();
    for (i, id) in [vec![0xab, 0xcd, 0x01], vec![0xab, 0xcd, 0x02]]
        .iter()
        .enumerate()
    {
        let f = write(tmp.path(), &format!("{i}.sigdb"), &user_db(id, &["main"]));
        store.load(&f, &LoadOptions::default()).unwrap();
    }
    let msg = store
        .unload(&Unload::BuildId("abcd".into()))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("ambiguous") && msg.contains("abcd01") && msg.contains("abcd02"),
        "{msg}"
    );
    assert_eq!(store.list().unwrap().len(), 2);
}

#[test]
fn symlinked_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    let link = tmp.path().join("link");
    symlink(&real, &link).unwrap();
    let msg = Store::open(&link).unwrap_err().to_string();
    assert!(
        msg.contains("link") && msg.contains("symbolic link"),
        "{msg}"
    );

    // Replaced by a symlink after opening: mutations re-check and refuse.
    let store = Store::open(tmp.path().join("later")).unwrap();
    symlink(&real, tmp.path().join("later")).unwrap();
    let f = write(tmp.path(), "p.sigdb", &user_db(&bid(1), &["main"]));
    let err = store.load(&f, &LoadOptions::default()).unwrap_err();
    assert!(matches!(err, Error::UnsafeStore { .. }), "{err}");
    assert_eq!(
        std::fs::read_dir(&real).unwrap().count(),
        0,
        "nothing written through it"
    );
}

#[test]
fn writable_or_foreign_store_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    std::fs::create_dir(&dir).unwrap();
    for mode in [0o777, 0o775, 0o757, 0o1777] {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let msg = Store::open(&dir).unwrap_err().to_string();
        assert!(
            msg.contains("store") && msg.contains("writable by group or others"),
            "{mode:o}: {msg}"
        );
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    Store::open(&dir).unwrap();

    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(Store::open(&file)
        .unwrap_err()
        .to_string()
        .contains("not a directory"));

    // Owned by someone who is neither us nor root (only testable as root).
    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        let msg = Store::open(&dir).unwrap_err().to_string();
        assert!(msg.contains("owned by uid 4242"), "{msg}");
    }
}

#[test]
fn symlinks_planted_inside_the_store_are_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0xc0);
    let store = store_with_kernel(tmp.path(), &k);
    let opts = LoadOptions::default();
    store
        .load(&write(tmp.path(), "k.sigdb", &kernel_db(&k, &["f"])), &opts)
        .unwrap();

    // 1. An entry directory that is a symlink to a directory outside the store.
    let evil = tmp.path().join("evil");
    std::fs::create_dir(&evil).unwrap();
    let victim = bid(0xd0);
    std::fs::write(evil.join("base.sigdb"), user_db(&victim, &["planted"])).unwrap();
    symlink(&evil, store.root().join(hex(&victim))).unwrap();
    let evil_before = snapshot(&evil);

    assert_eq!(store.list().unwrap().len(), 1, "symlinked entry not listed");
    let msg = store.lookup(&victim).unwrap_err().to_string();
    assert!(
        msg.contains(&hex(&victim)) && msg.contains("symbolic link"),
        "{msg}"
    );
    let f = write(tmp.path(), "v.sigdb", &user_db(&victim, &["real"]));
    let msg = store.load(&f, &opts).unwrap_err().to_string();
    assert!(msg.contains("symbolic link"), "{msg}");
    assert_eq!(
        snapshot(&evil),
        evil_before,
        "nothing written through the link"
    );
    // Unloading removes the link itself, not what it points to.
    assert_eq!(
        store.unload(&Unload::BuildId(hex(&victim))).unwrap(),
        vec![hex(&victim)]
    );
    assert_eq!(snapshot(&evil), evil_before);
    assert!(std::fs::symlink_metadata(store.root().join(hex(&victim))).is_err());

    // 2. An installed db replaced by a symlink to some other file.
    let target = write(tmp.path(), "target", b"precious");
    let base = store.root().join(hex(&k)).join("base.sigdb");
    std::fs::remove_file(&base).unwrap();
    symlink(&target, &base).unwrap();
    assert!(store.list().unwrap().is_empty(), "symlinked db not listed");
    let msg = store.find_for_kernel().unwrap_err().to_string();
    assert!(
        msg.contains("base.sigdb") && msg.contains("symbolic link"),
        "{msg}"
    );
    // Loading replaces the link (rename does not follow it); the target is untouched.
    let out = store
        .load(
            &write(tmp.path(), "k2.sigdb", &kernel_db(&k, &["g"])),
            &opts,
        )
        .unwrap();
    assert_eq!(out.status, LoadStatus::Installed);
    assert!(std::fs::symlink_metadata(&base).unwrap().is_file());
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");

    // 3. The modules directory as a symlink.
    let mods = store.root().join(hex(&k)).join("modules");
    symlink(&evil, &mods).unwrap();
    let m = write(tmp.path(), "m.sigdb", &modules_db(&k, &[("ext4", &["e"])]));
    assert!(store
        .load(&m, &opts)
        .unwrap_err()
        .to_string()
        .contains("symbolic link"));
    assert!(store
        .find_for_kernel()
        .unwrap_err()
        .to_string()
        .contains("symbolic link"));
    assert_eq!(snapshot(&evil), evil_before);
    std::fs::remove_file(&mods).unwrap();

    // 4. The lock file as a symlink.
    std::fs::remove_file(store.root().join(".lock")).unwrap();
    symlink(&target, store.root().join(".lock")).unwrap();
    let msg = store.load(&m, &opts).unwrap_err().to_string();
    assert!(
        msg.contains(".lock") && msg.contains("symbolic link"),
        "{msg}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
}

#[test]
fn no_db_for_the_running_kernel_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0xe0);
    let store = store_with_kernel(tmp.path(), &k);
    let err = store.find_for_kernel().unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NoKernelDb { .. }));
    assert!(msg.contains(&hex(&k)) && msg.contains("store"), "{msg}");
    let lines: Vec<&str> = msg.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("dwarfscan ") && l.contains("-o vmlinux.sigdb")),
        "{msg}"
    );
    assert_eq!(
        lines.last().unwrap().trim(),
        "dcg load vmlinux.sigdb",
        "{msg}"
    );
    let release = loader::kernel::release().unwrap();
    let vmlinux = format!("/usr/lib/debug/boot/vmlinux-{release}");
    if Path::new(&vmlinux).exists() {
        assert!(
            msg.contains(&format!("dwarfscan {vmlinux} -o vmlinux.sigdb")),
            "{msg}"
        );
    } else {
        assert!(msg.contains(&release) && msg.contains("-dbg"), "{msg}");
    }
}
