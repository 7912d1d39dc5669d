//! User and kernel functions in one session (issue 42), in qemu (`e2e/joint.sh`): a
//! dynamically linked program, glibc and the recorder copied into the guest, its own
//! functions traced in process (and with uprobes) and `do_sys_openat2`/`ksys_read` with
//! the BPF engine (and function_graph where the kernel reads the values itself). Every
//! kernel call sits under the user call of the right thread that made it, the failed
//! open's -1 carries `errno=ENOENT` with its kernel origin, the system calls equal a
//! kernel-only session's of the same program, nothing is left attached or preloaded, and
//! the kernel logs no warning. On Debian 7.2 and the test kernel.

use std::collections::HashMap;
use std::path::Path;

use dcg_calls::saved_format::{CallRecord, Space};
use dcg_tests::guest::{self, enabled, initramfs, must, section};

/// Boot `kernel` with `db` and the joint session's guest script; its console.
fn run(kernel: &Path, db: &Path, log: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let prog = dcg_tests::gcc(
        dir.path(),
        "qemu/progs/joint.c",
        "joint",
        &["-O2", "-pthread"],
    );
    let recorder = dcg_tests::dcg_bin().with_file_name("libdcg_recorder.so");
    let bpftool = dcg_tests::which("bpftool");
    let initrd = dir.path().join("guest.cpio.gz");
    initramfs(
        &initrd,
        &[
            (db, "/dcg/k.sigdb"),
            (&prog, "/dcg/joint"),
            (&recorder, "/dcg/libdcg_recorder.so"),
            (&bpftool, "/bin/bpftool"),
        ],
        "joint.sh",
        900,
    );
    guest::boot(kernel, &initrd, 960, "", log)
}

/// What the program printed: its main thread's and its worker's ids, and the bytes each
/// `read_all` read.
struct Printed {
    main_tid: u32,
    worker_tid: u32,
    bytes: i64,
}

fn printed(sec: &str) -> Printed {
    let field = |line: &str, key: &str| -> i64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.split(',').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
    };
    let line = |prefix: &str| {
        sec.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{sec}"))
    };
    let (m, w) = (line("main tid="), line("worker tid="));
    assert!(
        m.contains("load_config=0,-1 errno=ENOENT"),
        "the program's opens: {m}"
    );
    let bytes = field(line("main read_all="), "read_all=");
    assert_eq!(field(w, "read_all="), bytes, "{sec}");
    Printed {
        main_tid: field(m, "tid=") as u32,
        worker_tid: field(w, "tid=") as u32,
        bytes,
    }
}

fn arg<'c>(c: &'c CallRecord, name: &str) -> &'c str {
    c.args
        .iter()
        .find(|a| a.name == name)
        .map_or("", |a| a.value.as_str())
}

/// The program's own system calls: the opens of its files and the reads of its 256-byte
/// buffer, as (function, file or count, return value), in order. `strings`: the engine
/// read the file names (function_graph shows the pointer: every open counts).
fn own_syscalls<'c>(
    calls: impl Iterator<Item = &'c CallRecord>,
    strings: bool,
) -> Vec<(String, String, String)> {
    calls
        .filter(|c| {
            (c.func == "do_sys_openat2"
                && (!strings
                    || ["\"/dcg/lib.sh\"", "\"/dcg/missing.conf\""].contains(&arg(c, "filename"))))
                || (c.func == "ksys_read" && arg(c, "count") == "256")
        })
        .map(|c| {
            let what = match c.func.as_str() {
                "ksys_read" => arg(c, "count"),
                _ => arg(c, "filename"),
            };
            (
                c.func.clone(),
                what.to_string(),
                c.ret.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The program's own system calls, as (function, file or count, value).
type Syscalls = Vec<(String, String, String)>;

/// A joint session's saved calls (section `sec` of the console): the user calls, the
/// kernel calls of the right thread under them, inside them in time (`slack_ns`: what the
/// user side's timestamps may be off, uprobes' text giving microseconds and the
/// recorder's TSC stamps converted through clock samples each known within 25 µs), the failed
/// open's errno and origin, the reads adding up (`strings`: the opens' file names were
/// read). What the program printed, and its own system calls below its functions.
fn check_joint(
    text: &str,
    sec: &str,
    name: &str,
    slack_ns: u64,
    strings: bool,
) -> (Printed, Syscalls) {
    let joint = section(text, sec);
    must(joint, sec, &["rc=0"]);
    let p = printed(joint);
    let calls = dcg_tests::json_records(joint);
    let by_id: HashMap<u64, &CallRecord> = calls.iter().map(|c| (c.id, c)).collect();
    let user: Vec<&CallRecord> = calls
        .iter()
        .filter(|c| c.space == Some(Space::User))
        .collect();
    let names: Vec<&str> = user.iter().map(|c| c.func.as_str()).collect();
    assert_eq!(
        names,
        [
            "load_config",
            "load_config",
            "read_all",
            "worker",
            "read_all"
        ],
        "{name}: the user calls"
    );
    assert!(
        calls.iter().all(|c| c.space.is_some()),
        "{name}: every call says its side"
    );
    // Each kernel call below a user call ran in that call's thread, and its whole tree is
    // kernel calls.
    for c in calls.iter().filter(|c| c.space == Some(Space::Kernel)) {
        let Some(parent) = c.parent.and_then(|p| by_id.get(&p)) else {
            continue;
        };
        assert_eq!(c.pid, parent.pid, "{name}: {c:?} under {parent:?}");
        // One clock: the kernel call lies within the user call around it.
        if parent.space == Some(Space::User) {
            let (Some(t), Some(d), Some(pt), Some(pd)) =
                (c.time_ns, c.duration_ns, parent.time_ns, parent.duration_ns)
            else {
                panic!("{name}: times of {c:?} under {parent:?}");
            };
            assert!(
                pt <= t + slack_ns && t + d <= pt + pd + slack_ns,
                "{name}: {c:?} outside {parent:?}"
            );
        }
    }
    let children = |u: &CallRecord| -> Vec<&CallRecord> {
        calls.iter().filter(|c| c.parent == Some(u.id)).collect()
    };
    // load_config: one open each, the first succeeds, the second fails.
    let (ok, missing) = (user[0], user[1]);
    for (u, file) in [(ok, "\"/dcg/lib.sh\""), (missing, "\"/dcg/missing.conf\"")] {
        let k = children(u);
        assert_eq!(k.len(), 1, "{name}: below {u:?}: {k:?}");
        let named = if strings {
            arg(k[0], "filename") == file
        } else {
            arg(k[0], "filename").starts_with("0x7ff")
        };
        assert!(named, "{name}: {file}: {:?}", k[0]);
        assert_eq!(
            (k[0].func.as_str(), k[0].space),
            ("do_sys_openat2", Some(Space::Kernel)),
            "{name}"
        );
        assert_eq!(u.pid, Some(p.main_tid), "{name}");
    }
    assert_eq!(ok.ret.as_deref(), Some("0"), "{name}");
    assert_eq!(missing.ret.as_deref(), Some("-1"), "{name}");
    assert_eq!(
        children(missing)[0].ret.as_deref(),
        Some("-ENOENT"),
        "{name}"
    );
    // The -1's errno is the kernel's -ENOENT, from the call below the open where it
    // first appeared.
    let origin = missing
        .origin
        .and_then(|o| by_id.get(&o))
        .unwrap_or_else(|| panic!("{name}: no origin on {missing:?}"));
    assert_eq!(origin.space, Some(Space::Kernel), "{name}");
    assert_eq!(
        origin.ret.as_deref().map(|r| r.contains("-ENOENT")),
        Some(true)
    );
    assert!(missing.error, "{name}");
    // read_all, in each thread: an open and reads whose bytes add up to what it said.
    for (u, tid) in [(user[2], p.main_tid), (user[4], p.worker_tid)] {
        assert_eq!(u.pid, Some(tid), "{name}: {u:?}");
        let k = children(u);
        assert_eq!(k[0].func, "do_sys_openat2", "{name}");
        let read: i64 = k
            .iter()
            .filter(|c| c.func == "ksys_read")
            .map(|c| c.ret.as_deref().unwrap_or("").parse::<i64>().unwrap())
            .sum();
        assert_eq!(read, p.bytes, "{name}: the reads below {u:?}");
        assert!(k.iter().all(|c| c.pid == Some(tid)), "{name}");
    }
    assert_eq!(
        user[4].parent,
        Some(user[3].id),
        "{name}: read_all under worker"
    );
    let under_user = calls.iter().filter(|c| {
        c.space == Some(Space::Kernel)
            && c.parent
                .and_then(|p| by_id.get(&p))
                .is_some_and(|u| u.space == Some(Space::User))
    });
    let own = own_syscalls(under_user, strings);
    (p, own)
}

/// The system calls without the files opened (what function_graph shows as pointers).
fn without_files(calls: &Syscalls) -> Syscalls {
    calls
        .iter()
        .map(|(f, what, ret)| {
            let what = if f == "ksys_read" {
                what.clone()
            } else {
                String::new()
            };
            (f.clone(), what, ret.clone())
        })
        .collect()
}

/// `fgraph`: the kernel reads its values itself (binary records), so the kernel side
/// with function_graph joins too; else that session is refused in one line and the user
/// side traced alone.
fn check(text: &str, name: &str, fgraph: bool) {
    // In process: the recorder's stamps, TSC ticks where the kernel's clock is the TSC.
    let tsc = 25_000;
    let (p, j) = check_joint(text, "joint-json", name, tsc, true);
    let (_, ju) = check_joint(
        text,
        "joint-uprobe",
        &format!("{name}, uprobes"),
        1_000,
        true,
    );
    // A running process (-p): uprobes and the BPF engine attached to it.
    let (_, jp) = check_joint(text, "joint-pid", &format!("{name}, -p"), 1_000, true);
    let f = section(text, "joint-fgraph");
    must(f, "joint-fgraph", &["rc=0", "instances left: 0"]);
    let jf = if fgraph {
        let (_, jf) = check_joint(text, "joint-fgraph", &format!("{name}, fgraph"), tsc, false);
        Some(jf)
    } else {
        must(
            f,
            "joint-fgraph",
            &[
                "dcg: no kernel calls in this session: the function_graph engine joins \
                 kernel calls to user calls by the times of its binary records, and the \
                 values asked for need probe events here",
                "use --engine bpf for the kernel side; the user functions are traced alone",
            ],
        );
        let calls = dcg_tests::json_records(f);
        assert_eq!(calls.len(), 5, "{name}: {f}");
        assert!(
            calls.iter().all(|c| c.space != Some(Space::Kernel)),
            "{name}: {f}"
        );
        None
    };

    // The text: the boundary marked, the failed call's errno and origin said.
    let t = section(text, "joint-text");
    must(
        t,
        "joint-text",
        &[
            "rc=0",
            "do_sys_openat2(dfd=-100, filename=\"/dcg/missing.conf\"",
            "} /* load_config ret=-1 errno=ENOENT from ",
        ],
    );
    assert!(
        t.lines()
            .filter(|l| l.contains("filename=\"/dcg/missing.conf\""))
            .all(|l| l.ends_with("{ /* kernel */")),
        "{name}:\n{t}"
    );

    // Nothing lost in the join: the program's own system calls, as a kernel-only
    // session of the same program saw them (same calls, same values, same order).
    let k = section(text, "kernel-only");
    must(k, "kernel-only", &["rc=0"]);
    let alone = dcg_tests::json_records(k);
    let top_alone = alone.iter().filter(|c| c.parent.is_none());
    let a = own_syscalls(top_alone, true);
    assert_eq!(
        a.len(),
        4 + 2 * (p.bytes as usize).div_ceil(256) + 2,
        "{name}: {a:?}"
    );
    assert_eq!(
        j, a,
        "{name}: the joint tree's system calls against the kernel-only session's"
    );
    assert_eq!(
        ju, a,
        "{name}: with uprobes, the joint tree's system calls against the kernel-only session's"
    );
    assert_eq!(
        jp, a,
        "{name}: with -p, the joint tree's system calls against the kernel-only session's"
    );
    if let Some(jf) = jf {
        assert_eq!(
            without_files(&jf),
            without_files(&a),
            "{name}: with function_graph, the joint tree's system calls against the \
             kernel-only session's"
        );
    }

    // --kernel --kernel-depth 1: each system call a frame under the user call, alone.
    let kf = section(text, "kernel-flag");
    must(kf, "kernel-flag", &["rc=0"]);
    let calls = dcg_tests::json_records(kf);
    let loads: Vec<&CallRecord> = calls.iter().filter(|c| c.func == "load_config").collect();
    assert_eq!(loads.len(), 2, "{name}: {kf}");
    let opened: &[(&str, Option<&str>)] = &[
        ("__x64_sys_openat", Some("3")),
        ("__x64_sys_close", Some("0")),
    ];
    let failed: &[(&str, Option<&str>)] = &[("__x64_sys_openat", Some("-ENOENT"))];
    for (u, want) in [(loads[0], opened), (loads[1], failed)] {
        let k: Vec<&CallRecord> = calls.iter().filter(|c| c.parent == Some(u.id)).collect();
        let k: Vec<(&str, Option<&str>)> = k
            .iter()
            .map(|c| (c.func.as_str(), c.ret.as_deref()))
            .collect();
        assert_eq!(k, want, "{name}: below {u:?}");
    }
    assert_eq!(
        loads[1].origin,
        calls
            .iter()
            .find(|c| c.parent == Some(loads[1].id))
            .map(|c| c.id),
        "{name}"
    );
    let ids: Vec<u64> = calls.iter().map(|c| c.id).collect();
    for c in calls.iter().filter(|c| c.space == Some(Space::Kernel)) {
        let parent = c.parent.and_then(|p| calls.iter().find(|u| u.id == p));
        assert!(
            parent.is_none_or(|u| u.space == Some(Space::User)),
            "{name}: deeper than one level: {c:?} ({ids:?})"
        );
        assert!(c.func.starts_with("__x64_sys_"), "{name}: {c:?}");
    }

    // Killed with SIGKILL, then run again: the second session removes what the first
    // left and leaves nothing.
    let killed = section(text, "joint-killed");
    must(
        killed,
        "joint-killed",
        &["rc=0", "instances left: 0", "recorder files left: 0"],
    );
    let kernel_calls: usize = killed
        .lines()
        .find_map(|l| l.strip_prefix("kernel calls: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(kernel_calls > 40, "{name}: {killed}");
    if fgraph {
        must(
            killed,
            "joint-killed",
            &["kernel engine: fgraph", "dcg: removed stale instance dcg-"],
        );
        let after: usize = killed
            .lines()
            .find_map(|l| l.strip_prefix("instances after the kill: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        assert!(after >= 1, "{name}: function_graph's instance: {killed}");
    }
    assert!(
        killed.contains("dcg: removed stale ") && killed.contains("dcg-inproc-"),
        "{name}: the recorder's files of the killed session: {killed}"
    );

    let left = section(text, "left");
    must(
        left,
        "left",
        &["dcg programs: 0", "links: 0", "recorder files: 0"],
    );
    must(section(text, "after"), "after", &["kernel warnings: 0"]);
}

#[test]
fn debian72_joint_tree() {
    if !enabled() {
        return;
    }
    let (kernel, _dir, db) = guest::debian_with_db("7.2-cloud");
    check(&run(&kernel, &db, "joint-7.2"), "Debian 7.2", false);
}

#[test]
fn testkernel_joint_tree() {
    if !enabled() {
        return;
    }
    let kernel = dcg_tests::testkernel_dir().join("vmlinuz");
    let db = dcg_tests::testkernel_db();
    check(
        &run(&kernel, &db, "joint-testkernel"),
        "the test kernel",
        true,
    );
}
