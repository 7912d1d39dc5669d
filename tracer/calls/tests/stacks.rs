//! A top-level call's stack (`--stack`), delivered before its entry: printed above its
//! tree outermost first, and carried by its saved record innermost first; calls below
//! the top and later trees carry none.

mod common;

use common::Ev::{Enter, Exit, Stack};
use dcg_calls::funcs::FuncTable;
use dcg_calls::saved_format::{CallRecord, StackFrame};
use dcg_calls::sink::Task;
use dcg_calls::tree::{CallTree, Shape};
use dcg_dbset::DbSet;

fn frame(func: &str, offset: Option<u64>, module: Option<&str>) -> StackFrame {
    StackFrame {
        func: func.into(),
        offset,
        module: module.map(Into::into),
        inline: offset.is_none(),
        cut: false,
    }
}

fn trace(json: bool) -> (String, Vec<StackFrame>) {
    let stack = vec![
        frame("do_sys_open", None, None),
        frame("__x64_sys_openat", Some(0x55), None),
        frame("helper", Some(0x1c), Some("ext4")),
        frame("entry_SYSCALL_64_after_hwframe", Some(0x76), None),
    ];
    let set = DbSet::new(Vec::new());
    let mut sinks = common::sinks(json);
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let task = Task {
        key: 7,
        pid: Some(7),
        comm: Some("cat"),
        cpu: Some(0),
        process: None,
    };
    let events = [
        Stack(&stack),
        Enter("outer", 0, None),
        Enter("inner", 1_000, None),
        Exit("inner", 2_000),
        Exit("outer", 3_000),
        Enter("outer", 4_000, None),
        Exit("outer", 5_000),
    ];
    (common::drive(&mut tree, &mut sinks, task, &events), stack)
}

#[test]
fn text_prints_it_above_the_tree_outermost_first() {
    let (text, _) = trace(false);
    let lines: Vec<&str> = text.lines().collect();
    let body = |l: &str| l.split_once("|  ").map(|(_, b)| b.to_string()).unwrap();
    let at = lines.iter().position(|l| l.contains("outer() {")).unwrap();
    let above: Vec<String> = lines[..at].iter().map(|l| body(l)).collect();
    assert_eq!(
        above,
        [
            "/* stack, outermost first: */",
            "/*   entry_SYSCALL_64_after_hwframe+0x76 */",
            "/*   helper+0x1c [ext4] */",
            "/*   __x64_sys_openat+0x55 */",
            "/*   do_sys_open (inlined) */",
        ],
        "{text}"
    );
    // Once: the second tree has none.
    assert_eq!(text.matches("/* stack").count(), 1, "{text}");
}

#[test]
fn saved_calls_carry_it_on_the_top_level_call() {
    let (json, stack) = trace(true);
    let recs: Vec<CallRecord> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stacks: Vec<(&str, Option<&Vec<StackFrame>>)> = recs
        .iter()
        .map(|r| (r.func.as_str(), r.stack.as_ref()))
        .collect();
    assert_eq!(
        stacks,
        [("inner", None), ("outer", Some(&stack)), ("outer", None)],
        "{json}"
    );
}
