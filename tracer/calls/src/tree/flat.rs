//! Flat sources (uprobes, BPF): entries and returns only. Each task's newest entry waits
//! unprinted until the next event: a child entering opens it, its own return makes it a
//! leaf. Returns are matched by function; calls above the returning one never returned.

use std::io;

use super::{CallTree, Entry, Exit, Frame, TaskState};
use crate::funcs::FuncId;
use crate::origin::Origins;
use crate::saved_format::Space;
use crate::sink::{Kind, Sink, Task};

impl CallTree<'_> {
    pub(super) fn enter_flat(
        &mut self,
        ti: usize,
        id: u64,
        e: &Entry<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        remember_comm(&mut self.tasks[ti], e.task);
        self.push_flat(ti, id, e.func, e.task, e.time_ns, None, sink, out)?;
        if let Some(c) = e.comment {
            let f = self.tasks[ti].stack.last_mut().expect("pushed");
            f.comment = Some(c.into());
        }
        let stack = &self.tasks[ti].stack;
        let below = stack.len().checked_sub(2).and_then(|i| stack[i].ctx);
        let depth = stack.len() as u32 - 1;
        let (ctx, irq_entry) = self.call_context(ti, e.func, e.ctx, below, depth);
        if ctx.is_some() {
            let f = self.tasks[ti].stack.last_mut().expect("pushed");
            f.ctx = ctx;
            f.irq_entry = irq_entry;
        }
        Ok(())
    }

    /// Push an open call of `func` (its arguments in `self.args`); its parent gets its
    /// `{` now that it has a visible child.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_flat(
        &mut self,
        ti: usize,
        id: u64,
        func: FuncId,
        task: Task<'_>,
        time_ns: Option<u64>,
        inline: Option<u32>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let t = &self.tasks[ti];
        let depth = t.stack.len() as u32;
        let parent = t.stack.last().map(|f| f.id);
        if self.visible(depth) && t.stack.last().is_some_and(|f| !f.opened) {
            let f = t.stack.last().expect("parent");
            let view = crate::sink::CallView {
                open_after: t.stack.len(),
                ..self.frame_view(Kind::Open, f, Task { cpu: f.cpu, ..task })
            };
            sink.call(&view, out)?;
            let top = self.tasks[ti].stack.len() - 1;
            self.tasks[ti].stack[top].opened = true;
        }
        // An inline frame runs in its container's context.
        let ctx = self.tasks[ti].stack.last().and_then(|f| f.ctx);
        let stack = match depth {
            0 => self.tasks[ti].pending_stack.take(),
            _ => None,
        };
        let kernel = |f: FuncId| self.funcs.get(f).space == Some(Space::Kernel);
        let space_entry =
            kernel(func) && self.tasks[ti].stack.last().is_none_or(|p| !kernel(p.func));
        self.tasks[ti].stack.push(Frame {
            depth,
            func,
            id,
            parent,
            args: std::mem::take(&mut self.args),
            time_ns,
            cpu: task.cpu,
            opened: false,
            origins: Origins::new(),
            inline,
            ctx,
            irq_entry: false,
            irq_ns: 0,
            lost_here: 0,
            lost: 0,
            comment: None,
            stack,
            space_entry,
            entry_read: false,
            args_event: false,
            kernel_error: None,
        });
        Ok(())
    }

    pub(super) fn exit_flat(
        &mut self,
        x: &Exit<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(x.task.key);
        remember_comm(&mut self.tasks[ti], x.task);
        let Some(func) = x.func else {
            return Ok(());
        };
        let Some(pos) = self.tasks[ti]
            .stack
            .iter()
            .rposition(|f| f.func == func && f.inline.is_none())
        else {
            self.counts.lone_returns += 1;
            let (shown, error, raw_given) = self.render_ret(func, x.ret, None);
            let (ret, ret_raw) = self.ret_view(shown, raw_given);
            let view = crate::sink::CallView {
                ret,
                ret_raw,
                outs: x.outs,
                error,
                open_after: self.tasks[ti].stack.len(),
                entry_missing: true,
                ..self.view(Kind::Close, func, x.task)
            };
            return sink.call(&view, out);
        };
        // Inline frames above it end with it; calls above it returned without an event
        // (longjmp, lost events).
        while self.tasks[ti].stack.len() > pos + 1 {
            if self.tasks[ti]
                .stack
                .last()
                .is_some_and(|f| f.inline.is_some())
            {
                self.close_inline(ti, x.task, x.time_ns, sink, out)?;
            } else {
                self.unfinished(ti, x.task, sink, out)?;
            }
        }
        let f = self.tasks[ti].stack.pop().expect("frame at pos");
        let duration_ns = super::duration(x.time_ns, f.time_ns, x.duration_ns);
        self.count_irq_time(ti, &f, duration_ns);
        self.pass_lost(ti, &f);
        let (lost, lost_here) = Self::lost_view(&f);
        let (shown, error, raw_given) = self.render_ret(func, x.ret, None);
        if error {
            self.counts.errors += 1;
        }
        self.counts.calls += 1;
        if f.depth == 0 {
            self.counts.top_level += 1;
        }
        let origin = self.settle_origin(ti, (f.id, func), f.parent, &f.origins, (shown, error));
        // A user call failed by a system call below it (a session tracing both sides).
        let by_kernel = self.settle_kernel_error(ti, &f, func, (shown, error));
        let (ret, ret_raw) = self.ret_view(shown, raw_given);
        let origin = match (by_kernel, f.kernel_error.as_deref()) {
            (true, Some((errno, at))) => Some(crate::sink::Origin {
                errno: Some(errno),
                ..self.origin_view(Some(*at)).expect("an origin")
            }),
            _ => self.origin_view(origin),
        };
        // Not an inline frame (found by `f.inline.is_none()`): no inlined copy.
        let view = crate::sink::CallView {
            ret,
            ret_raw,
            outs: x.outs,
            error: error || by_kernel,
            origin,
            duration_ns,
            open_after: self.tasks[ti].stack.len(),
            visible: self.visible(f.depth),
            entry_cpu: f.cpu,
            irq_ns: (f.irq_ns > 0).then_some(f.irq_ns),
            lost,
            lost_here,
            comment: f.comment.as_deref(),
            ..self.frame_view(close_kind(&f), &f, x.task)
        };
        sink.call(&view, out)
    }

    /// An interrupt subtree that took `duration_ns` ended: its time is in every call of
    /// the interrupted context still open.
    pub(super) fn count_irq_time(&mut self, ti: usize, f: &Frame, duration_ns: Option<u64>) {
        if f.irq_entry {
            self.interrupt_closed(ti, f.depth);
        }
        let (true, Some(ns)) = (f.irq_entry, duration_ns) else {
            return;
        };
        for g in self.tasks[ti].stack.iter_mut().rev() {
            if g.ctx == f.ctx {
                break; // an interrupt of the same kind below: already counted there
            }
            g.irq_ns += ns;
        }
    }

    /// The calls of `task` above `depth` open calls were left by a non-local jump (a
    /// `longjmp` back into a function at that depth): each closes, innermost first, as a
    /// return without a value, the way a source that sees them go says so
    /// ([`Exit`] without `ret`).
    pub fn unwind_to(
        &mut self,
        task: Task<'_>,
        depth: usize,
        time_ns: Option<u64>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(task.key);
        while let Some(f) = self.tasks[ti].stack.get(depth..).and_then(<[Frame]>::last) {
            if f.inline.is_some() {
                self.close_inline(ti, task, time_ns, sink, out)?;
                continue;
            }
            let exit = Exit {
                outs: None,
                task,
                depth: 0,
                func: Some(f.func),
                ret: None,
                time_ns,
                duration_ns: None,
                layout: None,
            };
            self.exit_flat(&exit, sink, out)?;
        }
        Ok(())
    }

    /// The program of `task` called `exec`: every call it has open ends there, innermost
    /// first, unfinished and marked so ([`crate::sink::CallView::exec`]); what the task
    /// runs next starts a new tree.
    pub fn exec(
        &mut self,
        task: Task<'_>,
        time_ns: Option<u64>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let Some(&ti) = self.task_ids.get(&task.key) else {
            return Ok(());
        };
        if self.tasks[ti].held.is_some() {
            self.release(ti, sink, out)?;
        }
        while let Some(f) = self.tasks[ti].stack.last() {
            if f.inline.is_some() {
                self.close_inline(ti, task, time_ns, sink, out)?;
            } else {
                self.unfinished_as(ti, task, true, sink, out)?;
            }
        }
        Ok(())
    }

    /// Pop the innermost open call of task `ti`, which never returned.
    pub(super) fn unfinished(
        &mut self,
        ti: usize,
        task: Task<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.unfinished_as(ti, task, false, sink, out)
    }

    /// [`CallTree::unfinished`]; `exec`: ended by its program's `exec`.
    fn unfinished_as(
        &mut self,
        ti: usize,
        task: Task<'_>,
        exec: bool,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let Some(f) = self.tasks[ti].stack.pop() else {
            return Ok(());
        };
        self.counts.unfinished += 1;
        self.pass_lost(ti, &f);
        let (lost, lost_here) = Self::lost_view(&f);
        let view = crate::sink::CallView {
            open_after: self.tasks[ti].stack.len(),
            visible: self.visible(f.depth),
            unfinished: true,
            exec,
            entry_cpu: f.cpu,
            lost,
            lost_here,
            comment: f.comment.as_deref(),
            ..self.frame_view(close_kind(&f), &f, Task { cpu: f.cpu, ..task })
        };
        sink.call(&view, out)
    }

    /// End of a flat stream: every open call closes unfinished, task by task.
    pub(super) fn finish_flat(&mut self, sink: &mut dyn Sink, out: &mut Vec<u8>) -> io::Result<()> {
        let mut keys: Vec<(u64, usize)> = self.task_ids.iter().map(|(&k, &i)| (k, i)).collect();
        keys.sort_unstable();
        for (k, ti) in keys {
            let comm = std::mem::take(&mut self.tasks[ti].comm);
            let task = Task {
                key: k,
                pid: u32::try_from(k).ok(),
                comm: Some(&comm),
                cpu: None,
                process: self.tasks[ti].process,
            };
            while !self.tasks[ti].stack.is_empty() {
                self.unfinished(ti, task, sink, out)?;
            }
        }
        Ok(())
    }
}

/// A call that printed its `{` closes with `}`, else it is a leaf.
pub(super) fn close_kind(f: &Frame) -> Kind {
    if f.opened {
        Kind::Close
    } else {
        Kind::Leaf
    }
}

/// The task's command name and process, as its latest event said them.
fn remember_comm(t: &mut TaskState, task: Task<'_>) {
    if task.process.is_some() {
        t.process = task.process;
    }
    if let Some(c) = task.comm {
        if t.comm != c {
            t.comm.clear();
            t.comm.push_str(c);
        }
    }
}
