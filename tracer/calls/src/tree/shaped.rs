//! Shaped sources (function_graph text): the source says whether a call is a leaf or
//! opens, and each `}` names its depth. Live tracing also holds each entry back until the
//! task's next event ([`CallTree::hold_opens`]), so that a call whose only lines were its
//! own probe events prints as the leaf it is, and a late entry event joins it.

use std::io;

use super::{CallTree, Entry, Exit, Frame};
use crate::funcs::FuncId;
use crate::origin::Origins;
use crate::sink::{ArgList, CallView, Kind, Layout, Sink, Task};

/// An entry held back until the task's next event: what printing it needs, owned.
#[derive(Debug, Default)]
pub(super) struct Held {
    key: u64,
    pub(super) func: FuncId,
    name: String,
    module: Option<String>,
    callsite: Option<String>,
    comment: Option<String>,
    /// The line's layout (head, indent start, shift), for text sources.
    layout: Option<(String, usize, usize)>,
    pid: Option<u32>,
    comm: Option<String>,
    cpu: Option<u32>,
    pub(super) args: ArgList,
    /// Its exit-probe event was joined.
    pub(super) ret_event: bool,
}

impl Held {
    fn task(&self) -> Task<'_> {
        Task {
            key: self.key,
            pid: self.pid,
            comm: self.comm.as_deref(),
            cpu: self.cpu,
            process: None,
        }
    }
}

impl CallTree<'_> {
    pub(super) fn enter_shaped(
        &mut self,
        ti: usize,
        id: u64,
        e: &Entry<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let t = &mut self.tasks[ti];
        // The parent: the innermost call above this depth, or an inline frame around it.
        let parent = t
            .stack
            .iter()
            .rev()
            .find(|f| f.depth < e.depth || (f.inline.is_some() && f.depth == e.depth))
            .map(|f| f.id);
        let probe = match (e.leaf && e.ret.is_none(), t.pending_ret) {
            (true, Some((f, v))) if f == e.func => {
                t.pending_ret = None;
                Some(v)
            }
            _ => None,
        };
        let outs = match e.leaf {
            true => self.take_pending_outs(ti, e.func),
            false => None,
        };
        let (shown, error, raw_given) = if e.leaf {
            self.render_ret(e.func, e.ret, probe)
        } else {
            (false, false, false)
        };
        let origin = if e.leaf {
            let none = Origins::new();
            self.settle_origin(ti, (id, e.func), parent, &none, (shown, error))
        } else {
            None
        };
        if error {
            self.counts.errors += 1;
        }
        // The context it ran in, and whether an interrupt subtree begins with it (its
        // caller: the innermost open call above its depth).
        let caller_ctx = self.tasks[ti]
            .stack
            .iter()
            .rev()
            .find(|f| f.depth < e.depth)
            .and_then(|f| f.ctx);
        let (ctx, irq_entry) = self.call_context(ti, e.func, e.ctx, caller_ctx, e.depth);
        if e.leaf && irq_entry {
            self.interrupt_closed(ti, e.depth);
        }
        if e.leaf {
            self.counts.calls += 1;
            if !shown {
                *self.counts.valueless.entry(e.func).or_default() += 1;
            }
        } else {
            let hold = self.hold;
            let keep_args = sink.wants_args_at_close() && !hold;
            let t = &mut self.tasks[ti];
            while t
                .stack
                .last()
                .is_some_and(|f| f.depth > e.depth || (f.depth == e.depth && f.inline.is_none()))
            {
                t.stack.pop();
            }
            t.stack.push(Frame {
                depth: e.depth,
                func: e.func,
                id,
                parent,
                args: if keep_args {
                    self.args.clone()
                } else {
                    ArgList::default()
                },
                time_ns: e.time_ns,
                cpu: e.task.cpu,
                opened: !hold,
                origins: Origins::new(),
                inline: None,
                ctx,
                irq_entry,
                irq_ns: 0,
                lost_here: 0,
                lost: 0,
                comment: None,
                // `--stack` (function_graph's binary records): delivered before the entry.
                stack: match e.depth {
                    0 => t.pending_stack.take(),
                    _ => None,
                },
                space_entry: false,
                entry_read: self.entry_read,
                args_event: self.args_from_event,
                kernel_error: None,
            });
            if hold {
                let held = self.hold_entry(e);
                self.tasks[ti].held = Some(held);
                return Ok(());
            }
        }
        let (ret, ret_raw) = self.ret_view(shown, raw_given);
        // Inline frames around the call move it right (for an open call, its own frame
        // is on the stack already).
        let around = self.inline_count(ti);
        let shifted = Self::shifted_head(e.layout, around);
        let layout = super::inline::laid_out(&shifted, e.layout);
        let view = CallView {
            id,
            parent,
            depth: e.depth + around,
            name: e.name,
            module: e.module,
            args: &self.args,
            ret,
            ret_raw,
            error,
            origin: self.origin_view(origin),
            time_ns: e.time_ns,
            duration_ns: e.duration_ns,
            callsite: e.callsite,
            comment: e.comment,
            layout,
            open_after: self.tasks[ti].stack.len(),
            ctx,
            irq_entry,
            outs: outs.as_ref(),
            ..self.view(if e.leaf { Kind::Leaf } else { Kind::Open }, e.func, e.task)
        };
        sink.call(&view, out)
    }

    /// An owned copy of entry `e` to hold back.
    fn hold_entry(&mut self, e: &Entry<'_>) -> Held {
        Held {
            key: e.task.key,
            func: e.func,
            name: e.name.to_string(),
            module: e.module.map(str::to_string),
            callsite: e.callsite.map(str::to_string),
            comment: e.comment.map(str::to_string),
            layout: e
                .layout
                .map(|l| (l.head.to_string(), l.indent_start, l.shift)),
            pid: e.task.pid,
            comm: e.task.comm.map(str::to_string),
            cpu: e.task.cpu,
            args: std::mem::take(&mut self.args),
            ret_event: false,
        }
    }

    /// False when the `}` matched no call and names no function (the caller passes the
    /// line through).
    pub(super) fn exit_shaped(
        &mut self,
        x: &Exit<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<bool> {
        let ti = self.task(x.task.key);
        let held_returns = self.tasks[ti].held.is_some()
            && self.tasks[ti]
                .stack
                .last()
                .is_some_and(|f| f.depth <= x.depth);
        if held_returns {
            return self.held_leaf(ti, x, sink, out).map(|()| true);
        }
        self.release(ti, sink, out)?;
        if self.inlines.is_some() {
            self.close_inlines_deeper(ti, x.depth, x.task, x.time_ns, x.layout, sink, out)?;
        }
        let t = &mut self.tasks[ti];
        let mut frame = None;
        while let Some(f) = t.stack.pop() {
            if f.inline.is_some() {
                // An inline frame around the returning call: the `}` matched nothing.
                t.stack.push(f);
                break;
            }
            if f.depth <= x.depth {
                frame = Some(f);
                break;
            }
        }
        let Some(func) = x.func.or(frame.as_ref().map(|f| f.func)) else {
            return Ok(false);
        };
        let duration_ns = super::duration(
            x.time_ns,
            frame.as_ref().and_then(|f| f.time_ns),
            x.duration_ns,
        );
        if let Some(f) = &frame {
            self.count_irq_time(ti, f, duration_ns);
        }
        let probe = self.take_pending_ret(ti, func);
        let outs = self.take_pending_outs(ti, func);
        let (shown, error, raw_given) = self.render_ret(func, x.ret, probe);
        self.count_return(func, frame.is_some(), shown, error);
        let origin = frame.as_ref().and_then(|f| {
            self.settle_origin(ti, (f.id, func), f.parent, &f.origins, (shown, error))
        });
        let (ret, ret_raw) = self.ret_view(shown, raw_given);
        let around = self.inline_count(ti);
        let shifted = Self::shifted_head(x.layout, around);
        let layout = super::inline::laid_out(&shifted, x.layout);
        let mut view = CallView {
            depth: x.depth + around,
            ret,
            ret_raw,
            error,
            origin: self.origin_view(origin),
            duration_ns,
            layout,
            open_after: self.tasks[ti].stack.len(),
            entry_missing: frame.is_none(),
            // The `}` names its function when the source printed one or there is a value.
            named: x.func.is_some() || shown || outs.is_some(),
            outs: outs.as_ref(),
            ..self.view(Kind::Close, func, x.task)
        };
        if let Some(f) = &frame {
            view.id = f.id;
            view.parent = f.parent;
            view.args = &f.args;
            view.time_ns = f.time_ns;
            view.ctx = f.ctx;
            view.irq_entry = f.irq_entry;
            view.irq_ns = (f.irq_ns > 0).then_some(f.irq_ns);
            view.stack = f.stack.as_deref();
        }
        sink.call(&view, out)?;
        Ok(true)
    }

    /// The output parameters an exit probe read for the next return of `func` in task
    /// `ti`.
    fn take_pending_outs(&mut self, ti: usize, func: FuncId) -> Option<ArgList> {
        let t = &mut self.tasks[ti];
        match &t.pending_outs {
            Some((f, _)) if *f == func => t.pending_outs.take().map(|(_, o)| o),
            _ => None,
        }
    }

    /// The value an exit probe delivered for the next return of `func` in task `ti`.
    fn take_pending_ret(&mut self, ti: usize, func: FuncId) -> Option<u64> {
        let t = &mut self.tasks[ti];
        match t.pending_ret {
            Some((f, v)) if f == func => {
                t.pending_ret = None;
                Some(v)
            }
            _ => None,
        }
    }

    /// Counters of a return of `func`: decoded, a completed call (when its entry was seen)
    /// with or without a value, an error.
    fn count_return(&mut self, func: FuncId, completed: bool, shown: bool, error: bool) {
        if self.funcs.get(func).func.is_some() {
            self.counts.decoded += 1;
        }
        if error {
            self.counts.errors += 1;
        }
        if completed {
            self.counts.calls += 1;
            if !shown {
                *self.counts.valueless.entry(func).or_default() += 1;
            }
        }
    }

    /// Print the held entry of task `ti`, if any, as an open call.
    pub(super) fn release(
        &mut self,
        ti: usize,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        // Flat sources never hold one: checked before `take` moves the large `Held` out.
        if self.tasks[ti].held.is_none() {
            return Ok(());
        }
        let Some(h) = self.tasks[ti].held.take() else {
            return Ok(());
        };
        let keep_args = sink.wants_args_at_close();
        let Some(f) = self.tasks[ti].stack.last_mut() else {
            return Ok(());
        };
        f.opened = true;
        if keep_args {
            f.args = h.args.clone();
        }
        let around = self.inline_count(ti);
        let own = h.layout.as_ref().map(|(head, indent_start, shift)| Layout {
            head,
            indent_start: *indent_start,
            shift: *shift,
        });
        let shifted = Self::shifted_head(own, around);
        let f = self.tasks[ti].stack.last().expect("frame");
        // The held entry's frame (its function, no inlined copy), with the entry's text.
        let view = CallView {
            depth: f.depth + around,
            name: &h.name,
            module: h.module.as_deref(),
            args: &h.args,
            callsite: h.callsite.as_deref(),
            comment: h.comment.as_deref(),
            layout: super::inline::laid_out(&shifted, own),
            open_after: self.tasks[ti].stack.len(),
            ..self.frame_view(Kind::Open, f, h.task())
        };
        sink.call(&view, out)
    }

    /// The held entry of task `ti` returned with nothing printed in between: a leaf, laid
    /// out on the return's line.
    fn held_leaf(
        &mut self,
        ti: usize,
        x: &Exit<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let h = self.tasks[ti].held.take().expect("held");
        let f = self.tasks[ti].stack.pop().expect("held frame");
        let duration_ns = super::duration(x.time_ns, f.time_ns, x.duration_ns);
        self.count_irq_time(ti, &f, duration_ns);
        let probe = self.take_pending_ret(ti, h.func);
        let outs = self.take_pending_outs(ti, h.func);
        let (shown, error, raw_given) = self.render_ret(h.func, x.ret, probe);
        self.count_return(h.func, true, shown, error);
        let origin = self.settle_origin(ti, (f.id, h.func), f.parent, &f.origins, (shown, error));
        let (ret, ret_raw) = self.ret_view(shown, raw_given);
        let around = self.inline_count(ti);
        let shifted = Self::shifted_head(x.layout, around);
        let view = CallView {
            depth: x.depth + around,
            name: &h.name,
            module: h.module.as_deref(),
            args: &h.args,
            ret,
            ret_raw,
            error,
            origin: self.origin_view(origin),
            duration_ns,
            callsite: h.callsite.as_deref(),
            comment: h.comment.as_deref(),
            layout: super::inline::laid_out(&shifted, x.layout),
            open_after: self.tasks[ti].stack.len(),
            irq_ns: (f.irq_ns > 0).then_some(f.irq_ns),
            outs: outs.as_ref(),
            ..self.frame_view(Kind::Leaf, &f, x.task)
        };
        sink.call(&view, out)
    }
}
