//! `dcg trace` with user and kernel patterns together (issue 42), on the host: what is
//! refused before anything runs (`--engine` twice outside such a session or twice for a
//! side, `--kernel` without user functions), and a session whose kernel side cannot start — no db for the running
//! kernel — that traces the user functions alone and says why in one line. The kernel
//! side itself runs in qemu (`kernel_joint.rs`).

use std::path::Path;
use std::process::{Command, Output};

/// `dcg trace ARGS -- PROG /etc/hostname` with an empty store (and no db module, no
/// debuginfod) in `empty`.
fn trace(prog: &Path, args: &[&str], empty: &Path) -> Output {
    Command::new(dcg_tests::dcg_bin())
        .args(["--offline", "trace"])
        .args(args)
        .arg("--")
        .arg(prog)
        .arg("/etc/hostname")
        .env("DCG_STORE", empty.join("store"))
        .env("DCG_SYSFS_DIR", empty.join("sysfs"))
        .output()
        .expect("running dcg")
}

#[test]
fn refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let prog = dcg_tests::gcc(
        dir.path(),
        "qemu/progs/joint.c",
        "joint",
        &["-O2", "-pthread"],
    );
    let user = format!("{}:load_config", prog.display());
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "--engine", "inproc", "--engine", "bpf", "--func", "vfs_read",
            ],
            "--engine is given once per side",
        ),
        (
            &[
                "--engine", "inproc", "--engine", "uprobe", "--func", &user, "--func", "vfs_read",
            ],
            "--engine is given once per side (a user and a kernel engine)",
        ),
        (
            &["--kernel", "--func", "vfs_read"],
            "--kernel puts kernel calls under traced user functions",
        ),
        (&["--kernel-depth", "1", "--func", &user], "--kernel"),
    ];
    for (args, want) in cases {
        let out = trace(&prog, args, dir.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        // Nothing ran: the program prints a line first thing.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("main tid="), "{args:?}: {stdout}");
    }
}

#[test]
fn without_a_kernel_side_the_user_functions_are_traced_alone() {
    if let Some(why) = dcg_tests::uprobe_skip_reason() {
        eprintln!("skipping: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = dcg_tests::gcc(
        dir.path(),
        "qemu/progs/joint.c",
        "joint",
        &["-O2", "-pthread"],
    );
    let user = format!("{}:load_config", prog.display());
    for kernel in [&["--func", "do_sys_openat2"][..], &["--kernel"][..]] {
        let args: Vec<&str> = ["--show-retvals", "--func", &user]
            .into_iter()
            .chain(kernel.iter().copied())
            .collect();
        let out = trace(&prog, &args, dir.path());
        let (stdout, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{args:?}: {err}");
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("dcg: no kernel calls in this session: "))
            .collect();
        assert_eq!(said.len(), 1, "{args:?}: {err}");
        assert!(
            said[0].contains("no signature db for the running kernel")
                && said[0].ends_with("; the user functions are traced alone"),
            "{}",
            said[0]
        );
        assert!(stdout.contains("load_config(); /* ret=0 */"), "{stdout}");
        assert!(stdout.contains("load_config(); /* ret=-1 */"), "{stdout}");
        assert!(!stdout.contains("kernel"), "{stdout}");
    }
}
