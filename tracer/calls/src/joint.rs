//! A session tracing user and kernel functions together (issue 42): the kernel calls of
//! a thread, decoded on their own into completed calls, are joined into the user side's
//! tree where the thread made them. The user side's source replays each kernel tree at
//! its place in time, between the user events around it; the tree nests it below the
//! thread's innermost open user call.

use std::io;

use crate::funcs::FuncId;
use crate::pipeline::Pipeline;
use crate::saved_format::CallRecord;
use crate::sink::{ArgList, Task};
use crate::tree::{ArgsIn, Entry, Exit, RetIn};

impl Pipeline<'_> {
    /// Replay `calls` as calls of `task` now: a kernel session's completed calls of that
    /// thread, in entry order, every call after its parent (one tree or several in a
    /// row). Each enters below the task's innermost open call with the values it was
    /// saved with and returns as it did; a call saved without a duration (it never
    /// returned) is left open, for the user call around it to end.
    pub fn replay_kernel(&mut self, task: Task<'_>, calls: &[CallRecord]) -> io::Result<()> {
        let mut open: Vec<&CallRecord> = Vec::new();
        let mut args = ArgList::default();
        let mut outs = ArgList::default();
        for r in calls {
            while let Some(top) = open.last().copied() {
                if r.parent == Some(top.id) {
                    break;
                }
                open.pop();
                self.replay_exit(task, top, &mut outs)?;
            }
            let (func, task) = self.replayed(task, r);
            args.clear();
            for a in &r.args {
                args.push(&a.name, &a.value);
            }
            let entry = Entry {
                task,
                depth: 0,
                func,
                name: &r.func,
                module: None,
                args: ArgsIn::Rendered(&args),
                ret: None,
                leaf: false,
                time_ns: r.time_ns,
                duration_ns: None,
                callsite: None,
                site: None,
                comment: None,
                layout: None,
                ctx: r.ctx,
            };
            self.enter(&entry)?;
            open.push(r);
        }
        while let Some(top) = open.pop() {
            self.replay_exit(task, top, &mut outs)?;
        }
        Ok(())
    }

    /// The function of replayed call `r`, and its task as `task` on its CPU.
    fn replayed<'t>(&mut self, task: Task<'t>, r: &CallRecord) -> (FuncId, Task<'t>) {
        let func = self
            .tree_mut()
            .funcs
            .intern_kernel(&r.func, r.module.as_deref());
        let cpu = r.cpu.or(task.cpu);
        (func, Task { cpu, ..task })
    }

    /// The return of replayed call `r` (none for a call that never returned).
    fn replay_exit(
        &mut self,
        task: Task<'_>,
        r: &CallRecord,
        outs: &mut ArgList,
    ) -> io::Result<()> {
        let (Some(t), Some(d)) = (r.time_ns, r.duration_ns) else {
            return Ok(());
        };
        if r.ended.is_some() {
            return Ok(());
        }
        let (func, task) = self.replayed(task, r);
        outs.clear();
        for o in &r.out {
            outs.push(&o.name, &o.value);
        }
        let exit = Exit {
            task,
            depth: 0,
            func: Some(func),
            ret: r.ret.as_deref().map(|text| RetIn::Rendered {
                text,
                raw: r.ret_raw.as_deref(),
                error: r.error,
            }),
            outs: (!outs.is_empty()).then_some(&*outs),
            time_ns: Some(t.saturating_add(d)),
            duration_ns: None,
            layout: None,
        };
        self.exit(&exit).map(drop)
    }
}
