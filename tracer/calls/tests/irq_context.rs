//! Interrupt subtrees in a flat call tree (the BPF engine's): calls that ran in hardirq
//! or softirq context inside a task's tree are marked where they begin and end, carry
//! their context in saved calls, and the time they took is said at the calls they
//! interrupted.

mod common;

use common::Ev::{Enter, Exit};
use dcg_calls::funcs::FuncTable;
use dcg_calls::record::{CallRecord, Context};
use dcg_calls::sink::Task;
use dcg_calls::tree::{CallTree, Shape};
use dcg_dbset::DbSet;

fn task() -> Task<'static> {
    Task {
        key: 9,
        pid: Some(9),
        comm: Some("cat"),
        cpu: Some(1),
    }
}

/// `outer` (task) calls `inner`, during which a timer interrupt runs `tick` → `wall`;
/// then a softirq `run_timers` on the way out. Times in ns.
fn trace(json: bool) -> String {
    let set = DbSet::new(Vec::new());
    let mut sinks = common::sinks(json);
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let (task_ctx, irq, softirq) = (
        Some(Context::Task),
        Some(Context::Irq),
        Some(Context::Softirq),
    );
    let events = [
        Enter("outer", 0, task_ctx),
        Enter("inner", 1_000, task_ctx),
        Enter("tick", 2_000, irq),
        Enter("wall", 2_500, irq),
        Exit("wall", 3_000),
        Exit("tick", 5_000),
        Exit("inner", 9_000),
        Enter("run_timers", 9_500, softirq),
        Exit("run_timers", 10_500),
        Exit("outer", 12_000),
    ];
    common::drive(&mut tree, &mut sinks, task(), &events)
}

#[test]
fn interrupt_subtrees_are_marked_in_text() {
    let text = trace(false);
    let body: Vec<String> = text
        .lines()
        .map(|l| l.split('|').skip(1).collect::<Vec<_>>().join("|"))
        .map(|l| l.trim_end().to_string())
        .collect();
    let want = [
        "  outer() {",
        "    inner() {",
        "  irq",
        "      tick() {",
        "        wall();",
        "      } /* tick */",
        "",
        "    } /* inner */ /* irqs 3.000 us */",
        "  softirq",
        "    run_timers();",
        "",
        "  } /* outer */ /* irqs 4.000 us */",
    ];
    assert_eq!(body, want, "{text}");
    assert!(text.contains(" 1)   ==========> |  irq"), "{text}");
    assert!(text.contains(" 1)   <========== |"), "{text}");
}

#[test]
fn saved_calls_carry_the_context_and_the_interrupts_time() {
    let recs: Vec<CallRecord> = trace(true)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by = |f: &str| recs.iter().find(|r| r.func == f).unwrap();
    assert_eq!(by("outer").ctx, Some(Context::Task));
    assert_eq!(by("tick").ctx, Some(Context::Irq));
    assert_eq!(by("wall").ctx, Some(Context::Irq));
    assert_eq!(by("run_timers").ctx, Some(Context::Softirq));
    assert_eq!(by("inner").irq_ns, Some(3_000));
    assert_eq!(by("outer").irq_ns, Some(4_000));
    assert_eq!(by("tick").irq_ns, None);
    assert_eq!(by("tick").parent, Some(by("inner").id));
}
