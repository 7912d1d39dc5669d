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

use std::path::Path;

use dcg_tests::guest::{self, enabled, initramfs, must, section};

/// Pack an initramfs with dcg, the db and the guest script, boot it, return the console
/// text between the markers.
fn boot(kernel: &Path, db: &Path, script: &str, timeout: u32, append: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let initrd = dir.path().join("guest.cpio.gz");
    let lp = dcg_tests::syscall_loop();
    initramfs(
        &initrd,
        &[(db, "/dcg/k.sigdb"), (lp.as_path(), "/dcg/syscall-loop")],
        script,
        timeout,
    );
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
            "} /* do_sys_openat2 ret=-ENOENT",
            "ret=ERR_PTR(-ENOENT)",
            "ret=NULL",
            "ret=0xff",
            "ret=true",
            "ret=false",
            "} /* putname */", // void: no value
        ],
    );
    // 2 with --filter (function_graph): exactly the two failing opens' trees; with
    // --count 1, the first of them alone.
    must(
        section(&text, "s2-filter"),
        "s2-filter",
        &[
            "rc=0",
            "kept: 2",
            "others: 0",
            "count rc=0",
            "counted: 1",
            "counted enoent: 1",
        ],
    );
    notrace_shows_the_callees(&text, "s2-notrace", "test kernel");
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
    // --fields with the function_graph engine.
    must(section(&text, "fields-fgraph"), "fields-fgraph", &["rc=0"]);
    guest::fgraph_fields_are_what_the_program_passed(&text, "fields-fgraph", "test kernel");
    // --deref with the function_graph engine.
    must(section(&text, "deref-fgraph"), "deref-fgraph", &["rc=0"]);
    guest::open_how_is_what_the_program_passed(&text, "deref-fgraph", "test kernel");
    // Output parameters with the function_graph engine.
    must(
        section(&text, "outputs-fgraph"),
        "outputs-fgraph",
        &["rc=0"],
    );
    guest::pipe_output_is_the_read_end(&text, "outputs-fgraph", "test kernel");
    // 5: nothing left after SIGINT / SIGTERM (the latter with probes).
    for name in [
        "s5-sigint",
        "s5-sigterm-probes",
        "s4-concurrent",
        "fields-fgraph",
        "deref-fgraph",
        "outputs-fgraph",
        "after",
    ] {
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
        &["global state unchanged: yes", "kernel warnings: 0"],
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
            "} /* do_sys_openat2 ret=-ENOENT",
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
        &["global state unchanged: yes", "kernel warnings: 0"],
    );
}

/// Debian 7.2: fprobes on fgraph; scenario 1 with the BPF engine (the function_graph
/// engine refuses exit events there: they make the kernel log a WARNING).
#[test]
fn debian72_scenarios() {
    if !enabled() {
        return;
    }
    let (kernel, _dir, db) = guest::debian_with_db("7.2-cloud");
    let text = boot(&kernel, &db, "debian72.sh", 900, "");
    debian_checks(&text, "getname_flags");
    // Values with the function_graph engine would need fprobe exit events, which make
    // this kernel log a WARNING: refused, before anything is traced.
    must(
        section(&text, "s1-fgraph-refused"),
        "s1-fgraph-refused",
        &[
            "rc=1",
            "--engine fgraph cannot read return values on this kernel",
        ],
    );
}

/// Debian 6.12: fprobes on ftrace and rethook, no funcgraph-args either; the entry events
/// of `--args` print after the `{` of their call.
#[test]
fn debian612_scenarios() {
    if !enabled() {
        return;
    }
    let (kernel, _dir, db) = guest::debian_with_db("6.12-cloud");
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
            "} /* do_sys_openat2 ret=-ENOENT",
            "dcg instances: 0",
            "dcg events: 0",
        ],
    );
}

/// Interrupt entry points: what runs under them depends on the moment, and
/// function_graph (with funcgraph-irqs off) and BPF see different parts of it.
fn is_interrupt(func: &str) -> bool {
    ["sysvec_", "__sysvec_", "irq_", "__irq_", "asm_"]
        .iter()
        .any(|p| func.starts_with(p))
        || func.contains("softirq")
        // The preemption check on the way out of an interrupt (the BPF engine's tree
        // says irq there; function_graph's text, without contexts, cannot).
        || func.contains("irqentry_exit_cond_resched")
}

/// Each call as `depth func value` in tree order (children by id, top-level trees by their
/// first id), interrupt subtrees and the BPF engine's own program run (which
/// function_graph records inside every probed function) left out; pointers are compared
/// as they are: both engines traced the same calls.
fn call_lines(
    calls: &[dcg_calls::saved_format::CallRecord],
    not_attached: &std::collections::HashSet<&str>,
) -> Vec<(Vec<String>, u64)> {
    use std::collections::{BTreeMap, HashMap, HashSet};
    let skip =
        |f: &str| is_interrupt(f) || not_attached.contains(f) || f.starts_with("__bpf_prog_run");
    let switch = dcg_tests::context_switch_calls(calls);
    let ids: HashSet<u64> = calls.iter().map(|c| c.id).collect();
    let mut children: HashMap<Option<u64>, Vec<&dcg_calls::saved_format::CallRecord>> =
        HashMap::new();
    for c in calls {
        let parent = c.parent.filter(|p| ids.contains(p));
        children.entry(parent).or_default().push(c);
    }
    // The smallest id in each subtree orders the top-level trees.
    fn first_id(
        c: &dcg_calls::saved_format::CallRecord,
        children: &HashMap<Option<u64>, Vec<&dcg_calls::saved_format::CallRecord>>,
    ) -> u64 {
        children
            .get(&Some(c.id))
            .into_iter()
            .flatten()
            .map(|k| first_id(k, children))
            .fold(c.id, u64::min)
    }
    let roots: BTreeMap<u64, &dcg_calls::saved_format::CallRecord> = children
        .get(&None)
        .into_iter()
        .flatten()
        .map(|c| (first_id(c, &children), *c))
        .collect();
    let mut trees: Vec<(Vec<String>, u64)> = Vec::new();
    let mut stack: Vec<(&dcg_calls::saved_format::CallRecord, usize)> =
        roots.values().rev().map(|c| (*c, 0)).collect();
    while let Some((c, depth)) = stack.pop() {
        // (Interrupt subtrees by their context too: both engines mark it.)
        if skip(&c.func)
            || switch.contains(&c.id)
            || c.ctx
                .is_some_and(|x| x != dcg_calls::saved_format::Context::Task)
        {
            continue;
        }
        if depth == 0 {
            trees.push((Vec::new(), c.lost.unwrap_or(0)));
        }
        let out = &mut trees.last_mut().expect("a tree").0;
        out.push(format!(
            "{depth} {} {}",
            c.func,
            first_word(c.ret.as_deref().unwrap_or("-"))
        ));
        let mut kids = children.get(&Some(c.id)).cloned().unwrap_or_default();
        kids.sort_by_key(|k| k.id);
        stack.extend(kids.into_iter().rev().map(|k| (k, depth + 1)));
    }
    trees
}

/// A value as funcgraph-retval can show it: a struct returned in two registers
/// (`(struct timespec64){0x6b095825, 0x7e01d0f}`) by its first (`rax`) word only.
fn first_word(value: &str) -> String {
    match value.split_once("){") {
        Some((ty, rest)) => {
            let first = rest.split([',', '}']).next().unwrap_or("").trim();
            format!("{ty}){first}")
        }
        None => value.to_string(),
    }
}

/// The BPF session's debug output (`DCG_KTRACE_DEBUG=1`) says the program's own path
/// was computed from the loaded program (`how`: interpreted or JIT-compiled) and leaves
/// out the ring buffer helper its code calls (and what that calls), what its read helper calls (found in the
/// kernel's text), and `also`.
fn own_path_computed(stderr: &str, how: &str, also: &[&str]) {
    must(
        stderr,
        "own path",
        &["the program's own path: ", &format!(", {how})")],
    );
    let own: Vec<&str> = stderr
        .lines()
        .find_map(|l| l.split_once("not attached (the program's own path, "))
        .and_then(|(_, rest)| rest.split_once("): "))
        .map(|(_, names)| names.split(' ').collect())
        .unwrap_or_else(|| panic!("no not-attached list in:\n{stderr}"));
    for f in [
        "bpf_ringbuf_output",
        "__bpf_ringbuf_reserve",
        "copy_from_kernel_nofault",
    ]
    .iter()
    .chain(also)
    {
        assert!(own.contains(f), "{f} is attached: own path {own:?}");
    }
}

/// Issue 14's oracle: on the test kernel, one workload traced by the BPF engine and by
/// function_graph with funcgraph-retval at the same time gives the same calls with the
/// same value for every call. Then BPF-only checks: strings, cleanup, no WARNING.
#[test]
fn testkernel_bpf_engine_matches_funcgraph_retval() {
    if !enabled() {
        return;
    }
    let kernel = dcg_tests::testkernel_dir().join("vmlinuz");
    let db = dcg_tests::testkernel_db();
    let text = boot(&kernel, &db, "bpf-oracle.sh", 900, "");
    let o = section(&text, "oracle");
    must(o, "oracle", &["bpf rc=0", "fgraph rc=0"]);
    let bpf = dcg_tests::json_records(section(&text, "oracle-bpf"));
    let fg = dcg_tests::json_records(section(&text, "oracle-fgraph"));
    // Complete trees only: a root record exists when its call returned. (function_graph
    // also records the BPF program's own run inside every probed function, ~15 times the
    // calls, and may not have finished the last tree when it is stopped.)
    let complete = |trees: Vec<(Vec<String>, u64)>| -> Vec<(Vec<String>, u64)> {
        trees
            .into_iter()
            .filter(|(t, _)| {
                t[0].starts_with("0 do_sys_openat2 ") || t[0].starts_with("0 do_faccessat ")
            })
            .collect()
    };
    // The functions the BPF engine leaves out (its own path, listed by its debug output)
    // are left out of both sides, with what runs under them.
    // The test kernel has no /proc/kcore and no JIT: the kernel text is read through the
    // BPF reader, the interpreter and the hash map's lookup are the program's own path.
    own_path_computed(
        o,
        "interpreted",
        &["___bpf_prog_run", "htab_map_lookup_elem"],
    );
    let not_attached: std::collections::HashSet<&str> = o
        .lines()
        .find_map(|l| l.split_once("not attached (the program's own path, "))
        .and_then(|(_, rest)| rest.split_once("): "))
        .map(|(_, names)| names.split(' ').collect())
        .unwrap_or_else(|| panic!("no not-attached list in the BPF session's stderr:\n{o}"));
    let (b, f) = (
        complete(call_lines(&bpf, &not_attached)),
        complete(call_lines(&fg, &not_attached)),
    );
    let compared: usize = f.iter().map(|(t, _)| t.len()).sum();
    eprintln!(
        "oracle: {} calls from BPF, {} from function_graph; {} complete trees from BPF, {} \
         from function_graph, {compared} calls compared",
        bpf.len(),
        fg.len(),
        b.len(),
        f.len()
    );
    assert!(f.len() >= 2, "function_graph completed {} trees", f.len());
    // The trees aligned call by call (longest common subsequence of `depth func value`).
    // A call both show must carry the same value: a pair left unaligned at the same
    // place with the same depth and function but different values is a wrong value.
    // Either engine may show calls the other does not: function_graph sees calls that
    // run while a BPF program runs on the CPU, which BPF skips (recursion). (The calls of
    // a context switch, which function_graph records only sometimes, are left out of
    // both, with interrupts.)
    let (mut only_bpf, mut only_fg, mut wrong) = (Vec::new(), Vec::new(), Vec::new());
    // Calls missing from BPF's trees that BPF did not report lost.
    let mut unexplained = 0;
    for ((bt, lost), (ft, _)) in b.iter().zip(&f) {
        let missing_before = only_fg.len();
        let (n, m) = (bt.len(), ft.len());
        let mut l = vec![vec![0u32; m + 1]; n + 1];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                l[i][j] = if bt[i] == ft[j] {
                    l[i + 1][j + 1] + 1
                } else {
                    l[i + 1][j].max(l[i][j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        let key = |x: &str| {
            x.rsplit_once(' ')
                .map(|(k, _)| k.to_string())
                .unwrap_or_default()
        };
        while i < n || j < m {
            if i < n && j < m && bt[i] == ft[j] {
                i += 1;
                j += 1;
            } else if i < n && j < m && key(&bt[i]) == key(&ft[j]) && l[i + 1][j + 1] == l[i][j] {
                wrong.push(format!("bpf `{}` vs function_graph `{}`", bt[i], ft[j]));
                i += 1;
                j += 1;
            } else if j == m || (i < n && l[i + 1][j] >= l[i][j + 1]) {
                only_bpf.push(bt[i].clone());
                i += 1;
            } else {
                only_fg.push(ft[j].clone());
                j += 1;
            }
        }
        let missing = (only_fg.len() - missing_before) as u64;
        eprintln!(
            "oracle: tree {}: {missing} calls only in function_graph, BPF reports {lost} lost",
            bt[0]
        );
        unexplained += missing.saturating_sub(*lost) as usize;
    }
    eprintln!("oracle: only in BPF: {only_bpf:?}");
    eprintln!("oracle: only in function_graph: {only_fg:?}");
    assert!(wrong.is_empty(), "values differ: {wrong:#?}");
    // Known gap (issue 14's note): in the two-link mode of a kernel without the BPF JIT,
    // BPF sometimes misses a run of the task's calls after an interrupt (up to ~19 % of a
    // tree seen); the values of every call both show must still agree, above.
    // Calls BPF reports lost (skipped while it recorded, interrupts mostly) are allowed
    // to be missing from its tree; the rest is held to the known gap.
    assert!(
        only_bpf.len() * 20 <= compared && unexplained * 5 <= compared,
        "{} calls only in BPF, {} only in function_graph ({unexplained} not reported lost), \
         of {compared}",
        only_bpf.len(),
        only_fg.len()
    );
    assert!(compared > 100, "{compared} calls compared");
    let all: Vec<&String> = b.iter().flat_map(|(t, _)| t).collect();
    for want in ["do_sys_openat2 -ENOENT", "do_sys_openat2 3"] {
        assert!(all.iter().any(|l| l.contains(want)), "no {want:?}");
    }

    let s = section(&text, "strings");
    must(
        s,
        "strings",
        &["rc=0", "do_sys_openat2(dfd=-100, filename=\"/nonexistent\""],
    );
    let c = section(&text, "cleanup");
    must(
        c,
        "cleanup",
        &["after SIGINT rc=0", "bpf objects held by dcg processes: 0"],
    );
    // Calls lost to interrupts during records: said in one note, marked on the trees.
    let l = section(&text, "losses");
    must(l, "losses", &["rc=0"]);
    let note = l
        .lines()
        .find_map(|x| x.strip_prefix("dcg: note: "))
        .filter(|x| x.contains(" of the traced tasks "))
        .unwrap_or_else(|| panic!("no lost-calls note:\n{l}"));
    let num = |after: &str| -> u64 {
        note.split(after)
            .next()
            .and_then(|h| h.split(' ').next_back())
            .map_or(0, |n| {
                n.parse()
                    .unwrap_or_else(|_| panic!("no count before {after:?} in {note:?}"))
            })
    };
    let words: Vec<&str> = note.split(' ').collect();
    let lost: u64 = words[0].parse().unwrap_or_else(|_| panic!("{note}"));
    let trees = num(" tree");
    let calls = dcg_tests::json_records(section(&text, "losses-json"));
    let marked: Vec<u64> = calls
        .iter()
        .filter(|c| c.parent.is_none())
        .filter_map(|c| c.lost)
        .collect();
    eprintln!(
        "losses: {note}; {} trees, {} marked",
        calls.iter().filter(|c| c.parent.is_none()).count(),
        marked.len()
    );
    assert!(lost > 0 && trees > 0, "{note}");
    assert_eq!(
        marked.len() as u64,
        trees,
        "trees marked vs the note: {note}"
    );
    assert!(marked.iter().sum::<u64>() <= lost, "{marked:?} vs {note}");
    // Every call that says it lost calls lies in a marked tree, and says no more than
    // the tree's top.
    for c in calls.iter().filter(|c| c.lost.is_some()) {
        let mut top = c;
        while let Some(p) = top.parent.and_then(|p| calls.iter().find(|x| x.id == p)) {
            top = p;
        }
        assert!(
            top.lost >= c.lost,
            "{} lost {:?} under a top with {:?}",
            c.func,
            c.lost,
            top.lost
        );
    }

    let d = section(&text, "dmesg");
    must(d, "dmesg", &["warnings: 0"]);
}

/// The BPF engine on a Debian kernel without funcgraph-retval: at least 99 % of the
/// non-void calls in the traced trees carry a value (void by the db), C strings read as
/// strings, no printk in the trees, no WARNING.
fn bpf_on_debian(kernel_name: &str) {
    if !enabled() {
        return;
    }
    // The db knows the kernel and binfmt_misc, the debug package's module the guest loads.
    let kdir = guest::debian_kernel(kernel_name);
    let module = kdir.join("dbg-modules/kernel/fs/binfmt_misc.ko");
    let inputs = [
        dwarfscan::Input::new(kdir.join("vmlinux")),
        dwarfscan::Input::new(&module),
    ];
    let mut result = dwarfscan::scan(&inputs, &dwarfscan::Options::default())
        .unwrap_or_else(|e| panic!("scanning {}: {e}", kdir.display()));
    let dir = tempfile::tempdir().unwrap();
    let db_path = dir.path().join("k.sigdb");
    result.write(&db_path).unwrap();
    let initrd = dir.path().join("guest.cpio.gz");
    let lp = dcg_tests::syscall_loop();
    guest::initramfs_with_modules(
        &initrd,
        &[(&db_path, "/dcg/k.sigdb"), (&lp, "/dcg/syscall-loop")],
        &[&module],
        // 6.12's run took 815-857 s before the deref and member-filter sessions (about
        // 100 s more) came in.
        "bpf-debian.sh",
        1500,
    );
    let text = guest::boot(
        &kdir.join("vmlinuz"),
        &initrd,
        1560,
        "",
        &format!("bpf-debian-{kernel_name}"),
    );
    must(section(&text, "values"), "values", &["rc=0"]);
    filters_keep_their_trees(&text, kernel_name);
    must(
        section(&text, "notrace"),
        "notrace",
        &[
            "rc=0",
            "--notrace do_sys_* excludes do_sys_openat2, a function --func traces",
            "root rc=1",
        ],
    );
    notrace_shows_the_callees(&text, "notrace", kernel_name);
    guest::fields_are_what_the_program_passed(&text, kernel_name);
    guest::derefs_are_what_the_program_passed(&text, kernel_name);
    guest::outputs_are_what_the_kernel_wrote(&text, kernel_name);
    guest::reads_lose_no_calls(&text, kernel_name);
    tasks_by_name_and_cgroup(&text, kernel_name);
    // The engine's own path comes from the loaded, JIT-compiled program: the helpers its
    // code calls and their callees in the kernel text are not attached.
    own_path_computed(section(&text, "values"), "JIT-compiled", &[]);
    let calls = dcg_tests::json_records(section(&text, "values-json"));
    let db = sigdb::Db::open(&db_path).unwrap();
    let void = |f: &str| {
        db.by_name(f)
            .next()
            .is_some_and(|f| f.ret().resolve().kind() == sigdb::TypeKind::Void)
    };
    let non_void: Vec<_> = calls.iter().filter(|c| !void(&c.func)).collect();
    let with_value = non_void.iter().filter(|c| c.ret.is_some()).count();
    eprintln!(
        "{kernel_name}: {} calls, {} non-void, {with_value} with a value",
        calls.len(),
        non_void.len()
    );
    assert!(non_void.len() > 100, "{} non-void calls", non_void.len());
    assert!(
        with_value * 100 >= non_void.len() * 99,
        "{with_value} of {} non-void calls have a value; without: {:?}",
        non_void.len(),
        non_void
            .iter()
            .filter(|c| c.ret.is_none())
            .map(|c| c.func.as_str())
            .take(20)
            .collect::<Vec<_>>()
    );
    for (root, want) in [("do_sys_openat2", "-ENOENT"), ("do_sys_openat2", "3")] {
        assert!(
            calls
                .iter()
                .any(|c| c.depth == 0 && c.func == root && c.ret.as_deref() == Some(want)),
            "no {root} returning {want}"
        );
    }
    assert!(
        !calls.iter().any(|c| c.func.contains("printk")),
        "printk in the traced trees"
    );
    must(
        section(&text, "tree"),
        "tree",
        &[
            "rc=0",
            "do_sys_openat2(dfd=-100, filename=\"/nonexistent\"",
            // With every value known, the error's origin is named.
            "} /* do_sys_openat2 ret=-ENOENT from ",
            // A pointer to a kernel symbol is named (kallsyms).
            "idmap=&nop_mnt_idmap",
        ],
    );
    // Parameters passed on the stack, read from the stack words at entry.
    must(
        section(&text, "stack"),
        "stack",
        &["rc=0", "pgoff=0, populate=0x", "} /* do_mmap ret=0x"],
    );
    // 16-byte structs in register pairs: as arguments and as return values.
    let pairs = section(&text, "pairs");
    must(pairs, "pairs", &["rc=0"]);
    assert!(
        pairs
            .lines()
            .any(|l| l.contains("(struct timespec64){0x")
                && l.contains("ret=(struct timespec64){0x")),
        "no struct timespec64 argument and return value in a register pair:\n{pairs}"
    );
    // A module function: arguments (a user string), its value, and its error.
    must(
        section(&text, "module"),
        "module",
        &[
            "rc=0",
            "bm_register_write [binfmt_misc](",
            "buffer=\":dcgtest:E::dcgx::/bin/true:\\n\"",
            "ret=29 */",
            "ret=-EINVAL",
        ],
    );
    // Interrupts that ran inside a traced read, from the BPF engine then from the
    // function_graph engine (the context read from its records' flags): marked where
    // they begin and end, their time said at the calls they interrupted, their context
    // in the saved calls; none shown or saved with --irqs hide.
    for name in ["irqs", "fgraph-irqs"] {
        let irqs = section(&text, name);
        must(
            irqs,
            name,
            &[
                "rc=0",
                "hidden rc=0",
                "hidden marks: 0",
                "hidden interrupt records: 0",
            ],
        );
        let count = |key: &str| count_line(irqs, key);
        assert!(count("marks: ") >= 1, "no interrupt marked:\n{irqs}");
        assert_eq!(count("marks: "), count("ends: "), "{irqs}");
        assert!(count("irq time said: ") >= 1, "{irqs}");
        assert!(count("interrupt records: ") >= 1, "{irqs}");
        assert!(count("task records: ") >= 2, "{irqs}");
        // Every saved call names its task (function_graph's binary records carry only
        // the thread id: dcg names it).
        assert_eq!(count("unnamed task records: "), 0, "{irqs}");
        assert!(count("hidden reads: ") >= 2, "{irqs}");
        let calls = dcg_tests::json_records(section(&text, &format!("{name}-calls")));
        // (This db has no inline instances: inline frames are checked by kernel_inline.)
        guest::interrupt_calls_have_their_context(&calls, name, false);
    }
    // --stack: each tree's kernel stack is one the kernel's stacktrace trigger printed,
    // with either engine.
    for ks in ["kstack", "kstack-fgraph"] {
        must(section(&text, ks), ks, &["rc=0"]);
        dcg_tests::stacks_match_trigger(
            &dcg_tests::json_records(section(&text, ks)),
            "do_sys_openat2",
            section(&text, &format!("{ks}-kernel")),
            dcg_tests::Stacks::Exact,
        );
    }
    must(section(&text, "dmesg"), "dmesg", &["warnings: 0"]);
}

#[test]
fn debian72_bpf_engine() {
    bpf_on_debian("7.2-cloud");
}

#[test]
fn debian612_bpf_engine() {
    bpf_on_debian("6.12-cloud");
}

/// The BPF engine's sessions on Debian 7.2 (`bpf-sessions.sh`): two concurrent sessions
/// over all tasks with different roots see only their own trees; after SIGINT, SIGTERM
/// and SIGKILL no dcg program or link is left (bpftool), and a rerun works.
#[test]
fn debian72_bpf_sessions_and_cleanup() {
    if !enabled() {
        return;
    }
    let (kernel, dir, db) = guest::debian_with_db("7.2-cloud");
    let initrd = dir.path().join("guest.cpio.gz");
    let lp = dcg_tests::syscall_loop();
    let bpftool = dcg_tests::which("bpftool");
    initramfs(
        &initrd,
        &[
            (&db, "/dcg/k.sigdb"),
            (&lp, "/dcg/syscall-loop"),
            (&bpftool, "/bin/bpftool"),
        ],
        "bpf-sessions.sh",
        1200,
    );
    let text = guest::boot(&kernel, &initrd, 1260, "", "bpf-sessions-7.2");
    let c = section(&text, "concurrent");
    must(
        c,
        "concurrent",
        &[
            "a rc=0",
            "b rc=0",
            "a foreign roots: 0",
            "b foreign roots: 0",
            "dcg programs: 0",
            "links: 0",
        ],
    );
    assert!(count_line(c, "a access roots: ") >= 5, "{c}");
    assert!(count_line(c, "b nonexistent: ") >= 1, "{c}");
    for sig in ["INT", "TERM", "KILL"] {
        let s = section(&text, &format!("kill-{sig}"));
        must(s, sig, &["dcg programs: 0", "links: 0"]);
        assert!(
            !s.contains("while tracing: 0 "),
            "{sig}: no dcg program while tracing:\n{s}"
        );
    }
    must(section(&text, "kill-INT"), "INT", &["rc=0"]);
    // Records kept undecoded while the command ran (the output is a file) are decoded
    // when a signal stops the session.
    for sig in ["INT", "TERM"] {
        let s = section(&text, &format!("kill-{sig}"));
        assert!(
            count_line(s, "trees after the signal: ") >= 1,
            "{sig}: nothing decoded after the signal:\n{s}"
        );
    }
    // Progress is drawn on a terminal only: never in the files stderr went to.
    assert!(!c.contains("loading the BPF programs"), "{c}");
    must(
        section(&text, "progress"),
        "progress",
        &[
            "progress rc=0",
            "dcg: loading the BPF programs, attaching to ",
            "dcg: decoding the records kept while the command ran: ",
            "dcg: tracing 1 function (command pid ",
        ],
    );
    // One decoding policy: records (BPF) and pages (function_graph) past the memory
    // bound wait in a file and come out whole; --count is decided without decoding.
    let p = section(&text, "policy");
    must(
        p,
        "policy",
        &[
            "spool rc=0",
            "spool roots: 2000",
            "spool text roots: 2000",
            "count rc=0",
            "count roots: 7",
            "count text roots: 7",
            "count loop finished: 0",
            "stopped (7 calls)",
            "fgraph spool rc=0",
            "fgraph spool roots: 500",
            "fgraph spool stopped: 500 calls",
        ],
    );
    assert!(count_line(p, "spooled: ") > 65536, "{p}");
    assert!(count_line(p, "fgraph spooled: ") > 65536, "{p}");
    must(
        section(&text, "rerun"),
        "rerun",
        &[
            "rc=0",
            "} /* do_sys_openat2 ret=-ENOENT",
            "dcg programs: 0",
            "links: 0",
        ],
    );
    must(section(&text, "dmesg"), "dmesg", &["warnings: 0"]);
}

/// `--filter` in the BPF engine (bpf-debian.sh's "filter" sections): the failing opens'
/// trees and no other, every call in the saved calls; calls rejected at entry by the
/// program (at least the four opens) and none shown; a file name read from user memory;
/// `--count 1` over the trees shown; a refused filter with its caret, nothing traced.
fn filters_keep_their_trees(text: &str, kernel_name: &str) {
    let f = section(text, "filter");
    must(
        f,
        "filter",
        &[
            "rc=0",
            // The two failing opens, two of /proc/version, and the shell's two of
            // /dev/null for the redirections.
            "saved tops: 6",
            "rejected rc=0",
            "rejected trees: 0",
            "rejected at entry by --filter (not recorded)",
            "name rc=0",
            "--filter: unknown name 'nmae' (parameters: dfd, filename, how)",
            "  dfd == -100 && nmae == 1",
            "refused rc=1",
        ],
    );
    let tops = |name: &str| top_calls(text, name);
    let rejected: u64 = section(text, "filter")
        .lines()
        .find_map(|l| {
            let (before, _) = l.split_once(" rejected at entry")?;
            before.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or(0);
    assert!(rejected >= 4, "{kernel_name}: {rejected} rejected at entry");
    let enoent = tops("filter-enoent");
    assert_eq!(enoent.len(), 2, "{kernel_name}: {enoent:?}");
    for c in &enoent {
        assert_eq!(c.ret.as_deref(), Some("-ENOENT"), "{kernel_name}: {c:?}");
        assert!(
            c.args.iter().any(|a| a.value.contains("/nonexistent")),
            "{c:?}"
        );
    }
    let named = tops("filter-name");
    assert_eq!(named.len(), 1, "{kernel_name}: {named:?}");
    assert!(
        named[0].args.iter().any(|a| a.value == "\"/proc/version\""),
        "{kernel_name}: {named:?}"
    );
}

/// `--notrace '*getname*'` (section NAME, its JSON in NAME-json): no getname call (6.12:
/// getname, getname_flags; 7.2: do_getname too), and what they call (the name's
/// allocation, its copy from user memory and the copy's size check; strncpy_from_user is
/// on the BPF program's own path, so never attached) right under do_sys_openat2, which
/// calls none of them itself.
fn notrace_shows_the_callees(text: &str, name: &str, kernel_name: &str) {
    must(section(text, name), name, &["rc=0"]);
    let calls = dcg_tests::json_records(section(text, &format!("{name}-json")));
    assert!(
        !calls.iter().any(|c| c.func.contains("getname")),
        "{kernel_name}: getname traced"
    );
    let func_of = |id: u64| calls.iter().find(|c| c.id == id).map(|c| c.func.as_str());
    let moved_up: Vec<&str> = calls
        .iter()
        .filter(|c| c.parent.and_then(func_of) == Some("do_sys_openat2"))
        .map(|c| c.func.as_str())
        .filter(|f| {
            [
                "kmem_cache_alloc_noprof",
                "strncpy_from_user",
                "__check_object_size",
            ]
            .contains(f)
        })
        .collect();
    assert!(
        !moved_up.is_empty(),
        "{kernel_name}: nothing of getname's under do_sys_openat2"
    );
}

/// `--comm cat` and `--cgroup dcgtest` over all tasks (bpf-debian.sh's "tasks"): trees of
/// those tasks only (and some); function_graph and a missing cgroup refused.
fn tasks_by_name_and_cgroup(text: &str, kernel_name: &str) {
    must(
        section(text, "tasks"),
        "tasks",
        &[
            "comm rc=0",
            "cgroup rc=0",
            "--comm and --cgroup need the BPF engine",
            "fgraph rc=1",
            "--cgroup /sys/fs/cgroup/no-such-group: ",
            "no group rc=1",
        ],
    );
    let tops = |name: &str| top_calls(text, name);
    let by_comm = tops("tasks-comm");
    assert!(by_comm.len() >= 3, "{kernel_name}: {by_comm:?}");
    for c in &by_comm {
        assert_eq!(c.comm.as_deref(), Some("cat"), "{kernel_name}: {c:?}");
    }
    let by_cgroup = tops("tasks-cgroup");
    assert!(by_cgroup.len() >= 3, "{kernel_name}: {by_cgroup:?}");
    // The cgroup's loop opens /proc/uptime; the one outside, /nonexistent.
    let opens = |c: &dcg_calls::saved_format::CallRecord, f: &str| {
        c.args.iter().any(|a| a.value == format!("\"{f}\""))
    };
    assert!(
        !by_cgroup.iter().any(|c| opens(c, "/nonexistent"))
            && by_cgroup.iter().any(|c| opens(c, "/proc/uptime")),
        "{kernel_name}: {by_cgroup:?}"
    );
}

/// The top-level calls of the JSON records in section `name` of a guest's output.
fn top_calls(text: &str, name: &str) -> Vec<dcg_calls::saved_format::CallRecord> {
    dcg_tests::json_records(section(text, name))
        .into_iter()
        .filter(|c| c.parent.is_none())
        .collect()
}
