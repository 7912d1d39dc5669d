//! The traced program as untraced (issue 37), user-space engines on real programs:
//!
//! - what the command inherits (signal mask, ignored and caught signals under a SIGINT
//!   the "shell" ignored, environment, open fds, resource limits) is what it inherits
//!   without dcg (tests/untraced/state.c);
//! - the recorder's own start-up is never traced (`free` under `/bin/true`);
//! - short library names (`libc.so.6:strlen -- CMD`) are the command's libraries;
//! - an `exec` ends the calls open in the old program, marked, and the new program
//!   starts a new tree (tests/untraced/execs.c);
//! - `--no-children` holds for functions the in-process engine leaves to uprobes
//!   (tests/untraced/forks.c);
//! - `cat FILE` and `ls DIR` traced on libc's open/read/write/close functions show every
//!   such system call `strace` sees the program make, with the same fd or path and
//!   return value, and nothing more (the rule: [`strace_syscalls`]).
//!
//! Needs root, uprobe events, gcc (and strace for the last); skipped with the reason
//! otherwise.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dcg_calls::saved_format::CallRecord;

use dcg_tests::uprobe_skip_reason as skip_reason;

macro_rules! require {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipping: {why}");
            return;
        }
    };
}

const ENGINES: [&str; 2] = ["inproc", "uprobe"];

/// Compile tests/untraced/NAME.c into `dir` (-O2 -g, no CET: a bare `ret` stays one byte).
fn build(dir: &Path, name: &str) -> PathBuf {
    let src = dcg_tests::repo_root().join(format!("tests/untraced/{name}.c"));
    let out = dir.join(name);
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-fcf-protection=none", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("running gcc");
    assert!(st.success(), "gcc failed for {}", src.display());
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `dcg trace ARGS` (no store: dbs are built from the binaries' DWARF).
fn dcg(args: &[&str]) -> Output {
    dcg_command(args).output().expect("running dcg")
}

fn dcg_command(args: &[&str]) -> Command {
    let mut c = Command::new(dcg_tests::dcg_bin());
    c.arg("trace")
        .args(args)
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// The call lines of a text trace.
fn calls_only(trace: &str) -> Vec<String> {
    trace
        .lines()
        .filter_map(|l| dcg_tests::oracle::call_text(l).map(|(_, c)| c.to_string()))
        .collect()
}

/// The saved calls of a trace, by id.
fn records(path: &Path) -> Vec<CallRecord> {
    let f = std::fs::File::open(path).expect("saved calls");
    let mut r = dcg_calls::saved_format::read(std::io::BufReader::new(f))
        .expect("reading saved calls")
        .1;
    r.sort_by_key(|c| c.id);
    r
}

/// Start `cmd` as a shell starts a background job of a script, and then some: SIGINT and
/// SIGQUIT ignored, SIGUSR2 blocked, fd 9 open on /dev/null (not close-on-exec), a lower
/// limit of open files, a variable of its own.
fn as_background_job(cmd: &mut Command, devnull: &std::fs::File) {
    use nix::sys::signal::{signal, sigprocmask, SigHandler, SigSet, SigmaskHow, Signal};
    use std::os::fd::AsRawFd;
    let fd = devnull.as_raw_fd();
    cmd.env("UNTRACED_MARK", "1");
    // SAFETY: between fork and exec the closure makes only async-signal-safe calls
    // (signal, sigprocmask, dup2, setrlimit) on values prepared before.
    unsafe {
        cmd.pre_exec(move || {
            signal(Signal::SIGINT, SigHandler::SigIgn)?;
            signal(Signal::SIGQUIT, SigHandler::SigIgn)?;
            let mut set = SigSet::empty();
            set.add(Signal::SIGUSR2);
            sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
            if nix::libc::dup2(fd, 9) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 512, 4096)?;
            Ok(())
        });
    }
}

/// tests/untraced/state.c started by a "shell" that ignores SIGINT and SIGQUIT, blocks
/// SIGUSR2, passes fd 9 and a lower open-files limit: traced by either engine, it
/// reports the same signal mask, ignored and caught signals, environment (dcg's
/// preloading aside), fds and limits as untraced.
#[test]
fn the_command_inherits_what_it_inherits_untraced() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "state");
    let bs = bin.to_str().unwrap();
    let devnull = std::fs::File::open("/dev/null").unwrap();
    let plain_out = dir.path().join("plain.txt");
    let mut plain = Command::new(&bin);
    plain
        .arg(&plain_out)
        .env("DCG_STORE", "/nonexistent/dcg-store-for-tests")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    as_background_job(&mut plain, &devnull);
    assert!(plain.output().unwrap().status.success());
    let untraced = std::fs::read_to_string(&plain_out).unwrap();
    // The set-up took: SIGINT (bit 1) and SIGQUIT (bit 2) ignored, SIGUSR2 blocked.
    let mask = |name: &str| {
        untraced
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or_else(|| panic!("{name} {untraced}"))
    };
    assert_eq!(mask("SigIgn:") & 0x6, 0x6, "{untraced}");
    assert_eq!(mask("SigBlk:") & 0x800, 0x800, "{untraced}");
    assert!(untraced.contains("fd 9 /dev/null"), "{untraced}");
    for engine in ENGINES {
        let traced_out = dir.path().join(format!("{engine}.txt"));
        let func = format!("{bs}:st_mark");
        let mut cmd = dcg_command(&[
            "--engine",
            engine,
            "--func",
            &func,
            "--",
            bs,
            traced_out.to_str().unwrap(),
        ]);
        as_background_job(&mut cmd, &devnull);
        let out = cmd.output().expect("running dcg");
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{engine}: {err}");
        assert_eq!(
            calls_only(&stdout)
                .iter()
                .filter(|c| c.contains("st_mark("))
                .count(),
            1,
            "{engine}: {stdout}{err}"
        );
        let traced = std::fs::read_to_string(&traced_out).unwrap();
        assert_eq!(traced, untraced, "{engine}: traced (left) and untraced");
    }
}

/// `free` of libc under `/bin/true`, which frees nothing: the recorder's own start-up
/// (it allocates and frees while it hooks) is not the program's, so no call is shown;
/// the uprobe engine agrees.
#[test]
fn the_recorders_own_calls_are_not_traced() {
    require!();
    for engine in ENGINES {
        let out = dcg(&[
            "--engine",
            engine,
            "--func",
            "libc.so.6:free",
            "--",
            "/bin/true",
        ]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{engine}: {err}");
        let calls = calls_only(&stdout);
        assert!(
            calls.is_empty(),
            "{engine}: {} calls\n{stdout}",
            calls.len()
        );
    }
}

/// The README's example: `--func libc.so.6:strlen -- CMD` names the libc the command
/// loads (as `-p` names the running process's), in both engines.
#[test]
fn short_library_names_are_the_commands_libraries() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-file"), "x").unwrap();
    let d = dir.path().to_str().unwrap();
    for engine in ENGINES {
        let out = dcg(&[
            "--engine",
            engine,
            "--func",
            "libc.so.6:strlen",
            "--",
            "ls",
            d,
        ]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{engine}: {err}");
        assert!(stdout.lines().any(|l| l == "a-file"), "{engine}: {stdout}");
        assert!(
            calls_only(&stdout).iter().any(|c| c.contains("strlen")),
            "{engine}: no strlen call\n{stdout}{err}"
        );
    }
}

/// tests/untraced/execs.c: `ex_first` execs the program again from inside `main`. Both
/// calls end at the exec (`} /* ex_first (exec) */`, saved with `"ended":"exec"`), and
/// the new program's `main` is a tree of its own, not a call inside the old one.
#[test]
fn an_exec_ends_the_old_programs_calls() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "execs");
    let bs = bin.to_str().unwrap();
    for engine in ENGINES {
        let saved = dir.path().join(format!("{engine}.calls"));
        let func = format!("{bs}:*");
        let out = dcg(&[
            "--engine",
            engine,
            "--args",
            "--func",
            &func,
            "--output",
            saved.to_str().unwrap(),
            "--",
            bs,
        ]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{engine}: {err}");
        assert!(
            stdout.lines().any(|l| l == "second 42"),
            "{engine}: {stdout}"
        );
        let calls = calls_only(&stdout);
        let indent = |s: &str| s.len() - s.trim_start().len();
        let mains: Vec<&String> = calls.iter().filter(|c| c.contains("main(")).collect();
        assert_eq!(mains.len(), 2, "{engine}:\n{stdout}");
        assert_eq!(indent(mains[0]), indent(mains[1]), "{engine}:\n{stdout}");
        assert!(mains[1].contains("argc=2"), "{engine}:\n{stdout}");
        // ex_first is a leaf: `ex_first(self="..."); /* exec */`.
        for f in ["ex_first", "main"] {
            assert!(
                calls.iter().any(|c| {
                    let c = c.trim_start();
                    c == format!("}} /* {f} (exec) */")
                        || (c.starts_with(&format!("{f}(")) && c.ends_with("; /* exec */"))
                }),
                "{engine}: {f} not ended by the exec\n{stdout}"
            );
        }
        assert!(!stdout.contains("no return"), "{engine}:\n{stdout}");
        let recs = records(&saved);
        let ended: Vec<&str> = recs
            .iter()
            .filter(|r| r.ended == Some(dcg_calls::saved_format::CallEnd::Exec))
            .map(|r| r.func.as_str())
            .collect();
        assert_eq!(ended, ["main", "ex_first"], "{engine}: {recs:#?}");
        let second = recs
            .iter()
            .find(|r| r.func == "ex_second")
            .expect("ex_second");
        let parent = recs.iter().find(|r| Some(r.id) == second.parent).unwrap();
        assert_eq!(
            (parent.func.as_str(), parent.depth),
            ("main", 0),
            "{engine}"
        );
        assert_eq!(parent.ended, None, "{engine}");
    }
}

/// tests/untraced/forks.c: `fk_tiny` is a bare `ret`, too short for the in-process
/// engine to patch, so uprobes trace it there; the program calls it twice, its forked
/// child twice. `--no-children` shows the program's two in every engine, without it all
/// four.
#[test]
fn no_children_holds_for_functions_left_to_uprobes() {
    require!();
    let dir = tempfile::tempdir().unwrap();
    let bin = build(dir.path(), "forks");
    let bs = bin.to_str().unwrap();
    let func = format!("{bs}:fk_tiny");
    for engine in ENGINES {
        for (children, want) in [(true, 4), (false, 2)] {
            let mut args = vec!["--engine", engine, "--func", &func];
            if !children {
                args.push("--no-children");
            }
            args.extend(["--", bs]);
            let out = dcg(&args);
            let (stdout, err) = (text(&out.stdout), text(&out.stderr));
            assert!(out.status.success(), "{engine}: {err}");
            if engine == "inproc" {
                assert!(err.contains("traced with uprobes"), "{err}");
            }
            let n = calls_only(&stdout)
                .iter()
                .filter(|c| c.contains("fk_tiny("))
                .count();
            assert_eq!(n, want, "{engine} children={children}:\n{stdout}{err}");
        }
    }
}

/// The libc functions that make the open/openat, read, write and close system calls
/// (the public ones and the `_nocancel` ones libc calls itself: `opendir`, `fclose`).
const WRAPPERS: [&str; 10] = [
    "open",
    "openat",
    "read",
    "write",
    "close",
    "__open_nocancel",
    "__openat64_nocancel",
    "__read_nocancel",
    "__write_nocancel",
    "__close_nocancel",
];

/// A system call as both sides show it: kind (`open`, `read`, `write`, `close`), what it
/// acts on (the path for an open, else the fd) and its return value.
type Sys = (String, String, i64);

/// The kind of a system call or of a libc wrapper's name.
fn kind(name: &str) -> Option<&'static str> {
    ["open", "read", "write", "close"]
        .into_iter()
        .find(|k| name.contains(k))
}

/// The system calls of `strace -f -k` output `log` made through libc (the innermost
/// frame of the stack is in libc.so.6: the dynamic loader's own, loading the libraries,
/// are left out); `from_entry`: only those whose stack holds `__libc_start_main`, made
/// from the program's entry point on (its constructors, `main`, `exit` and its
/// handlers), which leaves out what the loader runs before it hands over to the program:
/// the libraries' constructors (libselinux's look at `/proc/filesystems` under `ls`).
/// Those run before the recorder's own and the in-process engine cannot see them (its
/// notice says so); uprobes, placed before the command runs, do.
fn strace_syscalls(log: &str, from_entry: bool) -> Vec<Sys> {
    let mut out = Vec::new();
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        // `1234  openat(AT_FDCWD, "d", O_RDONLY) = 3`, then ` > lib(sym+off) [addr]` lines.
        let call = line
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        let mut stack = Vec::new();
        while lines
            .peek()
            .is_some_and(|l| l.trim_start().starts_with('>'))
        {
            stack.push(lines.next().unwrap());
        }
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let Some(k) = kind(name) else { continue };
        if !stack.first().is_some_and(|l| l.contains("/libc.so.6(")) {
            continue;
        }
        if from_entry && !stack.iter().any(|l| l.contains("(__libc_start_main+")) {
            continue;
        }
        // strace pads the return value to a column: `close(3)        = 0`.
        let Some((args, ret)) = rest.rsplit_once(" = ") else {
            continue;
        };
        let args = args.trim_end().trim_end_matches(')');
        let ret: i64 = ret.split_whitespace().next().unwrap().parse().unwrap();
        let on = if k == "open" {
            args.split('"').nth(1).unwrap_or("").to_string()
        } else {
            args.split(',').next().unwrap().trim().to_string()
        };
        out.push((k.to_string(), on, ret));
    }
    out
}

/// The same of dcg's saved calls: the wrappers' calls by the command's process.
fn traced_syscalls(recs: &[CallRecord]) -> Vec<Sys> {
    recs.iter()
        .filter_map(|r| {
            let k = kind(&r.func)?;
            let on = if k == "open" {
                let path = r.args.iter().find(|a| a.value.starts_with('"'))?;
                path.value.trim_matches('"').to_string()
            } else {
                r.args.first()?.value.clone()
            };
            let ret = r.ret.as_deref().or(r.ret_raw.as_deref())?;
            Some((k.to_string(), on, ret.parse().ok()?))
        })
        .collect()
}

/// `cat FILE` and `ls DIR` traced by dcg on libc's open/openat/read/write/close wrappers
/// against `strace -f -k -e trace=open,openat,read,write,close`: every system call made
/// through libc (in process: from the program's entry point on, see [`strace_syscalls`])
/// dcg shows with the same path or fd and return value, in the same order, and none more.
#[test]
fn cat_and_ls_show_what_strace_sees() {
    require!();
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipping: strace is missing (.ci/install-deps.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.txt");
    std::fs::write(&file, "hello\nworld\n").unwrap();
    let sub = dir.path().join("d");
    std::fs::create_dir(&sub).unwrap();
    for n in ["a", "b", "c"] {
        std::fs::write(sub.join(n), n).unwrap();
    }
    let funcs: Vec<String> = WRAPPERS.iter().map(|w| format!("libc.so.6:{w}")).collect();
    let cases: [(&str, &Path); 2] = [("cat", &file), ("ls", &sub)];
    for (cmd, arg) in cases {
        let arg = arg.to_str().unwrap();
        let log = dir.path().join(format!("{cmd}.strace"));
        let st = Command::new("strace")
            .args(["-f", "-k", "-e", "trace=open,openat,read,write,close", "-o"])
            .arg(&log)
            .args([cmd, arg])
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        assert!(st.status.success(), "strace {cmd}");
        let log = std::fs::read_to_string(&log).unwrap();
        for engine in ENGINES {
            let want = strace_syscalls(&log, engine == "inproc");
            assert!(want.iter().any(|s| s.0 == "write"), "{cmd}: {want:?}");
            let saved = dir.path().join(format!("{cmd}-{engine}.calls"));
            let mut args = vec!["--engine", engine, "--args", "--show-retvals"];
            for f in &funcs {
                args.extend(["--func", f]);
            }
            args.extend(["--output", saved.to_str().unwrap(), "--", cmd, arg]);
            let out = dcg(&args);
            let err = text(&out.stderr);
            assert!(out.status.success(), "{cmd} {engine}: {err}");
            let got = traced_syscalls(&records(&saved));
            assert_eq!(
                got, want,
                "{cmd} {engine}: dcg (left), strace (right)\n{err}"
            );
            if cmd == "ls" && engine == "inproc" {
                // libselinux's constructor reads /proc/filesystems before the recorder
                // starts: not traced, and said so.
                assert!(!got.iter().any(|s| s.1 == "/proc/filesystems"), "{got:?}");
                assert!(err.contains("libselinux.so.1"), "{err}");
            }
        }
    }
}
