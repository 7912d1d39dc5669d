//! The in-process engine's two sources merged by time: the recorder's records and the
//! uprobe events of the functions it cannot hook, each held until both sources have
//! delivered what came before it, then passed on to the call pipeline.

use std::io::Write;

use dcg_inproc::layout;
use dcg_inproc::rings::{self, RawValue, Record};

use dcg_calls::saved_format::{CallRecord, StackFrame};

use crate::plan::Value;
use crate::probe_feed::{Calls, EventSink, Meta};

/// What a held event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Entry,
    Return,
    Unwound,
    /// The return address of the next entry (`values[0]`), read by its own uprobe.
    CallSite,
    /// The thread's program called `exec` (its new image's recorder started).
    Exec,
    /// The stack the thread's next top-level call starts on (`--stack`).
    Stack,
    /// A tree of kernel calls the thread made (a session tracing both sides): `probe`
    /// is its index in [`Merge::kernel`].
    Kernel,
    /// An inlined copy's first instruction reached (uprobes), with the values read there
    /// (`probe`: the site).
    Inline,
    /// The same, without values.
    InlineBare,
}

/// A call event held until both sources have delivered what came before it.
#[derive(Debug)]
struct Held {
    ts: u64,
    tid: u32,
    /// The thread's process, when the source said it.
    pid: Option<u32>,
    cpu: u32,
    comm: String,
    kind: Kind,
    probe: usize,
    values: Vec<Value>,
    /// Where the function's entry is in the process (entries).
    ip: Option<u64>,
    /// A stack's frames, innermost first.
    stack: Vec<StackFrame>,
}

/// The events of both sources, passed on in time order.
#[derive(Default)]
pub(crate) struct Merge {
    held: Vec<Held>,
    lost: Vec<(u32, u64)>,
    /// The kernel's trees of calls (a session tracing both sides), each in entry order.
    kernel: Vec<Vec<CallRecord>>,
}

impl Merge {
    /// A recorder's record.
    pub(crate) fn record(
        &mut self,
        r: &Record,
        probe: usize,
        ip: Option<u64>,
        entry_kinds: &[Vec<u8>],
        ret_kinds: &[Vec<u8>],
    ) {
        let f = r.func as usize;
        let decode = |kinds: &[u8]| -> Vec<Value> {
            rings::values(&r.payload, kinds.iter().copied())
                .unwrap_or_default()
                .into_iter()
                .map(|v| match v {
                    RawValue::Word(w) => Value::Num(w),
                    RawValue::Str(s) => Value::Str(String::from_utf8_lossy(&s).into_owned()),
                    RawValue::Fault => Value::Fault,
                    RawValue::Bytes(b) => Value::Bytes(b),
                })
                .collect()
        };
        let (kind, values) = match r.kind {
            layout::REC_EXEC => (Kind::Exec, Vec::new()),
            layout::REC_ENTRY => (Kind::Entry, decode(&entry_kinds[f])),
            layout::REC_EXIT => (Kind::Return, decode(&ret_kinds[f])),
            layout::REC_UNWIND => (Kind::Unwound, Vec::new()),
            _ => return,
        };
        self.held.push(Held {
            ts: r.ts,
            tid: r.tid,
            pid: Some(r.pid),
            cpu: u32::from(r.cpu),
            // The calls an exec ends keep the old program's name.
            comm: if kind == Kind::Exec {
                crate::probe_feed::UNKNOWN_COMM.to_string()
            } else {
                r.comm.clone()
            },
            kind,
            probe,
            values,
            ip: ip.filter(|_| kind == Kind::Entry),
            stack: Vec::new(),
        });
    }

    /// The frames of a recorder's stack record `r`, unwound.
    pub(crate) fn stack(&mut self, r: &Record, frames: Vec<StackFrame>) {
        self.held.push(Held {
            ts: r.ts,
            tid: r.tid,
            pid: Some(r.pid),
            cpu: u32::from(r.cpu),
            comm: r.comm.clone(),
            kind: Kind::Stack,
            probe: 0,
            values: Vec::new(),
            ip: None,
            stack: frames,
        });
    }

    /// The calls a kernel session recorded for the command (a session tracing both
    /// sides), in any order: each top-level call's tree is held at its entry's time, to
    /// be passed on between the user events of its thread around it.
    pub(crate) fn kernel_calls(&mut self, mut records: Vec<CallRecord>) {
        // Ids are given in entry order: a call after its parent.
        records.sort_by_key(|r| r.id);
        let mut tree_of: std::collections::HashMap<u64, usize> = Default::default();
        for r in records {
            let (Some(tid), Some(ts)) = (r.pid, r.time_ns) else {
                continue;
            };
            let tree = match r.parent.and_then(|p| tree_of.get(&p).copied()) {
                Some(t) => t,
                None => {
                    self.held.push(Held {
                        ts,
                        tid,
                        pid: r.tgid,
                        cpu: r.cpu.unwrap_or(0),
                        comm: r.comm.clone().unwrap_or_default(),
                        kind: Kind::Kernel,
                        probe: self.kernel.len(),
                        values: Vec::new(),
                        ip: None,
                        stack: Vec::new(),
                    });
                    self.kernel.push(Vec::new());
                    self.kernel.len() - 1
                }
            };
            tree_of.insert(r.id, tree);
            self.kernel[tree].push(r);
        }
    }

    fn hold(&mut self, m: &Meta<'_>, kind: Kind, probe: usize, values: &[Value]) {
        self.held.push(Held {
            ts: m.ts,
            tid: m.tid,
            pid: m.pid,
            cpu: m.cpu,
            comm: m.comm.to_string(),
            kind,
            probe,
            values: values.to_vec(),
            ip: m.ip,
            stack: Vec::new(),
        });
    }

    /// Pass on the events up to `upto` (ns) in time order; true once `count` top-level
    /// calls completed.
    pub(crate) fn release(
        &mut self,
        upto: u64,
        calls: &mut Calls<'_>,
        out: &mut dyn Write,
        count: Option<u64>,
    ) -> std::io::Result<bool> {
        for (cpu, n) in self.lost.drain(..) {
            calls.lost(cpu, n, out)?;
        }
        self.held.sort_by_key(|h| h.ts);
        let n = self.held.partition_point(|h| h.ts <= upto);
        let ready: Vec<Held> = self.held.drain(..n).collect();
        for h in ready {
            let m = Meta {
                comm: &h.comm,
                tid: h.tid,
                pid: h.pid,
                cpu: h.cpu,
                ts: h.ts,
                ip: h.ip,
            };
            match h.kind {
                Kind::Entry => calls.entry(&m, h.probe, &h.values, out)?,
                Kind::Return => calls.ret(&m, h.probe, &h.values, out)?,
                Kind::Unwound => calls.unwound(&m, h.probe, out)?,
                Kind::Exec => calls.exec(&m, out)?,
                Kind::Stack => calls.stack(h.tid, h.stack),
                Kind::Kernel => {
                    let tree = std::mem::take(&mut self.kernel[h.probe]);
                    calls.kernel_calls(&m, &tree, out)?;
                }
                Kind::Inline => calls.inline(&m, h.probe, Some(&h.values), out)?,
                Kind::InlineBare => calls.inline(&m, h.probe, None, out)?,
                Kind::CallSite => {
                    if let Some(Value::Num(ra)) = h.values.first() {
                        calls.call_site(h.tid, h.probe, *ra);
                    }
                }
            }
            if count.is_some_and(|n| calls.top_level() >= n) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl EventSink for Merge {
    fn entry(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        _out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.hold(m, Kind::Entry, probe, values);
        Ok(())
    }
    fn ret(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        _out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.hold(m, Kind::Return, probe, values);
        Ok(())
    }
    // The uprobe engine's inline sites (the in-process engine's uprobes have none).
    fn inline(
        &mut self,
        m: &Meta<'_>,
        site: usize,
        values: Option<&[Value]>,
        _out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match values {
            Some(v) => self.hold(m, Kind::Inline, site, v),
            None => self.hold(m, Kind::InlineBare, site, &[]),
        }
        Ok(())
    }
    fn call_site(&mut self, tid: u32, probe: usize, ra: u64) {
        // Just before its entry event, on the same clock.
        let ts = self
            .held
            .iter()
            .rev()
            .find(|h| h.tid == tid)
            .map_or(0, |h| h.ts);
        self.held.push(Held {
            ts,
            tid,
            pid: None,
            cpu: 0,
            comm: String::new(),
            kind: Kind::CallSite,
            probe,
            values: vec![Value::Num(ra)],
            ip: None,
            stack: Vec::new(),
        });
    }
    fn lost(&mut self, cpu: u32, n: u64, _out: &mut dyn Write) -> std::io::Result<()> {
        self.lost.push((cpu, n));
        Ok(())
    }
    fn exec(&mut self, m: &Meta<'_>, _out: &mut dyn Write) -> std::io::Result<()> {
        self.hold(m, Kind::Exec, 0, &[]);
        Ok(())
    }
    fn top_level(&self) -> u64 {
        0
    }
}
