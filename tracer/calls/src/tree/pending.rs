//! Values a shaped source delivers apart from their call's lines (probe events): the
//! return value and output parameters of the next return of a function, the arguments
//! and members or structs of its entry, joined to the call they belong to.

use std::io;

use super::{ArgList, CallTree, Frame, FuncId, Sink};

/// An event a shaped source delivers apart from its call's entry line.
#[derive(Debug, Clone, Copy)]
enum EntryEvent {
    /// An entry probe's arguments.
    Args,
    /// A read event's members or structs.
    Read,
}

impl Frame {
    /// Mark `ev` delivered to this call; whether it had been already.
    fn got(&mut self, ev: EntryEvent) -> bool {
        let flag = match ev {
            EntryEvent::Args => &mut self.args_event,
            EntryEvent::Read => &mut self.entry_read,
        };
        std::mem::replace(flag, true)
    }
}

impl CallTree<'_> {
    /// The return value of the next return of `func` in task `key`, delivered apart from
    /// it (an exit probe event). An exit event inside a held entry of `func` leaves it
    /// held (its `}` comes next); anything else releases it first.
    pub fn pending_ret(
        &mut self,
        key: u64,
        func: FuncId,
        raw: u64,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(key);
        match self.tasks[ti].held.as_mut() {
            Some(h) if h.func == func && !h.ret_event => h.ret_event = true,
            _ => self.release(ti, sink, out)?,
        }
        self.tasks[ti].pending_ret = Some((func, raw));
        Ok(())
    }

    /// Arguments of the next entry of `func` in task `key`, delivered apart from it (an
    /// entry probe event). An entry event right after a held entry of `func` (kernels that
    /// print it after the `{`) gives that call its arguments, unless it has them already
    /// (then it is the next call's, e.g. recursion).
    pub fn pending_args(
        &mut self,
        key: u64,
        func: FuncId,
        args: ArgList,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(key);
        let t = &mut self.tasks[ti];
        // The held entry's frame is the top of the stack: it says whether the entry has
        // its arguments already.
        let waiting = t.stack.last_mut().filter(|f| !f.args_event);
        if let (Some(h), Some(f)) = (t.held.as_mut().filter(|h| h.func == func), waiting) {
            f.got(EntryEvent::Args);
            // What a read event gave it already (`--deref`'s structs, `--fields`'
            // members, when theirs came first) stays over the plain values.
            let mut args = args;
            args.merge(&h.args);
            h.args = args;
            return Ok(());
        }
        self.release(ti, sink, out)?;
        if let Some(f) = self.late_event_call(ti, func, EntryEvent::Args) {
            let mut args = args;
            args.merge(&f.args);
            f.args = args;
            return Ok(());
        }
        self.tasks[ti].pending_args = Some((func, args));
        Ok(())
    }

    /// The open call on top of task `ti`'s stack when it is a call of `func` still waiting
    /// for its entry's event `ev`, now marked as having it: the event came after the
    /// call's `{` with an interrupt's calls between, which released the entry (printed
    /// without it); the outputs that show arguments at the close get it. A call of `func`
    /// on top that had its event is the caller of the next one (recursion, on kernels that
    /// print the event before the entry).
    fn late_event_call(&mut self, ti: usize, func: FuncId, ev: EntryEvent) -> Option<&mut Frame> {
        let f = self.tasks[ti]
            .stack
            .last_mut()
            .filter(|f| f.func == func && f.inline.is_none())?;
        (!f.got(ev)).then_some(f)
    }

    /// Members or structs of a call of `func` in task `key` read by a probe event at its
    /// entry (`--fields`, `--deref` with function_graph): merged into the arguments
    /// ([`ArgList::merge`]) of the held entry of `func` (the event came after its line),
    /// else kept for its next entry.
    pub fn pending_members(
        &mut self,
        key: u64,
        func: FuncId,
        members: &ArgList,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(key);
        let t = &mut self.tasks[ti];
        if let Some(h) = t.held.as_mut().filter(|h| h.func == func) {
            h.args.merge(members);
            if let Some(f) = t.stack.last_mut() {
                f.got(EntryEvent::Read);
            }
            return Ok(());
        }
        self.release(ti, sink, out)?;
        if let Some(f) = self.late_event_call(ti, func, EntryEvent::Read) {
            f.args.merge(members);
            return Ok(());
        }
        self.tasks[ti].pending_members = Some((func, members.clone()));
        Ok(())
    }

    /// Output parameters of the next return of `func` in task `key`, read by an exit probe
    /// event (`--deref`, `--fields` with function_graph): shown in its return comment. An
    /// exit event inside a held entry of `func` leaves it held (its return comes next);
    /// anything else releases it first.
    pub fn pending_outs(
        &mut self,
        key: u64,
        func: FuncId,
        outs: &ArgList,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(key);
        if self.tasks[ti].held.as_ref().is_none_or(|h| h.func != func) {
            self.release(ti, sink, out)?;
        }
        self.tasks[ti].pending_outs = Some((func, outs.clone()));
        Ok(())
    }
}
