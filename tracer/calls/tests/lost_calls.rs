//! Calls a source lost (the BPF engine: runs of its program the kernel skipped while it
//! recorded a call) are said where they were lost and at the top of the tree, in text and
//! in saved calls; counts tell the lost calls and the trees that lost some.

mod common;

use common::Ev::{Enter, Exit, Lost};
use dcg_calls::funcs::FuncTable;
use dcg_calls::saved_format::CallRecord;
use dcg_calls::sink::Task;
use dcg_calls::tree::{CallTree, Shape};
use dcg_dbset::DbSet;

fn task() -> Task<'static> {
    Task {
        key: 7,
        pid: Some(7),
        comm: Some("cat"),
        cpu: Some(0),
        process: None,
    }
}

/// Two trees of `outer` → `inner` (→ `leaf`); in the first, 3 calls are lost while
/// `inner` is recorded and 2 while `leaf` is; the second loses nothing; 1 is lost after
/// both. Returns the output and (lost calls, lossy trees, lost outside a tree).
fn trace(json: bool) -> (String, (u64, u64, u64)) {
    let set = DbSet::new(Vec::new());
    let mut sinks = common::sinks(json);
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let events = [
        Enter("outer", 0, None),
        Enter("inner", 1_000, None),
        Lost(3),
        Enter("leaf", 2_000, None),
        Lost(2),
        Exit("leaf", 3_000),
        Exit("inner", 4_000),
        Exit("outer", 5_000),
        Enter("outer", 6_000, None),
        Enter("inner", 7_000, None),
        Exit("inner", 8_000),
        Exit("outer", 9_000),
        Lost(1),
    ];
    let out = common::drive(&mut tree, &mut sinks, task(), &events);
    let c = tree.counts();
    (out, (c.lost_calls, c.lossy_trees, c.lost_outside))
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
