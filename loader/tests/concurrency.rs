//! Concurrent loads from N real processes: this test binary re-runs itself in a child
//! mode (`child_load`, selected by environment variables).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use loader::{LoadOptions, Store};
use sigdb::{hex, Db};

const STORE: &str = "LOADER_TEST_CHILD_STORE";
const FILE: &str = "LOADER_TEST_CHILD_FILE";
const GO: &str = "LOADER_TEST_CHILD_GO";

/// Child mode: wait for the go file, load one db, print the outcome. A no-op test when
/// run normally.
#[test]
fn child_load() {
    let (Some(store), Some(file), Some(go)) = (
        std::env::var_os(STORE),
        std::env::var_os(FILE),
        std::env::var_os(GO),
    ) else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !Path::new(&go).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let store = Store::open(PathBuf::from(store)).unwrap();
    match store.load(Path::new(&file), &LoadOptions::default()) {
        Ok(out) => println!("OUTCOME {:?} {}", out.status, out.build_id),
        Err(e) => panic!("load failed: {e}"),
    }
}

/// Run one child per file, all released at once; return each child's outcome line.
fn race(store: &Path, files: &[PathBuf], go: &Path) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = files
        .iter()
        .map(|f| {
            Command::new(&exe)
                .args(["--exact", "child_load", "--nocapture", "--test-threads=1"])
                .env(STORE, store)
                .env(FILE, f)
                .env(GO, go)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(go, b"go").unwrap();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "child failed: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // The harness prints `test child_load ... ` on the same line first.
            let at = stdout
                .find("OUTCOME ")
                .unwrap_or_else(|| panic!("no outcome in {stdout}"));
            stdout[at..].lines().next().unwrap_or_default().to_string()
        })
        .collect()
}

fn no_temp_files(root: &Path) {
    for p in snapshot(root).keys() {
        let name = p.file_name().unwrap().to_string_lossy();
        assert!(
            !name.starts_with(".tmp-") && !name.starts_with(".trash-"),
            "leftover {}",
            p.display()
        );
    }
}

#[test]
fn same_db_from_many_processes_installs_once() {
    const N: usize = 12;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let id = bid(0x42);
    let bytes = user_db(&id, &["main", "helper"]);
    let file = write(tmp.path(), "prog.sigdb", &bytes);
    let outcomes = race(&root, &vec![file; N], &tmp.path().join("go"));
    let installed = outcomes.iter().filter(|o| o.contains("Installed")).count();
    let already = outcomes
        .iter()
        .filter(|o| o.contains("AlreadyLoaded"))
        .count();
    assert_eq!((installed, already), (1, N - 1), "{outcomes:#?}");
    let store = Store::open(&root).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(std::fs::read(&list[0].path).unwrap(), bytes);
    no_temp_files(&root);
}

#[test]
fn different_dbs_from_many_processes_all_install() {
    const DBS: u8 = 6;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let mut files = Vec::new();
    for i in 0..DBS {
        let f = write(
            tmp.path(),
            &format!("{i}.sigdb"),
            &user_db(&bid(0x10 * i + 1), &["main"]),
        );
        files.push(f.clone());
        files.push(f);
    }
    let outcomes = race(&root, &files, &tmp.path().join("go"));
    let installed = outcomes.iter().filter(|o| o.contains("Installed")).count();
    assert_eq!(installed, DBS as usize, "{outcomes:#?}");
    let list = Store::open(&root).unwrap().list().unwrap();
    assert_eq!(list.len(), DBS as usize);
    for e in &list {
        Db::open(&e.path).unwrap();
    }
    no_temp_files(&root);
}

#[test]
fn competing_dbs_for_one_build_id_leave_one_consistent_db() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let id = bid(0x77);
    let versions: Vec<Vec<u8>> = (0..4)
        .map(|i| user_db(&id, &[&format!("fn_v{i}"), "main"]))
        .collect();
    let files: Vec<PathBuf> = (0..16)
        .map(|i| write(tmp.path(), &format!("v{i}.sigdb"), &versions[i % 4]))
        .collect();
    let outcomes = race(&root, &files, &tmp.path().join("go"));
    assert!(
        outcomes.iter().all(|o| o.ends_with(&hex(&id))),
        "{outcomes:#?}"
    );
    let store = Store::open(&root).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 1);
    let installed = std::fs::read(&list[0].path).unwrap();
    assert!(
        versions.contains(&installed),
        "one whole version, not a mix"
    );
    // The metadata describes the installed db, not another version.
    let db = Db::open(&list[0].path).unwrap();
    assert_eq!(list[0].checksum, db.checksum());
    assert!(list[0].source.is_some(), "metadata matches the db");
    no_temp_files(&root);
}
