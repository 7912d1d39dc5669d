//! Interrupt subtrees in a flat call tree (the BPF engine's): calls that ran in hardirq
//! or softirq context inside a task's tree are marked where they begin and end, carry
//! their context in saved calls, and the time they took is said at the calls they
//! interrupted.

use dcg_calls::funcs::FuncTable;
use dcg_calls::record::{CallRecord, Context};
use dcg_calls::sink::{Output, Sinks, Task};
use dcg_calls::tree::{ArgsIn, CallTree, Entry, Exit, Shape};
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
    let events: &[(&str, bool, u64, Option<Context>)] = &[
        ("outer", true, 0, Some(Context::Task)),
        ("inner", true, 1_000, Some(Context::Task)),
        ("tick", true, 2_000, Some(Context::Irq)),
        ("wall", true, 2_500, Some(Context::Irq)),
        ("wall", false, 3_000, None),
        ("tick", false, 5_000, None),
        ("inner", false, 9_000, None),
        ("run_timers", true, 9_500, Some(Context::Softirq)),
        ("run_timers", false, 10_500, None),
        ("outer", false, 12_000, None),
    ];
    for &(name, entry, t, ctx) in events {
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
                ctx,
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
    String::from_utf8(out).unwrap()
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
