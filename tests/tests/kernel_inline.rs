//! Issue 16 in qemu: inlined functions as trace targets and as frames in every tree, on
//! the Debian kernels with the BPF engine and a db with inline instances
//! (`tests/qemu/e2e/inline.sh`, `tests/qemu/progs/inline-calls.c`). Runs only with
//! `DCG_KERNEL_TESTS=1`.

use std::collections::BTreeSet;

use dcg_dbset::DbSet;

use dcg_calls::saved_format::CallRecord;
use dcg_tests::guest::{self, enabled, must, section};

fn arg<'a>(c: &'a CallRecord, name: &str) -> Option<&'a str> {
    c.args
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.value.as_str())
}

fn inline_on(kernel_name: &str, getname_is_header_helper: bool) {
    if !enabled() {
        return;
    }
    let opts = dwarfscan::Options {
        inline_instances: dwarfscan::InlineInstances::Traceable,
        ..dwarfscan::Options::default()
    };
    let (kernel, dir, db) = guest::debian_with_db_opts(kernel_name, &opts);
    let initrd = dir.path().join("guest.cpio.gz");
    let prog = dcg_tests::guest_prog("inline-calls");
    guest::initramfs(
        &initrd,
        &[(&db, "/dcg/k.sigdb"), (&prog, "/dcg/inline-calls")],
        "inline.sh",
        900,
    );
    let text = guest::boot(&kernel, &initrd, 960, "", &format!("inline-{kernel_name}"));

    // pidfd_create, inlined into the pidfd_open syscalls: one frame, in the call that
    // succeeds, with pidfd_prepare (and fd_install) under it and nothing else.
    let tree = section(&text, "pidfd");
    must(
        tree,
        "pidfd",
        &[
            "rc=0",
            "pidfd_create inlined: tracing the functions holding them",
            "/* inlined in __x64_sys_pidfd_open */ {",
            "pidfd_prepare(",
            "ret=-ESRCH */",
            "ret=-EINVAL */",
        ],
    );
    let sec = section(&text, "pidfd-json");
    must(sec, "pidfd-json", &["rc=0"]);
    let calls = dcg_tests::json_records(sec);
    let frames: Vec<&CallRecord> = calls.iter().filter(|c| c.func == "pidfd_create").collect();
    assert_eq!(frames.len(), 1, "pidfd_create frames: {frames:?}");
    let f = frames[0];
    let site = f.inline.as_ref().expect("pidfd_create is an inline frame");
    assert_eq!(site.container, "__x64_sys_pidfd_open");
    assert!(site.file.ends_with("kernel/pid.c"), "{site:?}");
    assert_eq!((f.ret.as_deref(), f.ret_raw.as_deref()), (None, None));
    // Its arguments at its first instruction: pid from its register; flags is
    // optimized out there on both Debian kernels (no DW_AT_location), shown as `?`.
    assert!(
        arg(f, "pid").is_some_and(|v| v.starts_with("0xff")),
        "pid: {:?}",
        f.args
    );
    assert!(
        matches!(arg(f, "flags"), Some("0" | "?")),
        "flags: {:?}",
        f.args
    );
    // An interrupt arriving while the copy runs nests under it, as under any call; the
    // calls it made say so (the preemption check on its way out included). The task may
    // also be switched out inside the copy (preempted when the probe's exception
    // returns): the calls of that switch sit right under the frame; they are the
    // switch's, not the copy's.
    let switch = dcg_tests::context_switch_calls(&calls);
    let children: BTreeSet<&str> = calls
        .iter()
        .filter(|c| c.parent == Some(f.id) && c.ctx == Some(dcg_calls::saved_format::Context::Task))
        .filter(|c| !switch.contains(&c.id))
        .map(|c| c.func.as_str())
        .collect();
    assert!(children.contains("pidfd_prepare"), "children {children:?}");
    assert!(
        children
            .iter()
            .all(|c| ["pidfd_prepare", "fd_install"].contains(c)),
        "pidfd_create claims {children:?}"
    );
    // The containers: the call that works returns the new fd, the others their errors;
    // the frame is in the first.
    let roots: Vec<&CallRecord> = calls.iter().filter(|c| c.parent.is_none()).collect();
    let rets: Vec<Option<&str>> = roots
        .iter()
        .filter(|c| c.func == "__x64_sys_pidfd_open")
        .map(|c| c.ret.as_deref())
        .collect();
    assert_eq!(rets.len(), 3, "roots {roots:?}");
    assert!(
        rets[0].is_some_and(|r| r.parse::<u32>().is_ok()),
        "{rets:?}"
    );
    assert_eq!(&rets[1..], &[Some("-ESRCH"), Some("-EINVAL")]);
    let mut up = f.parent;
    let mut top = f.id;
    while let Some(p) = up {
        let c = calls.iter().find(|c| c.id == p).expect("parent recorded");
        top = c.id;
        up = c.parent;
    }
    assert_eq!(
        calls.iter().find(|c| c.id == top).map(|c| c.ret.as_deref()),
        Some(rets[0])
    );

    // `dcg report` counts the inline frame as a call, with its edges.
    let file = dir.path().join("pidfd.json");
    let lines: Vec<&str> = sec.lines().filter(|l| l.starts_with("{\"id\"")).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let out = std::process::Command::new(dcg_tests::dcg_bin())
        .args(["report", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls_of = |f: &str| {
        report["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == f)
            .map(|x| x["calls"].clone())
    };
    assert_eq!(calls_of("pidfd_create"), Some(serde_json::json!(1)));
    let edge = |from: &str, to: &str| {
        report["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["caller"] == from && e["callee"] == to)
    };
    assert!(edge("pidfd_create", "pidfd_prepare"), "{}", report["edges"]);

    // A glob over both kinds: pidfd_create's frame, and the out-of-line pidfd_prepare.
    let sec = section(&text, "glob");
    must(sec, "glob", &["rc=0", "pidfd_create"]);
    let calls = dcg_tests::json_records(sec);
    assert!(
        calls
            .iter()
            .any(|c| c.func == "pidfd_create" && c.inline.is_some()),
        "glob: no pidfd_create frame"
    );
    assert!(
        calls
            .iter()
            .any(|c| c.func == "pidfd_prepare" && c.inline.is_none()),
        "glob: no pidfd_prepare call"
    );

    // getname, inlined into many path syscalls (6.12 also has an out-of-line copy): a
    // frame in each one the program makes, with its argument and the calls under it.
    // On 7.2 it became a header helper (`static inline` in include/linux/fs.h), whose
    // copies the default db leaves out: --func says so, and how to record them.
    let sec = section(&text, "getname-json");
    let kdb = sigdb::Db::open(&db).unwrap();
    if getname_is_header_helper {
        assert!(
            kdb.by_name("getname")
                .all(|f| f.inlined_copies().next().is_none()),
            "getname's copies recorded"
        );
        must(
            sec,
            "getname-json",
            &[
                "rc=2",
                "getname is not traceable: it is inlined into",
                "the db holds none of its inlined copies",
                "--all-inline-instances",
            ],
        );
    } else {
        getname_frames(kernel_name, sec, &kdb);
    }

    // Inline frames in a tree whose target is out of line, and the option that turns
    // them off.
    let frames = section(&text, "frames");
    must(
        frames,
        "frames",
        &[
            "rc=0",
            "__x64_sys_chdir() {",
            "/* inlined in __x64_sys_chdir */",
        ],
    );
    let plain = section(&text, "no-frames");
    must(plain, "no-frames", &["rc=0", "__x64_sys_chdir() {"]);
    assert!(
        !plain.contains("inlined in"),
        "--no-inline-frames:\n{plain}"
    );
    // Interrupts inside traced reads: every call below an interrupt entry says so, the
    // inline frames of the interrupts' inlined code (7.2's timer path) included.
    let irqs = section(&text, "irqs-calls");
    must(irqs, "irqs-calls", &["rc=0"]);
    guest::interrupt_calls_have_their_context(
        &dcg_tests::json_records(irqs),
        &format!("inline-{kernel_name} irqs"),
        kernel_name == "7.2-cloud",
    );
    must(section(&text, "dmesg"), "dmesg", &["warnings: 0"]);
}

/// getname traced as an inlined function: a frame in each container the program
/// reaches, its argument read where the copy's DWARF puts it, the calls under it.
fn getname_frames(kernel_name: &str, sec: &str, kdb: &sigdb::Db) {
    must(sec, "getname-json", &["rc=0", "getname inlined"]);
    let calls = dcg_tests::json_records(sec);
    let mut containers = BTreeSet::new();
    for g in calls.iter().filter(|c| c.func == "getname") {
        let Some(site) = g.inline.as_ref() else {
            continue;
        };
        // The command's own exec (dcg's child) runs one copy too; DWARF gives its
        // argument no location there on 7.2 (`name=?`).
        if site.container.contains("execve") {
            continue;
        }
        // Its argument (`name` on 7.2, `filename` on 6.12, a user-space pointer) is read
        // where the copy's DWARF location says, `?` where it has none.
        let readable = kdb
            .instances()
            .filter(|i| i.callee().is_some_and(|c| c.name() == "getname"))
            .filter(|i| i.caller().is_some_and(|c| c.symbol() == site.container))
            .any(|i| {
                i.locations().next().is_some_and(|l| {
                    matches!(
                        l,
                        sigdb::Location::Reg(_)
                            | sigdb::Location::Stack(_)
                            | sigdb::Location::Const(_)
                    )
                })
            });
        let value = g.args.first().map(|a| a.value.as_str());
        assert!(
            if readable {
                value.is_some_and(|v| v.starts_with("0x"))
            } else {
                value == Some("?")
            },
            "getname in {} (location readable: {readable}): {g:?}",
            site.container
        );
        assert!(
            calls.iter().any(|c| c.parent == Some(g.id)),
            "getname in {} without the calls under it",
            site.container
        );
        containers.insert(site.container.clone());
    }
    eprintln!("{kernel_name}: getname frames in {containers:?}");
    assert!(
        containers.len() >= 3,
        "getname copies found: {containers:?}"
    );
}

#[test]
fn debian72_inline_functions() {
    inline_on("7.2-cloud", true);
}

#[test]
fn debian612_inline_functions() {
    inline_on("6.12-cloud", false);
}

/// The inline frames of do_sys_openat2's own code: (inlined function, the function of
/// the frame's parent, the first call under it).
fn openat2_frames(calls: &[CallRecord]) -> BTreeSet<(String, String, String)> {
    let func = |id: Option<u64>| {
        id.and_then(|i| calls.iter().find(|c| c.id == i))
            .map_or(String::new(), |c| c.func.clone())
    };
    calls
        .iter()
        .filter(|c| {
            c.inline
                .as_ref()
                .is_some_and(|s| s.container == "do_sys_openat2")
        })
        .map(|c| {
            let first = calls
                .iter()
                .filter(|k| k.parent == Some(c.id))
                .min_by_key(|k| k.id)
                .map_or(String::new(), |k| k.func.clone());
            (c.func.clone(), func(c.parent), first)
        })
        .collect()
}

/// The test kernel: the live function_graph engine (binary records with return
/// addresses) and `dcg decode` of a raw function_graph capture with funcgraph-retaddr of
/// the same workload, in one boot, show the same inline frames in do_sys_openat2.
#[test]
fn testkernel_inline_frames_live_and_decoded() {
    if !enabled() {
        return;
    }
    let kdir = dcg_tests::testkernel_dir();
    // do_sys_openat2's own inlined code is header helpers (`class_filename` and
    // friends, from cleanup.h's class macros): only a db with every copy has them.
    let db = dcg_tests::testkernel_db_all_inline();
    let dir = tempfile::tempdir().unwrap();
    let initrd = dir.path().join("guest.cpio.gz");
    guest::initramfs(
        &initrd,
        &[(&db, "/dcg/k.sigdb")],
        "inline-testkernel.sh",
        900,
    );
    let text = guest::boot(&kdir.join("vmlinuz"), &initrd, 960, "", "inline-testkernel");
    let sec = section(&text, "live");
    must(sec, "live", &["rc=0"]);
    let live = openat2_frames(&dcg_tests::json_records(sec));

    let capture = section(&text, "capture");
    assert!(
        capture.contains("/* <-do_sys_openat2+"),
        "no retaddr:\n{capture}"
    );
    let set = DbSet::new(vec![sigdb::Db::open(&db).unwrap()]);
    let opts = dcg_calls::decode::Options {
        json: true,
        inline_frames: true,
        ..Default::default()
    };
    let mut dec = dcg_calls::decode::Decoder::new(&set, opts);
    let mut out = Vec::new();
    for line in capture.lines().filter(|l| !l.starts_with("=====")) {
        dec.decode_line(line, &mut out).unwrap();
    }
    dec.finish(&mut out).unwrap();
    let decoded = openat2_frames(&dcg_tests::json_records(&String::from_utf8(out).unwrap()));
    eprintln!("inline frames in do_sys_openat2: live {live:?}, decoded {decoded:?}");
    assert!(
        live.iter()
            .any(|(f, p, _)| !f.is_empty() && p == "do_sys_openat2"),
        "no inline frame in do_sys_openat2: {live:?}"
    );
    assert_eq!(live, decoded);
    stacks_match_the_kernels(&text);
    must(section(&text, "dmesg"), "dmesg", &["warnings: 0"]);
}

/// `--stack` (BPF engine) on the test kernel: each top-level call's stack is one the
/// kernel's stacktrace trigger printed (`dcg_tests::stacks_match_trigger`), with the db's
/// inline frames; the text prints it; the function_graph engine's, from its stacktrace
/// probe, too.
fn stacks_match_the_kernels(text: &str) {
    let sec = section(text, "stack");
    must(sec, "stack", &["rc=0"]);
    // The unwinder the program runs is its own path, not attached: no run of it is
    // counted as the task's lost calls.
    for f in [
        "__kernel_text_address",
        "__module_address",
        "unwind_next_frame",
    ] {
        assert!(!sec.contains(&format!(" {f} (")), "{f} attached:\n{sec}");
    }
    let inlined = dcg_tests::stacks_match_trigger(
        &dcg_tests::json_records(sec),
        "do_sys_openat2",
        section(text, "stack-kernel"),
        dcg_tests::Stacks::Exact,
    );
    assert!(inlined > 0, "no inline frame in the stacks:\n{sec}");
    let t = section(text, "stack-text");
    must(
        t,
        "stack-text",
        &[
            "rc=0",
            "/* stack, outermost first: */",
            " (inlined) */",
            "do_sys_openat2(",
        ],
    );
    // The report of saved calls counts each distinct stack: a file opened by openat(2)
    // and by execve(2).
    must(
        section(text, "stack-report"),
        "stack-report",
        &[
            "trace rc=0",
            "rc=0",
            "Stacks that led to top-level calls (innermost first)",
            "do_file_open: ",
            " distinct stacks",
            "do_sys_openat2+0x",
            " <- __x64_sys_openat+0x",
            "__x64_sys_execve+0x",
            " <- entry_SYSCALL_64_after_hwframe+0x",
        ],
    );
    // The function_graph engine: the same stacks from its stacktrace probe, refused
    // where it reads text.
    let fg = section(text, "stack-fgraph");
    must(fg, "stack-fgraph", &["rc=0"]);
    let inlined = dcg_tests::stacks_match_trigger(
        &dcg_tests::json_records(fg),
        "do_sys_openat2",
        section(text, "stack-fgraph-kernel"),
        // The test kernel's unwinder guesses (see `Stacks::Tail`).
        dcg_tests::Stacks::Tail,
    );
    assert!(inlined > 0, "no inline frame in the stacks:\n{fg}");
    must(
        section(text, "stack-refused"),
        "stack-refused",
        &[
            "--stack with the function_graph engine needs its binary records",
            "rc=1",
        ],
    );
}
