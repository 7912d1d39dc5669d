//! Shared helpers for workspace-level integration tests: where the real inputs are (the
//! captures in `tests/data/captures`, the test kernel and the Debian kernels in the
//! download cache, made by `tests/kernels/`) and signature dbs built from them once per
//! test run.

pub mod guest;
pub mod oracle;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The real traces taken on the test kernel (`tests/data/captures`, see its README).
pub fn captures_dir() -> PathBuf {
    repo_root().join("tests").join("data").join("captures")
}

/// One capture by file name.
pub fn capture(name: &str) -> PathBuf {
    captures_dir().join(name)
}

/// The download/build cache (`$DCG_KCACHE` or ~/.cache/dcg-kernels).
pub fn cache_dir() -> PathBuf {
    std::env::var_os("DCG_KCACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache").join("dcg-kernels")
        })
}

/// Run one of the `tests/kernels/` scripts and return the directory it prints.
pub fn kernel_script(script: &str, args: &[&str]) -> PathBuf {
    let path = repo_root().join("tests").join("kernels").join(script);
    let mut cmd = Command::new("bash");
    if script.starts_with("testkernel/") {
        // The test kernel's build runs dwarfscan (CONFIG_DEBUG_INFO_DCG): this one.
        cmd.env("DWARFSCAN", dwarfscan_bin());
    }
    let out = cmd
        .arg(&path)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
    assert!(out.status.success(), "{} {args:?} failed", path.display());
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The test kernel's cache directory (`vmlinuz`, `vmlinux`, `System.map`, `config`,
/// `release`, `build-id`, `dbg-modules/*.ko`, `modules/lib/modules/RELEASE/` with the db
/// module the kernel build made), built from Debian's linux-source-7.2 by
/// `tests/kernels/testkernel/build.sh` on first use (~7 min).
pub fn testkernel_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| kernel_script("testkernel/build.sh", &[]))
        .clone()
}

/// The test kernel's vmlinux (DWARF 5 + BTF).
pub fn testkernel_vmlinux() -> PathBuf {
    testkernel_dir().join("vmlinux")
}

/// The test kernel's modules with DWARF, sorted.
pub fn testkernel_modules() -> Vec<PathBuf> {
    let dir = testkernel_dir().join("dbg-modules");
    let mut mods: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    mods.sort();
    mods
}

/// A sigdb of the test kernel (vmlinux plus its modules), built with the dwarfscan
/// library once per process and kept in a temporary directory.
pub fn testkernel_db() -> PathBuf {
    static DB: Mutex<Option<(tempfile::TempDir, PathBuf)>> = Mutex::new(None);
    testkernel_db_in(&DB, &dwarfscan::Options::default())
}

/// [`testkernel_db`] with inline instances (dwarfscan's default).
pub fn testkernel_db_inline() -> PathBuf {
    static DB: Mutex<Option<(tempfile::TempDir, PathBuf)>> = Mutex::new(None);
    let opts = dwarfscan::Options {
        inline_instances: dwarfscan::InlineInstances::Traceable,
        ..dwarfscan::Options::default()
    };
    testkernel_db_in(&DB, &opts)
}

/// [`testkernel_db`] with every inlined copy (`dwarfscan --all-inline-instances`).
pub fn testkernel_db_all_inline() -> PathBuf {
    static DB: Mutex<Option<(tempfile::TempDir, PathBuf)>> = Mutex::new(None);
    let opts = dwarfscan::Options {
        inline_instances: dwarfscan::InlineInstances::All,
        ..dwarfscan::Options::default()
    };
    testkernel_db_in(&DB, &opts)
}

type DbSlot = Mutex<Option<(tempfile::TempDir, PathBuf)>>;

fn testkernel_db_in(db: &DbSlot, opts: &dwarfscan::Options) -> PathBuf {
    let vmlinux = testkernel_vmlinux();
    let mut slot = db.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = slot.as_ref() {
        return p.clone();
    }
    let mut inputs = vec![dwarfscan::Input::new(&vmlinux)];
    inputs.extend(testkernel_modules().into_iter().map(dwarfscan::Input::new));
    let mut result =
        dwarfscan::scan(&inputs, opts).unwrap_or_else(|e| panic!("scanning the test kernel: {e}"));
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
    // The in-process recorder dcg preloads lives beside it.
    bin("libdcg_recorder.so", "dcg-recorder");
    bin("dcg", "dcg")
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
        cmd.args(["build", "--quiet", "-p", package]);
        if name.ends_with(".so") {
            cmd.arg("--lib");
        } else {
            cmd.args(["--bin", name]);
        }
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

/// A fake `/sys/kernel/notes` holding one GNU build-id note (for `DCG_KERNEL_NOTES`).
pub fn kernel_notes_with(build_id: &[u8]) -> Vec<u8> {
    let mut n = Vec::new();
    n.extend_from_slice(&4u32.to_le_bytes());
    n.extend_from_slice(&(build_id.len() as u32).to_le_bytes());
    n.extend_from_slice(&3u32.to_le_bytes());
    n.extend_from_slice(b"GNU\0");
    n.extend_from_slice(build_id);
    while n.len() % 4 != 0 {
        n.push(0);
    }
    n
}

/// The C program `tests/REL` built by gcc with `opts` and `-g` into `dir` as `name`.
pub fn gcc(dir: &Path, rel: &str, name: &str, opts: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let src = repo_root().join("tests").join(rel);
    let st = std::process::Command::new("gcc")
        .args(opts)
        .args(["-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("running gcc");
    assert!(st.success(), "gcc {opts:?} failed for {}", src.display());
    out
}

/// `tests/qemu/progs/NAME.c` built static (for guests without a libc), once per process
/// and name.
pub fn guest_prog(name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, tempfile::TempDir, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, exe)) = built.iter().find(|(n, _, _)| n == name) {
        return exe.clone();
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join(name);
    let src = repo_root().join(format!("tests/qemu/progs/{name}.c"));
    let st = std::process::Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("running gcc");
    assert!(st.success(), "gcc -static {} failed", src.display());
    built.push((name.to_string(), dir, exe.clone()));
    exe
}

/// `tests/qemu/progs/syscall-loop.c` built static: the load of the kernel engines' load
/// test and benchmark.
pub fn syscall_loop() -> PathBuf {
    guest_prog("syscall-loop")
}

/// The saved-calls records (`dcg trace --json` lines) in `text`, by id.
pub fn json_records(text: &str) -> Vec<dcg_calls::saved_format::CallRecord> {
    let mut v: Vec<dcg_calls::saved_format::CallRecord> = text
        .lines()
        .filter(|l| l.starts_with("{\"id\""))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    v.sort_by_key(|c| c.id);
    v
}

/// The ids of the calls a context switch made inside a traced tree, with what they called.
/// `__schedule` is notrace, so the calls it makes sit right under the call the task was
/// switched out in: a run of siblings from `rcu_note_context_switch` to
/// `finish_task_switch` (or to the first inline frame). They are the switch's, not that call's (and function_graph
/// records them only sometimes).
pub fn context_switch_calls(
    calls: &[dcg_calls::saved_format::CallRecord],
) -> std::collections::HashSet<u64> {
    use std::collections::{BTreeMap, HashSet};
    let mut by_parent: BTreeMap<Option<u64>, Vec<&dcg_calls::saved_format::CallRecord>> =
        BTreeMap::new();
    for c in calls {
        by_parent.entry(c.parent).or_default().push(c);
    }
    let mut out = HashSet::new();
    let mut todo = Vec::new();
    for kids in by_parent.values_mut() {
        kids.sort_by_key(|c| c.id);
        let mut in_switch = false;
        for c in kids.iter() {
            // An inline frame is the switched-out call's own code: the task is back (the
            // switch's `finish_task_switch` can go unrecorded, as a missed call).
            in_switch &= c.inline.is_none();
            in_switch |= c.func == "rcu_note_context_switch";
            if in_switch {
                todo.push(c.id);
            }
            in_switch &= !c.func.starts_with("finish_task_switch");
        }
    }
    while let Some(id) = todo.pop() {
        if out.insert(id) {
            todo.extend(by_parent.get(&Some(id)).into_iter().flatten().map(|c| c.id));
        }
    }
    out
}

/// How a `--stack` stack must match the kernel's ([`stacks_match_trigger`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stacks {
    /// One of the kernel's stacks, whole.
    Exact,
    /// The end of one of them.
    Tail,
}

/// Check `--stack` against the kernel's stacktrace trigger on the same function `func`
/// in the same run (`trigger`: the trace's `<stack trace>` and ` => name` lines): each
/// top-level call of `func` in `calls` has a stack, and its frames without the inline
/// ones are one of the trigger's stacks (the function's own frame left out where the
/// kernel shows it; the trigger's skip count is fixed, so while another tracer is on the
/// function some of its stacks lack a frame or show ftrace's: any one must match). An
/// inline frame has no offset and a frame holding it further out. Returns how many
/// inline frames there were. [`Stacks::Exact`]: the frames are a whole trigger stack;
/// [`Stacks::Tail`]: they end one, at least three frames of it (a kernel whose unwinder
/// guesses, `CONFIG_UNWINDER_GUESS`, reports every text address it finds on the stack:
/// what comes before the root's caller depends on what ran before the stack was taken,
/// and the trigger runs after function_graph's hook where dcg's probe runs before it).
pub fn stacks_match_trigger(
    calls: &[dcg_calls::saved_format::CallRecord],
    func: &str,
    trigger: &str,
    how: Stacks,
) -> usize {
    let mut kernel: Vec<Vec<String>> = Vec::new();
    for l in trigger.lines() {
        if l.contains("<stack trace>") {
            kernel.push(Vec::new());
        } else if let (Some(f), Some(s)) = (l.strip_prefix(" => "), kernel.last_mut()) {
            s.push(f.trim().to_string());
        }
    }
    for s in &mut kernel {
        if s.first().is_some_and(|f| f == func) {
            s.remove(0);
        }
    }
    assert!(!kernel.is_empty(), "the trigger printed no stack");
    let roots: Vec<_> = calls
        .iter()
        .filter(|c| c.parent.is_none() && c.func == func)
        .collect();
    assert!(!roots.is_empty(), "no top-level {func} call");
    let mut inlined = 0;
    for r in roots {
        let stack = r
            .stack
            .as_ref()
            .unwrap_or_else(|| panic!("no stack: {r:?}"));
        let frames: Vec<String> = stack
            .iter()
            .filter(|f| !f.inline)
            .map(|f| f.func.clone())
            .collect();
        let found = match how {
            Stacks::Exact => kernel.contains(&frames),
            Stacks::Tail => frames.len() >= 3 && kernel.iter().any(|k| k.ends_with(&frames)),
        };
        assert!(
            found,
            "stack {frames:?} is none of the kernel's: {kernel:?}"
        );
        for (i, f) in stack.iter().enumerate() {
            assert_eq!(f.inline, f.offset.is_none(), "{f:?}");
            if f.inline {
                inlined += 1;
                assert!(stack[i + 1..].iter().any(|g| !g.inline), "{stack:?}");
            }
        }
    }
    inlined
}

/// A saved call's arguments as `name=value, ...`.
pub fn args_text(r: &dcg_calls::saved_format::CallRecord) -> String {
    let args: Vec<String> = r
        .args
        .iter()
        .map(|a| format!("{}={}", a.name, a.value))
        .collect();
    args.join(", ")
}

/// Why live user-space tracing tests cannot run here, if they cannot: they need root,
/// gcc and uprobe events (tracefs is mounted first where it is not).
pub fn uprobe_skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root".into());
    }
    if Command::new("gcc").arg("--version").output().is_err() {
        return Some("gcc is missing".into());
    }
    let _ = dcg_live::tracefs::mount_point();
    if !Path::new("/sys/kernel/tracing/uprobe_events").exists() {
        return Some("no uprobe events".into());
    }
    None
}

/// The host's `name` program (`bpftool`), found in `PATH` or the sbin directories.
pub fn which(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found (.ci/install-deps.sh installs it)"))
}
