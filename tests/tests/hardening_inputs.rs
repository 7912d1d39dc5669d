//! No input eats the machine (issue 37, inputs): every reader — `dcg decode`, `dcg
//! decode --raw`, `dcg report`, `dcg load`, `dwarfscan` — given `/dev/zero`, a 1 GB
//! sparse file of zeros or a 1 GB line, ends with a one-line error naming the input or
//! a bounded result, within a bounded time and a peak resident memory of at most 256 MB
//! (the child's `ru_maxrss`, measured by GNU time; it also runs under a 4 GB
//! address-space limit, so a regression fails here instead of eating the machine). Also: a 200,000
//! deep call chain into folded stacks, a 64 KiB function name into the text report, a
//! FIFO with no writer into dwarfscan and `dcg load`, `dcg report --db` missing or
//! misapplied, corrupt ring-buffer depths, and `--args` on a process mapping a 2 GB file.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dcg_tests::{captures_dir, dcg_bin, dwarfscan_bin, repo_root};

/// Peak resident memory every reader must stay under.
const PEAK_KB: u64 = 256 * 1024;
/// 1 GB.
const GB: u64 = 1 << 30;

/// How a child ended.
#[derive(Debug)]
struct Ran {
    /// Exit code; `None` when a signal ended it.
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Peak resident memory, KB.
    peak_kb: u64,
    /// Killed after the time limit.
    timed_out: bool,
    secs: f64,
}

/// Run `cmd` (stdin fed by `feed`, if any) under a 4 GB address-space limit, killed
/// after `limit`; its peak RSS as GNU time measures it (`wait4`'s `ru_maxrss` of a
/// child forked from `time`, which is small: a child forked from this test process would
/// count this process's resident memory too).
fn run(
    cmd: &mut Command,
    feed: Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>>,
    limit: Duration,
) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, rss) = (
        dir.path().join("out"),
        dir.path().join("err"),
        dir.path().join("rss"),
    );
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(&rss)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(if feed.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .process_group(0);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        timed.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_AS, 4 * GB, 4 * GB)
                .map_err(std::io::Error::from)
        });
    }
    let start = Instant::now();
    let mut child = timed
        .spawn()
        .expect("spawning /usr/bin/time (package time)");
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let feeder = feed.map(|f| {
        let stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || f(stdin))
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            timed_out = true;
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    let report = std::fs::read_to_string(&rss).unwrap_or_default();
    let signaled = report.contains("terminated by signal") || status.code().is_none();
    Ran {
        code: if signaled { None } else { status.code() },
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        peak_kb: report
            .lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("no peak RSS from time: {report:?}")),
        timed_out,
        secs: start.elapsed().as_secs_f64(),
    }
}

/// `what` ran bounded: in time, in memory, no signal, no panic; failing, with one line
/// of stderr naming `input`.
fn assert_bounded(what: &str, input: &str, r: &Ran) {
    eprintln!(
        "{what}: exit {:?}, peak {} MB, {:.1} s, stderr: {}",
        r.code,
        r.peak_kb / 1024,
        r.secs,
        r.stderr.trim_end()
    );
    assert!(!r.timed_out, "{what}: still running after the limit");
    assert!(r.code.is_some(), "{what}: ended by a signal: {r:?}");
    assert_ne!(r.code, Some(101), "{what}: panicked: {}", r.stderr);
    assert!(
        r.peak_kb <= PEAK_KB,
        "{what}: peak RSS {} MB over {} MB",
        r.peak_kb / 1024,
        PEAK_KB / 1024
    );
    if r.code != Some(0) {
        assert_eq!(
            r.stderr.trim_end().lines().count(),
            1,
            "{what}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(input),
            "{what}: error does not name {input}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("empty file"), "{what}: {}", r.stderr);
    }
}

/// A directory for the big files, on disk (target/tmp), kept for the test process.
fn big_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
        .path()
}

/// A sparse file of `len` zero bytes.
fn sparse(name: &str, len: u64) -> PathBuf {
    let p = big_dir().join(name);
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(len).unwrap();
    p
}

/// Write `len` bytes of `a` (no newline) to `w`, stopping quietly when the reader is gone.
fn write_a(mut w: impl Write, len: u64) {
    let chunk = vec![b'a'; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        if w.write_all(&chunk[..n]).is_err() {
            return;
        }
        left -= n as u64;
    }
}

/// A file holding one 1 GB line of `a`, written once per test process.
fn one_line_file() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let p = big_dir().join("line-1g.txt");
        write_a(
            std::io::BufWriter::new(std::fs::File::create(&p).unwrap()),
            GB,
        );
        p
    })
    .clone()
}

/// A small db: the DWARF of `tests/hardening/map_big.c`, scanned by dwarfscan; and the
/// program itself.
fn small_db() -> (PathBuf, PathBuf) {
    static DB: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    let (_, db, exe) = DB.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("map_big");
        let st = Command::new("gcc")
            .args(["-O1", "-g", "-o"])
            .arg(&exe)
            .arg(repo_root().join("tests/hardening/map_big.c"))
            .status()
            .expect("running gcc");
        assert!(st.success(), "gcc map_big.c failed");
        let db = dir.path().join("map_big.sigdb");
        let out = Command::new(dwarfscan_bin())
            .arg("-q")
            .arg(&exe)
            .arg("-o")
            .arg(&db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (dir, db, exe)
    });
    (db.clone(), exe.clone())
}

/// A kallsyms of a few symbols (`--kallsyms` of the raw decoder).
fn small_kallsyms() -> PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let p = big_dir().join("kallsyms");
        std::fs::write(
            &p,
            "ffffffff81000000 T _stext\nffffffff81000100 T do_sys_open\n",
        )
        .unwrap();
        p
    })
    .clone()
}

/// The readers, each as (name, command reading `input`).
fn readers(input: &Path, store: &Path) -> Vec<(&'static str, Command)> {
    let (db, _) = small_db();
    let dcg = |args: &[&str]| {
        let mut c = Command::new(dcg_bin());
        c.arg("--offline")
            .args(args)
            .env("DCG_STORE", store)
            .env("DCG_KERNEL_NOTES", "/nonexistent/notes");
        c
    };
    let mut decode = dcg(&["decode", "--color", "never", "--db"]);
    decode.arg(&db).arg(input);
    let mut raw = dcg(&["decode", "--raw", "--db"]);
    raw.arg(&db)
        .arg("--formats")
        .arg(captures_dir().join("f-all-ftrace-formats.txt"))
        .arg("--kallsyms")
        .arg(small_kallsyms())
        .arg(input);
    let mut report = dcg(&["report", "--db"]);
    report.arg(&db).arg(input);
    let mut load = dcg(&["load"]);
    load.arg(input);
    let mut scan = Command::new(dwarfscan_bin());
    scan.arg("-q")
        .arg(input)
        .arg("-o")
        .arg(store.join("out.sigdb"));
    vec![
        ("dcg decode", decode),
        ("dcg decode --raw", raw),
        ("dcg report", report),
        ("dcg load", load),
        ("dwarfscan", scan),
    ]
}

fn every_reader(input: &Path, limit: Duration) -> Vec<(&'static str, Ran)> {
    let store = tempfile::tempdir().unwrap();
    let name = input.display().to_string();
    let mut ran = Vec::new();
    for (what, mut cmd) in readers(input, store.path()) {
        let r = run(&mut cmd, None, limit);
        assert_bounded(&format!("{what} {name}"), &name, &r);
        ran.push((what, r));
    }
    ran
}

#[test]
fn dev_zero_is_named_for_what_it_is() {
    for (what, r) in every_reader(Path::new("/dev/zero"), Duration::from_secs(30)) {
        assert_ne!(r.code, Some(0), "{what} accepted /dev/zero");
        assert!(
            r.stderr.contains("/dev/zero: a character device, not "),
            "{what}: {}",
            r.stderr
        );
        assert!(r.secs < 10.0, "{what}: {:.1} s", r.secs);
    }
}

#[test]
fn sparse_gigabyte_of_zeros() {
    let input = sparse("zeros-1g", GB);
    for (what, r) in every_reader(&input, Duration::from_secs(120)) {
        match what {
            // Zero pages are empty pages: nothing to print, every page read in turn.
            "dcg decode --raw" => assert_eq!(r.code, Some(0), "{what}: {}", r.stderr),
            "dcg decode" | "dcg report" => {
                assert!(
                    r.stderr.contains("line 1: longer than 1 MiB"),
                    "{what}: {}",
                    r.stderr
                )
            }
            _ => assert_ne!(r.code, Some(0), "{what}: {}", r.stderr),
        }
    }
}

#[test]
fn gigabyte_line_from_a_file() {
    let input = one_line_file();
    for (what, r) in every_reader(&input, Duration::from_secs(120)) {
        assert_ne!(r.code, Some(0), "{what}: {}", r.stdout);
        if what == "dcg decode" || what == "dcg report" {
            assert!(
                r.stderr.contains("line 1: longer than 1 MiB"),
                "{what}: {}",
                r.stderr
            );
        }
    }
}

#[test]
fn gigabyte_line_through_a_pipe() {
    let (db, _) = small_db();
    for what in ["decode", "report"] {
        let mut cmd = Command::new(dcg_bin());
        cmd.args(["--offline", what, "--db"]).arg(&db).arg("-");
        let r = run(
            &mut cmd,
            Some(Box::new(|stdin| write_a(stdin, GB))),
            Duration::from_secs(60),
        );
        assert_bounded(&format!("dcg {what} -"), "stdin", &r);
        assert_ne!(r.code, Some(0));
        assert!(
            r.stderr.contains("stdin: line 1: longer than 1 MiB"),
            "{}",
            r.stderr
        );
        assert!(r.secs < 30.0, "{:.1} s", r.secs);
    }
}

/// A FIFO nobody writes: refused before it is opened (an open would wait forever).
#[test]
fn fifo_without_writer_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let name = fifo.display().to_string();
    let mut scan = Command::new(dwarfscan_bin());
    scan.arg("-q")
        .arg(&fifo)
        .arg("-o")
        .arg(dir.path().join("out.sigdb"));
    let mut load = Command::new(dcg_bin());
    load.args(["--offline", "load"])
        .arg(&fifo)
        .env("DCG_STORE", dir.path().join("store"));
    for (what, mut cmd) in [("dwarfscan", scan), ("dcg load", load)] {
        let r = run(&mut cmd, None, Duration::from_secs(10));
        assert_bounded(what, &name, &r);
        assert_ne!(r.code, Some(0), "{what}");
        assert!(
            r.stderr.contains(&format!("{name}: a FIFO, not ")),
            "{what}: {}",
            r.stderr
        );
        assert!(r.secs < 5.0, "{what}: {:.1} s", r.secs);
    }
}

const HEADER: &str = "{\"dcg\":\"calls\",\"version\":1,\"source\":\"test\"}\n";

/// A saved call.
fn record(id: u64, parent: Option<u64>, func: &str, depth: u64) -> String {
    let parent = parent.map_or("null".to_string(), |p| p.to_string());
    format!(
        "{{\"id\":{id},\"parent\":{parent},\"func\":\"{func}\",\"module\":null,\"cpu\":0,\
         \"comm\":\"t\",\"pid\":1,\"depth\":{depth},\"time_ns\":null,\"duration_ns\":{},\
         \"args\":[],\"ret\":null,\"ret_raw\":null,\"error\":false,\"decoded\":false}}\n",
        1000 + depth
    )
}

/// A 200,000 deep chain of calls (children complete first, as saved).
fn deep_chain(path: &Path, depth: u64) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    w.write_all(HEADER.as_bytes()).unwrap();
    for id in (0..depth).rev() {
        let func = format!("f{}", id % 7);
        w.write_all(record(id, id.checked_sub(1), &func, id).as_bytes())
            .unwrap();
    }
    w.flush().unwrap();
}

#[test]
fn deep_chain_folded_stacks_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("deep.calls");
    deep_chain(&input, 200_000);
    let name = input.display().to_string();
    for format in ["folded", "text"] {
        let mut cmd = Command::new(dcg_bin());
        cmd.args(["report", "--format", format]).arg(&input);
        let r = run(&mut cmd, None, Duration::from_secs(120));
        assert_bounded(&format!("report --format {format}"), &name, &r);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        if format == "folded" {
            let lines: Vec<&str> = r.stdout.lines().collect();
            assert_eq!(lines.len(), 1024, "one line per depth up to the cap");
            let deeper: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.contains("[deeper calls]"))
                .collect();
            // The calls at the 1024th frame and below, all in one.
            assert_eq!(deeper.len(), 1);
            assert!(
                deeper[0].ends_with(&format!(" {}", 200_000 - 1023)),
                "{}",
                &deeper[0][deeper[0].len() - 40..]
            );
            assert_eq!(deeper[0].matches(';').count(), 1023);
            let total: u64 = lines
                .iter()
                .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
                .sum();
            assert_eq!(total, 200_000, "every call counted once");
        }
    }
}

#[test]
fn huge_function_name_does_not_panic_the_text_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("long.calls");
    // The long name is where the error of the top-level call came from: it sits in the
    // origins table's padded "origin" column (format!'s width stops at 65535).
    let failing = |r: String, origin: &str| {
        r.replace(
            "\"ret\":null,\"ret_raw\":null,\"error\":false",
            &format!("\"ret\":\"-ENOENT\",\"ret_raw\":\"-2\",\"error\":true{origin}"),
        )
    };
    let name = "n".repeat(65_536);
    std::fs::write(
        &input,
        format!(
            "{HEADER}{}{}",
            failing(record(1, Some(0), &name, 1), ""),
            failing(record(0, None, "top", 0), ",\"origin\":1")
        ),
    )
    .unwrap();
    let mut cmd = Command::new(dcg_bin());
    cmd.arg("report").arg(&input);
    let r = run(&mut cmd, None, Duration::from_secs(30));
    assert_bounded("report of a 64 KiB name", &input.display().to_string(), &r);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("Top 20 error origins by errno"),
        "{}",
        &r.stdout[..2000.min(r.stdout.len())]
    );
    // The name is cut at 4096 characters in the tables, and marked.
    assert!(
        r.stdout.contains(&format!("{}…", "n".repeat(4096))),
        "cut and marked"
    );
    assert!(!r.stdout.contains(&"n".repeat(4097)));
}

#[test]
fn report_db_is_used_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("s.calls");
    std::fs::write(&saved, format!("{HEADER}{}", record(0, None, "top", 0))).unwrap();
    let (db, _) = small_db();
    let report = |db: &Path, input: &Path| {
        Command::new(dcg_bin())
            .args(["--offline", "report", "--db"])
            .arg(db)
            .arg(input)
            .output()
            .unwrap()
    };
    // Missing: an error naming it, whatever the input.
    for input in [saved.clone(), captures_dir().join("a.txt")] {
        let out = report(Path::new("/nonexistent/x.sigdb"), &input);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}", input.display());
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("/nonexistent/x.sigdb"), "{err}");
    }
    // Given for saved calls, whose values are decoded already: refused, not ignored.
    let out = report(&db, &saved);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--db is for ftrace text"), "{err}");
}

/// Raw pages whose records claim an impossible depth (a corrupt buffer): the records are
/// skipped and counted, never printed as gigabytes of indentation.
#[test]
fn corrupt_raw_depths_are_skipped() {
    use dcg_ringbuf::format::Format;
    let formats_path = captures_dir().join("f-all-ftrace-formats.txt");
    let formats = Format::parse_all(&std::fs::read_to_string(&formats_path).unwrap()).unwrap();
    let depth_at = |name: &str| {
        let f = formats.iter().find(|f| f.name == name).unwrap();
        let d = f.require("depth").unwrap();
        (f.id, d.offset, d.size)
    };
    let layouts = [depth_at("funcgraph_entry"), depth_at("funcgraph_exit")];
    let mut bytes = std::fs::read(captures_dir().join("g-raw-cpu0.bin")).unwrap();
    let mut corrupted = 0;
    for (i, page) in bytes.clone().chunks(4096).enumerate() {
        let parsed = dcg_ringbuf::page::parse_page(page, i * 4096).unwrap();
        for rec in &parsed.records {
            let id = u16::from_le_bytes([rec.data[0], rec.data[1]]);
            let Some(&(_, off, size)) = layouts.iter().find(|l| l.0 == id) else {
                continue;
            };
            let at = i * 4096 + (rec.data.as_ptr() as usize - page.as_ptr() as usize) + off;
            bytes[at..at + size].fill(0xff);
            bytes[at + size - 1] = 0x7f;
            corrupted += 1;
        }
    }
    assert!(corrupted > 100, "{corrupted} records");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corrupt.bin");
    std::fs::write(&input, &bytes).unwrap();
    let (db, _) = small_db();
    let mut cmd = Command::new(dcg_bin());
    cmd.args(["--offline", "decode", "--raw", "--db"])
        .arg(&db)
        .arg("--formats")
        .arg(&formats_path)
        .arg("--kallsyms")
        .arg(small_kallsyms())
        .arg(&input);
    let r = run(&mut cmd, None, Duration::from_secs(60));
    assert_bounded(
        "decode --raw of corrupt depths",
        &input.display().to_string(),
        &r,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{corrupted} records skipped")),
        "{}",
        r.stderr
    );
}

/// `dcg trace --args` names pointers by the symbols of every file the traced process
/// maps: a 2 GB data file it maps is looked at (its first page: no ELF magic), never
/// read.
#[test]
fn args_symbolization_does_not_read_mapped_files() {
    if !nix::unistd::geteuid().is_root() || !Path::new("/sys/kernel/tracing/uprobe_events").exists()
    {
        eprintln!("skipping: needs root and uprobe events");
        return;
    }
    let (_, exe) = small_db();
    let big = sparse("mapped-2g", 2 * GB);
    let b = exe.to_str().unwrap();
    for engine in ["uprobe", "inproc"] {
        let mut cmd = Command::new(dcg_bin());
        cmd.args(["--offline", "trace", "--engine", engine, "--args", "--func"])
            .arg(format!("{b}:take"))
            .arg("--")
            .arg(&exe)
            .arg(&big)
            .env("DCG_STORE", "/nonexistent/dcg-store-for-tests");
        let r = run(&mut cmd, None, Duration::from_secs(60));
        assert_bounded(&format!("trace --engine {engine} --args"), b, &r);
        assert_eq!(r.code, Some(0), "{engine}: {}", r.stderr);
        assert!(
            r.stdout.contains("take(p=&marker"),
            "{engine}: {}",
            r.stdout
        );
        assert_eq!(
            r.stdout.matches("take(").count(),
            2,
            "{engine}: {}",
            r.stdout
        );
    }
}

/// The measure itself: a child that touches 512 MB is measured as such, so the bounds
/// above cannot pass vacuously.
#[test]
fn peak_memory_is_measured() {
    let mut keep = Command::new("python3");
    keep.args(["-c", "b = b'x' * (512 << 20); print(len(b))"]);
    let r = run(&mut keep, None, Duration::from_secs(60));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.peak_kb > 500 * 1024, "{} KB", r.peak_kb);
}
