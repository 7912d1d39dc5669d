//! function_graph records read in binary (ring-buffer pages, `trace_pipe_raw`) into the
//! same call tree as the text: functions named by address through kallsyms, return
//! values and arguments as words, durations from the records' own call and return times.

use std::io::Write;

use dcg_dbset::kallsyms::Kallsyms;
use dcg_ringbuf::graph::{context_of, GraphRecord, RecordContext};

use super::Decoder;
use crate::saved_format::{Context, StackFrame};
use crate::sink::{Note, Task};
use crate::tree::{ArgsIn, CodeSite, Entry, Exit, RetIn};

impl<'a> Decoder<'a> {
    /// Feed one record of CPU `cpu`'s buffer, its depth less `shift` (a live session's
    /// root depth); functions are named by `syms`.
    pub fn feed_record(
        &mut self,
        rec: &GraphRecord<'_>,
        cpu: u32,
        shift: u32,
        syms: &Kallsyms,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.lines += 1;
        let comms = &self.comms;
        let task = |pid: u32| Task {
            key: u64::from(pid),
            pid: Some(pid),
            comm: comms.get(&pid).map(String::as_str),
            cpu: Some(cpu),
            process: None,
        };
        // A function kallsyms does not know is named by its address; of the symbols at
        // its start, the one the dbs know.
        let set = self.pipe.tree().funcs.set();
        let name_of = |addr: u64| -> (String, Option<String>) {
            match syms.locate(addr) {
                Some((start, n, m)) => {
                    let n = set.known_symbol_at(syms, start).unwrap_or(n);
                    (n.to_string(), m.map(str::to_string))
                }
                None => (format!("{addr:#x}"), None),
            }
        };
        match rec {
            GraphRecord::Entry {
                pid,
                ts,
                func,
                depth,
                args,
                retaddr,
                flags,
                ..
            } => {
                let (name, module) = name_of(*func);
                let callsite = retaddr.and_then(|a| syms.describe(a));
                let site = retaddr
                    .filter(|_| self.pipe.tree().inline_frames())
                    .and_then(|a| syms.locate(a).map(|(start, n, m)| (a - start, n, m)))
                    .map(|(offset, n, m)| CodeSite {
                        func: self.pipe.tree_mut().funcs.intern(n, m),
                        offset,
                    });
                let id = self.pipe.tree_mut().funcs.intern(&name, module.as_deref());
                let entry = Entry {
                    task: task(*pid),
                    depth: depth.saturating_sub(shift),
                    func: id,
                    name: &name,
                    module: module.as_deref(),
                    args: ArgsIn::Words(args),
                    ret: None,
                    leaf: false,
                    time_ns: Some(*ts),
                    duration_ns: None,
                    callsite: callsite.as_deref(),
                    site,
                    comment: None,
                    layout: None,
                    ctx: self.contexts.then(|| context(*flags)),
                };
                self.pipe.enter(&entry)?;
            }
            GraphRecord::Exit {
                pid,
                ts,
                func,
                depth,
                retval,
                calltime,
                rettime,
                ..
            } => {
                let (name, module) = name_of(*func);
                let id = self.pipe.tree_mut().funcs.intern(&name, module.as_deref());
                let raw = retval.map(|v| format!("{v:#x}"));
                let exit = Exit {
                    outs: None,
                    task: task(*pid),
                    depth: depth.saturating_sub(shift),
                    func: Some(id),
                    ret: raw.as_deref().map(|r| RetIn::Text {
                        raw: r,
                        value: *retval,
                    }),
                    // The record's time is the buffer's clock (the instance's
                    // `trace_clock`, as the entries'), and the tree takes the call's
                    // duration from it and its entry's; `calltime` and `rettime` are
                    // always the kernel's local clock, the duration where the entry's
                    // record was lost.
                    time_ns: Some(*ts),
                    duration_ns: Some(rettime.saturating_sub(*calltime)),
                    layout: None,
                };
                self.pipe.exit(&exit)?;
            }
            GraphRecord::Print { pid, text, .. } => {
                let depth = self.pipe.tree().depth_of(u64::from(*pid)) as u32;
                let note = Note::Comment {
                    task: task(*pid),
                    depth,
                    text,
                };
                self.pipe.note(&note)?;
            }
            // A live session hands stacks to the tree itself ([`Decoder::stack_of_next_root`]).
            GraphRecord::Stack { .. } | GraphRecord::Other { .. } => {}
        }
        self.flush_out(out)
    }

    /// `--stack`: the stack that led to task `pid`'s next top-level call, innermost first,
    /// delivered before that call's entry record.
    pub fn stack_of_next_root(&mut self, pid: u32, frames: Box<[StackFrame]>) {
        self.pipe.tree_mut().pending_stack(u64::from(pid), frames);
    }

    /// The dbs calls are decoded with.
    pub fn dbs(&self) -> &'a dcg_dbset::DbSet {
        self.pipe.tree().funcs.set()
    }
}

/// The call tree's context of a record with `common_flags` `flags`.
fn context(flags: u8) -> Context {
    match context_of(flags) {
        RecordContext::Task => Context::Task,
        RecordContext::Irq => Context::Irq,
        RecordContext::Softirq => Context::Softirq,
        RecordContext::Nmi => Context::Nmi,
    }
}
