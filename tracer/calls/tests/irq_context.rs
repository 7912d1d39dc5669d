//! Interrupt subtrees in a flat call tree (the BPF engine's): calls that ran in hardirq
//! or softirq context inside a task's tree are marked where they begin and end, carry
//! their context in saved calls, and the time they took is said at the calls they
//! interrupted.

mod common;

use common::Ev::{Enter, Exit};
use dcg_calls::funcs::FuncTable;
use dcg_calls::saved_format::{CallRecord, Context};
use dcg_calls::sink::Task;
use dcg_calls::tree::{CallTree, Shape};
use dcg_dbset::DbSet;

fn task() -> Task<'static> {
    Task {
        key: 9,
        pid: Some(9),
        comm: Some("cat"),
        cpu: Some(1),
        process: None,
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
    let body = common::body(&text);
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
    saved_calls_say(&trace(true));
}

/// The saved calls of the trace above (JSON lines): each call's context, the interrupts'
/// time at the calls they interrupted, the interrupt under the call it interrupted.
fn saved_calls_say(json: &str) {
    let recs: Vec<CallRecord> = json
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

/// The same calls from function_graph's binary records (`trace_pipe_raw`): each record's
/// `common_flags` (hardirq 0x08, softirq 0x10) gives the context, depths the nesting.
fn fgraph_trace(json: bool) -> String {
    use dcg_dbset::kallsyms::Kallsyms;
    use dcg_ringbuf::graph::GraphRecord;

    let set = DbSet::new(Vec::new());
    let names = ["outer", "inner", "tick", "wall", "run_timers"];
    let map: String = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{:x} T {n}\n", 0xffff_ffff_8100_0000u64 + 0x1000 * i as u64))
        .collect();
    let syms = Kallsyms::parse(&map);
    let addr = |f: &str| {
        0xffff_ffff_8100_0000u64 + 0x1000 * names.iter().position(|n| *n == f).unwrap() as u64
    };
    let mut dec = common::raw_decoder(&set, json);
    dec.mark_contexts();
    let (task_flags, irq, softirq) = (0x01u8, 0x09u8, 0x10u8);
    let enter = |f: &str, ts: u64, depth: u32, flags: u8| GraphRecord::Entry {
        pid: 9,
        ts,
        func: addr(f),
        depth,
        retaddr: None,
        args: Vec::new(),
        flags,
    };
    let exit = |f: &str, calltime: u64, rettime: u64, depth: u32, flags: u8| GraphRecord::Exit {
        pid: 9,
        ts: rettime,
        func: addr(f),
        depth,
        retval: None,
        calltime,
        rettime,
        flags,
    };
    let records = [
        enter("outer", 0, 0, task_flags),
        enter("inner", 1_000, 1, task_flags),
        enter("tick", 2_000, 2, irq),
        enter("wall", 2_500, 3, irq),
        exit("wall", 2_500, 3_000, 3, irq),
        exit("tick", 2_000, 5_000, 2, irq),
        exit("inner", 1_000, 9_000, 1, task_flags),
        enter("run_timers", 9_500, 1, softirq),
        exit("run_timers", 9_500, 10_500, 1, softirq),
        exit("outer", 0, 12_000, 0, task_flags),
    ];
    let mut out = Vec::new();
    for r in &records {
        dec.feed_record(r, 1, 0, &syms, &mut out).unwrap();
    }
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn function_graph_records_give_the_context() {
    let text = fgraph_trace(false);
    assert!(text.contains(" 1)   ==========> |  irq"), "{text}");
    assert!(text.contains(" 1)   ==========> |  softirq"), "{text}");
    assert_eq!(text.matches("<========== |").count(), 2, "{text}");
    assert!(text.contains("} /* inner */ /* irqs 3.000 us */"), "{text}");
    assert!(text.contains("} /* outer */ /* irqs 4.000 us */"), "{text}");
    saved_calls_say(&fgraph_trace(true));
}
