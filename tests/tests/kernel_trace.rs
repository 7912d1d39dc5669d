//! End-to-end tests of `dcg trace` on real kernels booted in qemu (TCG): the guest gets
//! the dcg binary, the kernel's db and a scenario script (`tests/qemu/e2e/*.sh`), one boot
//! per kernel. Runs only with `DCG_KERNEL_TESTS=1` (set by `.ci/run`).
//!
//! - test kernel (`tests/kernels/testkernel`, funcgraph-retval): scenarios 2-5 (typed return
//!   values, inlined/unknown functions, two concurrent sessions, SIGINT/SIGTERM cleanup).
//! - Debian 7.2 cloud (no funcgraph-retval): scenario 1 (values from fprobe exit events,
//!   db from the store) and 3 (`pidfd_create` is inlined).
//! - Debian 6.12 cloud (no funcgraph-retval, no funcgraph-args; fprobes on rethook): the
//!   same scenarios 1 and 3, and scenario 1 with `--args` (arguments from fprobe entry
//!   events, which 6.12 prints after the call's `{`).
//! - test kernel again: issue 9's kill test (50 traces interrupted by SIGINT, SIGTERM or
//!   SIGKILL at random moments; nothing may be left, stale sessions removed and reported).

use std::path::{Path, PathBuf};

use dcg_tests::guest::{self, debian_kernel, enabled, initramfs, must, section};

/// Pack an initramfs with dcg, the db and the guest script, boot it, return the console
/// text between the markers.
fn boot(kernel: &Path, db: &Path, script: &str, timeout: u32, append: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let initrd = dir.path().join("guest.cpio.gz");
    initramfs(&initrd, &[(db, "/dcg/k.sigdb")], script, timeout);
    guest::boot(
        kernel,
        &initrd,
        timeout + 60,
        append,
        &format!("kernel-trace-{script}"),
    )
}

fn count_line(sec: &str, prefix: &str) -> u64 {
    sec.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{sec}"))
}

#[test]
fn testkernel_scenarios() {
    if !enabled() {
        return;
    }
    let kernel = dcg_tests::testkernel_dir().join("vmlinuz");
    let db = dcg_tests::testkernel_db();
    let text = boot(&kernel, &db, "testkernel.sh", 900, "");

    // 2: typed values from funcgraph-retval.
    let s2 = section(&text, "s2-retvals");
    must(
        s2,
        "s2",
        &[
            "rc=0",
            "} /* do_sys_openat2 ret=-ENOENT */",
            "ret=ERR_PTR(-ENOENT)",
            "ret=NULL",
            "ret=0xff",
            "ret=true",
            "ret=false",
            "} /* putname */", // void: no value
        ],
    );
    // 2 with --report: the report of the same calls, from the live engine.
    let s2r = section(&text, "s2-report");
    must(
        s2r,
        "s2-report",
        &[
            "rc=0",
            "input: live trace",
            "1 top-level",
            "do_sys_openat2",
            "-ENOENT",
        ],
    );
    // No call tree on stdout (dcg's own stderr lines, debug output included, aside).
    assert!(
        !s2r.lines()
            .any(|l| !l.starts_with("dcg") && l.contains("do_sys_openat2() {")),
        "{s2r}"
    );
    // 3: inlined and unknown functions.
    let s3 = section(&text, "s3-inlined");
    must(
        s3,
        "s3",
        &["pidfd_create is not traceable: it is inlined into", "rc=2"],
    );
    let s3u = section(&text, "s3-unknown");
    must(s3u, "s3-unknown", &["unknown function", "rc=2"]);
    // 4: two sessions, each sees only its own roots.
    let s4 = section(&text, "s4-concurrent");
    must(
        s4,
        "s4",
        &["a rc=0", "b rc=0", "registry while both run: 2 sessions"],
    );
    assert_eq!(count_line(s4, "a sees vfs_read: "), 0, "{s4}");
    assert_eq!(count_line(s4, "b sees do_sys_openat2: "), 0, "{s4}");
    assert!(count_line(s4, "a sees do_sys_openat2: ") > 0, "{s4}");
    assert!(count_line(s4, "b sees vfs_read: ") > 0, "{s4}");
    // 5: nothing left after SIGINT / SIGTERM (the latter with probes).
    for name in ["s5-sigint", "s5-sigterm-probes", "s4-concurrent", "after"] {
        let s = section(&text, name);
        must(s, name, &["dcg instances: 0", "dcg events: 0"]);
        assert!(
            s.lines().any(|l| l.trim_end() == "registry:"),
            "{name}: registry not empty:\n{s}"
        );
    }
    must(
        section(&text, "s5-sigint"),
        "s5",
        &["stopped (signal 2)", "traced command left: 0"],
    );
    must(
        section(&text, "s5-sigterm-probes"),
        "s5t",
        &["stopped (signal 15)", "traced command left: 0"],
    );
    must(
        section(&text, "after"),
        "after",
        &["global state unchanged: yes"],
    );
}

/// Issue 9's kill test in the kernel: `DCG_KILL_RUNS` (default 50) traces on the test
/// kernel, each interrupted at a random moment by SIGINT, SIGTERM or SIGKILL (in turn),
/// half of them with exit/entry probes; the checks run in the guest
/// (`tests/qemu/e2e/killtest.sh`), which prints a `FAIL` line for each one that fails.
#[test]
fn testkernel_kill_runs() {
    if !enabled() {
        return;
    }
    let runs = std::env::var("DCG_KILL_RUNS").unwrap_or_else(|_| "50".into());
    let seed = std::env::var("DCG_KILL_SEED").unwrap_or_else(|_| "12345".into());
    let n: u32 = runs.parse().expect("DCG_KILL_RUNS must be a number");
    let kernel = dcg_tests::testkernel_dir().join("vmlinuz");
    let db = dcg_tests::testkernel_db();
    let text = boot(
        &kernel,
        &db,
        "killtest.sh",
        600 + 60 * n,
        &format!("dcg.kill_runs={runs} dcg.kill_seed={seed}"),
    );
    let runs_sec = section(&text, "kill-runs");
    eprintln!("{runs_sec}");
    let fails: Vec<&str> = runs_sec.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "kill test failures:\n{runs_sec}");
    let summary = runs_sec
        .lines()
        .find(|l| l.starts_with("kill-summary:"))
        .unwrap_or_else(|| panic!("no kill-summary:\n{runs_sec}"));
    let field = |k: &str| -> u32 {
        summary
            .split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {summary}"))
    };
    assert_eq!(field("runs"), n, "{summary}");
    assert_eq!(field("failures"), 0, "{summary}");
    assert_eq!(
        runs_sec.lines().filter(|l| l.starts_with("run ")).count() as u32,
        n,
        "{runs_sec}"
    );
    if n >= 10 {
        // Random moments must hit both the start-up and the tracing phase.
        let traced = field("traced");
        assert!(traced > 0 && traced < n, "{summary}");
        assert!(field("stale_removed") > 0, "{summary}");
    }
    let after = section(&text, "after");
    must(
        after,
        "after",
        &[
            "global state unchanged: yes",
            "dcg instances: 0",
            "dcg events: 0",
            "kernel warnings: 0",
        ],
    );
    assert!(
        after.lines().any(|l| l.trim_end() == "registry:"),
        "registry not empty:\n{after}"
    );
}

/// A Debian cloud kernel (`tests/kernels/fetch-debian-kernel.sh NAME`, e.g. `7.2-cloud`; downloaded on
/// first use) and a db of its vmlinux: (vmlinuz, the db's directory, the db).
fn debian(kernel_name: &str) -> (PathBuf, tempfile::TempDir, PathBuf) {
    let kdir = debian_kernel(kernel_name);
    let vmlinux = kdir.join("vmlinux");
    let mut result = dwarfscan::scan(
        &[dwarfscan::Input::new(&vmlinux)],
        &dwarfscan::Options::default(),
    )
    .unwrap_or_else(|e| panic!("scanning {}: {e}", vmlinux.display()));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(format!("debian-{kernel_name}.sigdb"));
    result.write(&db).unwrap();
    (kdir.join("vmlinuz"), dir, db)
}

/// What both Debian kernels must show. `load`: the db went into the store and matches the
/// running kernel (so `dcg trace` runs without --db). 1 (`s1-exit-probes`): values from
/// exit probes joined to the graph: the root's errno, `ERR_PTR(-ENOENT)` from the open
/// path, the `struct filename *` of the callee `getname` (named `getname_flags` on 7.2,
/// `getname` on 6.12), nothing left behind. 3: `pidfd_create` is inlined. `after`: the global
/// tracing state is as before.
fn debian_checks(text: &str, getname: &str) {
    must(
        section(text, "load"),
        "load",
        &["installed", "[running kernel]"],
    );
    let getname_ret = format!("}} /* {getname} ret=0x");
    must(
        section(text, "s1-exit-probes"),
        "s1",
        &[
            "rc=0",
            "do_sys_openat2() {",
            "} /* do_sys_openat2 ret=-ENOENT */",
            &getname_ret,
            "ret=ERR_PTR(-ENOENT)",
            "dcg instances: 0",
            "dcg events: 0",
        ],
    );
    must(
        section(text, "s3-inlined"),
        "s3",
        &[
            "pidfd_create is not traceable: it is inlined into __x64_sys_pidfd_open",
            "rc=2",
        ],
    );
    must(
        section(text, "after"),
        "after",
        &["global state unchanged: yes"],
    );
}

/// Debian 7.2: fprobes on fgraph.
#[test]
fn debian72_scenarios() {
    if !enabled() {
        return;
    }
    let (kernel, _dir, db) = debian("7.2-cloud");
    let text = boot(&kernel, &db, "debian72.sh", 900, "");
    debian_checks(&text, "getname_flags");
}

/// Debian 6.12: fprobes on ftrace and rethook, no funcgraph-args either; the entry events
/// of `--args` print after the `{` of their call.
#[test]
fn debian612_scenarios() {
    if !enabled() {
        return;
    }
    let (kernel, _dir, db) = debian("6.12-cloud");
    let text = boot(&kernel, &db, "debian612.sh", 900, "");
    debian_checks(&text, "getname");
    // Arguments from entry probes, joined to their own calls.
    must(
        section(&text, "s1-args"),
        "s1-args",
        &[
            "rc=0",
            "do_sys_openat2(dfd=-100, filename=0x",
            "getname(filename=0x",
            // A void callee: its entry probe exists from the start.
            "putname(name=0x",
            "} /* do_sys_openat2 ret=-ENOENT */",
            "dcg instances: 0",
            "dcg events: 0",
        ],
    );
}
