//! Modes do not depend on the umask: store and entries 0755, files 0644. (Its own test
//! binary, since the umask is process-wide.)

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::*;
use loader::{LoadOptions, Store};
use nix::sys::stat::{umask, Mode};

#[test]
fn modes_ignore_a_restrictive_umask() {
    umask(Mode::from_bits_truncate(0o077));
    let tmp = tempfile::tempdir().unwrap();
    let k = bid(0x55);
    let notes = write_notes(tmp.path(), &k);
    let root = tmp.path().join("deep").join("store");
    let store = Store::open(&root).unwrap().with_kernel_notes(notes);
    store
        .load(
            &write(tmp.path(), "k.sigdb", &kernel_db(&k, &["f"])),
            &LoadOptions::default(),
        )
        .unwrap();
    store
        .load(
            &write(tmp.path(), "m.sigdb", &modules_db(&k, &[("ext4", &["e"])])),
            &LoadOptions::default(),
        )
        .unwrap();
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o7777;
    for (path, (m, _)) in snapshot(&root) {
        let want = if std::fs::symlink_metadata(&path).unwrap().is_dir() {
            0o755
        } else {
            0o644
        };
        assert_eq!(m & 0o7777, want, "{}", path.display());
    }
    assert_eq!(mode(&root), 0o755);
    // store, .lock, entry dir, base db + json, modules/, ext4 db + json.
    assert_eq!(snapshot(&root).len(), 8, "{:#?}", snapshot(&root).keys());
}
