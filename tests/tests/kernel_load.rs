//! Issue 14's load test, in qemu: a loop of a few thousand failing `access(2)` calls under
//! the traced root `do_faccessat` (`tests/qemu/e2e/load.sh`, `tests/qemu/progs/syscall-loop.c`),
//! run untraced, and under a dcg engine between two runs under raw function_graph with
//! the same graph filter (their mean is the baseline), in one boot. Every root call must be recorded with its value, nothing lost, and
//! every other call either carries a value or is void by the db. The per-call times are
//! printed as ratios (`bench/kernel-engines.sh` runs the same script for the numbers).
//! The speed target (at most 2x raw function_graph) is the benchmark's: under TCG the raw
//! function_graph baseline drifts from boot to boot (155 to 235 us per call measured on
//! 7.2 for the same loop, while the BPF engine stayed at 375-410 us), so these tests only
//! guard against a lost optimisation, at [`GROSS_REGRESSION`].
//! Runs only with `DCG_KERNEL_TESTS=1`.

use std::path::Path;

use dcg_tests::guest::{self, enabled, must, section};

/// Calls of the loop.
const CALLS: u64 = 3000;

/// A ratio to raw function_graph that TCG's drift cannot reach but a lost optimisation
/// (decoding on the hot path, the engine tracing its own path) does.
const GROSS_REGRESSION: f64 = 4.0;

/// Boot `kernel` with `db` running load.sh for `engines` (`bpf`, `fgraph`).
fn boot_load(kernel: &Path, db: &Path, engines: &str, log: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let initrd = dir.path().join("guest.cpio.gz");
    let lp = dcg_tests::syscall_loop();
    guest::initramfs(
        &initrd,
        &[(db, "/dcg/k.sigdb"), (lp.as_path(), "/dcg/syscall-loop")],
        "load.sh",
        1200,
    );
    guest::boot(
        kernel,
        &initrd,
        1260,
        &format!("dcg.engines={engines} dcg.calls={CALLS}"),
        log,
    )
}

/// `key=NUMBER` in the section's loop line.
fn field(sec: &str, key: &str) -> u64 {
    let k = format!("{key}=");
    sec.split_whitespace()
        .find_map(|w| w.strip_prefix(&k))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in:\n{sec}"))
}

fn count(sec: &str, prefix: &str) -> u64 {
    sec.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{sec}"))
}

/// Check one engine's section against the db; returns its per-call time over raw
/// function_graph's.
fn check_engine(text: &str, engine: &str, db: &Path) -> f64 {
    let sec = section(text, &format!("dcg-{engine}"));
    must(
        sec,
        engine,
        &["rc=0", &format!("calls={CALLS} failed={CALLS}")],
    );
    assert!(
        !sec.contains("events were lost"),
        "{engine}: dcg lost calls:\n{sec}"
    );
    assert_eq!(count(sec, "roots: "), CALLS, "{engine}: roots recorded");
    assert_eq!(
        count(sec, "roots ENOENT: "),
        CALLS,
        "{engine}: roots with their value"
    );
    // Every function's calls without a value must be calls of a void function.
    let db = sigdb::Db::open(db).unwrap();
    let mut records = 0;
    let mut valueless = Vec::new();
    for l in sec.lines().filter_map(|l| l.strip_prefix("novalue ")) {
        let v: Vec<&str> = l.split(' ').collect();
        let (f, n, z): (&str, u64, u64) = (v[0], v[1].parse().unwrap(), v[2].parse().unwrap());
        records += n;
        let void = db
            .by_name(f)
            .next()
            .is_some_and(|f| f.ret().resolve().kind() == sigdb::TypeKind::Void);
        if z > 0 && !void {
            valueless.push(format!("{f} ({z} of {n})"));
        }
    }
    assert!(
        records > CALLS * 10,
        "{engine}: only {records} calls recorded"
    );
    assert!(
        valueless.is_empty(),
        "{engine}: non-void calls without a value: {valueless:?}"
    );
    let raw = (field(
        section(text, &format!("raw-{engine}-before")),
        "per_call_ns",
    ) + field(section(text, &format!("raw-{engine}-after")), "per_call_ns"))
        / 2;
    let untraced = field(section(text, "untraced"), "per_call_ns");
    let mine = field(sec, "per_call_ns");
    let ratio = mine as f64 / raw as f64;
    eprintln!(
        "load {engine}: {records} calls recorded, 0 lost; per access(): untraced {untraced} ns, \
         raw function_graph {raw} ns, dcg {mine} ns = {ratio:.2}x raw function_graph"
    );
    must(section(text, "dmesg"), "dmesg", &["warnings: 0"]);
    ratio
}

/// Debian 7.2 cloud, BPF engine: every call with its value, nothing lost, and the loop not
/// grossly slower than under raw function_graph.
#[test]
fn debian72_bpf_engine_under_load() {
    if !enabled() {
        return;
    }
    let (kernel, _dir, db) = guest::debian_with_db("7.2-cloud");
    let text = boot_load(&kernel, &db, "bpf", "load-bpf-7.2");
    let ratio = check_engine(&text, "bpf", &db);
    assert!(
        ratio <= GROSS_REGRESSION,
        "BPF engine: {ratio:.2}x raw function_graph"
    );
}

/// The test kernel, function_graph engine (funcgraph-retval, read in binary from
/// `trace_pipe_raw`): every call with its value, nothing lost, and the loop not grossly
/// slower than under raw function_graph.
#[test]
fn testkernel_fgraph_engine_under_load() {
    if !enabled() {
        return;
    }
    let kernel = dcg_tests::testkernel_dir().join("vmlinuz");
    let db = dcg_tests::testkernel_db();
    let text = boot_load(&kernel, &db, "fgraph", "load-fgraph-testkernel");
    let ratio = check_engine(&text, "fgraph", &db);
    assert!(
        ratio <= GROSS_REGRESSION,
        "function_graph engine: {ratio:.2}x raw function_graph"
    );
}
