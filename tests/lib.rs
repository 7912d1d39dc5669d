//! Shared helpers for workspace-level integration tests: where the real inputs are
//! (the test kernel in `../shared/testkernel`, Debian kernels in the download cache) and
//! signature dbs built from them once per test run.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// `../shared` beside the repository (the test kernel, captures, scripts).
pub fn shared_dir() -> PathBuf {
    std::env::var_os("DCG_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("..").join("shared"))
}

/// The test kernel's directory (`bzImage`, `vmlinux.xz`, `modules/`, `captures/`).
pub fn testkernel_dir() -> PathBuf {
    shared_dir().join("testkernel")
}

/// A cache directory for derived test inputs (`$DCG_KCACHE` or ~/.cache/dcg-kernels).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("DCG_KCACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache").join("dcg-kernels")
        })
}

static LOCK: Mutex<()> = Mutex::new(());

/// The test kernel's vmlinux, decompressed from `vmlinux.xz` into the cache once.
pub fn testkernel_vmlinux() -> PathBuf {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out = cache_dir().join("testkernel").join("vmlinux");
    let src = testkernel_dir().join("vmlinux.xz");
    let fresh = match (out.metadata(), src.metadata()) {
        (Ok(o), Ok(s)) => o.modified().ok() >= s.modified().ok() && o.len() > 0,
        _ => false,
    };
    if !fresh {
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let tmp = out.with_extension("tmp");
        let file = std::fs::File::create(&tmp).unwrap();
        let status = std::process::Command::new("xz")
            .arg("-dc")
            .arg(&src)
            .stdout(file)
            .status()
            .expect("running xz (apt-get install xz-utils)");
        assert!(status.success(), "xz -dc {} failed", src.display());
        std::fs::rename(&tmp, &out).unwrap();
    }
    out
}

/// A sigdb of the test kernel (vmlinux plus its modules), built with the dwarfscan
/// library once per process and kept in a temporary directory.
pub fn testkernel_db() -> PathBuf {
    static DB: Mutex<Option<(tempfile::TempDir, PathBuf)>> = Mutex::new(None);
    let vmlinux = testkernel_vmlinux();
    let mut slot = DB.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = slot.as_ref() {
        return p.clone();
    }
    let mut inputs = vec![dwarfscan::Input::new(&vmlinux)];
    let mut mods: Vec<PathBuf> = std::fs::read_dir(testkernel_dir().join("modules"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    mods.sort();
    inputs.extend(mods.into_iter().map(dwarfscan::Input::new));
    let mut result = dwarfscan::scan(&inputs, &dwarfscan::Options::default())
        .unwrap_or_else(|e| panic!("scanning the test kernel: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("testkernel.sigdb");
    result.write(&path).unwrap();
    *slot = Some((dir, path.clone()));
    path
}

/// Compare `actual` with the golden file `tests/golden/<rel>`; with `DCG_BLESS=1`, write
/// it instead. Panics with a short diff on mismatch.
pub fn check_golden(rel: &str, actual: &str) {
    let path = repo_root().join("tests").join("golden").join(rel);
    if std::env::var_os("DCG_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with DCG_BLESS=1 to create it)",
            path.display()
        )
    });
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(10)
            .map(|(i, (a, b))| format!("line {}:\n  golden: {a}\n  actual: {b}", i + 1))
            .collect();
        panic!(
            "{} differs from the output ({} vs {} lines):\n{}",
            path.display(),
            expected.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}

/// The `dcg` binary of this build profile (built with cargo when missing, e.g. when only
/// this test package was asked for).
pub fn dcg_bin() -> PathBuf {
    bin("dcg", "tracer")
}

/// The `dwarfscan` binary of this build profile.
pub fn dwarfscan_bin() -> PathBuf {
    bin("dwarfscan", "dwarfscan-cli")
}

fn bin(name: &str, package: &str) -> PathBuf {
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    // target/<profile>/deps/<test-exe> → target/<profile>/<name>
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let path = profile_dir.join(name);
    if !built.iter().any(|b| b == name) {
        // Once per test process: cargo makes sure the binary matches the sources (a
        // no-op when `cargo test --workspace` already built it).
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "--quiet", "-p", package, "--bin", name]);
        if release {
            cmd.arg("--release");
        }
        if let Some(target) = profile_dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let status = cmd.status().expect("running cargo build");
        assert!(
            status.success(),
            "cargo build -p {package} --bin {name} failed"
        );
        built.push(name.to_string());
    }
    path
}
