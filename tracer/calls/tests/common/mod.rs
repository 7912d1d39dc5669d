//! What the flat-tree tests share: the text or JSON sinks, and a driver that feeds a
//! list of entries, returns and losses of one task to a tree.
// Each test file compiles this module and uses what it needs of it.
#![allow(dead_code)]

use dcg_calls::outputs::OutputSpec;
use dcg_calls::saved_format::Context;
use dcg_calls::sink::{Sink, Sinks, Task};
use dcg_calls::tree::{ArgsIn, CallTree, Entry, Exit};

/// The sinks of `dcg trace` with text (or `--json`) output and nothing else.
pub fn sinks<'a>(json: bool) -> Sinks<'a> {
    dcg_calls::outputs::sinks(&OutputSpec {
        json,
        cpu_width: 1,
        ..OutputSpec::default()
    })
    .0
}

/// One event of a task, times in ns.
pub enum Ev<'a> {
    /// Entry of a function, in a context.
    Enter(&'a str, u64, Option<Context>),
    /// Return of a function.
    Exit(&'a str, u64),
    /// Return of a function with a rendered value and output parameters.
    Return(&'a str, u64, Option<&'a str>, &'a dcg_calls::sink::ArgList),
    /// The source lost calls while recording the innermost open call.
    Lost(u64),
    /// The stack of the task's next top-level call, innermost first.
    Stack(&'a [dcg_calls::saved_format::StackFrame]),
}

/// Feed `events` of `task` to `tree`, then finish it; returns what the sinks wrote.
pub fn drive(
    tree: &mut CallTree<'_>,
    sinks: &mut dyn Sink,
    task: Task<'_>,
    events: &[Ev<'_>],
) -> String {
    let mut out = Vec::new();
    for ev in events {
        match *ev {
            Ev::Lost(n) => tree.lost(task.key, n),
            Ev::Stack(frames) => tree.pending_stack(task.key, frames.into()),
            Ev::Enter(name, t, ctx) => {
                let func = tree.funcs.intern(name, None);
                let e = Entry {
                    task,
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
                tree.enter(&e, sinks, &mut out).unwrap();
            }
            Ev::Exit(name, t) => exit(tree, sinks, task, (name, t, None, None), &mut out),
            Ev::Return(name, t, ret, outs) => {
                exit(tree, sinks, task, (name, t, ret, Some(outs)), &mut out)
            }
        }
    }
    tree.finish(sinks, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A return: function, time, rendered value, output parameters.
type Ret<'a> = (
    &'a str,
    u64,
    Option<&'a str>,
    Option<&'a dcg_calls::sink::ArgList>,
);

fn exit(
    tree: &mut CallTree<'_>,
    sinks: &mut dyn Sink,
    task: Task<'_>,
    (name, t, ret, outs): Ret<'_>,
    out: &mut Vec<u8>,
) {
    let func = tree.funcs.intern(name, None);
    let x = Exit {
        outs,
        task,
        depth: 0,
        func: Some(func),
        ret: ret.map(|text| dcg_calls::tree::RetIn::Rendered {
            text,
            raw: None,
            error: false,
        }),
        time_ns: Some(t),
        duration_ns: None,
        layout: None,
    };
    tree.exit(&x, sinks, out).unwrap();
}

/// The decoder a live function_graph session reading binary records uses: text (or
/// `--json`) out, empty calls collapsed, no inline frames.
pub fn raw_decoder(set: &dcg_dbset::DbSet, json: bool) -> dcg_calls::decode::Decoder<'_> {
    dcg_calls::decode::Decoder::new(
        set,
        dcg_calls::decode::Options {
            json,
            errors_only: false,
            color: false,
            hide_probe_events: true,
            collapse_empty: true,
            inline_frames: false,
        },
    )
}

/// Where the binary-record tests' kernel functions start: `open` here, `lookup` 0x1000
/// further ([`open_and_lookup`]).
pub const KBASE: u64 = 0xffff_ffff_8100_0000;

/// A symbol table of two kernel functions, `open` and `lookup`.
pub fn open_and_lookup() -> dcg_dbset::kallsyms::Kallsyms {
    dcg_dbset::kallsyms::Kallsyms::parse(&format!(
        "{KBASE:x} T open\n{:x} T lookup\n",
        KBASE + 0x1000
    ))
}

/// function_graph's binary entry record of task `pid` (no arguments, task context).
pub fn graph_entry(
    pid: u32,
    func: u64,
    ts: u64,
    depth: u32,
) -> dcg_ringbuf::graph::GraphRecord<'static> {
    dcg_ringbuf::graph::GraphRecord::Entry {
        pid,
        ts,
        func,
        depth,
        retaddr: None,
        args: Vec::new(),
        flags: 0,
    }
}

/// Its exit record: stamped `ts` on the buffer's clock, `calltime` and `rettime` on the
/// kernel's local one, returning 3.
pub fn graph_exit(
    pid: u32,
    func: u64,
    ts: u64,
    (calltime, rettime): (u64, u64),
    depth: u32,
) -> dcg_ringbuf::graph::GraphRecord<'static> {
    dcg_ringbuf::graph::GraphRecord::Exit {
        pid,
        ts,
        func,
        depth,
        retval: Some(3),
        calltime,
        rettime,
        flags: 0,
    }
}

/// Each line of a text tree without its columns (the CPU, the duration): what follows
/// the first `|`, trailing spaces cut.
pub fn body(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('|').skip(1).collect::<Vec<_>>().join("|"))
        .map(|l| l.trim_end().to_string())
        .collect()
}
