//! One call tree per task: turns call events from any source into calls (ids, parents,
//! depth, durations), joins values that arrive apart from their call (probe events), and
//! hands every call to the [`Sink`]s.
//!
//! Two kinds of sources:
//! - **Shaped** (function_graph text): the source already knows whether a call is a leaf
//!   (`f();`) or opens (`f() {`), and each return names its depth. Calls are passed on as
//!   they come.
//! - **Flat** (uprobes, BPF): the source reports entries and returns only. The tree holds
//!   each task's newest entry back until the next event: a child entering opens it, its own
//!   return makes it a leaf. Returns are matched by function, durations derived from the
//!   timestamps, and calls still open at the end are closed as unfinished.

use std::io;

use rustc_hash::FxHashMap;

mod context;
mod flat;
mod inline;
mod joint;
mod shaped;
mod values;

use crate::funcs::{FuncId, FuncTable};
use crate::origin::{error_value, Origins};
use crate::sink::{ArgList, CallView, Kind, Layout, Note, Origin, Sink, Task};

pub(crate) use context::EntryRole;
use inline::Inlines;
use shaped::Held;

/// Where in its caller a call was made: the caller and the offset of the call's return
/// address in it (flat sources that read it; inline frames are found from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CodeSite {
    /// The calling function.
    pub func: FuncId,
    /// Offset of the return address from the function's start.
    pub offset: u64,
}

/// How a source shapes its calls (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// function_graph text: leaves and opens decided by the source, returns by depth.
    Shaped,
    /// Entries and returns only.
    Flat,
}

/// Arguments as a source delivers them.
#[derive(Clone, Copy, Debug)]
pub enum ArgsIn<'e> {
    /// None.
    None,
    /// function_graph's `name=value, ...` text, rendered by the parameters' types.
    Text(&'e str),
    /// Values already rendered by the source, in parameter order.
    Rendered(&'e ArgList),
    /// The integer argument registers at entry, in System V order (binary records):
    /// each parameter taken from its register and rendered by its type.
    Words(&'e [u64]),
    /// The same, with the strings the source read for some of them: (register index,
    /// the text, or None when reading it faulted), and the stack words above the return
    /// address (the first at the CFA) for parameters passed on the stack.
    Fetched {
        /// The argument registers.
        words: &'e [u64],
        /// Strings by register index.
        strings: &'e [(usize, Option<String>)],
        /// Stack words from the CFA up (empty when not read).
        stack: &'e [u64],
        /// Values shown after the parameters, already rendered: (name, text), the
        /// members `--fields` read.
        members: &'e [(String, String)],
        /// Parameters shown with the data behind them, already rendered: (name, text),
        /// in place of the pointer (`--deref`).
        derefs: &'e [(String, String)],
    },
}

/// A return value as a source delivers it.
#[derive(Clone, Copy, Debug)]
pub enum RetIn<'e> {
    /// As printed (`-22`, `0xffff...`), with its numeric value when it has one.
    Text {
        /// The printed text.
        raw: &'e str,
        /// Its value.
        value: Option<u64>,
    },
    /// The two return registers (rax, rdx) as a binary source read them: rendered from
    /// rax by the return type, or from both when the type is 9 to 16 bytes (a struct
    /// returned in a register pair).
    Regs {
        /// rax.
        rax: u64,
        /// rdx.
        rdx: u64,
    },
    /// Rendered by the source.
    Rendered {
        /// The rendered value.
        text: &'e str,
        /// The raw value as text.
        raw: Option<&'e str>,
        /// It is an error.
        error: bool,
    },
}

/// A call entered (or, from a shaped source, a whole leaf call).
#[derive(Clone, Copy, Debug)]
pub struct Entry<'e> {
    /// The task.
    pub task: Task<'e>,
    /// Depth as printed (shaped sources); flat sources leave it to the tree.
    pub depth: u32,
    /// The function, interned in the tree's [`FuncTable`].
    pub func: FuncId,
    /// The name as printed.
    pub name: &'e str,
    /// The module as printed.
    pub module: Option<&'e str>,
    /// Arguments.
    pub args: ArgsIn<'e>,
    /// A leaf's return value as printed (shaped sources).
    pub ret: Option<RetIn<'e>>,
    /// The source shows the call complete on one line (shaped sources).
    pub leaf: bool,
    /// Entry time in ns.
    pub time_ns: Option<u64>,
    /// A leaf's duration in ns, as printed.
    pub duration_ns: Option<u64>,
    /// The call site as printed (`caller+0x1c/0x90`).
    pub callsite: Option<&'e str>,
    /// The call site as code (flat sources): places the call under the inline frames
    /// of its caller's code it was made from.
    pub site: Option<CodeSite>,
    /// Another comment on the line, kept when there is no value to show.
    pub comment: Option<&'e str>,
    /// The line's layout (text sources).
    pub layout: Option<Layout<'e>>,
    /// The context the call ran in, when the source knows it (the BPF engine).
    pub ctx: Option<crate::saved_format::Context>,
}

/// A call returned.
#[derive(Clone, Copy, Debug)]
pub struct Exit<'e> {
    /// The task.
    pub task: Task<'e>,
    /// Depth as printed (shaped sources: the innermost open call at or above it returns).
    pub depth: u32,
    /// The function, when the source names it (shaped: printed on the `}` line; flat: the
    /// returning function, which is how it is matched).
    pub func: Option<FuncId>,
    /// Its return value.
    pub ret: Option<RetIn<'e>>,
    /// Output parameters read at the return, rendered (flat sources; `--deref`,
    /// `--fields`).
    pub outs: Option<&'e ArgList>,
    /// Return time in ns (durations are derived from it and the entry's time where both
    /// are known).
    pub time_ns: Option<u64>,
    /// Duration in ns, as printed or recorded (shaped sources; used where the entry's or
    /// the exit's time is missing).
    pub duration_ns: Option<u64>,
    /// The line's layout (text sources).
    pub layout: Option<Layout<'e>>,
}

/// Counters of a stream.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Calls decoded with a db entry (entries, returns and probe events).
    pub decoded: u64,
    /// Error returns seen.
    pub errors: u64,
    /// Calls completed (closes and leaves, with their entry).
    pub calls: u64,
    /// Top-level calls completed (what `--count` counts).
    pub top_level: u64,
    /// Returns whose entry was not seen.
    pub lone_returns: u64,
    /// Calls closed unfinished (no return seen).
    pub unfinished: u64,
    /// Calls of functions the db does not know, by function.
    pub unknown: FxHashMap<FuncId, u64>,
    /// Calls closed without a return value to show (void, or the value never came), by
    /// function.
    pub valueless: FxHashMap<FuncId, u64>,
    /// Calls the source says were lost inside recorded calls ([`CallTree::lost`]).
    pub lost_calls: u64,
    /// Trees (top-level calls) that closed with lost calls in them.
    pub lossy_trees: u64,
    /// Lost calls reported while the task had no call open (after its tree ended).
    pub lost_outside: u64,
}

/// A call's duration: from its entry's time to its exit's where both are known (one
/// clock: for function_graph's binary records the buffer's, which a joint session sets
/// to `mono`, so the call lies within the user call around it), else the duration the
/// source `given` printed or recorded. function_graph measures that one on the kernel's
/// local clock around its own hooks: with an entry record written late (an interrupt, the
/// vCPU descheduled in between), the entry's time plus it ends the call past its return.
fn duration(exit_ns: Option<u64>, entry_ns: Option<u64>, given: Option<u64>) -> Option<u64> {
    match (exit_ns, entry_ns) {
        (Some(b), Some(a)) => Some(b.saturating_sub(a)),
        _ => given,
    }
}

/// An open call.
#[derive(Debug)]
struct Frame {
    depth: u32,
    func: FuncId,
    id: u64,
    parent: Option<u64>,
    /// Kept when a sink needs them at close, or until a flat call is printed.
    args: ArgList,
    time_ns: Option<u64>,
    cpu: Option<u32>,
    /// Flat sources: printed as open (a visible child entered).
    opened: bool,
    /// Where the errors its completed children returned first appeared: (id, function).
    origins: Origins<(u64, FuncId)>,
    /// An inline frame: the inlined copy (index in the tree's [`Inlines`]).
    inline: Option<u32>,
    /// The context it ran in (flat sources that know it).
    ctx: Option<crate::saved_format::Context>,
    /// It begins an interrupt subtree: its context is an interrupt's and its parent's
    /// is not the same.
    irq_entry: bool,
    /// Time spent in interrupt subtrees below it.
    irq_ns: u64,
    /// Calls the source says were lost while it recorded this call (`lost_here`), and
    /// in all, below it included.
    lost_here: u64,
    lost: u64,
    /// Flat sources: the entry's other comment (a `longjmp`'s `_setjmp returns 1`).
    comment: Option<Box<str>>,
    /// A top-level call's stack (`--stack`), innermost first.
    stack: Option<Box<[crate::saved_format::StackFrame]>>,
    /// A kernel call whose caller is not one (a session tracing both sides).
    space_entry: bool,
    /// Shaped sources: the read event of its entry (`--fields`' members, `--deref`'s
    /// structs) was delivered ([`CallTree::pending_members`]).
    entry_read: bool,
    /// Shaped sources: its arguments came from an entry probe event
    /// ([`CallTree::pending_args`]).
    args_event: bool,
    /// A user call (a session tracing both sides): the error value of the last system
    /// call below it that failed, and that error's origin.
    kernel_error: Option<Box<KernelError>>,
}

/// A failed system call's error value (`-ENOENT`) and where it first appeared.
type KernelError = (Box<str>, (u64, FuncId));

#[derive(Debug, Default)]
struct TaskState {
    stack: Vec<Frame>,
    /// The newest entry, held back (top of `stack`).
    held: Option<Held>,
    /// Flat sources: the task's latest command name (calls closed at the end name it).
    comm: String,
    /// Flat sources: the task's process, when an event said it.
    process: Option<u32>,
    /// (function, raw value) from an exit probe event, for the next return of it.
    pending_ret: Option<(FuncId, u64)>,
    /// (function, rendered fields) from an entry probe event, for the next entry of it.
    pending_args: Option<(FuncId, ArgList)>,
    /// Members of the next entry of a function, read by a probe event before it.
    pending_members: Option<(FuncId, ArgList)>,
    /// Output parameters of the next return of a function, read by an exit probe event
    /// before it.
    pending_outs: Option<(FuncId, ArgList)>,
    /// The depth at which the task's latest call closed, when it began an interrupt
    /// subtree and nothing entered since ([`CallTree::call_context`]).
    interrupt_closed: Option<u32>,
    /// The stack of the task's next top-level call ([`CallTree::pending_stack`]).
    pending_stack: Option<Box<[crate::saved_format::StackFrame]>>,
}

/// The call trees of a stream, one per task.
pub struct CallTree<'a> {
    /// The stream's functions.
    pub funcs: FuncTable<'a>,
    shape: Shape,
    hold: bool,
    /// The entry being handled took its arguments from an entry-probe event.
    args_from_event: bool,
    /// The entry being handled took the members or structs a read event gave before it.
    entry_read: bool,
    max_depth: u32,
    task_ids: FxHashMap<u64, usize>,
    tasks: Vec<TaskState>,
    last_task: Option<(u64, usize)>,
    next_id: u64,
    counts: Counts,
    args: ArgList,
    ret: String,
    raw: String,
    empty: ArgList,
    /// Inline frames (flat sources), when shown.
    inlines: Option<Inlines<'a>>,
    /// How the arguments [`CallTree::enter_inline`] reads are rendered.
    inline_role: dcg_render::Role,
}

impl<'a> CallTree<'a> {
    /// Trees of a source of `shape`; flat sources hide calls deeper than `max_depth` from
    /// printers (0: none hidden).
    pub fn new(funcs: FuncTable<'a>, shape: Shape, max_depth: u32) -> CallTree<'a> {
        CallTree {
            funcs,
            shape,
            hold: false,
            args_from_event: false,
            entry_read: false,
            max_depth,
            task_ids: FxHashMap::default(),
            tasks: Vec::new(),
            last_task: None,
            next_id: 0,
            counts: Counts::default(),
            args: ArgList::default(),
            ret: String::with_capacity(64),
            raw: String::with_capacity(32),
            empty: ArgList::default(),
            inlines: None,
            inline_role: dcg_render::Role::Arg,
        }
    }

    /// How the arguments of inline frames read by [`CallTree::enter_inline`] are
    /// rendered: by the kernel's error conventions (`Role::Arg`, the default) or as plain
    /// values (`Role::Plain`, user-space code unless asked).
    pub fn set_inline_arg_role(&mut self, role: dcg_render::Role) {
        self.inline_role = role;
    }

    /// Show the code a function inlined as frames of their own (the db's inline
    /// instances), from each call's [`CodeSite`] (shaped sources: from its return address
    /// as printed) and from [`CallTree::enter_inline`]. The source turns it on only where
    /// its dbs have instances.
    pub fn show_inline_frames(&mut self, on: bool) {
        self.inlines = on.then(Inlines::default);
    }

    /// Whether inline frames are shown.
    pub fn inline_frames(&self) -> bool {
        self.inlines.is_some()
    }

    /// Shaped sources: hold each entry back until the task's next event, so that a call
    /// whose lines up to its `}` were all dropped by the source or joined (its probe
    /// events) prints as the leaf it is (live tracing with probe events and filters).
    pub fn hold_opens(&mut self, on: bool) {
        self.hold = on;
    }

    /// Counters so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Number of tasks seen.
    pub fn tasks_seen(&self) -> usize {
        self.tasks.len()
    }

    /// Open calls of the task `key`.
    pub fn depth_of(&self, key: u64) -> usize {
        self.task_ids
            .get(&key)
            .map_or(0, |&i| self.tasks[i].stack.len())
    }

    #[inline]
    fn task(&mut self, key: u64) -> usize {
        if let Some((k, i)) = self.last_task {
            if k == key {
                return i;
            }
        }
        let n = self.tasks.len();
        let i = *self.task_ids.entry(key).or_insert(n);
        if i == n {
            self.tasks.push(TaskState::default());
        }
        self.last_task = Some((key, i));
        i
    }

    /// A view of a call of `func` with what is not given left empty (no id, args, value,
    /// times or layout; visible, named): [`CallView::new`].
    fn view<'v>(&'v self, kind: Kind, func: FuncId, task: Task<'v>) -> CallView<'v> {
        CallView::new(
            kind,
            self.funcs.get(func),
            task,
            &self.empty,
            self.tasks.len(),
        )
    }

    /// A view of the call of frame `f` as `kind` in `task`: its id, parent, depth,
    /// arguments, entry time, inlined copy, context and interrupt mark; the rest as
    /// [`CallTree::view`] leaves it. Sites state only what differs.
    fn frame_view<'v>(&'v self, kind: Kind, f: &'v Frame, task: Task<'v>) -> CallView<'v> {
        CallView {
            id: f.id,
            parent: f.parent,
            depth: f.depth,
            args: &f.args,
            time_ns: f.time_ns,
            inlined: self.inlined_view(f.inline),
            ctx: f.ctx,
            irq_entry: f.irq_entry,
            stack: f.stack.as_deref(),
            space_entry: f.space_entry,
            ..self.view(kind, f.func, task)
        }
    }

    /// The rendered return value and its raw text, as [`CallTree::render_ret`] left them.
    fn ret_view(&self, shown: bool, raw_given: bool) -> (Option<&str>, Option<&str>) {
        (
            shown.then_some(self.ret.as_str()),
            raw_given.then_some(self.raw.as_str()),
        )
    }

    /// Call `id` of `func` in task `ti` completed with the value [`CallTree::render_ret`]
    /// left (`shown`, `error`), its children's error origins in `below`. Offers its error's
    /// origin to its parent's frame; for a top-level call, returns it.
    #[inline]
    fn settle_origin(
        &mut self,
        ti: usize,
        call: (u64, FuncId),
        parent: Option<u64>,
        below: &Origins<(u64, FuncId)>,
        (shown, error): (bool, bool),
    ) -> Option<(u64, FuncId)> {
        // The tree renders its values: a value with an errno name has the flag. Most calls
        // do not fail; the rest is kept out of the hot path.
        if !(shown && error) {
            return None;
        }
        self.settle_error_origin(ti, call, parent, below)
    }

    #[cold]
    #[inline(never)]
    fn settle_error_origin(
        &mut self,
        ti: usize,
        (id, func): (u64, FuncId),
        parent: Option<u64>,
        below: &Origins<(u64, FuncId)>,
    ) -> Option<(u64, FuncId)> {
        let e = error_value(Some(self.ret.as_str()), true)?;
        let origin = below.origin(e, (id, func));
        let Some(p) = parent else {
            return Some(origin);
        };
        // An inline frame has no value of its own: its callees' errors are its
        // container's candidates.
        let stack = &mut self.tasks[ti].stack;
        if let Some(at) = stack.iter().rposition(|f| f.id == p) {
            if let Some(f) = stack[..=at].iter_mut().rev().find(|f| f.inline.is_none()) {
                f.origins.child(e, origin);
            }
        }
        None
    }

    /// The view of an origin [`CallTree::settle_origin`] returned.
    fn origin_view(&self, o: Option<(u64, FuncId)>) -> Option<Origin<'_>> {
        o.map(|(id, f)| Origin {
            id,
            func: self.funcs.get(f),
            errno: None,
        })
    }

    /// Whether a call at `depth` is within `--depth`.
    fn visible(&self, depth: u32) -> bool {
        self.max_depth == 0 || depth < self.max_depth
    }

    /// A call entered (or a leaf, from a shaped source).
    pub fn enter(
        &mut self,
        e: &Entry<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(e.task.key);
        self.release(ti, sink, out)?;
        // Inline frames open before the call, so that their ids precede its.
        if self.inlines.is_some() {
            match (self.shape, e.site) {
                (Shape::Flat, Some(site)) => {
                    self.place_in_inlines(ti, site, e.task, e.time_ns, sink, out)?
                }
                (Shape::Shaped, _) => self.place_shaped(ti, e, sink, out)?,
                _ => {}
            }
        }
        self.note_known(e.func);
        let t = &mut self.tasks[ti];
        let pending = match &t.pending_args {
            Some((f, _)) if *f == e.func => t.pending_args.take().map(|(_, a)| a),
            _ => None,
        };
        let members = match &t.pending_members {
            Some((f, _)) if *f == e.func => t.pending_members.take().map(|(_, m)| m),
            _ => None,
        };
        self.args_from_event = pending.is_some();
        self.entry_read = members.is_some();
        self.render_args(e.func, e.args, pending);
        if let Some(m) = &members {
            self.args.merge(m);
        }
        let id = self.next_id;
        self.next_id += 1;
        match self.shape {
            Shape::Shaped => self.enter_shaped(ti, id, e, sink, out),
            Shape::Flat => self.enter_flat(ti, id, e, sink, out),
        }
    }

    /// A call returned. False when a shaped source's `}` matched no call and names no
    /// function (the source passes its line through).
    pub fn exit(
        &mut self,
        x: &Exit<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        match self.shape {
            Shape::Shaped => self.exit_shaped(x, sink, out),
            Shape::Flat => self.exit_flat(x, sink, out).map(|()| true),
        }
    }

    /// The stack that led to task `key`'s next top-level call, innermost first, delivered
    /// before its entry (`--stack`): that call carries it.
    pub fn pending_stack(&mut self, key: u64, frames: Box<[crate::saved_format::StackFrame]>) {
        let ti = self.task(key);
        self.tasks[ti].pending_stack = Some(frames);
    }

    /// Forget arguments delivered for a next entry that did not come (the source left the
    /// place where it would have).
    pub fn forget_pending_args(&mut self, key: u64) {
        let ti = self.task(key);
        self.tasks[ti].pending_args = None;
    }

    /// The source lost `n` calls in task `key` while it recorded its innermost open call
    /// (kernel: runs of the BPF program the kernel skipped then, an interrupt's calls):
    /// that call and every call around it say so when they close.
    pub fn lost(&mut self, key: u64, n: u64) {
        let ti = self.task(key);
        match self.tasks[ti].stack.last_mut() {
            Some(f) => {
                f.lost_here += n;
                f.lost += n;
                self.counts.lost_calls += n;
            }
            None => self.counts.lost_outside += n,
        }
    }

    /// A frame of task `ti` closed: its lost calls count in its parent too, and a tree
    /// that lost calls is counted.
    fn pass_lost(&mut self, ti: usize, f: &Frame) {
        if f.lost == 0 {
            return;
        }
        match self.tasks[ti].stack.last_mut() {
            Some(p) => p.lost += f.lost,
            None => self.counts.lossy_trees += 1,
        }
    }

    /// The lost-call fields of a closing frame's view: (in all, whether some were lost
    /// while recording the call itself).
    fn lost_view(f: &Frame) -> (Option<u64>, bool) {
        ((f.lost > 0).then_some(f.lost), f.lost_here > 0)
    }

    /// The task `key` (a shaped source's line that is not a call) is known.
    pub fn touch(&mut self, key: u64) {
        self.task(key);
    }

    /// Pass a note on (a line of a task releases its held entry first).
    pub fn note(&mut self, n: &Note<'_>, sink: &mut dyn Sink, out: &mut Vec<u8>) -> io::Result<()> {
        if let Note::Line { task: Some(k), .. } = *n {
            if self.hold {
                let ti = self.task(k);
                self.release(ti, sink, out)?;
            }
        }
        sink.note(n, out)
    }

    /// End of the stream: flat sources close every open call as unfinished; then the
    /// sinks write what they buffered.
    pub fn finish(&mut self, sink: &mut dyn Sink, out: &mut Vec<u8>) -> io::Result<()> {
        let mut held: Vec<(u64, usize)> = self
            .task_ids
            .iter()
            .filter(|(_, &i)| self.tasks[i].held.is_some())
            .map(|(&k, &i)| (k, i))
            .collect();
        held.sort_unstable();
        for (_, ti) in held {
            self.release(ti, sink, out)?;
        }
        if self.shape == Shape::Flat {
            self.finish_flat(sink, out)?;
        }
        sink.finish(out)
    }
}

mod pending;
#[cfg(test)]
mod tests;
