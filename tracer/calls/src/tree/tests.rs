//! The call tree's own tests: shapes, depth limits, error origins, held entries.

use super::*;
use dcg_dbset::DbSet;

/// A sink that writes one line per event: kind, name, id, parent, depth, value.
struct Log;

impl Sink for Log {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        use std::io::Write;
        writeln!(
            out,
            "{:?} {} id={} parent={:?} depth={} ret={:?}{}{}{}",
            c.kind,
            c.func.name,
            c.id as i64,
            c.parent,
            c.depth,
            c.ret,
            match c.origin {
                Some(o) => format!(" origin={}:{}", o.id, o.func.name),
                None => String::new(),
            },
            if c.unfinished { " unfinished" } else { "" },
            if c.entry_missing {
                " entry-missing"
            } else {
                ""
            },
        )
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }
}

fn task(key: u64) -> Task<'static> {
    Task {
        key,
        pid: Some(key as u32),
        comm: Some("t"),
        cpu: Some(0),
        process: None,
    }
}

fn entry(tree: &mut CallTree<'_>, key: u64, name: &'static str, leaf: bool) -> Entry<'static> {
    Entry {
        task: task(key),
        depth: 0,
        func: tree.funcs.intern(name, None),
        name,
        module: None,
        args: ArgsIn::None,
        ret: None,
        leaf,
        time_ns: Some(100),
        duration_ns: None,
        callsite: None,
        site: None,
        comment: None,
        layout: None,
        ctx: None,
    }
}

fn exit(func: FuncId, key: u64, ret: Option<&'static str>) -> Exit<'static> {
    Exit {
        outs: None,
        task: task(key),
        depth: 0,
        func: Some(func),
        ret: ret.map(|r| RetIn::Rendered {
            text: r,
            raw: None,
            error: false,
        }),
        time_ns: Some(150),
        duration_ns: None,
        layout: None,
    }
}

#[test]
fn flat_calls_open_on_a_child_and_close_unfinished_at_the_end() {
    let set = DbSet::new(Vec::new());
    let mut t = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let mut out = Vec::new();
    let (a, b, c) = (
        entry(&mut t, 1, "a", false),
        entry(&mut t, 1, "b", false),
        entry(&mut t, 1, "c", false),
    );
    t.enter(&a, &mut Log, &mut out).unwrap();
    t.enter(&b, &mut Log, &mut out).unwrap();
    t.exit(&exit(b.func, 1, Some("1")), &mut Log, &mut out)
        .unwrap();
    t.enter(&c, &mut Log, &mut out).unwrap();
    // A return whose entry was never seen, on another task.
    t.exit(&exit(b.func, 2, Some("7")), &mut Log, &mut out)
        .unwrap();
    t.finish(&mut Log, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Open a id=0 parent=None depth=0 ret=None\n\
         Leaf b id=1 parent=Some(0) depth=1 ret=Some(\"1\")\n\
         Close b id=-1 parent=None depth=0 ret=Some(\"7\") entry-missing\n\
         Leaf c id=2 parent=Some(0) depth=1 ret=None unfinished\n\
         Close a id=0 parent=None depth=0 ret=None unfinished\n"
    );
    assert_eq!(t.counts().calls, 1);
    assert_eq!(t.counts().unfinished, 2);
    assert_eq!(t.counts().lone_returns, 1);
}

fn failing(func: FuncId, key: u64, ret: &'static str) -> Exit<'static> {
    Exit {
        outs: None,
        ret: Some(RetIn::Rendered {
            text: ret,
            raw: None,
            error: true,
        }),
        ..exit(func, key, None)
    }
}

#[test]
fn flat_error_origins_reach_the_top_level_call() {
    let set = DbSet::new(Vec::new());
    let mut t = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let mut out = Vec::new();
    let call = |t: &mut CallTree<'_>, name| entry(t, 1, name, false);
    let (a, b, c, d, e) = (
        call(&mut t, "a"),
        call(&mut t, "b"),
        call(&mut t, "c"),
        call(&mut t, "d"),
        call(&mut t, "e"),
    );
    // a { b { c = -EIO; d = -ENOENT } = ERR_PTR(-ENOENT); e = -ENOENT } = -ENOENT
    t.enter(&a, &mut Log, &mut out).unwrap();
    t.enter(&b, &mut Log, &mut out).unwrap();
    t.enter(&c, &mut Log, &mut out).unwrap();
    t.exit(&failing(c.func, 1, "-EIO"), &mut Log, &mut out)
        .unwrap();
    t.enter(&d, &mut Log, &mut out).unwrap();
    t.exit(&failing(d.func, 1, "-ENOENT"), &mut Log, &mut out)
        .unwrap();
    t.exit(&failing(b.func, 1, "ERR_PTR(-ENOENT)"), &mut Log, &mut out)
        .unwrap();
    t.enter(&e, &mut Log, &mut out).unwrap();
    t.exit(&failing(e.func, 1, "-ENOENT"), &mut Log, &mut out)
        .unwrap();
    t.exit(&failing(a.func, 1, "-ENOENT"), &mut Log, &mut out)
        .unwrap();
    // A top-level leaf that fails is its own origin; one that succeeds has none.
    let f = call(&mut t, "f");
    t.enter(&f, &mut Log, &mut out).unwrap();
    t.exit(&failing(f.func, 1, "-EPERM"), &mut Log, &mut out)
        .unwrap();
    t.enter(&f, &mut Log, &mut out).unwrap();
    t.exit(&exit(f.func, 1, Some("0")), &mut Log, &mut out)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Open a id=0 parent=None depth=0 ret=None\n\
         Open b id=1 parent=Some(0) depth=1 ret=None\n\
         Leaf c id=2 parent=Some(1) depth=2 ret=Some(\"-EIO\")\n\
         Leaf d id=3 parent=Some(1) depth=2 ret=Some(\"-ENOENT\")\n\
         Close b id=1 parent=Some(0) depth=1 ret=Some(\"ERR_PTR(-ENOENT)\")\n\
         Leaf e id=4 parent=Some(0) depth=1 ret=Some(\"-ENOENT\")\n\
         Close a id=0 parent=None depth=0 ret=Some(\"-ENOENT\") origin=3:d\n\
         Leaf f id=5 parent=None depth=0 ret=Some(\"-EPERM\") origin=5:f\n\
         Leaf f id=6 parent=None depth=0 ret=Some(\"0\")\n"
    );
}

#[test]
fn shaped_error_origins_follow_depths() {
    let set = DbSet::new(Vec::new());
    let mut t = CallTree::new(FuncTable::new(&set), Shape::Shaped, 0);
    let mut out = Vec::new();
    let at = |t: &mut CallTree<'_>, name, depth, leaf| Entry {
        depth,
        ..entry(t, 1, name, leaf)
    };
    let close = |depth, ret| Exit {
        outs: None,
        depth,
        func: None,
        ..failing(0, 1, ret)
    };
    // outer { inner { x = -EINVAL } = -ENOENT } = -ENOENT: the error changed in inner.
    let outer = at(&mut t, "outer", 0, false);
    let inner = at(&mut t, "inner", 1, false);
    let x = Entry {
        ret: Some(RetIn::Rendered {
            text: "-EINVAL",
            raw: None,
            error: true,
        }),
        ..at(&mut t, "x", 2, true)
    };
    t.enter(&outer, &mut Log, &mut out).unwrap();
    t.enter(&inner, &mut Log, &mut out).unwrap();
    t.enter(&x, &mut Log, &mut out).unwrap();
    t.exit(&close(1, "-ENOENT"), &mut Log, &mut out).unwrap();
    t.exit(&close(0, "-ENOENT"), &mut Log, &mut out).unwrap();
    // Live tracing holds entries back: a held call that returns at once is a leaf, and
    // its error still reaches the top-level call.
    t.hold_opens(true);
    t.enter(&outer, &mut Log, &mut out).unwrap();
    t.enter(&inner, &mut Log, &mut out).unwrap();
    t.exit(&close(1, "ERR_PTR(-EIO)"), &mut Log, &mut out)
        .unwrap();
    t.exit(&close(0, "-EIO"), &mut Log, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.ends_with(
            "Leaf inner id=4 parent=Some(3) depth=1 ret=Some(\"ERR_PTR(-EIO)\")\n\
             Close outer id=3 parent=None depth=0 ret=Some(\"-EIO\") origin=4:inner\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Close outer id=0 parent=None depth=0 ret=Some(\"-ENOENT\") origin=1:inner\n"
        ),
        "{text}"
    );
}

#[test]
fn flat_depth_limit_hides_deeper_calls_from_printers_only() {
    let set = DbSet::new(Vec::new());
    let mut t = CallTree::new(FuncTable::new(&set), Shape::Flat, 1);
    let mut out = Vec::new();
    let (a, b) = (entry(&mut t, 1, "a", false), entry(&mut t, 1, "b", false));
    t.enter(&a, &mut Log, &mut out).unwrap();
    t.enter(&b, &mut Log, &mut out).unwrap();
    t.exit(&exit(b.func, 1, None), &mut Log, &mut out).unwrap();
    t.exit(&exit(a.func, 1, None), &mut Log, &mut out).unwrap();
    // b is deeper than --depth 1: a never opens, and prints as a leaf.
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Leaf b id=1 parent=Some(0) depth=1 ret=None\n\
         Leaf a id=0 parent=None depth=0 ret=None\n"
    );
    assert_eq!(t.counts().top_level, 1);
}

#[test]
fn shaped_held_entry_returning_at_once_is_a_leaf_with_its_probe_value() {
    let set = DbSet::new(Vec::new());
    let mut t = CallTree::new(FuncTable::new(&set), Shape::Shaped, 0);
    t.hold_opens(true);
    let mut out = Vec::new();
    let outer = entry(&mut t, 1, "outer", false);
    let inner = Entry {
        depth: 1,
        ..entry(&mut t, 1, "inner", false)
    };
    t.enter(&outer, &mut Log, &mut out).unwrap();
    t.enter(&inner, &mut Log, &mut out).unwrap();
    // inner's exit-probe event, then its `}`.
    t.pending_ret(1, inner.func, 5, &mut Log, &mut out).unwrap();
    let close = |depth| Exit {
        outs: None,
        depth,
        func: None,
        ret: None,
        ..exit(0, 1, None)
    };
    t.exit(&close(1), &mut Log, &mut out).unwrap();
    t.exit(&close(0), &mut Log, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Open outer id=0 parent=None depth=0 ret=None\n\
         Leaf inner id=1 parent=Some(0) depth=1 ret=Some(\"0x5 (raw)\")\n\
         Close outer id=0 parent=None depth=0 ret=None\n"
    );
}

/// A sink that wants the arguments at close (as the saved-calls records do) and writes
/// each call's kind, name and arguments.
struct ArgsLog;

impl Sink for ArgsLog {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        use std::io::Write;
        let args: Vec<String> = c.args.iter().map(|(n, v)| format!("{n}={v}")).collect();
        writeln!(out, "{:?} {}({})", c.kind, c.func.name, args.join(", "))
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }
}

/// An entry probe's arguments that come after the call's `{` with an interrupt's calls
/// between (they released the entry) are the open call's, not the next call's; an event
/// before its entry inside a call of the same function that had its own is the next
/// call's (recursion).
#[test]
fn shaped_entry_events_after_an_interrupt_stay_with_their_call() {
    let set = DbSet::new(Vec::new());
    let mut t = CallTree::new(FuncTable::new(&set), Shape::Shaped, 0);
    t.hold_opens(true);
    let mut out = Vec::new();
    let args = |v: &str| {
        let mut a = ArgList::default();
        a.push("a", v);
        a
    };
    let open = entry(&mut t, 1, "open", false);
    let f = open.func;
    let irq = Entry {
        depth: 1,
        ..entry(&mut t, 1, "run_timer_softirq", true)
    };
    let close = |depth| Exit {
        outs: None,
        depth,
        func: None,
        ret: None,
        ..exit(0, 1, None)
    };
    // After the `{`, an interrupt between.
    t.enter(&open, &mut ArgsLog, &mut out).unwrap();
    t.enter(&irq, &mut ArgsLog, &mut out).unwrap();
    t.pending_args(1, f, args("1"), &mut ArgsLog, &mut out)
        .unwrap();
    t.exit(&close(0), &mut ArgsLog, &mut out).unwrap();
    // After the `{`, nothing between.
    t.enter(&open, &mut ArgsLog, &mut out).unwrap();
    t.pending_args(1, f, args("2"), &mut ArgsLog, &mut out)
        .unwrap();
    t.exit(&close(0), &mut ArgsLog, &mut out).unwrap();
    // Before each entry, the second a recursive call.
    t.pending_args(1, f, args("3"), &mut ArgsLog, &mut out)
        .unwrap();
    t.enter(&open, &mut ArgsLog, &mut out).unwrap();
    t.enter(&irq, &mut ArgsLog, &mut out).unwrap();
    t.pending_args(1, f, args("4"), &mut ArgsLog, &mut out)
        .unwrap();
    let inner = Entry { depth: 1, ..open };
    t.enter(&inner, &mut ArgsLog, &mut out).unwrap();
    t.exit(&close(1), &mut ArgsLog, &mut out).unwrap();
    t.exit(&close(0), &mut ArgsLog, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Open open()\n\
         Leaf run_timer_softirq()\n\
         Close open(a=1)\n\
         Leaf open(a=2)\n\
         Open open(a=3)\n\
         Leaf run_timer_softirq()\n\
         Leaf open(a=4)\n\
         Close open(a=3)\n"
    );
}
