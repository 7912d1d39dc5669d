//! `--stack` with function_graph's binary records: a stack delivered before a top-level
//! call's entry record is that call's, in the text (outermost first, above the call) and
//! in saved calls (innermost first); a nested call of the same function gets none.

mod common;

use dcg_calls::saved_format::StackFrame;
use dcg_dbset::DbSet;

fn frame(func: &str, offset: u64) -> StackFrame {
    StackFrame {
        func: func.into(),
        offset: Some(offset),
        module: None,
        inline: false,
        cut: false,
    }
}

fn trace(json: bool) -> String {
    let set = DbSet::new(Vec::new());
    let (base, syms) = (common::KBASE, common::open_and_lookup());
    let mut dec = common::raw_decoder(&set, json);
    let entry = |func: u64, ts: u64, depth: u32| common::graph_entry(7, func, ts, depth);
    let exit = |func: u64, calltime: u64, rettime: u64, depth: u32| {
        common::graph_exit(7, func, rettime, (calltime, rettime), depth)
    };
    let mut out = Vec::new();
    for round in 0..2u64 {
        let t = round * 10_000;
        dec.stack_of_next_root(
            7,
            vec![
                frame("do_sys_open", 0x40 + round),
                frame("do_syscall_64", 0x80),
            ]
            .into(),
        );
        for r in [
            entry(base, t, 0),
            entry(base + 0x1000, t + 100, 1),
            entry(base, t + 200, 2),
            exit(base, t + 200, t + 300, 2),
            exit(base + 0x1000, t + 100, t + 400, 1),
            exit(base, t, t + 500, 0),
        ] {
            dec.feed_record(&r, 0, 0, &syms, &mut out).unwrap();
        }
    }
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn each_top_level_call_carries_its_stack() {
    let text = trace(false);
    assert_eq!(
        text.matches("/* stack, outermost first: */").count(),
        2,
        "{text}"
    );
    let first = text.find("do_syscall_64+0x80").expect(&text);
    let second = text.find("do_sys_open+0x40").expect(&text);
    assert!(
        first < second && second < text.find("open() {").expect(&text),
        "{text}"
    );
    assert!(text.contains("do_sys_open+0x41"), "{text}");

    let calls: Vec<dcg_calls::saved_format::CallRecord> = trace(true)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tops: Vec<_> = calls.iter().filter(|c| c.parent.is_none()).collect();
    assert_eq!(tops.len(), 2);
    for (i, c) in tops.iter().enumerate() {
        let s = c
            .stack
            .as_ref()
            .unwrap_or_else(|| panic!("no stack: {c:?}"));
        assert_eq!(s[0], frame("do_sys_open", 0x40 + i as u64));
        assert_eq!(s[1].func, "do_syscall_64");
    }
    assert!(calls
        .iter()
        .filter(|c| c.parent.is_some())
        .all(|c| c.stack.is_none()));
}
