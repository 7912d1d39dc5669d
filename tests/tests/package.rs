//! The Debian package, tested where a user installs it.
//!
//! - `docs_match_the_command_definitions`: the man pages and completions committed in
//!   `tracer/cli/doc/` (what the package installs) are those `dcg generate-docs` and
//!   `dwarfscan --generate-docs` make from the current command definitions.
//! - `package_installs_runs_and_leaves_nothing` (`DCG_KERNEL_TESTS=1`, as root: it
//!   downloads from Debian's package registry): `cargo deb` builds the package, lintian
//!   finds no error in it, and in a clean Debian 12 root (`tests/package/debroot.sh`,
//!   debootstrap) `apt-get install ./dcg_*.deb` installs it; there, with /proc, /sys and
//!   /dev mounted, the installed `dwarfscan` and `dcg trace` (in process) work on a
//!   compiled program and `man` renders the pages; `apt-get purge --autoremove` then
//!   leaves no file behind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dcg_tests::{dcg_bin, dwarfscan_bin, repo_root};

fn doc_dir() -> PathBuf {
    repo_root().join("tracer/cli/doc")
}

/// Every file below `dir`, as paths relative to it.
fn files_below(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    out
}

/// Run both binaries' generators into `dir`.
fn generate_docs(dir: &Path) {
    for (bin, flag) in [
        (dcg_bin(), "generate-docs"),
        (dwarfscan_bin(), "--generate-docs"),
    ] {
        let out = run(Command::new(&bin).arg(flag).arg(dir));
        assert!(
            out.status.success(),
            "{} {flag}: {}",
            bin.display(),
            text(&out)
        );
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn docs_match_the_command_definitions() {
    let fresh = tempfile::tempdir().unwrap();
    generate_docs(fresh.path());
    let committed = files_below(&doc_dir());
    let generated = files_below(fresh.path());
    let regenerate = "regenerate them: target/release/dcg generate-docs tracer/cli/doc && \
                      target/release/dwarfscan --generate-docs tracer/cli/doc";
    assert_eq!(
        committed
            .iter()
            .filter(|p| !p.ends_with("README.md"))
            .collect::<Vec<_>>(),
        generated.iter().collect::<Vec<_>>(),
        "tracer/cli/doc does not hold the files the definitions generate; {regenerate}"
    );
    for rel in &generated {
        let path = fresh.path().join(rel);
        if path.is_dir() {
            continue;
        }
        let want = std::fs::read(&path).unwrap();
        let have = std::fs::read(doc_dir().join(rel)).unwrap();
        assert!(
            want == have,
            "tracer/cli/doc/{} differs from what the definitions generate; {regenerate}",
            rel.display()
        );
    }
    // The pages a user looks for, with their examples.
    for page in [
        "dcg.1",
        "dcg-trace.1",
        "dcg-report.1",
        "dcg-load.1",
        "dwarfscan.1",
    ] {
        let body = std::fs::read_to_string(doc_dir().join("man").join(page)).unwrap();
        assert!(
            body.contains(".SH EXAMPLES"),
            "{page} has no EXAMPLES section"
        );
    }
    let help = run(Command::new(dcg_bin()).arg("--help"));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.trim_end()
            .rsplit("\n\n")
            .next()
            .unwrap()
            .starts_with("Examples:"),
        "dcg --help does not end with examples:\n{help}"
    );
}

/// Unmounts what the test mounted in the root, on every exit path (panics included).
struct Mounts(Vec<PathBuf>);

impl Mounts {
    fn mount(&mut self, args: &[&str], at: &Path) {
        let out = run(Command::new("mount").args(args).arg(at));
        assert!(
            out.status.success(),
            "mount {args:?} {}: {}",
            at.display(),
            text(&out)
        );
        self.0.push(at.to_path_buf());
    }

    fn unmount_all(&mut self) {
        while let Some(at) = self.0.pop() {
            let _ = Command::new("umount").arg("-R").arg("-l").arg(&at).status();
        }
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        self.unmount_all();
    }
}

/// Run `sh -c SCRIPT` inside `root` with a clean environment; panics with its output
/// when it fails.
fn in_root(root: &Path, script: &str) -> String {
    let out = run(Command::new("chroot")
        .arg(root)
        .args(["/bin/sh", "-c", script])
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("HOME", "/root")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("MANWIDTH", "80"));
    assert!(
        out.status.success(),
        "in the root: {script}\n{}",
        text(&out)
    );
    text(&out)
}

/// The root's files, less what apt, dpkg, man-db and the logs keep for themselves.
fn root_files(root: &Path) -> BTreeSet<PathBuf> {
    const OWN: [&str; 7] = [
        "proc",
        "sys",
        "dev",
        "tmp",
        "var/lib/apt",
        "var/lib/dpkg",
        "var/cache",
    ];
    files_below(root)
        .into_iter()
        .filter(|p| !OWN.iter().any(|o| p.starts_with(o)) && !p.starts_with("var/log"))
        .collect()
}

fn build_deb(out_dir: &Path) -> PathBuf {
    // The binaries of this profile, built if needed; cargo deb only packages them.
    let dcg = dcg_bin();
    dwarfscan_bin();
    let target = dcg.parent().and_then(Path::parent).unwrap();
    let deb = out_dir.join("dcg.deb");
    let out = run(Command::new(env!("CARGO"))
        .current_dir(repo_root())
        .args(["deb", "-p", "dcg", "--no-build", "--strip", "--output"])
        .arg(&deb)
        .env("CARGO_TARGET_DIR", target));
    assert!(
        out.status.success(),
        "cargo deb -p dcg failed (cargo-deb is installed by .ci/install-deps.sh): {}",
        text(&out)
    );
    deb
}

#[test]
fn package_installs_runs_and_leaves_nothing() {
    if std::env::var_os("DCG_KERNEL_TESTS").is_none_or(|v| v != "1") {
        eprintln!("skipped: set DCG_KERNEL_TESTS=1 (as .ci/run does) for the package test");
        return;
    }
    assert!(
        nix::unistd::geteuid().is_root(),
        "the package test needs root"
    );
    let work = tempfile::tempdir().unwrap();
    let deb = build_deb(work.path());

    let lint = run(Command::new("lintian")
        .args(["--fail-on", "error", "--no-tag-display-limit"])
        .arg(&deb));
    assert!(
        lint.status.success(),
        "lintian reports errors:\n{}",
        text(&lint)
    );

    // What the package holds: the pages and completions are those generated (the
    // committed doc/, checked against the definitions by the test above).
    let unpacked = work.path().join("unpacked");
    assert!(
        run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))
            .status
            .success()
    );
    for rel in files_below(&doc_dir().join("man")) {
        let gz = unpacked
            .join("usr/share/man/man1")
            .join(format!("{}.gz", rel.display()));
        let page = run(Command::new("gzip").arg("-dc").arg(&gz));
        assert!(
            page.status.success(),
            "{} missing from the package",
            gz.display()
        );
        assert_eq!(
            page.stdout,
            std::fs::read(doc_dir().join("man").join(&rel)).unwrap(),
            "{} in the package is not the generated page",
            rel.display()
        );
    }
    for (sub, dir) in [
        ("bash/dcg", "usr/share/bash-completion/completions/dcg"),
        ("zsh/_dcg", "usr/share/zsh/vendor-completions/_dcg"),
        (
            "fish/dcg.fish",
            "usr/share/fish/vendor_completions.d/dcg.fish",
        ),
        (
            "bash/dwarfscan",
            "usr/share/bash-completion/completions/dwarfscan",
        ),
    ] {
        assert_eq!(
            std::fs::read(unpacked.join(dir)).unwrap(),
            std::fs::read(doc_dir().join("completions").join(sub)).unwrap(),
            "{dir}"
        );
    }

    // A clean Debian 12 root.
    let tarball = String::from_utf8(
        run(Command::new("bash").arg(repo_root().join("tests/package/debroot.sh"))).stdout,
    )
    .unwrap();
    let tarball = tarball.trim();
    assert!(!tarball.is_empty(), "tests/package/debroot.sh made no root");
    let root = work.path().join("root");
    std::fs::create_dir(&root).unwrap();
    assert!(run(Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-xf")
        .arg(tarball))
    .status
    .success());
    std::fs::copy("/etc/resolv.conf", root.join("etc/resolv.conf")).unwrap();
    let before = root_files(&root);

    let mut mounts = Mounts(Vec::new());
    mounts.mount(&["-t", "proc", "proc"], &root.join("proc"));
    mounts.mount(&["-t", "sysfs", "sysfs"], &root.join("sys"));
    mounts.mount(&["--rbind", "/dev"], &root.join("dev"));
    std::fs::copy(&deb, root.join("tmp/dcg_test.deb")).unwrap();
    in_root(&root, "apt-get install -y -q ./tmp/dcg_test.deb");

    // The installed files alone: a program compiled here, scanned and traced there.
    let demo = root.join("tmp/demo");
    let cc = run(Command::new("gcc")
        .args(["-O2", "-g"])
        .arg(repo_root().join("examples/demo.c"))
        .arg("-o")
        .arg(&demo));
    assert!(cc.status.success(), "gcc: {}", text(&cc));
    let scan = in_root(
        &root,
        "cd /tmp && dwarfscan demo -o demo.db -q && dcg sig --db demo.db classify",
    );
    assert!(scan.contains("classify("), "{scan}");
    let trace = in_root(
        &root,
        "cd /tmp && dcg trace --engine inproc --db demo.db --show-retvals --args \
         --func /tmp/demo:classify -- ./demo >/dev/null 2>trace.err; \
         cat trace.err; dcg trace --engine inproc --db demo.db --show-retvals --args \
         --func /tmp/demo:classify -- ./demo 2>/dev/null | grep 'classify('",
    );
    assert!(
        trace.contains("classify(") && trace.contains("ret="),
        "{trace}"
    );
    for page in ["dcg", "dcg-trace", "dwarfscan"] {
        let man = in_root(&root, &format!("man -P cat {page}"));
        assert!(man.contains("EXAMPLES"), "man {page}:\n{man}");
    }

    in_root(
        &root,
        "apt-get purge --autoremove -y -q dcg && rm -f /tmp/dcg_test.deb",
    );
    mounts.unmount_all();
    let after = root_files(&root);
    let left: Vec<_> = after.difference(&before).collect();
    assert!(left.is_empty(), "left behind after purge: {left:?}");
    let gone: Vec<_> = before.difference(&after).collect();
    assert!(
        gone.is_empty(),
        "removed from the root by install + purge: {gone:?}"
    );
}
