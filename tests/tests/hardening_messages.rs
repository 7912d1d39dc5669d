//! Issue 37, the messages part, on real binaries: numeric options refused with a one-line
//! error (never a panic), a db whose compressed frames are damaged behind a good checksum
//! refused naming the file and the section, what a user who is not root is told, C++ and
//! Rust names demangled (trees, saved calls, reports, `--func`, `dcg sig`), and a `long
//! double` printed as its shortest decimal.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dcg_tests::{dcg_bin, dwarfscan_bin};

fn dcg(args: &[&str]) -> Output {
    Command::new(dcg_bin())
        .args(args)
        .env("DEBUGINFOD_URLS", "")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Compile `source` (named `name`, C or C++ by its extension) with `compiler` into `dir`.
fn build(dir: &Path, compiler: &str, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let bin = dir.join(name.split('.').next().unwrap());
    let out = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{compiler}: {}", text(&out.stderr));
    bin
}

const C_PROG: &str = r#"#include <stdio.h>
__attribute__((noinline)) int twice(int x) { return 2 * x; }
__attribute__((noinline)) long double lneg(long double x) { return -x; }
int main(void) {
  printf("%d\n", twice(21));
  printf("%Lf\n", lneg(0x1.e848000000000638p+20L));
  return 0;
}
"#;

// ---------------------------------------------------------------- arguments

/// `--duration inf`, `1e300`, `nan`, 0 and negative numbers, `--count 0`, `-p 0` and
/// `--page-size 0` are refused by the argument parser: exit 2, one line naming the
/// option, no panic (inf and 1e300 panicked, nan ended the trace at once, count 0
/// printed a call, page size 0 panicked).
#[test]
fn numeric_options_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "gcc", "prog.c", C_PROG, &["-g", "-O1"]);
    let func = format!("{}:twice", prog.display());
    let p = prog.to_str().unwrap();
    for (opt, value, want) in [
        (
            "--duration",
            "inf",
            "finite number of seconds greater than 0",
        ),
        ("--duration", "1e300", "at most a year"),
        (
            "--duration",
            "nan",
            "finite number of seconds greater than 0",
        ),
        ("--duration", "0", "greater than 0"),
        ("--duration", "-1", "greater than 0"),
        ("--duration", "soon", "is not a number of seconds"),
        ("--count", "0", "the count must be at least 1"),
        ("--count", "-3", "is not a whole number"),
        ("--pid", "0", "a process id is at least 1"),
        ("--pid", "-1", "a process id is at least 1"),
    ] {
        let arg = format!("{opt}={value}");
        let args: Vec<&str> = if opt == "--pid" {
            vec!["trace", "--func", &func, &arg]
        } else {
            vec!["trace", "--func", &func, &arg, "--", p]
        };
        let out = dcg(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{opt} {value}: {err}");
        assert!(err.contains(want), "{opt} {value}: {err}");
        assert!(err.contains(opt), "{opt} {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let raw = dir.path().join("raw");
    std::fs::write(&raw, [0u8; 64]).unwrap();
    for size in ["0", "100", "-4096"] {
        let out = dcg(&[
            "decode",
            "--raw",
            "--formats",
            p,
            "--kallsyms",
            p,
            &format!("--page-size={size}"),
            raw.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "page size {size}: {err}");
        assert!(err.contains("--page-size"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Good values still work: a fractional duration ends a trace; `--count 1` stops after
/// the first top-level call.
#[test]
fn good_numeric_options_still_work() {
    if !is_root() {
        eprintln!("skipping: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "gcc", "prog.c", C_PROG, &["-g", "-O1"]);
    let func = format!("{}:twice", prog.display());
    let out = dcg(&[
        "trace",
        "--args",
        "--func",
        &func,
        "--count",
        "1",
        "--duration",
        "30.5",
        "--",
        prog.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(stdout.matches("twice(x=21)").count(), 1, "{stdout}");
}

// ---------------------------------------------------------------- db frames

/// Offset and length of section `id`, from the header's section table (its last
/// `SECTION_COUNT` entries of 24 bytes: offset u64, length u64, count u32, size u32).
fn section(bytes: &[u8], id: usize) -> (usize, usize) {
    use sigdb::layout::{HEADER_SIZE, SECTION_COUNT};
    let at = HEADER_SIZE - 24 * SECTION_COUNT + 24 * id;
    let word = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap()) as usize;
    (word(at), word(at + 8))
}

/// Recompute the body checksum (header bytes 32..36: CRC-32 of everything after the
/// header), as a damaged file with a consistent checksum has it.
fn fix_checksum(bytes: &mut [u8]) {
    let h = sigdb::layout::HEADER_SIZE;
    let crc = crc32(&bytes[h..]);
    bytes[32..36].copy_from_slice(&crc.to_le_bytes());
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A db whose string frame (or parameter block) is damaged behind a recomputed checksum:
/// `dcg sig` and `dcg trace` refuse it, naming the file and the section, instead of
/// printing empty names and `arg1=?`.
#[test]
fn damaged_frames_are_refused_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "gcc", "prog.c", C_PROG, &["-g", "-O1"]);
    let db = dir.path().join("prog.db");
    let out = Command::new(dwarfscan_bin())
        .arg("-q")
        .arg(&prog)
        .arg("-o")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let good = std::fs::read(&db).unwrap();
    let sig = dcg(&["sig", "--db", db.to_str().unwrap(), "twice"]);
    assert!(
        text(&sig.stdout).contains("int twice(int x"),
        "{}",
        text(&sig.stdout)
    );
    // Section 0: strings (zstd frames); 7: params (LZ4 blocks).
    for (id, name, skip) in [(0usize, "strings", 6usize), (7, "params", 0)] {
        let (at, len) = section(&good, id);
        assert!(len > skip, "{name}: empty section");
        let mut bad = good.clone();
        for b in &mut bad[at + skip..at + len] {
            *b = 0xff;
        }
        fix_checksum(&mut bad);
        let path = dir.path().join(format!("bad-{name}.db"));
        std::fs::write(&path, &bad).unwrap();
        let p = path.to_str().unwrap();
        let out = dcg(&["sig", "--db", p, "twice"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(p), "{name}: {err}");
        assert!(err.contains(&format!("{name} record 0")), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
        if is_root() {
            let func = format!("{}:twice", prog.display());
            let out = dcg(&[
                "trace",
                "--engine",
                "uprobe",
                "--db",
                p,
                "--func",
                &func,
                "--",
                prog.to_str().unwrap(),
            ]);
            let err = text(&out.stderr);
            assert!(!out.status.success(), "{name}: {err}");
            assert!(err.contains(p) && err.contains(name), "{name}: {err}");
            assert!(!text(&out.stdout).contains("=?"), "{}", text(&out.stdout));
        }
    }
}

// ---------------------------------------------------------------- not root

/// Run `dcg args` as `nobody` (uid and gid 65534, no groups), in a private mount
/// namespace prepared by `setup` (shell commands run as root before).
fn as_nobody(setup: &str, args: &[&str]) -> Output {
    let quoted: Vec<String> = std::iter::once(dcg_bin().display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .map(|a| format!("'{a}'"))
        .collect();
    let script = format!(
        "{setup}\nexec setpriv --reuid=65534 --regid=65534 --clear-groups \
         --inh-caps=-all {}",
        quoted.join(" ")
    );
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("DEBUGINFOD_URLS", "")
        .output()
        .unwrap()
}

/// A program `nobody` may run: in a directory of mode 0755.
fn public_program(dir: &Path) -> PathBuf {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    build(dir, "gcc", "prog.c", C_PROG, &["-g", "-O1"])
}

/// As a user who is not root: tracefs mounted with mode 0700 (the usual case) is said to
/// be there but not accessible, with what to do; not "tracefs is not mounted".
#[test]
fn not_root_is_told_to_run_as_root() {
    if !is_root() || !Path::new("/sys/kernel/tracing/trace").exists() {
        eprintln!("skipping: needs root and tracefs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = public_program(dir.path());
    let func = format!("{}:twice", prog.display());
    let p = prog.to_str().unwrap();
    // tracefs as the kernel mounts it, mode 0700, in this namespace only.
    let setup = "chmod 0700 /sys/kernel/tracing || exit 9";
    let out = as_nobody(
        setup,
        &["trace", "--engine", "uprobe", "--func", &func, "--", p],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("uprobes need root (CAP_SYS_ADMIN and tracefs access): run as root"),
        "{err}"
    );
    assert!(err.contains("/sys/kernel/tracing"), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!err.contains("not mounted"), "{err}");
    assert!(!err.contains("no uprobe events"), "{err}");
    // A readable tracefs whose uprobe_events is root's (0600): the same advice, naming
    // the file.
    let setup = "mount -t tmpfs dcgtest /sys/kernel/tracing && cd /sys/kernel/tracing && \
                 touch trace uprobe_events && chmod 0600 uprobe_events && chmod 0755 . \
                 || exit 9";
    let out = as_nobody(
        setup,
        &["trace", "--engine", "uprobe", "--func", &func, "--", p],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("uprobes need root"), "{err}");
    assert!(err.contains("/sys/kernel/tracing/uprobe_events"), "{err}");
}

/// A kernel without uprobe events (a tracefs without `uprobe_events`, in a private
/// mount namespace): said so, with the option that needs no uprobes.
#[test]
fn kernel_without_uprobe_events_is_named() {
    if !is_root() {
        eprintln!("skipping: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "gcc", "prog.c", C_PROG, &["-g", "-O1"]);
    let func = format!("{}:twice", prog.display());
    let script = format!(
        "mount -t tmpfs dcgtest /sys/kernel/tracing && touch /sys/kernel/tracing/trace \
         || exit 9\nexec '{}' trace --engine uprobe --func '{func}' -- '{}'",
        dcg_bin().display(),
        prog.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("DEBUGINFOD_URLS", "")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this kernel has no uprobe events (/sys/kernel/tracing/uprobe_events"),
        "{err}"
    );
    assert!(err.contains("--engine inproc"), "{err}");
}

// ---------------------------------------------------------------- demangling

const CPP_PROG: &str = r#"#include <cstdio>
namespace ns {
template <typename T> struct Box { T v; };
template <typename T> __attribute__((noinline)) T get(Box<T> b) { return b.v; }
__attribute__((noinline)) int total(const int *p, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += p[i];
  return s;
}
}
int main() {
  ns::Box<int> b{7};
  int a[3] = {1, 2, 3};
  std::printf("%d %d\n", ns::get(b), ns::total(a, 3));
  return 0;
}
"#;

const GET: &str = "_ZN2ns3getIiEET_NS_3BoxIS1_EE";

/// A C++ program: `--func` by the demangled name (with a glob, with its parameters) or
/// the symbol; the tree shows `ns::get<int>`, saved calls keep the symbol in `func` and
/// the demangled name in `demangled`, and every report format shows the demangled name.
#[test]
fn cpp_names_are_demangled() {
    if !is_root() {
        eprintln!("skipping: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "g++", "prog.cpp", CPP_PROG, &["-g", "-O1"]);
    let p = prog.to_str().unwrap();
    let saved = dir.path().join("calls.json");
    for pattern in ["ns::*", "ns::get<int>(ns::Box<int>)", GET] {
        let func = format!("{p}:{pattern}");
        let out = dcg(&[
            "trace",
            "--args",
            "--func",
            &func,
            "--output",
            saved.to_str().unwrap(),
            "--",
            p,
        ]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{pattern}: {}", text(&out.stderr));
        assert!(stdout.contains("ns::get<int>(b="), "{pattern}: {stdout}");
        assert!(!stdout.contains(GET), "{pattern}: {stdout}");
        if pattern == "ns::*" {
            assert!(stdout.contains("ns::total(p="), "{stdout}");
        }
    }
    // The last trace saved ns::get only.
    let recs = dcg_tests::json_records(&std::fs::read_to_string(&saved).unwrap());
    let get = recs.iter().find(|r| r.func == GET).expect("ns::get saved");
    assert_eq!(
        get.demangled.as_deref(),
        Some("int ns::get<int>(ns::Box<int>)")
    );
    // Reports of the `ns::*` trace.
    let func = format!("{p}:ns::*");
    let out = dcg(&[
        "trace",
        "--args",
        "--func",
        &func,
        "--output",
        saved.to_str().unwrap(),
        "--",
        p,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for format in ["text", "json", "dot", "folded", "chrome", "html"] {
        let out = dcg(&["report", "--format", format, saved.to_str().unwrap()]);
        let report = text(&out.stdout);
        assert!(out.status.success(), "{format}: {}", text(&out.stderr));
        assert!(report.contains("ns::get<int>"), "{format}: {report}");
        assert!(report.contains("ns::total"), "{format}: {report}");
    }
    // --root by the name people write.
    let out = dcg(&["report", "--root", "ns::total", saved.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert!(report.contains("ns::total"), "{report}");
    assert!(!report.contains("ns::get<int>"), "{report}");
    // dcg sig by the demangled name, and dump --json with the new key.
    let db = dir.path().join("prog.db");
    let out = Command::new(dwarfscan_bin())
        .args(["-q", p, "-o", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = dcg(&["sig", "--db", db.to_str().unwrap(), "ns::get<int>"]);
    let sig = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        sig.contains("int ns::get<int>(") && sig.contains(GET),
        "{sig}"
    );
    let out = dcg(&["dump", "--json", "--db", db.to_str().unwrap()]);
    assert!(
        text(&out.stdout).contains("\"demangled\":\"int ns::get<int>(ns::Box<int>)\""),
        "{}",
        text(&out.stdout)
    );
}

/// A Rust program (rustc -g): `--func` by the path people write, the tree and saved
/// calls with the demangled name.
#[test]
fn rust_names_are_demangled() {
    if !is_root() || Command::new("rustc").arg("--version").output().is_err() {
        eprintln!("skipping: needs root and rustc");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("demo.rs");
    std::fs::write(
        &src,
        "#[inline(never)]\nfn add(a: u64, b: u64) -> u64 { a + b }\n\
         fn main() { println!(\"{}\", add(std::hint::black_box(40), 2)); }\n",
    )
    .unwrap();
    let bin = dir.path().join("demo");
    let out = Command::new("rustc")
        .args(["-g", "-C", "opt-level=1", "--crate-name", "demo", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let p = bin.to_str().unwrap();
    let saved = dir.path().join("calls.json");
    let func = format!("{p}:demo::add");
    let out = dcg(&[
        "trace",
        "--engine",
        "uprobe",
        "--args",
        "--func",
        &func,
        "--output",
        saved.to_str().unwrap(),
        "--",
        p,
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("demo::add(a=40, b=2)"), "{stdout}");
    let recs = dcg_tests::json_records(&std::fs::read_to_string(&saved).unwrap());
    let add = recs
        .iter()
        .find(|r| r.func.contains("3add"))
        .expect("add saved");
    assert!(add.func.starts_with("_ZN4demo3add"), "{}", add.func);
    assert_eq!(add.demangled.as_deref(), Some("demo::add"));
}

// ---------------------------------------------------------------- long double

/// uftrace's `-2000000` case: a long double no double holds, shown as its shortest
/// decimal (it was `-0x1.e848000000000638p+20`).
#[test]
fn long_double_prints_as_decimal() {
    if !is_root() {
        eprintln!("skipping: not root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), "gcc", "prog.c", C_PROG, &["-g", "-O0"]);
    let func = format!("{}:lneg", prog.display());
    let out = dcg(&[
        "trace",
        "--args",
        "--show-retvals",
        "--func",
        &func,
        "--",
        prog.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("lneg(x=2000000.0000000000905); /* ret=-2000000.0000000000905 */"),
        "{stdout}"
    );
}
