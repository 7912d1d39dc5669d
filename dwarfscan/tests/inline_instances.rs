//! Inline instances checked against the DWARF itself: every `DW_TAG_inlined_subroutine`
//! of the C corpus as `llvm-dwarfdump` prints it (ranges, entry pc, call line, and the
//! parameters' registers, constants or absence at the entry pc), and known kernel cases (pidfd_create
//! inlined in `__x64_sys_pidfd_open` on Debian 6.12 and 7.2, with `DCG_KERNEL_TESTS=1`).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sigdb::{Db, Instance, Location};

fn scan_with_instances(inputs: &[PathBuf], which: dwarfscan::InlineInstances) -> Db {
    let inputs: Vec<_> = inputs.iter().map(dwarfscan::Input::new).collect();
    let opts = dwarfscan::Options {
        inline_instances: which,
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

/// What `llvm-dwarfdump` says a parameter of an inlined copy holds at the copy's entry pc:
/// `Some(location)` for a register, a constant or nothing (optimized out), `None` for an
/// expression this check does not model.
type Expected = Option<Location>;

/// Parameters (name, expected location) of each inlined copy by (callee, entry pc, ranges).
type ParamsByInstance = HashMap<(String, u64, Vec<(u64, u64)>), Vec<(String, Expected)>>;

/// The parameters of every inlined subroutine in `llvm-dwarfdump --debug-info` output,
/// keyed by (callee, entry pc, ranges) as [`dwarfdump_instances`] sees them, with the
/// location each `DW_TAG_formal_parameter` gives at the entry pc.
fn dwarfdump_params(elf: &Path) -> ParamsByInstance {
    let out = Command::new("llvm-dwarfdump")
        .arg("--debug-info")
        .arg(elf)
        .output()
        .expect("llvm-dwarfdump");
    let text = String::from_utf8_lossy(&out.stdout);
    // The DIEs: (indent, tag, attribute lines).
    let mut dies: Vec<(usize, String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some((addr, rest)) = line.split_once(':') {
            if addr.starts_with("0x")
                && (rest.trim().starts_with("DW_TAG_") || rest.trim() == "NULL")
            {
                let indent = rest.len() - rest.trim_start().len();
                dies.push((indent, rest.trim().to_string(), Vec::new()));
                continue;
            }
        }
        if let Some(d) = dies.last_mut() {
            if !t.is_empty() {
                d.2.push(t.to_string());
            }
        }
    }
    let reg = |e: &str| -> Expected {
        let e = e.trim().trim_end_matches(')');
        let op = e.split_whitespace().next()?;
        if e.contains(',') {
            return None;
        }
        op.strip_prefix("DW_OP_reg")?
            .parse()
            .ok()
            .map(Location::Reg)
    };
    let mut all = HashMap::new();
    for (k, (indent, tag, attrs)) in dies.iter().enumerate() {
        if tag != "DW_TAG_inlined_subroutine" {
            continue;
        }
        let get = |name: &str| attrs.iter().find(|a| a.starts_with(name));
        let origin = |a: &String| a.split('"').nth(1).unwrap_or("").to_string();
        let val = |a: &String| {
            a.split('(')
                .nth(1)
                .map(|v| v.trim_end_matches(')').to_string())
        };
        let callee = get("DW_AT_abstract_origin").map(origin).unwrap_or_default();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        if let (Some(lo), Some(hi)) = (get("DW_AT_low_pc"), get("DW_AT_high_pc")) {
            let (lo, hi) = (hex(&val(lo).unwrap()), hex(&val(hi).unwrap()));
            ranges.push((lo, if hi == lo { lo + 1 } else { hi }));
        }
        for a in attrs.iter().filter(|a| a.starts_with('[')) {
            let (x, y) = a.trim_start_matches('[').split_once(", ").unwrap();
            ranges.push((hex(x), hex(y.split(')').next().unwrap())));
        }
        ranges.retain(|&(a, b)| b > a);
        let Some(&(first, _)) = ranges.first() else {
            continue;
        };
        let entry = get("DW_AT_entry_pc")
            .and_then(val)
            .map_or(first, |v| hex(&v));
        // Its formal parameters: the DIEs one level deeper, up to the next one at its
        // level or above.
        let mut params = Vec::new();
        let child = dies[k + 1..].iter().map(|d| d.0).find(|&i| i > *indent);
        for (i2, tag2, attrs2) in dies[k + 1..].iter().take_while(|d| d.0 > *indent) {
            if Some(*i2) != child || tag2 != "DW_TAG_formal_parameter" {
                continue;
            }
            let name = attrs2
                .iter()
                .find(|a| a.starts_with("DW_AT_abstract_origin"))
                .map(origin)
                .unwrap_or_default();
            let loc = attrs2.iter().position(|a| a.starts_with("DW_AT_location"));
            let konst = attrs2.iter().find(|a| a.starts_with("DW_AT_const_value"));
            let expected = if let Some(c) = konst {
                val(c).and_then(|v| v.parse().ok()).map(Location::Const)
            } else if let Some(at) = loc {
                let first_line = &attrs2[at];
                if first_line.contains("DW_OP_") {
                    // A single expression, valid everywhere.
                    reg(first_line.split_once('(').unwrap().1)
                } else {
                    // A location list: the entry covering the entry pc.
                    let entries = attrs2[at + 1..].iter().take_while(|a| a.starts_with('['));
                    let hit = entries.filter_map(|e| {
                        let (r, expr) = e.split_once("): ")?;
                        let (x, y) = r.trim_start_matches('[').split_once(", ")?;
                        (hex(x) <= entry && entry < hex(y)).then(|| expr.to_string())
                    });
                    match hit.last() {
                        Some(expr) => reg(&expr),
                        None => Some(Location::OptimizedOut),
                    }
                }
            } else {
                Some(Location::OptimizedOut)
            };
            params.push((name, expected));
        }
        all.insert((callee, entry, ranges), params);
    }
    all
}

#[test]
fn corpus_instances_match_dwarfdump() {
    // The oracle is part of the suite (.ci/install-deps.sh installs llvm): no silent skip.
    assert!(
        Command::new("llvm-dwarfdump")
            .arg("--version")
            .output()
            .is_ok(),
        "llvm-dwarfdump not found: install Debian's llvm package (.ci/install-deps.sh)"
    );
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
    let db = scan_with_instances(std::slice::from_ref(&exe), dwarfscan::InlineInstances::All);
    let mut ours: Vec<Seen> = db.instances().map(|i| seen(&i)).collect();
    let mut theirs = dwarfdump_instances(&exe);
    ours.sort();
    theirs.sort();
    assert!(
        theirs.iter().any(|t| t.0 == "inline_only_add"),
        "{theirs:?}"
    );
    assert_eq!(ours, theirs);
    // Parameter locations at entry, where the DWARF says a register, a constant or
    // nothing; parameters without a DIE in the copy are optimized out.
    let params = dwarfdump_params(&exe);
    let mut compared = 0;
    for i in db.instances() {
        let key = (
            i.callee().unwrap().name().to_string(),
            i.entry_pc(),
            i.ranges().collect::<Vec<_>>(),
        );
        let want = &params[&key];
        for (p, loc) in i.params() {
            match want.iter().find(|(n, _)| n == p.name()) {
                Some((_, Some(w))) => {
                    assert_eq!(loc, *w, "{i:?} {}", p.name());
                    compared += 1;
                }
                Some((_, None)) => {}
                None => assert_eq!(loc, Location::OptimizedOut, "{i:?} {}", p.name()),
            }
        }
    }
    assert!(compared > 0, "no parameter location compared");
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
    // The packed instances read the same one by one and by caller (sigdb's proptests
    // cover many blocks; the corpus holds a few).
    let all: Vec<Seen> = db.instances().map(|i| seen(&i)).collect();
    for (k, want) in all.iter().enumerate() {
        assert_eq!(&seen(&db.instance(k).unwrap()), want);
    }
    for f in db.functions() {
        let inside: Vec<u32> = f.inline_instances().map(|i| i.index()).collect();
        let want: Vec<u32> = db
            .instances()
            .filter(|i| i.caller_index() == f.index())
            .map(|i| i.index())
            .collect();
        assert_eq!(inside, want, "{f:?}");
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
    // What dwarfscan records by default: pidfd_create, a .c function the compiler
    // inlined, is worth tracing.
    let db = scan_with_instances(
        &[debian_vmlinux(release)],
        dwarfscan::InlineInstances::Traceable,
    );
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
