//! Per-task state of the decoder: for each task (pid, or cpu without the proc column) the
//! stack of open calls, the probe-event values waiting for the next entry or return of
//! their function, and the call tree buffered for `--errors-only`.

use super::Decoder;
use crate::errpaths::Item;
use dcg_fgraph as fgraph;

/// An open call of a task.
pub(super) struct Frame {
    pub(super) depth: u32,
    pub(super) id: u32,
    pub(super) call_id: u64,
    pub(super) parent: Option<u64>,
    pub(super) args: Vec<(String, String)>,
    pub(super) time_ns: Option<u64>,
}

#[derive(Default)]
pub(super) struct Task {
    pub(super) stack: Vec<Frame>,
    /// (function id, raw value) from an exit probe event, for the next `}` of it.
    pub(super) pending_ret: Option<(u32, u64)>,
    /// (function id, fields) from an entry probe event, for the next entry of it.
    pub(super) pending_args: Option<(u32, Vec<(String, String)>)>,
    /// Buffered top-level call tree (`--errors-only`).
    pub(super) items: Vec<Item>,
}

impl<'a> Decoder<'a> {
    pub(super) fn task_key(p: &fgraph::Prefix<'_>) -> u64 {
        match (p.pid, p.cpu) {
            (Some(pid), _) => pid as u64,
            (None, Some(cpu)) => (1u64 << 32) | cpu as u64,
            (None, None) => 0,
        }
    }

    /// The task of `key`, created when new.
    #[inline]
    pub(super) fn task(&mut self, key: u64) -> usize {
        if let Some((k, i)) = self.last_task {
            if k == key {
                return i;
            }
        }
        let n = self.tasks.len();
        let i = *self.task_ids.entry(key).or_insert(n);
        if i == n {
            self.tasks.push(Task::default());
        }
        self.last_task = Some((key, i));
        i
    }

    pub(super) fn push_frame(&mut self, ti: usize, frame: Frame) {
        let task = &mut self.tasks[ti];
        while task.stack.last().is_some_and(|f| f.depth >= frame.depth) {
            task.stack.pop();
        }
        task.stack.push(frame);
    }

    /// Pop the frame a `}` at `depth` closes.
    pub(super) fn pop_frame(&mut self, ti: usize, depth: u32) -> Option<Frame> {
        let task = &mut self.tasks[ti];
        while let Some(f) = task.stack.pop() {
            if f.depth <= depth {
                return Some(f);
            }
        }
        None
    }

    /// The call a new call at `depth` is made from: the innermost open frame above it.
    pub(super) fn parent_of(&self, ti: usize, depth: u32) -> Option<u64> {
        self.tasks[ti]
            .stack
            .iter()
            .rev()
            .find(|f| f.depth < depth)
            .map(|f| f.call_id)
    }
}
