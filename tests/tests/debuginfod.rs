//! Dbs by build-id from debuginfod: Debian's `debuginfod` serving a directory on
//! 127.0.0.1 (a free port, started and stopped by each test; what it sent is read from
//! its own `/metrics`), and servers that misbehave (a loopback listener of the test's
//! own, since debuginfod cannot be made to). Every run uses its own client cache and
//! store.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use dcg_tests::dcg_bin;

/// debuginfod must be installed (`.ci/install-deps.sh`); tracing tests must run as root
/// (as CI does): either missing is a failure, not a skip.
fn require(root: bool) {
    assert!(
        Command::new("debuginfod")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "debuginfod is missing (apt-get install debuginfod: .ci/install-deps.sh)"
    );
    assert!(
        !root || nix::unistd::geteuid().is_root(),
        "this test traces with uprobes: run it as root (CI does)"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real debuginfod serving `dir`, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Start it and wait until it answers `what` of `id` with `code` (200: it has
    /// indexed the file; note that this reads the file once).
    fn start(dir: &Path, work: &Path, id: &str, what: &str, code: &str) -> Server {
        let port = free_port();
        let child = Command::new("debuginfod")
            .args(["-F"])
            .arg(dir)
            .args(["-p", &port.to_string(), "-t", "0", "-g", "0", "-d"])
            .arg(work.join(format!("debuginfod-{port}.sqlite")))
            // Never federate to the servers of the environment.
            .env_remove("DEBUGINFOD_URLS")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting debuginfod");
        let s = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let end = Instant::now() + Duration::from_secs(120);
        while Instant::now() < end {
            let got = Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
                .arg(format!("{}/buildid/{id}/{what}", s.url))
                .output()
                .unwrap();
            if got.stdout == code.as_bytes() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("debuginfod never answered {code} for {what} of {id}");
    }

    /// Its `/metrics`: each sample by its name and labels.
    fn metrics(&self) -> HashMap<String, f64> {
        let out = Command::new("curl")
            .args(["-sf", &format!("{}/metrics", self.url)])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}/metrics", self.url);
        text(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (k, v) = l.rsplit_once(' ')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect()
    }
}

/// What a server sent, from its metrics: (responses, body bytes) answered `code` to
/// requests for `kind` (`section`, `debuginfo`).
fn sent(m: &HashMap<String, f64>, code: u16, kind: &str) -> (u64, u64) {
    let get = |what: &str| {
        m.get(&format!(
            "http_responses_transfer_bytes_{what}{{code=\"{code}\",type=\"{kind}\"}}"
        ))
        .copied()
        .unwrap_or(0.0) as u64
    };
    (get("count"), get("sum"))
}

/// How many requests for `kind` the server had.
fn requests(m: &HashMap<String, f64>, kind: &str) -> u64 {
    m.get(&format!("http_requests_total{{type=\"{kind}\"}}"))
        .copied()
        .unwrap_or(0.0) as u64
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `dcg ARGS` with the client pointed at `urls`, its cache and store in `work`.
fn dcg(work: &Path, urls: &str, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(dcg_bin());
    cmd.args(args)
        .env("DEBUGINFOD_URLS", urls)
        .env("DEBUGINFOD_CACHE_PATH", work.join("cache"))
        .env("DCG_STORE", work.join("store"))
        .stdin(Stdio::null());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn build_id(path: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .expect("a build-id")
}

fn raw_id(id: &str) -> Vec<u8> {
    (0..id.len() / 2)
        .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn run(cmd: &mut Command) {
    let st = cmd.status().unwrap();
    assert!(st.success(), "{cmd:?}");
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .len()
}

/// The files under `dir`, recursively, relative to it.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The server-side recipe (README): the db as a `.dcg_sigdb` section of the debug file.
fn add_section(db: &Path, debug: &Path) {
    run(Command::new("objcopy")
        .arg(format!("--add-section=.dcg_sigdb={}", db.display()))
        .args(["--set-section-flags", ".dcg_sigdb=noload,readonly"])
        .arg(debug));
}

/// tests/uprobe/values.c built with DWARF, then split: the program stripped, its debug
/// file in `served` (with a `.dcg_sigdb` section when `with_db`; its db is
/// `work/values.sigdb`).
fn stripped_program(work: &Path, served: &Path, with_db: bool) -> (PathBuf, String) {
    std::fs::create_dir_all(served).unwrap();
    let prog = work.join("values");
    run(Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&prog)
        .arg(dcg_tests::repo_root().join("tests/uprobe/values.c")));
    let debug = served.join("values.debug");
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&prog)
        .arg(&debug));
    run(Command::new(dcg_tests::dwarfscan_bin())
        .arg("-q")
        .arg(&prog)
        .arg("-o")
        .arg(work.join("values.sigdb")));
    if with_db {
        add_section(&work.join("values.sigdb"), &debug);
    }
    run(Command::new("strip").arg("--strip-debug").arg(&prog));
    let id = build_id(&prog);
    (prog, id)
}

fn trace(work: &Path, urls: &str, prog: &Path, extra: &[&str]) -> Output {
    let p = prog.to_str().unwrap();
    let mut args = vec!["trace", "--args", "--show-retvals", "--errno", "--func"];
    let f = format!("{p}:check_arg");
    args.push(&f);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", p]);
    dcg(work, urls, &args, &[])
}

const VALUES: [&str; 2] = [
    "check_arg(x=-5); /* ret=-EINVAL */",
    "check_arg(x=7); /* ret=7 */",
];

/// The store under `work` holds nothing.
fn store_empty(work: &Path) {
    let left = files(&work.join("store"));
    assert!(
        left.iter().all(|f| f.starts_with('.')),
        "the store is unchanged: {left:?}"
    );
}

/// One line on stderr naming the server and the build-id, a non-zero exit.
fn one_line_error(out: &Output, url: &str, id: &str) -> String {
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(url) && err.contains(id),
        "server and build-id named: {err}"
    );
    err
}

/// A stripped program whose debug file only the server has: every value, the debug file
/// transferred whole; the second run, with the server gone, from the store; `--offline`
/// never asks. Nothing of dcg's own lands in the client cache.
#[test]
fn stripped_program_values_from_the_server() {
    require(true);
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    let (prog, id) = stripped_program(work.path(), &served, false);
    // Offline: no db, and the error says so.
    let out = trace(work.path(), "http://127.0.0.1:1", &prog, &["--offline"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("none could be built from its DWARF"),
        "{}",
        text(&out.stderr)
    );
    let server = Server::start(&served, work.path(), &id, "debuginfo", "200");
    let before = server.metrics();
    let out = trace(work.path(), &server.url, &prog, &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("its db came from debuginfod (a db built from its debug file"),
        "{err}"
    );
    for v in VALUES {
        assert!(stdout.contains(v), "{v}\n{stdout}");
    }
    let after = server.metrics();
    let debug_size = size(&served.join("values.debug"));
    let (n0, b0) = sent(&before, 200, "debuginfo");
    let (n1, b1) = sent(&after, 200, "debuginfo");
    assert_eq!((n1 - n0, b1 - b0), (1, debug_size), "the debug file, once");
    assert_eq!(
        sent(&after, 404, "section").0 - sent(&before, 404, "section").0,
        1,
        "the section was asked for first"
    );
    assert_eq!(
        files(&work.path().join("cache")),
        [
            format!("{id}/debuginfo"),
            // The section's miss, remembered as elfutils does: an empty file.
            format!("{id}/section-.dcg_sigdb"),
        ],
        "the debug file and the miss, nothing of dcg's own"
    );
    assert_eq!(
        size(
            &work
                .path()
                .join("cache")
                .join(&id)
                .join("section-.dcg_sigdb")
        ),
        0
    );
    drop(server);
    let out = trace(work.path(), "http://127.0.0.1:1", &prog, &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("debuginfod"), "the store answered: {err}");
    for v in VALUES {
        assert!(stdout.contains(v), "{v}\n{stdout}");
    }
}

/// The server's debug file carries a `.dcg_sigdb` section: the client fetches the
/// section only, measured on the server: its bytes are the db's, no debug file is sent.
#[test]
fn section_only() {
    require(true);
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    let (prog, id) = stripped_program(work.path(), &served, true);
    let server = Server::start(&served, work.path(), &id, "section/.dcg_sigdb", "200");
    let before = server.metrics();
    let out = trace(work.path(), &server.url, &prog, &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(its .dcg_sigdb section"), "{err}");
    for v in VALUES {
        assert!(stdout.contains(v), "{v}\n{stdout}");
    }
    let after = server.metrics();
    let db_size = size(&work.path().join("values.sigdb"));
    let debug_size = size(&served.join("values.debug"));
    let (n0, b0) = sent(&before, 200, "section");
    let (n1, b1) = sent(&after, 200, "section");
    assert_eq!((n1 - n0, b1 - b0), (1, db_size), "the section, once");
    assert_eq!(
        requests(&after, "debuginfo"),
        requests(&before, "debuginfo"),
        "no debug file asked for"
    );
    assert_eq!(
        files(&work.path().join("cache")),
        [format!("{id}/section-.dcg_sigdb")]
    );
    eprintln!(
        "section fetch: {} bytes transferred (server metrics); the debug file is {debug_size}",
        b1 - b0
    );
    assert!(db_size < debug_size);
}

/// `--offline` (anywhere on the command line) keeps every command that resolves a db
/// from asking: `sig`, `dump`, `load --build-id`; without it, the same `sig` gets the
/// "running kernel's" db (a notes file names the program's build-id) from the server.
#[test]
fn offline_everywhere() {
    require(false);
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    let (_prog, id) = stripped_program(work.path(), &served, true);
    let server = Server::start(&served, work.path(), &id, "section/.dcg_sigdb", "200");
    let notes = work.path().join("notes");
    std::fs::write(&notes, dcg_tests::kernel_notes_with(&raw_id(&id))).unwrap();
    let env = [("DCG_KERNEL_NOTES", notes.to_str().unwrap())];
    let before = server.metrics();
    for args in [
        &["--offline", "sig", "check_arg"][..],
        &["sig", "--offline", "check_arg"],
        &["--offline", "dump"],
        &["--offline", "load", "--build-id", &id],
    ] {
        let out = dcg(work.path(), &server.url, args, &env);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(!err.contains("debuginfod ("), "{args:?}: {err}");
    }
    let after = server.metrics();
    assert_eq!(
        requests(&after, "section") + requests(&after, "debuginfo"),
        requests(&before, "section") + requests(&before, "debuginfo"),
        "--offline asked nothing"
    );
    store_empty(work.path());
    let out = dcg(work.path(), &server.url, &["sig", "check_arg"], &env);
    let (sig, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(sig.contains("check_arg("), "{sig}");
    assert!(
        err.contains("the running kernel's db came from debuginfod (its .dcg_sigdb section"),
        "{err}"
    );
}

/// A dead server first, then one without the section but with the debug file: the
/// section's failure there and 404 here still lead to the debug file (the dead one is
/// not asked again).
#[test]
fn a_dead_server_does_not_block_the_debug_file() {
    require(false);
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    let (_prog, id) = stripped_program(work.path(), &served, false);
    let server = Server::start(&served, work.path(), &id, "debuginfo", "200");
    let dead = format!("http://127.0.0.1:{}", free_port());
    let urls = format!("{dead} {}", server.url);
    let out = dcg(work.path(), &urls, &["load", "--build-id", &id], &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains("fetched from debuginfod (a db built from its debug file)"),
        "{stdout}"
    );
    let list = text(&dcg(work.path(), "", &["list"], &[]).stdout);
    assert!(list.contains(&id), "{list}");
}

/// A cached miss (an empty file, as elfutils' client leaves) younger than `cache_miss_s`
/// is believed: the section is not asked for and the debug file is; older, it is asked
/// for again.
#[test]
fn cached_misses() {
    require(false);
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    let (_prog, id) = stripped_program(work.path(), &served, true);
    let server = Server::start(&served, work.path(), &id, "section/.dcg_sigdb", "200");
    let cache = work.path().join("cache");
    let miss = cache.join(&id).join("section-.dcg_sigdb");
    std::fs::create_dir_all(miss.parent().unwrap()).unwrap();
    std::fs::write(&miss, b"").unwrap();
    let before = server.metrics();
    let out = dcg(work.path(), &server.url, &["load", "--build-id", &id], &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains("a db built from its debug file"),
        "{stdout}"
    );
    let after = server.metrics();
    assert_eq!(requests(&after, "section"), requests(&before, "section"));
    assert_eq!(
        requests(&after, "debuginfo"),
        requests(&before, "debuginfo") + 1
    );
    // An old miss: asked again.
    let work2 = tempfile::tempdir().unwrap();
    let miss = work2
        .path()
        .join("cache")
        .join(&id)
        .join("section-.dcg_sigdb");
    std::fs::create_dir_all(miss.parent().unwrap()).unwrap();
    std::fs::write(work2.path().join("cache/cache_miss_s"), "60\n").unwrap();
    std::fs::write(&miss, b"").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&miss)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    let before = server.metrics();
    let out = dcg(work2.path(), &server.url, &["load", "--build-id", &id], &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(stdout.contains("(its .dcg_sigdb section)"), "{stdout}");
    let after = server.metrics();
    assert_eq!(
        sent(&after, 200, "section").0,
        sent(&before, 200, "section").0 + 1
    );
    assert!(size(&miss) > 0, "the miss was replaced by the section");
}

/// A server that has nothing: `dcg load --build-id` and the trace of a stripped program
/// each fail with one line naming the server and the build-id, and the store is
/// unchanged; with a dead server too, both failures are named.
#[test]
fn nothing_has_it() {
    require(true);
    let work = tempfile::tempdir().unwrap();
    let (prog, id) = stripped_program(work.path(), &work.path().join("kept"), false);
    let empty = work.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let server = Server::start(&empty, work.path(), &id, "debuginfo", "404");
    let out = dcg(work.path(), &server.url, &["load", "--build-id", &id], &[]);
    let err = one_line_error(&out, &server.url, &id);
    assert!(
        err.contains("no debuginfod server has a db for build-id"),
        "{err}"
    );
    eprintln!("{err}");
    store_empty(work.path());
    // Again: the misses remembered in the cache answer, and the message still names
    // the server.
    let before = server.metrics();
    let out = dcg(work.path(), &server.url, &["load", "--build-id", &id], &[]);
    let err = one_line_error(&out, &server.url, &id);
    assert!(err.contains("a miss remembered"), "{err}");
    assert_eq!(
        requests(&server.metrics(), "debuginfo"),
        requests(&before, "debuginfo")
    );
    let out = trace(work.path(), &server.url, &prog, &[]);
    let err = one_line_error(&out, &server.url, &id);
    eprintln!("{err}");
    store_empty(work.path());
    // A dead server and this one: both named.
    let work2 = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let urls = format!("{dead} {}", server.url);
    let out = dcg(work2.path(), &urls, &["load", "--build-id", &id], &[]);
    let err = one_line_error(&out, &server.url, &id);
    assert!(err.contains(&dead) && err.contains("had none"), "{err}");
    eprintln!("{err}");
    store_empty(work2.path());
}

/// The Debian 7.2 kernel's db by its build-id (`dcg load --build-id`), served as the
/// README says: the real `-dbg` vmlinux with the db added as a `.dcg_sigdb` section.
/// The client fetches the section alone (the server's metrics: the db's bytes, no
/// debuginfo); the db is then used in a qemu guest (which has no network).
#[test]
fn kernel_db_by_build_id() {
    if !dcg_tests::guest::enabled() {
        return;
    }
    require(false);
    let kernel = dcg_tests::kernel_script("fetch-debian-kernel.sh", &["7.2-cloud"]);
    let id = std::fs::read_to_string(kernel.join("build-id"))
        .unwrap()
        .trim()
        .to_string();
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let db = work.path().join("vmlinux.sigdb");
    run(Command::new(dcg_tests::dwarfscan_bin())
        .arg("-q")
        .arg(kernel.join("vmlinux"))
        .arg("-o")
        .arg(&db));
    let vmlinux = served.join("vmlinux");
    std::fs::copy(kernel.join("vmlinux"), &vmlinux).unwrap();
    add_section(&db, &vmlinux);
    assert_eq!(build_id(&vmlinux), id);
    let server = Server::start(&served, work.path(), &id, "section/.dcg_sigdb", "200");
    let before = server.metrics();
    let out = dcg(work.path(), &server.url, &["load", "--build-id", &id], &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains("fetched from debuginfod (its .dcg_sigdb section)"),
        "{stdout}"
    );
    let after = server.metrics();
    let (n0, b0) = sent(&before, 200, "section");
    let (n1, b1) = sent(&after, 200, "section");
    let (db_size, file_size) = (size(&db), size(&vmlinux));
    assert_eq!((n1 - n0, b1 - b0), (1, db_size), "the section, once");
    assert_eq!(
        sent(&after, 200, "debuginfo"),
        sent(&before, 200, "debuginfo"),
        "no debug file sent"
    );
    eprintln!(
        "kernel {id}: {} bytes transferred (server metrics) for the db; the vmlinux served \
         is {file_size} bytes",
        b1 - b0
    );
    assert!(db_size * 10 < file_size);
    let listed = dcg(work.path(), "", &["list"], &[]);
    let list = text(&listed.stdout);
    assert!(list.contains(&id) && list.contains("kernel"), "{list}");
    let stored = stdout
        .lines()
        .find_map(|l| l.rsplit_once(" -> ").map(|(_, p)| PathBuf::from(p.trim())))
        .unwrap_or_else(|| panic!("no stored path in: {stdout}"));
    // The resolver's own fallback: a store with no db for the running kernel (whose
    // build-id a notes file stands in for) asks the server.
    let other = work.path().join("resolver");
    std::fs::create_dir_all(&other).unwrap();
    let notes = other.join("notes");
    std::fs::write(&notes, dcg_tests::kernel_notes_with(&raw_id(&id))).unwrap();
    let notes_env = notes.to_str().unwrap();
    let out = dcg(
        &other,
        &server.url,
        &["sig", "do_sys_openat2"],
        &[("DCG_KERNEL_NOTES", notes_env)],
    );
    let (sig, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(sig.contains("do_sys_openat2("), "{sig}");
    assert!(
        err.contains("the running kernel's db came from debuginfod (its .dcg_sigdb section"),
        "{err}"
    );
    let again = dcg(
        &other,
        "",
        &["sig", "do_sys_openat2"],
        &[("DCG_KERNEL_NOTES", notes_env)],
    );
    assert!(
        again.status.success() && text(&again.stderr).is_empty(),
        "kept in the store"
    );
    drop(server);
    std::fs::remove_file(&vmlinux).unwrap();
    let initrd = work.path().join("guest.cpio.gz");
    dcg_tests::guest::initramfs(&initrd, &[(&stored, "/dcg/k.sigdb")], "fetched-db.sh", 400);
    let console = dcg_tests::guest::boot(
        &kernel.join("vmlinuz"),
        &initrd,
        460,
        "",
        "debuginfod-fetched-db",
    );
    let sec = dcg_tests::guest::section(&console, "fetched");
    dcg_tests::guest::must(
        sec,
        "fetched",
        &[
            "installed",
            "rc=0",
            "do_sys_openat2() {",
            "} /* do_sys_openat2 ret=-ENOENT",
            "ret=ERR_PTR(-ENOENT)",
        ],
    );
    dcg_tests::guest::must(
        dcg_tests::guest::section(&console, "after"),
        "after",
        &["global state unchanged: yes", "kernel warnings: 0"],
    );
}

/// How a bad server answers.
#[derive(Clone, Copy, Debug)]
enum Bad {
    Garbage,
    Truncated,
    WrongBuildId,
    /// Never answers.
    Silent,
    /// Answers the headers, then sends nothing.
    Stalled,
    /// Sends a few bytes at a time, slowly, for ever.
    Trickle,
}

/// A loopback server answering every request the `bad` way; `body` for wrong build-ids.
fn bad_server(bad: Bad, body: Vec<u8>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in l.incoming().take(8) {
            let Ok(mut c) = conn else { continue };
            let mut req = [0u8; 4096];
            let _ = c.read(&mut req);
            let head = |n: usize| {
                format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n")
            };
            let _ = match bad {
                Bad::Garbage => c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 32\r\nConnection: close\r\n\r\nthis is not a sigdb, not at all!",
                ),
                Bad::Truncated => c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\nDCGSIGDB",
                ),
                Bad::WrongBuildId => c
                    .write_all(head(body.len()).as_bytes())
                    .and_then(|()| c.write_all(&body)),
                Bad::Silent => {
                    std::thread::sleep(Duration::from_secs(30));
                    Ok(())
                }
                Bad::Stalled => c.write_all(head(1 << 20).as_bytes()).map(|()| {
                    std::thread::sleep(Duration::from_secs(30));
                }),
                Bad::Trickle => c.write_all(head(1 << 20).as_bytes()).and_then(|()| {
                    for _ in 0..600 {
                        c.write_all(&[0u8; 16])?;
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Ok(())
                }),
            };
        }
    });
    url
}

/// Garbage, a cut answer, a db of another build-id, a server that never answers, one
/// that stalls after its headers, one that trickles: each a one-line error naming the
/// server and the build-id, within a few DEBUGINFOD_TIMEOUTs (elfutils' rule: at least
/// 100 KiB per timeout), and nothing in the store.
#[test]
fn bad_servers() {
    let work = tempfile::tempdir().unwrap();
    // A valid db, of another binary.
    let other = work.path().join("other.sigdb");
    let bin = work.path().join("other");
    run(Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&bin)
        .arg(dcg_tests::repo_root().join("tests/uprobe/values.c")));
    run(Command::new(dcg_tests::dwarfscan_bin())
        .arg("-q")
        .arg(&bin)
        .arg("-o")
        .arg(&other));
    let wrong = std::fs::read(&other).unwrap();
    let id = "0123456789abcdef0123456789abcdef01234567";
    const TIMEOUT: u64 = 2;
    for (bad, want) in [
        (Bad::Garbage, "not"),
        (Bad::Truncated, "cut short"),
        (Bad::WrongBuildId, "its build-id is"),
        (Bad::Silent, "timeout"),
        (Bad::Stalled, "timeout"),
        (Bad::Trickle, "too slow"),
    ] {
        let url = bad_server(bad, wrong.clone());
        dcg_bin(); // built before the clock starts
        let started = Instant::now();
        let out = dcg(
            work.path(),
            &url,
            &["load", "--build-id", id],
            &[("DEBUGINFOD_TIMEOUT", &TIMEOUT.to_string())],
        );
        let took = started.elapsed();
        let err = one_line_error(&out, &url, id);
        assert!(err.to_lowercase().contains(want), "{bad:?}: {want}: {err}");
        eprintln!("{bad:?} ({:.1} s): {err}", took.as_secs_f64());
        assert!(
            took < Duration::from_secs(3 * TIMEOUT + 2),
            "{bad:?}: no hang: {took:?}"
        );
        store_empty(work.path());
        let left = files(&work.path().join("cache").join(id));
        assert!(left.is_empty(), "nothing kept of a bad answer: {left:?}");
    }
}
