use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::*;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_regular_file_is_replaced_only_on_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.db");
    std::fs::write(&path, b"old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    let mut out = Output::create(&path).unwrap();
    assert!(out.replaces());
    out.write_all(b"new").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(names(dir.path()), ["out.db"], "a temporary file has a name");
    out.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    let meta = std::fs::metadata(&path).unwrap();
    assert_ne!(meta.ino(), ino, "not replaced");
    assert_eq!(meta.mode() & 0o777, 0o600, "the old file's mode");
    assert_eq!(names(dir.path()), ["out.db"]);
}

#[test]
fn dropped_uncommitted_leaves_the_path_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old");
    std::fs::write(&old, b"old").unwrap();
    let mut out = Output::create(&old).unwrap();
    out.write_all(b"new").unwrap();
    drop(out);
    let mut out = Output::create(&dir.path().join("new")).unwrap();
    out.write_all(b"new").unwrap();
    drop(out);
    assert_eq!(std::fs::read(&old).unwrap(), b"old");
    assert_eq!(names(dir.path()), ["old"]);
}

#[test]
fn a_symlink_is_followed_and_stays() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink("target", &link).unwrap();
    write(&link, b"new").unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    // A dangling link: the file it names is created.
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink("made", &dangling).unwrap();
    write(&dangling, b"x").unwrap();
    assert_eq!(std::fs::read(dir.path().join("made")).unwrap(), b"x");
    assert_eq!(names(dir.path()), ["dangling", "link", "made", "target"]);
}

#[test]
fn a_device_is_written_in_place() {
    let before = std::fs::metadata("/dev/null").unwrap();
    let mut out = Output::create(Path::new("/dev/null")).unwrap();
    assert!(!out.replaces());
    out.write_all(b"gone").unwrap();
    out.commit().unwrap();
    let after = std::fs::metadata("/dev/null").unwrap();
    assert!(after.file_type().is_char_device());
    assert_eq!((after.ino(), after.rdev()), (before.ino(), before.rdev()));
}

#[test]
fn a_full_device_fails_naming_the_file() {
    let mut out = Output::create(Path::new("/dev/full")).unwrap();
    let e = out.write_all(b"x").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert_eq!(e.to_string(), "writing /dev/full: No space left on device");
    // Even when the error was dropped, the commit says so.
    let e = out.commit().unwrap_err();
    assert_eq!(e.to_string(), "writing /dev/full: No space left on device");
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

#[test]
fn a_fifo_nobody_reads_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let e = Output::create(&fifo).unwrap_err();
    assert!(matches!(e, Error::NoReader { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "writing {}: no process has this FIFO open for reading",
            fifo.display()
        )
    );
}

#[test]
fn a_fifo_with_a_reader_gets_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut out = Output::create(&fifo).unwrap();
    assert!(!out.replaces());
    let data = vec![7u8; 200_000]; // more than a pipe holds: writes must block, not fail
    let reading = std::thread::spawn(move || {
        let fd = reader.as_fd();
        let fl = fcntl(fd, FcntlArg::F_GETFL).unwrap();
        let fl = OFlag::from_bits_truncate(fl) & !OFlag::O_NONBLOCK;
        fcntl(fd, FcntlArg::F_SETFL(fl)).unwrap();
        let mut got = Vec::new();
        let mut reader = reader;
        reader.read_to_end(&mut got).unwrap();
        got
    });
    out.write_all(&data).unwrap();
    out.commit().unwrap();
    assert_eq!(reading.join().unwrap(), data);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn a_planted_symlink_at_the_old_temporary_name_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let path = dir.path().join("out");
    // The name the old implementation used, and the first guesses at any other.
    for name in [format!(".out.tmp{}", std::process::id()), ".out.tmp".into()] {
        std::os::unix::fs::symlink(&victim, dir.path().join(name)).unwrap();
    }
    write(&path, b"new").unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
}

#[test]
fn replace_replaces_a_symlink_instead_of_following_it() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let path = dir.path().join("owned");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let mut out = Output::replace(&path).unwrap();
    out.set_mode(0o644).unwrap();
    out.write_all(b"mine").unwrap();
    out.commit().unwrap();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.mode() & 0o777, 0o644);
    assert_eq!(std::fs::read(&path).unwrap(), b"mine");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn a_directory_or_a_missing_directory_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = Output::create(dir.path()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("creating {}: Is a directory", dir.path().display())
    );
    let missing = dir.path().join("no/such/file");
    let e = Output::create(&missing).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("creating {}: No such file or directory", missing.display())
    );
}

#[test]
fn errors_through_a_writer_carry_the_output_error() {
    let out = Output::create(Path::new("/dev/full")).unwrap();
    let mut w = std::io::BufWriter::new(out.writer().unwrap());
    w.write_all(b"x").unwrap();
    let e = w.flush().unwrap_err();
    let e = into_error(Path::new("elsewhere"), e);
    assert!(matches!(&e, Error::Write { path, .. } if path == Path::new("/dev/full")));
}
