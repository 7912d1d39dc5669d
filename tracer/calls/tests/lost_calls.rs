//! Calls a source lost (the BPF engine: runs of its program the kernel skipped while it
//! recorded a call) are said where they were lost and at the top of the tree, in text and
//! in saved calls; counts tell the lost calls and the trees that lost some.

use dcg_calls::funcs::FuncTable;
use dcg_calls::record::CallRecord;
use dcg_calls::sink::{Output, Sinks, Task};
use dcg_calls::tree::{ArgsIn, CallTree, Entry, Exit, Shape};
use dcg_dbset::DbSet;

fn task() -> Task<'static> {
    Task {
        key: 7,
        pid: Some(7),
        comm: Some("cat"),
        cpu: Some(0),
    }
}

/// Two trees of `outer` → `inner` (→ `leaf`); in the first, 3 calls are lost while
/// `inner` is recorded and 2 while `leaf` is; the second loses nothing. Returns the
/// output and (lost calls, lossy trees, lost outside a tree).
fn trace(json: bool) -> (String, (u64, u64, u64)) {
    let set = DbSet::new(Vec::new());
    let (mut sinks, _) = Sinks::for_output(&Output {
        json,
        errors_only: false,
        color: false,
        cpu_width: 1,
        probe_notes: false,
        threads: false,
        report: false,
    });
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let mut out = Vec::new();
    // (function or "" for a loss of `n`, entry, time)
    let events: &[(&str, bool, u64)] = &[
        ("outer", true, 0),
        ("inner", true, 1_000),
        ("", false, 3),
        ("leaf", true, 2_000),
        ("", false, 2),
        ("leaf", false, 3_000),
        ("inner", false, 4_000),
        ("outer", false, 5_000),
        ("outer", true, 6_000),
        ("inner", true, 7_000),
        ("inner", false, 8_000),
        ("outer", false, 9_000),
        ("", false, 1),
    ];
    for &(name, entry, t) in events {
        if name.is_empty() {
            tree.lost(task().key, t);
            continue;
        }
        let func = tree.funcs.intern(name, None);
        if entry {
            let e = Entry {
                task: task(),
                depth: 0,
                func,
                name,
                module: None,
                args: ArgsIn::None,
                ret: None,
                leaf: false,
                time_ns: Some(t),
                duration_ns: None,
                callsite: None,
                site: None,
                comment: None,
                layout: None,
                ctx: None,
            };
            tree.enter(&e, &mut sinks, &mut out).unwrap();
        } else {
            let x = Exit {
                task: task(),
                depth: 0,
                func: Some(func),
                ret: None,
                time_ns: Some(t),
                duration_ns: None,
                layout: None,
            };
            tree.exit(&x, &mut sinks, &mut out).unwrap();
        }
    }
    tree.finish(&mut sinks, &mut out).unwrap();
    let c = tree.counts();
    (
        String::from_utf8(out).unwrap(),
        (c.lost_calls, c.lossy_trees, c.lost_outside),
    )
}

#[test]
fn text_says_where_and_which_tree() {
    let (text, counts) = trace(false);
    assert_eq!(counts, (5, 1, 1), "{text}");
    let line = |f: &str, n: usize| {
        text.lines()
            .filter(|l| l.contains(f))
            .nth(n)
            .unwrap_or_else(|| panic!("no {f} #{n} in:\n{text}"))
            .to_string()
    };
    // Where: the leaf and inner (its own 3; 5 with the leaf's below it).
    assert!(line("leaf();", 0).ends_with("/* 2 calls lost */"), "{text}");
    assert!(
        line("} /* inner */", 0).ends_with("/* 5 calls lost */"),
        "{text}"
    );
    // The tree's top says its total; the second tree says nothing.
    assert!(
        line("} /* outer */", 0).ends_with("/* 5 calls lost */"),
        "{text}"
    );
    assert!(!line("} /* outer */", 1).contains("lost"), "{text}");
    assert!(!line("inner();", 0).contains("lost"), "{text}");
}

#[test]
fn saved_calls_carry_the_count_within_each_call() {
    let (json, _) = trace(true);
    let recs: Vec<CallRecord> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lost = |f: &str| -> Vec<Option<u64>> {
        recs.iter()
            .filter(|r| r.func == f)
            .map(|r| r.lost)
            .collect()
    };
    assert_eq!(lost("leaf"), [Some(2)]);
    assert_eq!(lost("inner"), [Some(5), None]);
    assert_eq!(lost("outer"), [Some(5), None]);
    // Absent, not null, where nothing was lost.
    assert_eq!(json.matches("\"lost\"").count(), 3, "{json}");
}
