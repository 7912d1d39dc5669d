//! Dbs by build-id from debuginfod: Debian's `debuginfod` serving a directory on
//! 127.0.0.1 (a free port, started and stopped by each test), and servers that
//! misbehave (a loopback listener of the test's own, since debuginfod cannot be made to).
//! Every run uses its own client cache and store.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dcg_tests::dcg_bin;

fn require() -> bool {
    if Command::new("debuginfod")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("debuginfod is missing (apt-get install debuginfod: .ci/install-deps.sh)");
    }
    true
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
    /// Start it and wait until it serves `what` of `id`.
    fn start(dir: &Path, work: &Path, id: &str, what: &str) -> Server {
        let port = free_port();
        let child = Command::new("debuginfod")
            .args(["-F"])
            .arg(dir)
            .args(["-p", &port.to_string(), "-t", "0", "-g", "0", "-d"])
            .arg(work.join("debuginfod.sqlite"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting debuginfod");
        let s = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            let code = Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
                .arg(format!("{}/buildid/{id}/{what}", s.url))
                .output()
                .unwrap();
            if code.stdout == b"200" {
                return s;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("debuginfod never served {what} of {id}");
    }
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

fn run(cmd: &mut Command) {
    let st = cmd.status().unwrap();
    assert!(st.success(), "{cmd:?}");
}

/// tests/uprobe/values.c built with DWARF, then split: the program stripped, its debug
/// file in `served` (with a `.dcg_sigdb` section when `with_db`).
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
    if with_db {
        let db = work.join("values.sigdb");
        run(Command::new(dcg_tests::dwarfscan_bin())
            .arg("-q")
            .arg(&prog)
            .arg("-o")
            .arg(&db));
        run(Command::new("objcopy")
            .arg(format!("--add-section=.dcg_sigdb={}", db.display()))
            .args(["--set-section-flags", ".dcg_sigdb=noload,readonly"])
            .arg(&debug));
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

/// A stripped program whose debug file only the server has: every value; the second run,
/// with the server gone, from the store; `--offline` never asks.
#[test]
fn stripped_program_values_from_the_server() {
    if !nix::unistd::geteuid().is_root() || !require() {
        return;
    }
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
    let server = Server::start(&served, work.path(), &id, "debuginfo");
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
/// section only (its bytes, not the debug file's).
#[test]
fn section_only() {
    if !nix::unistd::geteuid().is_root() || !require() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    let (prog, id) = stripped_program(work.path(), &served, true);
    let server = Server::start(&served, work.path(), &id, "section/.dcg_sigdb");
    let out = trace(work.path(), &server.url, &prog, &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(its .dcg_sigdb section"), "{err}");
    for v in VALUES {
        assert!(stdout.contains(v), "{v}\n{stdout}");
    }
    let cached: Vec<(String, u64)> = std::fs::read_dir(work.path().join("cache").join(&id))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    let db_size = std::fs::metadata(work.path().join("values.sigdb"))
        .unwrap()
        .len();
    let debug_size = std::fs::metadata(served.join("values.debug"))
        .unwrap()
        .len();
    assert_eq!(cached, vec![("section-.dcg_sigdb".to_string(), db_size)]);
    eprintln!("section fetch: {db_size} bytes transferred, the debug file is {debug_size}");
    assert!(db_size < debug_size);
}

/// The Debian 7.2 kernel's db by its build-id (`dcg load --build-id`), served as a
/// `.dcg_sigdb` section of a small file carrying the vmlinux's build-id.
#[test]
fn kernel_db_by_build_id() {
    if !dcg_tests::guest::enabled() || !require() {
        return;
    }
    let kernel = dcg_tests::kernel_script("fetch-debian-kernel.sh", &["7.2-cloud"]);
    let id = std::fs::read_to_string(kernel.join("build-id"))
        .unwrap()
        .trim()
        .to_string();
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let obj = work.path().join("k.o");
    run(Command::new(dcg_tests::dwarfscan_bin())
        .arg("-q")
        .arg(kernel.join("vmlinux"))
        .arg("--emit-object")
        .arg(&obj)
        .arg("-o")
        .arg(work.path().join("k.sigdb")));
    // An ELF with the kernel's build-id and the db's section, as a distro would serve it.
    run(Command::new("ld")
        .args(["-shared", &format!("--build-id=0x{id}"), "-o"])
        .arg(served.join("vmlinux-dcg.so"))
        .arg(&obj));
    let server = Server::start(&served, work.path(), &id, "section/.dcg_sigdb");
    let out = dcg(work.path(), &server.url, &["load", "--build-id", &id], &[]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        stdout.contains("fetched from debuginfod (its .dcg_sigdb section)"),
        "{stdout}"
    );
    let listed = dcg(work.path(), "", &["list"], &[]);
    let list = text(&listed.stdout);
    assert!(list.contains(&id) && list.contains("kernel"), "{list}");
    // The db the store now holds, used in the guest (which has no network): loaded there
    // and traced with no --db.
    let stored = stdout
        .lines()
        .find_map(|l| l.rsplit_once(" -> ").map(|(_, p)| PathBuf::from(p.trim())))
        .unwrap_or_else(|| panic!("no stored path in: {stdout}"));
    // The resolver's own fallback: a store with no db for the running kernel (whose
    // build-id a notes file stands in for) asks the server.
    let other = work.path().join("resolver");
    std::fs::create_dir_all(&other).unwrap();
    let notes = other.join("notes");
    let raw_id: Vec<u8> = (0..id.len() / 2)
        .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    std::fs::write(&notes, dcg_tests::kernel_notes_with(&raw_id)).unwrap();
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
#[derive(Clone, Copy)]
enum Bad {
    Garbage,
    Truncated,
    WrongBuildId,
    Silent,
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
            let _ = match bad {
                Bad::Garbage => c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 32\r\nConnection: close\r\n\r\nthis is not a sigdb, not at all!",
                ),
                Bad::Truncated => c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\nDCGSIGDB",
                ),
                Bad::WrongBuildId => {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    c.write_all(head.as_bytes()).and_then(|()| c.write_all(&body))
                }
                Bad::Silent => {
                    std::thread::sleep(Duration::from_secs(30));
                    Ok(())
                }
            };
        }
    });
    url
}

/// Garbage, a cut answer, a db of another build-id, a server that never answers: each a
/// one-line error naming the server and the build-id, and nothing in the store.
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
    for (bad, want) in [
        (Bad::Garbage, "not"),
        (Bad::Truncated, "cut short"),
        (Bad::WrongBuildId, "its build-id is"),
        (Bad::Silent, "timeout"),
    ] {
        let url = bad_server(bad, wrong.clone());
        dcg_bin(); // built before the clock starts
        let started = Instant::now();
        let out = dcg(
            work.path(),
            &url,
            &["load", "--build-id", id],
            &[("DEBUGINFOD_TIMEOUT", "2")],
        );
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(
            err.contains(&url) && err.contains(id),
            "server and build-id named: {err}"
        );
        assert!(err.to_lowercase().contains(want), "{want}: {err}");
        eprintln!("{err}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no hang: {:?}",
            started.elapsed()
        );
        let store = work.path().join("store");
        let stored = std::fs::read_dir(&store).map(|d| d.count()).unwrap_or(0);
        assert_eq!(stored, 0, "the store is unchanged");
        let cached = work.path().join("cache").join(id);
        let left: Vec<_> = std::fs::read_dir(&cached)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "nothing kept of a bad answer: {left:?}");
    }
}
