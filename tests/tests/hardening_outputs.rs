//! Hardening of outputs (issue 37): every output option of the release `dwarfscan` and
//! `dcg` binaries, run on real inputs (a C program compiled here and its db, the captures
//! in tests/data/captures, live uprobe and in-process traces of the program), is written
//! to what the user named without destroying it:
//!
//! - a character device (a node made here with the rdev of /dev/null) stays that device;
//!   one with the rdev of /dev/full gives a one-line error naming it;
//! - a FIFO with a reader gets the output; one without gives a one-line error at once;
//! - a symlink stays, its target gets the output; `-` is standard output;
//! - symlinks planted at the temporary names the old implementation used
//!   (`.NAME.tmpPID`, for the next few hundred pids) are not followed;
//! - SIGINT at any moment of the start leaves no temporary file beside the output;
//! - a full file system (a 64 KiB tmpfs mounted here) gives a one-line error naming the
//!   file, a non-zero exit, and the previous contents intact; `dwarfscan --emit-module`
//!   there leaves neither a module directory nor a new `-o`.
//!
//! Needs root (mknod, mount); the trace cases also need uprobe events and gcc; skipped
//! (with the reason printed) otherwise. `DCG_OUTPUTS_DCG` and `DCG_OUTPUTS_DWARFSCAN`
//! name other binaries to run the same checks on (an older build, to see them fail).

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::stat::{makedev, mknod, Mode, SFlag};

const TRACEFS: &str = "/sys/kernel/tracing";
/// Longer than any of the commands takes: past it, a command hangs.
const HANG: Duration = Duration::from_secs(60);

fn dcg_exe() -> PathBuf {
    std::env::var_os("DCG_OUTPUTS_DCG").map_or_else(dcg_tests::dcg_bin, PathBuf::from)
}

fn dwarfscan_exe() -> PathBuf {
    std::env::var_os("DCG_OUTPUTS_DWARFSCAN").map_or_else(dcg_tests::dwarfscan_bin, PathBuf::from)
}

/// The inputs every case reads, made once.
struct Fixture {
    dir: tempfile::TempDir,
    /// tests/uprobe/values.c, -O0 -g.
    prog: PathBuf,
    /// A copy of it for the in-process engine: uprobes on `prog` (other tests, at the
    /// same time) are breakpoints in its code that the recorder must not copy.
    prog_inproc: PathBuf,
    /// Its db.
    db: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("values");
        let src = dcg_tests::repo_root().join("tests/uprobe/values.c");
        let st = Command::new("gcc")
            .args(["-O0", "-g", "-o"])
            .arg(&prog)
            .arg(&src)
            .status()
            .expect("running gcc");
        assert!(st.success(), "gcc failed for {}", src.display());
        let db = dir.path().join("values.db");
        let st = Command::new(dwarfscan_exe())
            .arg(&prog)
            .arg("-o")
            .arg(&db)
            .status()
            .unwrap();
        assert!(st.success());
        let prog_inproc = dir.path().join("values-inproc");
        std::fs::copy(&prog, &prog_inproc).unwrap();
        Fixture {
            dir,
            prog,
            prog_inproc,
            db,
        }
    })
}

/// A fresh path for a case's own scratch files (never in the directory under test).
fn scratch(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    fixture().dir.path().join(format!("scratch-{n}-{what}"))
}

/// One output option: how to run it writing to a path, and what its output looks like.
struct Case {
    name: &'static str,
    trace: bool,
    cmd: fn(&Fixture, &Path) -> Command,
    looks_right: fn(&[u8]) -> bool,
}

fn dwarfscan_o(f: &Fixture, out: &Path) -> Command {
    let mut c = Command::new(dwarfscan_exe());
    c.arg(&f.prog).arg("-o").arg(out);
    c
}

fn dwarfscan_emit_object(f: &Fixture, out: &Path) -> Command {
    let mut c = Command::new(dwarfscan_exe());
    c.arg(&f.prog)
        .arg("-o")
        .arg(scratch("db"))
        .arg("--emit-object")
        .arg(out);
    c
}

fn dcg_cmd() -> Command {
    let mut c = Command::new(dcg_exe());
    c.env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .env("DCG_KERNEL_NOTES", "/nonexistent/dcg-notes-for-tests")
        .env_remove("DEBUGINFOD_URLS");
    c
}

fn report_o(_: &Fixture, out: &Path) -> Command {
    let mut c = dcg_cmd();
    c.args(["report", "--format", "json", "-o"])
        .arg(out)
        .arg(dcg_tests::capture("h.txt"));
    c
}

fn decode_output(f: &Fixture, out: &Path) -> Command {
    let mut c = dcg_cmd();
    c.args(["decode", "--db"])
        .arg(&f.db)
        .arg(dcg_tests::capture("a.txt"))
        .arg("--output")
        .arg(out);
    c
}

fn trace(prog: &Path, engine: &str, option: &str, out: &Path) -> Command {
    let mut c = dcg_cmd();
    c.args(["trace", "--engine", engine, "--func"])
        .arg(format!("{}:*", prog.display()))
        .arg(option)
        .arg(out)
        .arg("--")
        .arg(prog);
    c
}

fn trace_o(f: &Fixture, out: &Path) -> Command {
    trace(&f.prog, "uprobe", "-o", out)
}

fn trace_output(f: &Fixture, out: &Path) -> Command {
    trace(&f.prog, "uprobe", "--output", out)
}

fn inproc_output(f: &Fixture, out: &Path) -> Command {
    trace(&f.prog_inproc, "inproc", "--output", out)
}

fn has(b: &[u8], s: &str) -> bool {
    String::from_utf8_lossy(b).contains(s)
}

const CASES: [Case; 7] = [
    Case {
        name: "dwarfscan -o",
        trace: false,
        cmd: dwarfscan_o,
        looks_right: |b| b.starts_with(&sigdb::layout::MAGIC),
    },
    Case {
        name: "dwarfscan --emit-object",
        trace: false,
        cmd: dwarfscan_emit_object,
        looks_right: |b| b.starts_with(b"\x7fELF"),
    },
    Case {
        name: "dcg report -o",
        trace: false,
        cmd: report_o,
        looks_right: |b| serde_json::from_slice::<serde_json::Value>(b).is_ok(),
    },
    Case {
        name: "dcg decode --output",
        trace: false,
        cmd: decode_output,
        looks_right: |b| has(b, "\"func\":\"mutex_unlock\""),
    },
    Case {
        name: "dcg trace -o",
        trace: true,
        cmd: trace_o,
        looks_right: |b| has(b, "main() {") && has(b, "outer("),
    },
    Case {
        name: "dcg trace --output",
        trace: true,
        cmd: trace_output,
        looks_right: |b| has(b, "\"func\":\"outer\""),
    },
    Case {
        name: "dcg trace --engine inproc --output",
        trace: true,
        cmd: inproc_output,
        looks_right: |b| has(b, "\"func\":\"outer\""),
    },
];

/// Why nothing here can run, if so.
fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if Command::new("gcc").arg("--version").output().is_err() {
        return Some("gcc is missing".into());
    }
    None
}

/// Why the trace cases cannot run, if so.
fn trace_skip_reason() -> Option<String> {
    let _ = dcg_live::tracefs::mount_point();
    if !Path::new(TRACEFS).join("uprobe_events").exists() {
        return Some(format!("{TRACEFS}/uprobe_events is missing"));
    }
    None
}

/// The cases that can run here (a note for those that cannot); none when skipped.
fn cases() -> Vec<&'static Case> {
    if let Some(why) = skip_reason() {
        eprintln!("skipping: {why}");
        return Vec::new();
    }
    let no_trace = trace_skip_reason();
    CASES
        .iter()
        .filter(|c| match (&no_trace, c.trace) {
            (Some(why), true) => {
                eprintln!("skipping {}: {why}", c.name);
                false
            }
            _ => true,
        })
        .collect()
}

/// What a run did.
struct Run {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

/// Run `cmd` (stdin empty, its output to files), failing the test if it outlives
/// [`HANG`]; `on_start` is called with the child's pid once it runs.
fn run_with(mut cmd: Command, on_start: impl FnOnce(u32)) -> Run {
    let out = scratch("stdout");
    let err = scratch("stderr");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .expect("starting the command");
    on_start(child.id());
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} hangs; stderr: {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}

fn run(cmd: Command) -> Run {
    run_with(cmd, |_| {})
}

/// The one error line of a failed run (dcg trace also prints notes, `dcg: tracing…`):
/// exactly one line says what failed to write.
fn error_line(case: &Case, r: &Run, wanted: &str) -> String {
    assert!(!r.status.success(), "{}: succeeded", case.name);
    assert!(
        !r.stderr.contains("panicked"),
        "{}: {}",
        case.name,
        r.stderr
    );
    let lines: Vec<&str> = r.stderr.lines().filter(|l| l.contains(wanted)).collect();
    assert_eq!(lines.len(), 1, "{}: {:?}", case.name, r.stderr);
    lines[0].to_string()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn device(path: &Path, minor: u64) {
    let mode = Mode::from_bits_truncate(0o666);
    mknod(path, SFlag::S_IFCHR, mode, makedev(1, minor)).expect("mknod");
}

#[test]
fn a_character_device_stays_a_device() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        device(&null, 3);
        let before = std::fs::metadata(&null).unwrap();
        let r = run((case.cmd)(fixture(), &null));
        assert!(r.status.success(), "{}: {}", case.name, r.stderr);
        let after = std::fs::symlink_metadata(&null).unwrap();
        assert!(
            after.file_type().is_char_device(),
            "{}: the device became a {:?}",
            case.name,
            after.file_type()
        );
        assert_eq!(
            (after.ino(), after.rdev()),
            (before.ino(), before.rdev()),
            "{}",
            case.name
        );
        assert_eq!(names(dir.path()), ["null"], "{}", case.name);
    }
}

#[test]
fn a_full_device_is_a_one_line_error_naming_it() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let full = dir.path().join("full");
        device(&full, 7);
        let r = run((case.cmd)(fixture(), &full));
        let wanted = format!("writing {}: No space left on device", full.display());
        let line = error_line(case, &r, &wanted);
        assert!(line.ends_with(&wanted), "{}: {line}", case.name);
        assert!(std::fs::symlink_metadata(&full)
            .unwrap()
            .file_type()
            .is_char_device());
        assert_eq!(names(dir.path()), ["full"], "{}", case.name);
    }
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

/// Read `fifo` (opened before the writer starts, without blocking) until the writer
/// closes it; gives up `grace` after `done` says the writer has ended.
fn read_fifo(fifo: &Path, done: &std::sync::atomic::AtomicBool, grace: Duration) -> Vec<u8> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(fifo)
        .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut ended: Option<Instant> = None;
    loop {
        match f.read(&mut buf) {
            Ok(0) if !got.is_empty() => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading {}: {e}", fifo.display()),
        }
        if done.load(Ordering::SeqCst) {
            let t = *ended.get_or_insert_with(Instant::now);
            if t.elapsed() > grace {
                return got;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_fifo_with_a_reader_gets_the_output() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let done = std::sync::atomic::AtomicBool::new(false);
        let (r, got) = std::thread::scope(|s| {
            let reader = s.spawn(|| read_fifo(&fifo, &done, Duration::from_secs(2)));
            // The reader opens first: the writer must find it.
            std::thread::sleep(Duration::from_millis(50));
            let r = run((case.cmd)(fixture(), &fifo));
            done.store(true, Ordering::SeqCst);
            (r, reader.join().unwrap())
        });
        assert!(r.status.success(), "{}: {}", case.name, r.stderr);
        assert!(
            (case.looks_right)(&got),
            "{}: the reader got {} bytes: {:?}",
            case.name,
            got.len(),
            String::from_utf8_lossy(&got[..got.len().min(200)])
        );
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert_eq!(names(dir.path()), ["fifo"], "{}", case.name);
    }
}

#[test]
fn a_fifo_without_a_reader_is_a_one_line_error_at_once() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let start = Instant::now();
        let r = run((case.cmd)(fixture(), &fifo));
        let wanted = format!(
            "writing {}: no process has this FIFO open for reading",
            fifo.display()
        );
        let line = error_line(case, &r, &wanted);
        assert!(line.ends_with(&wanted), "{}: {line}", case.name);
        assert!(start.elapsed() < Duration::from_secs(20), "{}", case.name);
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert_eq!(names(dir.path()), ["fifo"], "{}", case.name);
    }
}

#[test]
fn a_symlink_stays_and_its_target_gets_the_output() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"previous").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("target", &link).unwrap();
        let r = run((case.cmd)(fixture(), &link));
        assert!(r.status.success(), "{}: {}", case.name, r.stderr);
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "{}: link replaced",
            case.name
        );
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("target"));
        let got = std::fs::read(&target).unwrap();
        assert!(
            (case.looks_right)(&got),
            "{}: target not written",
            case.name
        );
        assert_eq!(names(dir.path()), ["link", "target"], "{}", case.name);
    }
}

#[test]
fn dash_is_standard_output() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = (case.cmd)(fixture(), Path::new("-"));
        cmd.current_dir(dir.path());
        let r = run(cmd);
        assert!(r.status.success(), "{}: {}", case.name, r.stderr);
        // dcg trace -o -: the traced program's own output comes first.
        let text = r.stdout.strip_prefix(b"done 30\n").unwrap_or(&r.stdout);
        assert!((case.looks_right)(text), "{}: stdout", case.name);
        assert!(
            names(dir.path()).is_empty(),
            "{}: a file named -",
            case.name
        );
    }
}

/// The pid the next process started will (most likely) get, from the kernel's last.
fn next_pid() -> u32 {
    let last = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid").unwrap();
    last.trim().parse::<u32>().unwrap() + 1
}

#[test]
fn symlinks_planted_at_temporary_names_are_not_followed() {
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let victim = scratch("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let out = dir.path().join("out");
        // The old name, `.out.tmpPID`, for the pids the command may get.
        let first = next_pid();
        for pid in first..first + 400 {
            std::os::unix::fs::symlink(&victim, dir.path().join(format!(".out.tmp{pid}"))).unwrap();
        }
        let r = run((case.cmd)(fixture(), &out));
        assert!(r.status.success(), "{}: {}", case.name, r.stderr);
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"precious",
            "{}",
            case.name
        );
        let meta = std::fs::symlink_metadata(&out).unwrap();
        assert!(meta.is_file(), "{}: {:?}", case.name, meta.file_type());
        assert!(
            (case.looks_right)(&std::fs::read(&out).unwrap()),
            "{}",
            case.name
        );
        assert_eq!(names(dir.path()).len(), 401, "{}", case.name);
    }
}

/// SIGINT 0 to 60 ms after the start: whatever it interrupts, nothing is left beside the
/// output (the output itself exists only complete).
#[test]
fn sigint_at_the_start_leaves_no_temporary_file() {
    for case in cases() {
        for delay_ms in [0u64, 2, 5, 8, 12, 16, 20, 25, 30, 40, 60] {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            let r = run_with((case.cmd)(fixture(), &out), |pid| {
                std::thread::sleep(Duration::from_millis(delay_ms));
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGINT,
                );
            });
            let left = names(dir.path());
            assert!(
                left.is_empty() || left == ["out"],
                "{} after SIGINT at {delay_ms} ms: {left:?} ({})",
                case.name,
                r.stderr
            );
            if left == ["out"] && !case.trace {
                // Written whole before the signal (a trace stops cleanly on SIGINT and
                // writes what it has, which may be nothing of the program).
                let got = std::fs::read(&out).unwrap();
                assert!((case.looks_right)(&got), "{}: a partial output", case.name);
            }
        }
    }
}

/// A tmpfs of 64 KiB mounted on a temporary directory, filled up; unmounted when dropped.
struct FullFs {
    dir: tempfile::TempDir,
}

impl FullFs {
    /// Mounted, holding `previous` in each of `files` and no room for anything else.
    fn new(files: &[&str], previous: &[u8]) -> Option<FullFs> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = nix::mount::mount(
            Some("tmpfs"),
            dir.path(),
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            Some("size=64k"),
        );
        if let Err(e) = mounted {
            eprintln!("skipping: cannot mount a tmpfs: {e}");
            return None;
        }
        let fs = FullFs { dir };
        for f in files {
            std::fs::write(fs.path().join(f), previous).unwrap();
        }
        let mut filler = File::create(fs.path().join("filler")).unwrap();
        let page = vec![0u8; 4096];
        loop {
            match std::io::Write::write(&mut filler, &page) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOSPC) => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        Some(fs)
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for FullFs {
    fn drop(&mut self) {
        let _ = nix::mount::umount2(self.dir.path(), nix::mount::MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_full_file_system_is_a_one_line_error_and_keeps_the_previous_output() {
    for case in cases() {
        let Some(fs) = FullFs::new(&["out"], b"previous") else {
            return;
        };
        let out = fs.path().join("out");
        let r = run((case.cmd)(fixture(), &out));
        let wanted = format!("writing {}: No space left on device", out.display());
        let line = error_line(case, &r, &wanted);
        assert!(line.ends_with(&wanted), "{}: {line}", case.name);
        assert_eq!(std::fs::read(&out).unwrap(), b"previous", "{}", case.name);
        assert_eq!(names(fs.path()), ["filler", "out"], "{}", case.name);
    }
}

/// `--emit-module` on a full file system: no module directory, and `-o` (elsewhere, with
/// room) keeps its previous contents; `--emit-object` there likewise.
#[test]
fn dwarfscan_writes_all_its_outputs_or_none() {
    if let Some(why) = skip_reason() {
        eprintln!("skipping: {why}");
        return;
    }
    let f = fixture();
    let Some(fs) = FullFs::new(&["obj.o"], b"previous object") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("out.db");
    std::fs::write(&db, b"previous db").unwrap();
    let module = fs.path().join("module");
    let mut cmd = Command::new(dwarfscan_exe());
    cmd.arg(&f.prog)
        .arg("-o")
        .arg(&db)
        .arg("--emit-module")
        .arg(&module);
    let r = run(cmd);
    assert!(!r.status.success());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("No space left on device") && r.stderr.contains("/module/"),
        "{}",
        r.stderr
    );
    assert_eq!(
        names(fs.path()),
        ["filler", "obj.o"],
        "a module directory was left"
    );
    assert_eq!(std::fs::read(&db).unwrap(), b"previous db");

    let obj = fs.path().join("obj.o");
    let mut cmd = Command::new(dwarfscan_exe());
    cmd.arg(&f.prog)
        .arg("-o")
        .arg(&db)
        .arg("--emit-object")
        .arg(&obj);
    let r = run(cmd);
    let wanted = format!("writing {}: No space left on device", obj.display());
    assert_eq!(r.stderr.trim_end(), format!("dwarfscan: {wanted}"));
    assert!(!r.status.success());
    assert_eq!(std::fs::read(&obj).unwrap(), b"previous object");
    assert_eq!(std::fs::read(&db).unwrap(), b"previous db");
    assert_eq!(names(dir.path()), ["out.db"]);
}
