//! Inline instances checked against the DWARF itself: every `DW_TAG_inlined_subroutine`
//! of the C corpus as `llvm-dwarfdump` prints it, and known kernel cases (pidfd_create
//! inlined in `__x64_sys_pidfd_open` on Debian 6.12 and 7.2, with `DCG_KERNEL_TESTS=1`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use sigdb::{Db, Instance, Location};

fn scan_with_instances(inputs: &[PathBuf]) -> Db {
    let inputs: Vec<_> = inputs.iter().map(dwarfscan::Input::new).collect();
    let opts = dwarfscan::Options {
        inline_instances: true,
        ..dwarfscan::Options::default()
    };
    let mut r = dwarfscan::scan(&inputs, &opts).expect("scan");
    Db::from_bytes(r.to_bytes().expect("serialize")).expect("valid db")
}

/// (callee, entry pc, ranges, call line) of an instance.
type Seen = (String, u64, Vec<(u64, u64)>, u32);

fn seen(i: &Instance<'_>) -> Seen {
    (
        i.callee().unwrap().name().to_string(),
        i.entry_pc(),
        i.ranges().collect(),
        i.call_line(),
    )
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// An inlined subroutine as `llvm-dwarfdump` prints it.
#[derive(Default)]
struct DumpDie {
    name: String,
    entry: Option<u64>,
    low: Option<u64>,
    high: Option<u64>,
    ranges: Vec<(u64, u64)>,
    line: u32,
}

/// Every inlined subroutine in `llvm-dwarfdump --debug-info` output, with dwarfscan's
/// rules: empty ranges dropped, entry pc defaulting to the first range's start.
fn dwarfdump_instances(elf: &Path) -> Vec<Seen> {
    let out = Command::new("llvm-dwarfdump")
        .arg("--debug-info")
        .arg(elf)
        .output()
        .expect("llvm-dwarfdump");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut all = Vec::new();
    let mut cur: Option<DumpDie> = None;
    let mut flush = |c: Option<DumpDie>| {
        if let Some(mut d) = c {
            if let (Some(lo), Some(hi)) = (d.low, d.high) {
                d.ranges.push((lo, if hi == lo { lo + 1 } else { hi }));
            }
            d.ranges.retain(|&(a, b)| b > a);
            if let Some(&(first, _)) = d.ranges.first() {
                all.push((d.name, d.entry.unwrap_or(first), d.ranges, d.line));
            }
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("0x") && (t.contains("DW_TAG_") || t.ends_with("NULL")) {
            flush(cur.take());
            if t.ends_with("DW_TAG_inlined_subroutine") {
                cur = Some(DumpDie::default());
            }
            continue;
        }
        let Some(c) = cur.as_mut() else { continue };
        let val = |t: &str| {
            t.split('(')
                .nth(1)
                .map(|v| v.trim_end_matches(')').to_string())
        };
        if t.starts_with("DW_AT_abstract_origin") {
            c.name = t.split('"').nth(1).unwrap_or("").to_string();
        } else if t.starts_with("DW_AT_entry_pc") {
            c.entry = val(t).map(|v| hex(&v));
        } else if t.starts_with("DW_AT_low_pc") {
            c.low = val(t).map(|v| hex(&v));
        } else if t.starts_with("DW_AT_high_pc") {
            c.high = val(t).map(|v| hex(&v));
        } else if t.starts_with("DW_AT_call_line") {
            c.line = val(t).map_or(0, |v| v.parse().unwrap_or(0));
        } else if t.starts_with('[') && t.contains(", ") {
            let inner = t.trim_start_matches('[');
            let (a, b) = inner.split_once(", ").unwrap();
            c.ranges.push((hex(a), hex(b.split(')').next().unwrap())));
        }
    }
    flush(cur);
    all
}

#[test]
fn corpus_instances_match_dwarfdump() {
    if Command::new("llvm-dwarfdump")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no llvm-dwarfdump");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("sigs");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let ok = Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&exe)
        .args(["sigs.c", "same_a.c", "same_b.c", "clones.c"].map(|s| corpus.join(s)))
        .status()
        .unwrap()
        .success();
    assert!(ok, "gcc");
    let db = scan_with_instances(std::slice::from_ref(&exe));
    let mut ours: Vec<Seen> = db.instances().map(|i| seen(&i)).collect();
    let mut theirs = dwarfdump_instances(&exe);
    ours.sort();
    theirs.sort();
    assert!(
        theirs.iter().any(|t| t.0 == "inline_only_add"),
        "{theirs:?}"
    );
    assert_eq!(ours, theirs);
    // Every instance sits in its caller's code and, when nested, in its parent's.
    for i in db.instances() {
        let caller = i.caller().unwrap();
        let (lo, hi) = (caller.addr(), caller.addr() + u64::from(caller.size()));
        assert!(
            i.ranges().any(|(a, b)| a < hi && lo < b),
            "{i:?} outside its caller"
        );
        assert!(i.call_file().ends_with(".c"), "{}", i.call_file());
        assert_eq!(i.locations().len(), i.callee().unwrap().params().len());
        if let Some(p) = i.parent() {
            assert_eq!(p.caller().unwrap().index(), caller.index());
        }
    }
}

fn debian_vmlinux(release: &str) -> PathBuf {
    common::kernel_script("fetch-debian-kernel.sh", &[release]).join("vmlinux")
}

/// The pidfd_create copy in `__x64_sys_pidfd_open`: its ranges, entry pc, call line and
/// parameter locations, as `llvm-dwarfdump` shows them for that kernel.
fn check_pidfd_create(release: &str, range: (u64, u64), line: u32, pid: Location) {
    if !common::kernel_tests_enabled() {
        eprintln!("skipped: set DCG_KERNEL_TESTS=1");
        return;
    }
    let db = scan_with_instances(&[debian_vmlinux(release)]);
    let caller = db.by_name("__x64_sys_pidfd_open").next().unwrap();
    let inst: Vec<Instance> = caller
        .inline_instances()
        .filter(|i| i.callee().unwrap().name() == "pidfd_create")
        .collect();
    assert_eq!(inst.len(), 1, "{inst:?}");
    let i = inst[0];
    assert_eq!(i.ranges().collect::<Vec<_>>(), [range]);
    assert_eq!(i.entry_pc(), range.0);
    assert_eq!(i.call_line(), line);
    assert!(i.call_file().ends_with("kernel/pid.c"), "{}", i.call_file());
    let params: Vec<(&str, Location)> = i.params().map(|(p, l)| (p.name(), l)).collect();
    assert_eq!(params, [("pid", pid), ("flags", Location::OptimizedOut)]);
    // Nested: pidfd_create sits in __do_sys_pidfd_open, itself in __se_sys_pidfd_open.
    let mut chain = Vec::new();
    let mut up = i.parent();
    while let Some(p) = up {
        chain.push(p.callee().unwrap().name());
        up = p.parent();
    }
    assert_eq!(chain, ["__do_sys_pidfd_open", "__se_sys_pidfd_open"]);
}

#[test]
fn debian_612_pidfd_create() {
    check_pidfd_create(
        "6.12-cloud",
        (0xffff_ffff_810f_401c, 0xffff_ffff_810f_4043),
        641,
        Location::Reg(6),
    );
}

#[test]
fn debian_72_pidfd_create() {
    check_pidfd_create(
        "7.2-cloud",
        (0xffff_ffff_813a_cfe1, 0xffff_ffff_813a_d007),
        712,
        Location::Reg(3),
    );
}
