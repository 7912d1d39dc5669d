//! Booting real kernels in qemu for the end-to-end tests (`tests/qemu/`): whether they
//! are enabled, the Debian kernels, the initramfs, one boot at a time, and the
//! `=====BEGIN/END name=====` sections guest scripts print.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Whether kernel tests run (`DCG_KERNEL_TESTS=1`, set by `.ci/run`); says so when not.
pub fn enabled() -> bool {
    if std::env::var_os("DCG_KERNEL_TESTS").is_some_and(|v| v == "1") {
        return true;
    }
    eprintln!("skipped: set DCG_KERNEL_TESTS=1 to boot kernels in qemu (as .ci/run does)");
    false
}

fn qemu_dir() -> PathBuf {
    crate::repo_root().join("tests").join("qemu")
}

/// A Debian cloud kernel's cache directory (`tests/kernels/fetch-debian-kernel.sh NAME`,
/// `6.12-cloud` or `7.2-cloud`; downloaded on first use): `vmlinuz`, `vmlinux`, `release`,
/// `build-id`.
pub fn debian_kernel(name: &str) -> PathBuf {
    crate::kernel_script("fetch-debian-kernel.sh", &[name])
}

/// A Debian cloud kernel (as [`debian_kernel`]) and a db of its vmlinux built with the
/// dwarfscan library: (`vmlinuz`, the db's temporary directory, the db).
pub fn debian_with_db(name: &str) -> (PathBuf, tempfile::TempDir, PathBuf) {
    debian_with_db_opts(name, &dwarfscan::Options::default())
}

/// [`debian_with_db`] with the db built with `opts`.
pub fn debian_with_db_opts(
    name: &str,
    opts: &dwarfscan::Options,
) -> (PathBuf, tempfile::TempDir, PathBuf) {
    let kdir = debian_kernel(name);
    let vmlinux = kdir.join("vmlinux");
    let mut result = dwarfscan::scan(&[dwarfscan::Input::new(&vmlinux)], opts)
        .unwrap_or_else(|e| panic!("scanning {}: {e}", vmlinux.display()));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(format!("debian-{name}.sigdb"));
    result.write(&db).unwrap();
    (kdir.join("vmlinuz"), dir, db)
}

/// Pack `initrd` (mkinitramfs.sh): dcg as `/bin/dcg`, `e2e/lib.sh` as `/dcg/lib.sh`, each
/// `(host, guest path)` of `files`, and `e2e/SCRIPT` as the guest script with a guest-side
/// limit of `timeout` seconds.
pub fn initramfs(initrd: &Path, files: &[(&Path, &str)], script: &str, timeout: u32) {
    initramfs_with_modules(initrd, files, &[], script, timeout)
}

/// [`initramfs`] with kernel modules the guest loads (`insmod`) before its script.
pub fn initramfs_with_modules(
    initrd: &Path,
    files: &[(&Path, &str)],
    modules: &[&Path],
    script: &str,
    timeout: u32,
) {
    let qemu = qemu_dir();
    let mut cmd = Command::new("bash");
    cmd.arg(qemu.join("mkinitramfs.sh")).arg(initrd);
    let lib = qemu.join("e2e").join("lib.sh");
    let dcg = crate::dcg_bin();
    let all = [(dcg.as_path(), "/bin/dcg"), (lib.as_path(), "/dcg/lib.sh")];
    for (host, guest) in all.iter().chain(files) {
        cmd.arg("--add").arg(format!("{}:{guest}", host.display()));
    }
    for m in modules {
        cmd.arg("--module").arg(m);
    }
    let st = cmd
        .arg("--init")
        .arg(qemu.join("e2e").join(script))
        .arg("--timeout")
        .arg(timeout.to_string())
        .status()
        .expect("running mkinitramfs.sh");
    assert!(st.success(), "mkinitramfs.sh failed");
}

/// Boot `kernel` with `initrd` (`--smp 2`, host limit `timeout` seconds, `dcg.printk=1`
/// and `append` on the command line), one qemu at a time per test process. The console
/// goes to `$TMPDIR/dcg-LOG.log`; panics with its tail unless the guest script exits 0.
/// With `DCG_GUEST_REPLAY=DIR` the console saved as `DIR/dcg-LOG.log` is read instead of
/// booting (to work on a test's checks against a run that failed, e.g. in CI).
pub fn boot(kernel: &Path, initrd: &Path, timeout: u32, append: &str, log: &str) -> String {
    if let Some(dir) = std::env::var_os("DCG_GUEST_REPLAY") {
        let saved = Path::new(&dir).join(format!("dcg-{log}.log"));
        return std::fs::read_to_string(&saved)
            .unwrap_or_else(|e| panic!("replaying {}: {e}", saved.display()));
    }
    static QEMU: Mutex<()> = Mutex::new(());
    let _one = QEMU.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new("bash")
        .arg(qemu_dir().join("run-guest.sh"))
        .arg("--kernel")
        .arg(kernel)
        .arg("--initrd")
        .arg(initrd)
        .arg("--smp")
        .arg("2")
        .arg("--timeout")
        .arg(timeout.to_string())
        .arg("--append")
        .arg(format!("dcg.printk=1 {append}"))
        .output()
        .expect("running run-guest.sh");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let path = std::env::temp_dir().join(format!("dcg-{log}.log"));
    let _ = std::fs::write(&path, &text);
    assert!(
        out.status.success(),
        "guest {log} failed ({:?}); console in {}:\n{}",
        out.status.code(),
        path.display(),
        tail(&text, 60)
    );
    text
}

/// The last `n` lines of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(n)..].join("\n")
}

/// The text of section `name` (`=====BEGIN name=====` .. `=====END name=====`).
pub fn section<'a>(text: &'a str, name: &str) -> &'a str {
    let b = format!("=====BEGIN {name}=====");
    let e = format!("=====END {name}=====");
    let start = text
        .find(&b)
        .unwrap_or_else(|| panic!("no section {name}:\n{}", tail(text, 40)))
        + b.len();
    let end = text[start..].find(&e).map_or(text.len(), |i| start + i);
    &text[start..end]
}

/// Assert that section text `sec` (named `name`) contains each of `what`.
pub fn must(sec: &str, name: &str, what: &[&str]) {
    for w in what {
        assert!(sec.contains(w), "section {name} lacks {w:?}:\n{sec}");
    }
}

/// Issue 39's bar: every call below a call the interrupt entry code makes (the
/// handlers `__sysvec_*` and `__common_interrupt`, `irq_enter_rcu`, `irq_exit_rcu`,
/// softirq processing) says it ran in an interrupt context, inline frames included, and
/// the preemption check on the way out of an interrupt too; the rest of the trees say
/// task. `inlines`: the engine shows inline frames (and some ran in an interrupt).
pub fn interrupt_calls_have_their_context(
    calls: &[dcg_calls::saved_format::CallRecord],
    what: &str,
    inlines: bool,
) {
    use dcg_calls::saved_format::Context;
    use std::collections::HashMap;
    let entry = |f: &str| {
        f.starts_with("__sysvec_")
            || [
                "__common_interrupt",
                "irq_enter_rcu",
                "irq_exit_rcu",
                "handle_softirqs",
            ]
            .contains(&f)
    };
    let by_id: HashMap<u64, &dcg_calls::saved_format::CallRecord> =
        calls.iter().map(|c| (c.id, c)).collect();
    let in_interrupt = |c: &dcg_calls::saved_format::CallRecord| {
        let mut at = Some(c);
        while let Some(x) = at {
            if entry(&x.func) {
                return true;
            }
            at = x.parent.and_then(|p| by_id.get(&p).copied());
        }
        false
    };
    let (mut below, mut inline_below, mut task) = (0, 0, 0);
    for c in calls {
        if in_interrupt(c) {
            below += 1;
            inline_below += usize::from(c.inline.is_some());
            assert!(
                matches!(c.ctx, Some(Context::Irq | Context::Softirq | Context::Nmi)),
                "{what}: {} (id {}) runs below an interrupt entry but says {:?}",
                c.func,
                c.id,
                c.ctx
            );
        } else if c.ctx == Some(Context::Task) {
            task += 1;
        }
    }
    assert!(
        below >= 10 && task >= 10,
        "{what}: {below} interrupt calls, {task} task calls"
    );
    if inlines {
        assert!(
            inline_below >= 1,
            "{what}: no inline frame ran in an interrupt"
        );
    }
    // The preemption check right after an interrupt's calls is not the task's.
    for c in calls
        .iter()
        .filter(|c| c.func == "raw_irqentry_exit_cond_resched")
    {
        let before = calls
            .iter()
            .filter(|s| s.parent == c.parent && s.id < c.id && s.depth == c.depth)
            .max_by_key(|s| s.id);
        if before.is_some_and(|s| entry(&s.func)) {
            // (An interrupt during softirq processing returns to softirq context.)
            assert!(
                matches!(c.ctx, Some(Context::Irq | Context::Softirq)),
                "{what}: {c:?}"
            );
        }
    }
}

/// The saved-calls records of `func` in section `sec` of a guest's output: at least one.
fn calls_of(
    text: &str,
    sec: &str,
    func: &str,
    kernel: &str,
) -> Vec<dcg_calls::saved_format::CallRecord> {
    let calls: Vec<_> = crate::json_records(section(text, sec))
        .into_iter()
        .filter(|c| c.func == func)
        .collect();
    assert!(!calls.is_empty(), "{kernel}: no {func} in section {sec}");
    calls
}

/// The flags and mode `syscall-loop open` said it passed to openat (`open flags=577
/// mode=416 fd=3`), in a section's text.
fn opened_with(sec: &str, kernel: &str) -> (u64, u64) {
    let said = sec
        .lines()
        .find_map(|l| l.strip_prefix("open flags="))
        .unwrap_or_else(|| panic!("{kernel}: the program said nothing:\n{sec}"));
    let number = |s: &str| -> u64 { s.split(' ').next().unwrap().parse().unwrap() };
    (number(said), number(said.split_once("mode=").unwrap().1))
}

/// The flag the kernel adds to every open's flags on x86-64 (`force_o_largefile`).
const O_LARGEFILE: u64 = 0o100000;

/// `--deref` (section `sec`: the JSON of a session over `syscall-loop open`):
/// do_sys_openat2's `how` shows the struct open_how the program's openat made (the kernel
/// adds O_LARGEFILE to the flags) in place of the pointer.
pub fn open_how_is_what_the_program_passed(text: &str, sec: &str, kernel: &str) {
    let opened = section(text, sec);
    let (flags, mode) = opened_with(opened, kernel);
    let calls = crate::json_records(opened);
    let open = calls
        .iter()
        .find(|c| c.func == "do_sys_openat2" && c.depth == 0)
        .unwrap_or_else(|| panic!("{kernel}: {sec}: no do_sys_openat2:\n{opened}"));
    let how = open
        .args
        .iter()
        .find(|a| a.name == "how")
        .map(|a| a.value.as_str())
        .unwrap_or_else(|| panic!("{kernel}: {sec}: no how in {:?}", open.args));
    let want = format!("{{flags={}, mode={mode}, resolve=0}}", flags | O_LARGEFILE);
    assert!(
        how.starts_with("(struct open_how *)0xff") && how.ends_with(&want),
        "{kernel}: {sec}: how={how}, want (struct open_how *)0x…{want}"
    );
}

/// `--deref` in the BPF engine (bpf-debian.sh's "deref" sections): do_sys_openat2's
/// `how` shows the struct open_how the program's openat made (the kernel adds O_LARGEFILE
/// to the flags); every vfs_read below ksys_read shows its struct file with a read-only
/// open's `f_flags` (O_LARGEFILE) and, two levels deep, the structs its members point to;
/// the function_graph engine's session shows its open_how too. And the flag names of
/// `--args`: a `gfp_t`
/// parameter is named as the member `--fields` read from the same register (the
/// "fields" section's kmem_cache_alloc_noprof calls).
pub fn derefs_are_what_the_program_passed(text: &str, kernel: &str) {
    must(
        section(text, "deref"),
        "deref",
        &["rc=0", "read rc=0", "fgraph rc=0"],
    );
    open_how_is_what_the_program_passed(text, "deref-json", kernel);
    open_how_is_what_the_program_passed(text, "deref-fgraph", kernel);
    let reads = calls_of(text, "deref-read", "vfs_read", kernel);
    for r in &reads {
        let file = r
            .args
            .iter()
            .find(|a| a.name == "file")
            .map(|a| a.value.as_str());
        let file = file.unwrap_or_else(|| panic!("{kernel}: no file in {:?}", r.args));
        assert!(
            file.starts_with("(struct file *)0xff")
                && file.contains(&format!(", f_flags={O_LARGEFILE},"))
                // The second level: f_mapping's struct, in full; the pointers after it
                // left unfollowed by the 512-byte cap (`…`).
                && file.contains("f_mapping=(struct address_space *)0xff")
                && file.contains("…"),
            "{kernel}: file={file}"
        );
    }
    // A gfp_t parameter, named by the kernel's tables, as the field of the same name is.
    let allocs = calls_of(text, "fields-json", "kmem_cache_alloc_noprof", kernel);
    for c in &allocs {
        let gfp: Vec<&str> = c
            .args
            .iter()
            .filter(|a| a.name == "gfpflags")
            .map(|a| a.value.as_str())
            .collect();
        assert!(
            gfp.len() == 2 && gfp[0] == gfp[1] && gfp[0].starts_with("GFP_"),
            "{kernel}: the parameter and the field: {gfp:?}"
        );
    }
}

/// `--fields` with the function_graph engine (section `sec`: the JSON of a session over
/// `syscall-loop open`): do_sys_openat2's `how->flags` and `how->mode`, read by a probe
/// event at its entry, are what the program passed to openat (the kernel adds
/// O_LARGEFILE), shown after the parameters.
pub fn fgraph_fields_are_what_the_program_passed(text: &str, sec: &str, kernel: &str) {
    let opened = section(text, sec);
    let (flags, mode) = opened_with(opened, kernel);
    let open = calls_of(text, sec, "do_sys_openat2", kernel)
        .into_iter()
        .find(|c| c.depth == 0)
        .unwrap_or_else(|| panic!("{kernel}: no top-level do_sys_openat2 in {sec}"));
    let args: Vec<(&str, &str)> = open
        .args
        .iter()
        .map(|a| (a.name.as_str(), a.value.as_str()))
        .collect();
    let (flags, mode) = ((flags | O_LARGEFILE).to_string(), mode.to_string());
    assert_eq!(
        args[args.len() - 2..],
        [("how->flags", flags.as_str()), ("how->mode", mode.as_str())],
        "{kernel}: {sec}: {args:?}"
    );
}

/// do_pipe2's `*fildes` at its return (section `sec`: the JSON of a session over
/// `syscall-loop pipe`) is the read end the program printed (`pipe fds=3,4`).
pub fn pipe_output_is_the_read_end(text: &str, sec: &str, kernel: &str) {
    let said = section(text, sec);
    let fds = said
        .lines()
        .find_map(|l| l.strip_prefix("pipe fds="))
        .unwrap_or_else(|| panic!("{kernel}: {sec}: the program said nothing:\n{said}"));
    let read_end = fds.split(',').next().unwrap();
    let pipe = calls_of(text, sec, "do_pipe2", kernel);
    assert_eq!(pipe.len(), 1, "{kernel}: {sec}");
    let out: Vec<(&str, &str)> = pipe[0]
        .out
        .iter()
        .map(|o| (o.name.as_str(), o.value.as_str()))
        .collect();
    assert_eq!(
        out,
        [("fildes", read_end)],
        "{kernel}: {sec}: {:?}",
        pipe[0]
    );
}

/// Output parameters (bpf-debian.sh's "outputs" sections, and the "deref-read" one):
/// do_pipe2's `*fildes` at its return is the read end the program printed (`pipe
/// fds=3,4`), in the BPF engine and the function_graph engine; in the BPF engine, each vfs_read below ksys_read that read something has its
/// `*pos` moved by what it returned (ksys_read passes the file's position; a first read
/// starts at 0 when its struct file shows `f_pos=0`).
pub fn outputs_are_what_the_kernel_wrote(text: &str, kernel: &str) {
    must(
        section(text, "outputs"),
        "outputs",
        &["rc=0", "fgraph rc=0"],
    );
    pipe_output_is_the_read_end(text, "outputs-json", kernel);
    pipe_output_is_the_read_end(text, "outputs-fgraph", kernel);
    let mut moved = 0;
    for r in calls_of(text, "deref-read", "vfs_read", kernel) {
        let Some(ret) = r.ret.as_deref().and_then(|v| v.parse::<i64>().ok()) else {
            continue;
        };
        // A stream (a pipe) has no position: NULL, no output.
        if r.args.iter().any(|a| a.name == "pos" && a.value == "NULL") {
            assert!(r.out.is_empty(), "{kernel}: {r:?}");
            continue;
        }
        let pos = r.out.iter().find(|o| o.name == "pos");
        let pos = pos.unwrap_or_else(|| panic!("{kernel}: no *pos in {r:?}"));
        let pos: i64 = pos
            .value
            .parse()
            .unwrap_or_else(|_| panic!("{kernel}: {r:?}"));
        let file = &r.args.iter().find(|a| a.name == "file").unwrap().value;
        if ret > 0 && file.contains(", f_pos=0,") {
            assert_eq!(pos, ret, "{kernel}: a first read's *pos: {r:?}");
            moved += 1;
        }
        assert!(pos >= ret, "{kernel}: {r:?}");
    }
    assert!(moved > 0, "{kernel}: no first read with its f_pos shown");
}

/// `--fields` in the BPF engine (bpf-debian.sh's "fields" sections): do_sys_openat2's
/// `how->flags` and `how->mode` are what the program passed to openat (the kernel adds
/// O_LARGEFILE to the flags), its file name the one it passed; every vfs_read below
/// ksys_read has its `file->f_flags`, a read-only open's (O_LARGEFILE); the `gfp_t`
/// `gfpflags` of kmem_cache_alloc_noprof, as a field, is named as the kernel's
/// kmem_cache_alloc event named the same process's allocations; a refused path and the
/// function_graph engine fail with one line each. `--filter 'how->flags & 0x40'` over two
/// opens of one file, with O_CREAT and without: only the first's tree is shown, with the
/// member as an argument; the saved calls keep both.
pub fn fields_are_what_the_program_passed(text: &str, kernel: &str) {
    let f = section(text, "fields");
    must(
        f,
        "fields",
        &[
            "rc=0",
            "read rc=0",
            "dcg: --fields: how->nope: struct open_how has no member nope (it has: flags, \
             mode, resolve)",
            "refused rc=1",
            "fgraph rc=0",
            "filter rc=0",
        ],
    );
    member_filter_keeps_the_creating_open(text, kernel);
    fgraph_fields_are_what_the_program_passed(text, "fields-fgraph", kernel);
    let opened = section(text, "fields-json");
    let (flags, mode) = opened_with(opened, kernel);
    let calls = crate::json_records(opened);
    let open = calls
        .iter()
        .find(|c| c.func == "do_sys_openat2" && c.depth == 0)
        .unwrap_or_else(|| panic!("{kernel}: no do_sys_openat2:\n{opened}"));
    let arg = |name: &str| {
        open.args
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.value.clone())
            .unwrap_or_else(|| panic!("{kernel}: no {name} in {:?}", open.args))
    };
    assert_eq!(arg("filename"), "\"/tmp/dcg-fields\"", "{kernel}");
    assert_eq!(
        arg("how->flags"),
        (flags | O_LARGEFILE).to_string(),
        "{kernel}"
    );
    assert_eq!(arg("how->mode"), mode.to_string(), "{kernel}");
    // The field comes after the parameter of the same name.
    let named: std::collections::BTreeSet<String> = calls
        .iter()
        .filter(|c| c.func == "kmem_cache_alloc_noprof")
        .filter_map(|c| c.args.iter().rev().find(|a| a.name == "gfpflags"))
        .map(|a| a.value.clone())
        .collect();
    let by_kernel: std::collections::BTreeSet<String> = f
        .lines()
        .filter_map(|l| l.strip_prefix("kernel gfp_flags="))
        .map(str::to_string)
        .collect();
    assert!(
        !named.is_empty() && named.iter().all(|n| n.starts_with("GFP_")),
        "{kernel}: {named:?}"
    );
    assert!(
        named.is_subset(&by_kernel),
        "{kernel}: dcg {named:?}, the kernel's event {by_kernel:?}"
    );
    let reads = calls_of(text, "fields-read", "vfs_read", kernel);
    for r in &reads {
        let v = r.args.iter().find(|a| a.name == "file->f_flags");
        assert_eq!(
            v.map(|a| a.value.as_str()),
            Some(O_LARGEFILE.to_string().as_str()),
            "{kernel}: {:?}",
            r.args
        );
    }
}

/// The `fields-filter` sessions of [`fields_are_what_the_program_passed`]: of
/// `syscall-loop open /tmp/dcg-ff 0x241 0640` then `... 0 0`, the tree of the first open
/// alone is shown (its `how->flags` has O_CREAT: 0x241 with O_LARGEFILE), and both opens
/// are among the saved calls' top-level calls.
fn member_filter_keeps_the_creating_open(text: &str, kernel: &str) {
    const CREATED: &str = "33345"; // 0x241 | O_LARGEFILE
    const OPENED: &str = "32768"; // 0 | O_LARGEFILE
    let shown = section(text, "fields-filter-json");
    for said in ["open flags=577 mode=416 fd=", "open flags=0 mode=0 fd="] {
        assert!(
            shown.contains(said),
            "{kernel}: the program did not say {said}:\n{shown}"
        );
    }
    let arg = |c: &dcg_calls::saved_format::CallRecord, name: &str| {
        c.args
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.value.clone())
            .unwrap_or_else(|| panic!("{kernel}: no {name} in {:?}", c.args))
    };
    let tops: Vec<(String, String)> = crate::json_records(shown)
        .iter()
        .filter(|c| c.func == "do_sys_openat2" && c.depth == 0)
        .map(|c| (arg(c, "filename"), arg(c, "how->flags")))
        .collect();
    assert_eq!(
        tops,
        [("\"/tmp/dcg-ff\"".to_string(), CREATED.to_string())],
        "{kernel}: the trees shown"
    );
    let mut saved: Vec<String> = crate::json_records(section(text, "fields-filter-saved"))
        .iter()
        .filter(|c| c.func == "do_sys_openat2" && arg(c, "filename") == "\"/tmp/dcg-ff\"")
        .map(|c| arg(c, "how->flags"))
        .collect();
    saved.sort();
    assert_eq!(saved, [OPENED, CREATED], "{kernel}: the saved calls");
}

/// The `reads` sessions of bpf-debian.sh (`--args` over `syscall-loop 20`, then over an
/// unmapped path): the program's reads cost the task no calls. Before, every tree said it
/// lost calls: link_path_walk's `ERR_PTR(-ENOENT)` read as a string, and the unmapped
/// path's reads, ran the kernel's fault path inside the program (about ten traced
/// functions a read, each a run the kernel skipped, counted as the task's). Interrupts
/// still mark a few trees: fewer than half of them here.
pub fn reads_lose_no_calls(text: &str, kernel: &str) {
    must(section(text, "reads"), "reads", &["rc=0", "unmapped rc=0"]);
    for (sec, ret) in [("reads-json", "-ENOENT"), ("reads-unmapped", "-EFAULT")] {
        let roots: Vec<_> = calls_of(text, sec, "do_faccessat", kernel)
            .into_iter()
            .filter(|c| c.depth == 0)
            .collect();
        assert_eq!(roots.len(), 20, "{kernel} {sec}: {} trees", roots.len());
        let marked = roots.iter().filter(|c| c.lost.is_some()).count();
        assert!(
            marked * 2 < roots.len(),
            "{kernel} {sec}: {marked} of {} trees say they lost calls",
            roots.len()
        );
        assert!(
            roots.iter().all(|c| c.ret.as_deref() == Some(ret)),
            "{kernel} {sec}: {:?}",
            roots.iter().map(|c| &c.ret).collect::<Vec<_>>()
        );
    }
    // The error value is shown as one, unread (7.2 passes it to link_path_walk; 6.12's
    // clone of it, `link_path_walk.part.0.constprop.0`, gets the path only); the
    // unmapped path as its address.
    let walks: Vec<_> = crate::json_records(section(text, "reads-json"))
        .into_iter()
        .filter(|c| c.func.starts_with("link_path_walk"))
        .collect();
    let name = |c: &dcg_calls::saved_format::CallRecord| {
        c.args
            .iter()
            .find(|a| a.name == "name")
            .map(|a| a.value.clone())
            .unwrap_or_default()
    };
    let names: Vec<String> = walks.iter().map(name).collect();
    assert!(
        names.iter().any(|n| n == "\"/dcg-load-nonexistent\"")
            && (kernel != "7.2-cloud" || names.iter().any(|n| n == "ERR_PTR(-ENOENT)")),
        "{kernel}: {names:?}"
    );
    for c in calls_of(text, "reads-unmapped", "do_faccessat", kernel) {
        let f = c.args.iter().find(|a| a.name == "filename");
        assert!(
            f.is_some_and(|a| a.value.starts_with("0x7f")),
            "{kernel}: {:?}",
            c.args
        );
    }
}
