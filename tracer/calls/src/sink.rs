//! What outputs see: a call at the moment it opens, closes or completes as a leaf, a note
//! (a line of the stream that is not a call), lost events. Every output — the
//! function_graph text printer, JSON lines, the saved-calls file, the `--errors-only`
//! filter, the report collector — implements [`Sink`]; [`Sinks`] feeds several at once.
//! Which sinks a stream has is [`crate::outputs`]' business.

use std::io;

use crate::funcs::FuncInfo;

/// Who made a call, as far as the source knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Task<'a> {
    /// A key unique to the task within the stream (pid, or the CPU without a pid column).
    pub key: u64,
    /// Task id.
    pub pid: Option<u32>,
    /// Command name.
    pub comm: Option<&'a str>,
    /// CPU of the event.
    pub cpu: Option<u32>,
    /// The task's process (thread group) id, when the source knows it.
    pub process: Option<u32>,
}

/// How a text source printed a line, for printers that keep its layout byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout<'a> {
    /// The columns and the indentation, as printed (`line[..prefix_end]`).
    pub head: &'a str,
    /// Where the indentation starts in `head`.
    pub indent_start: usize,
    /// Spaces of indentation to remove (a tree re-rooted at a deeper call).
    pub shift: usize,
}

/// What happened to a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Entered; its children follow.
    Open,
    /// Returned, after children.
    Close,
    /// Entered and returned with no children in between.
    Leaf,
}

/// The value of the nameless argument that stands for the variadic arguments of a call
/// (`printf(fmt="%d\n", ...)`): which there are and their types only the callee knows.
pub const VARIADIC: &str = "...";

/// Arguments rendered by type: names and values in one buffer.
#[derive(Clone, Debug, Default)]
pub struct ArgList {
    text: String,
    /// (end of name, end of value) in `text`, per argument.
    ends: Vec<(u32, u32)>,
}

impl ArgList {
    /// Remove every argument (keeps the buffers).
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Append an argument whose value the caller writes with `value` into the buffer.
    pub fn push_with(&mut self, name: &str, value: impl FnOnce(&mut String)) {
        self.text.push_str(name);
        let n = self.text.len() as u32;
        value(&mut self.text);
        self.ends.push((n, self.text.len() as u32));
    }

    /// Append an argument.
    pub fn push(&mut self, name: &str, value: &str) {
        self.push_with(name, |s| s.push_str(value));
    }

    /// Set the arguments of `other`: each replaces the value of the argument of the same
    /// name, or is appended when there is none (a probe event's reads joining the
    /// arguments of their call: `--deref`'s structs replace their pointers, `--fields`'
    /// members come after the parameters).
    pub fn merge(&mut self, other: &ArgList) {
        if other.iter().all(|(n, _)| self.iter().all(|(m, _)| m != n)) {
            for (name, value) in other.iter() {
                self.push(name, value);
            }
            return;
        }
        let mut merged = ArgList::default();
        for (name, value) in self.iter() {
            let value = other
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(value, |(_, v)| v);
            merged.push(name, value);
        }
        for (name, value) in other.iter() {
            if self.iter().all(|(m, _)| m != name) {
                merged.push(name, value);
            }
        }
        *self = merged;
    }

    /// The arguments as `(name, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&(n, v)| {
            let (n, v) = (n as usize, v as usize);
            let pair = (&self.text[start..n], &self.text[n..v]);
            start = v;
            pair
        })
    }
}

/// A call as outputs see it.
#[derive(Clone, Copy)]
pub struct CallView<'v> {
    /// What happened.
    pub kind: Kind,
    /// Call id, unique in the stream, in entry order.
    pub id: u64,
    /// Id of the enclosing call, when traced.
    pub parent: Option<u64>,
    /// Call depth as the source gives it (0: a traced top-level call).
    pub depth: u32,
    /// The task, as given with this event (for a close: the return's).
    pub task: Task<'v>,
    /// The function.
    pub func: &'v FuncInfo<'v>,
    /// The name as printed by the source (without module).
    pub name: &'v str,
    /// Module, as printed by the source.
    pub module: Option<&'v str>,
    /// Arguments rendered by type (on open and leaf; on close too when kept for records).
    pub args: &'v ArgList,
    /// Return value rendered by type (close and leaf); `None` for void or unknown.
    pub ret: Option<&'v str>,
    /// The return value as the source printed it.
    pub ret_raw: Option<&'v str>,
    /// Close and leaf: output parameters, what their pointers held when the call returned
    /// (`--deref`, `--fields`), each named `*NAME`'s `NAME`; `?` where the engine could
    /// not read it.
    pub outs: Option<&'v ArgList>,
    /// The return value is an error (`-E...`, `ERR_PTR(...)`).
    pub error: bool,
    /// A top-level call that returned an error (close and leaf): the call where that
    /// error first appeared ([`crate::origin`]); the call itself when no callee returned it.
    pub origin: Option<Origin<'v>>,
    /// Entry time in ns.
    pub time_ns: Option<u64>,
    /// Duration in ns (close and leaf).
    pub duration_ns: Option<u64>,
    /// Where it was called from, as the source printed it (`caller+0x1c/0x90`).
    pub callsite: Option<&'v str>,
    /// Another comment of the source's line to keep (text sources).
    pub comment: Option<&'v str>,
    /// The source line's layout (text sources); `None`: printers lay the line out.
    pub layout: Option<Layout<'v>>,
    /// Calls of this task still open after this one (0: a top-level tree ended).
    pub open_after: usize,
    /// Within `--depth` (printers skip the others; records keep them).
    pub visible: bool,
    /// The call never returned (the trace ended, the task died, events were lost).
    pub unfinished: bool,
    /// Unfinished because its program called `exec`: the process runs another program,
    /// whose calls start a new tree.
    pub exec: bool,
    /// The source found no entry for this return.
    pub entry_missing: bool,
    /// A close shows its function's name (`} /* f */`; text sources print a bare `}` when
    /// the line had no name and there is no value).
    pub named: bool,
    /// CPU of the call's entry, when the source reports it apart from the return's.
    pub entry_cpu: Option<u32>,
    /// Tasks seen in the stream so far.
    pub tasks: usize,
    /// An inline frame: the code of this function inlined into another.
    pub inlined: Option<Inlined<'v>>,
    /// The context the call ran in, when the source knows it.
    pub ctx: Option<crate::saved_format::Context>,
    /// The call begins an interrupt subtree inside another context's tree (printers
    /// mark where it begins and ends).
    pub irq_entry: bool,
    /// Close: time spent in interrupt subtrees below the call (when any ran).
    pub irq_ns: Option<u64>,
    /// Close: calls the source lost inside the call, below it included (when any).
    pub lost: Option<u64>,
    /// Some of them were lost while the source recorded this call itself (printers say
    /// so there and at the tree's top).
    pub lost_here: bool,
    /// A top-level call's stack (`--stack`), innermost first (its caller first).
    pub stack: Option<&'v [crate::saved_format::StackFrame]>,
    /// The first call of another space below its caller: a kernel call below a user
    /// call (a session tracing both, issue 42).
    pub space_entry: bool,
}

impl<'v> CallView<'v> {
    /// The one constructor: a call of `func` in `task`, with what is not given left
    /// empty — no id (`u64::MAX`), parent, depth, value, times, layout or marks; the name
    /// the function's; visible and named; `args` (normally empty) and the `tasks` seen.
    /// The tree fills in a traced frame's fields with `CallTree::frame_view` and what
    /// differs at each site with struct update syntax.
    pub fn new(
        kind: Kind,
        func: &'v FuncInfo<'v>,
        task: Task<'v>,
        args: &'v ArgList,
        tasks: usize,
    ) -> CallView<'v> {
        CallView {
            kind,
            id: u64::MAX,
            parent: None,
            depth: 0,
            task,
            func,
            name: &func.name,
            module: None,
            args,
            ret: None,
            ret_raw: None,
            outs: None,
            error: false,
            origin: None,
            time_ns: None,
            duration_ns: None,
            callsite: None,
            comment: None,
            layout: None,
            open_after: 0,
            visible: true,
            unfinished: false,
            exec: false,
            entry_missing: false,
            named: true,
            entry_cpu: None,
            tasks,
            inlined: None,
            ctx: None,
            irq_entry: false,
            irq_ns: None,
            lost: None,
            lost_here: false,
            stack: None,
            space_entry: false,
        }
    }
}

/// Where an inline frame's code is: the function it was inlined into and the call site
/// in the source.
#[derive(Clone, Copy, Debug)]
pub struct Inlined<'v> {
    /// The function whose code holds the inlined copy.
    pub container: &'v str,
    /// Source file of the call site (empty when unknown).
    pub file: &'v str,
    /// Its line (0 when unknown).
    pub line: u32,
}

/// The call where a top-level call's error first appeared.
#[derive(Clone, Copy)]
pub struct Origin<'v> {
    /// Its call id.
    pub id: u64,
    /// Its function.
    pub func: &'v FuncInfo<'v>,
    /// A user call that failed because a system call below it did (a session tracing
    /// both sides): that call's error value (`-ENOENT`), which the user call's `errno`
    /// holds.
    pub errno: Option<&'v str>,
}

/// A line of the stream that is not a call.
#[derive(Clone, Copy, Debug)]
pub enum Note<'v> {
    /// A line passed through as is (markers, headers, other events).
    Line {
        /// The task it belongs to, when it has one.
        task: Option<u64>,
        /// The line.
        text: &'v str,
    },
    /// A probe event whose values were joined to a call, shown in place (text sources).
    Probe {
        /// The task.
        task: u64,
        /// The line's layout.
        layout: Layout<'v>,
        /// Event name.
        event: &'v str,
        /// Where it fired, as printed (`do_sys_openat2+0x0/0xd0`).
        location: &'v str,
        /// Its fields, rendered by type.
        fields: &'v ArgList,
        /// The first field is an error return value.
        error: bool,
    },
    /// A comment of a source without text (a trace marker), laid out by printers.
    Comment {
        /// The task.
        task: Task<'v>,
        /// Its depth (indentation).
        depth: u32,
        /// The text inside `/* */`.
        text: &'v str,
    },
    /// Events were lost.
    Lost {
        /// CPU.
        cpu: Option<u32>,
        /// How many, when known.
        count: Option<u64>,
    },
}

/// An output of calls. Sinks that print write into `out`, the stream's output buffer (the
/// driver hands it to the writer in chunks); others write where they were told.
pub trait Sink {
    /// A call opened, closed or completed.
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()>;
    /// A line that is not a call.
    fn note(&mut self, n: &Note<'_>, out: &mut Vec<u8>) -> io::Result<()>;
    /// Whether this sink needs a call's arguments again when it closes (records).
    fn wants_args_at_close(&self) -> bool {
        false
    }
    /// Whether this sink prints probe-event notes (text printers).
    fn wants_notes(&self) -> bool {
        false
    }
    /// End of the stream: write what is buffered.
    fn finish(&mut self, _out: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }
    /// Whether this sink takes completed calls as saved-calls JSON lines
    /// ([`Sink::json_line`]) when fed through [`Sinks`], which then makes each line once
    /// for all such sinks (`--json` with `--output`).
    fn takes_json_lines(&self) -> bool {
        false
    }
    /// A completed call as its saved-calls JSON line, newline included.
    fn json_line(&mut self, _line: &[u8], _out: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }
}

/// Several sinks fed in order.
#[derive(Default)]
pub struct Sinks<'s> {
    sinks: Vec<Box<dyn Sink + 's>>,
    args_at_close: bool,
    notes: bool,
    /// Calls in an interrupt context are passed to none.
    hide_interrupts: bool,
    /// The current call's JSON line, for the sinks that take lines.
    line: Vec<u8>,
}

impl<'s> Sinks<'s> {
    /// No sinks yet.
    pub fn new() -> Sinks<'s> {
        Sinks::default()
    }

    /// Add a sink.
    pub fn push(&mut self, s: Box<dyn Sink + 's>) {
        self.args_at_close |= s.wants_args_at_close();
        self.notes |= s.wants_notes();
        self.sinks.push(s);
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }

    /// Put the first sink (the shown output) behind `wrap`: a tree selection
    /// ([`crate::selected::Selected`]).
    pub fn wrap_first(&mut self, wrap: impl FnOnce(Box<dyn Sink + 's>) -> Box<dyn Sink + 's>) {
        if self.sinks.is_empty() {
            return;
        }
        let first = self.sinks.remove(0);
        self.sinks.insert(0, wrap(first));
        self.args_at_close = self.sinks.iter().any(|s| s.wants_args_at_close());
        self.notes = self.sinks.iter().any(|s| s.wants_notes());
    }

    /// Pass no call that ran in an interrupt context (`--irqs hide`). Every call below an
    /// interrupt's has an interrupt context too (the tree decides it so), so whole
    /// interrupt subtrees go.
    pub fn hide_interrupts(&mut self, hide: bool) {
        self.hide_interrupts = hide;
    }
}

impl Sink for Sinks<'_> {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        if self.hide_interrupts
            && c.ctx
                .is_some_and(|x| x != crate::saved_format::Context::Task)
        {
            return Ok(());
        }
        let mut line_made = false;
        for s in &mut self.sinks {
            if !s.takes_json_lines() {
                s.call(c, out)?;
                continue;
            }
            if !line_made {
                line_made = true;
                self.line.clear();
                crate::record_sinks::write_record_line(&mut self.line, c);
            }
            if !self.line.is_empty() {
                s.json_line(&self.line, out)?;
            }
        }
        Ok(())
    }

    fn note(&mut self, n: &Note<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        for s in &mut self.sinks {
            s.note(n, out)?;
        }
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        self.args_at_close
    }

    fn wants_notes(&self) -> bool {
        self.notes
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        for s in &mut self.sinks {
            s.finish(out)?;
        }
        Ok(())
    }
}
