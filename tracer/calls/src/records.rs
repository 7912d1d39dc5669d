//! Sinks of completed calls as [`CallRecord`]s: JSON lines on the output (`--json`), the
//! saved-calls file (`--output`), and an in-memory collection (reports).

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use crate::record::{self, ArgValue, CallRecord, InlineSite, RecordSink};
use crate::sink::{CallView, Kind, Note, Sink};

/// The record of a completed call (a close with its entry, or a leaf); `None` otherwise.
pub fn record_of(c: &CallView<'_>) -> Option<CallRecord> {
    if c.kind == Kind::Open || c.entry_missing {
        return None;
    }
    let info = c.func;
    let (func, module) = match info.func {
        Some(f) => (
            f.symbol().to_string(),
            info.module_label.clone().or_else(|| {
                f.module()
                    .filter(|m| m.kind() == sigdb::ModuleKind::KernelModule)
                    .map(|m| m.name().to_string())
            }),
        ),
        None => (info.name.clone(), None),
    };
    Some(CallRecord {
        id: c.id,
        parent: c.parent,
        func,
        module,
        cpu: c.entry_cpu.or(c.task.cpu),
        comm: c.task.comm.map(str::to_string),
        pid: c.task.pid,
        depth: c.depth,
        time_ns: c.time_ns,
        duration_ns: c.duration_ns,
        args: c
            .args
            .iter()
            .map(|(n, v)| ArgValue {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
        ret: c.ret.map(str::to_string),
        ret_raw: c.ret_raw.map(str::to_string),
        error: c.error,
        origin: c.origin.map(|o| o.id),
        decoded: info.func.is_some(),
        inline: c.inlined.map(|i| InlineSite {
            container: i.container.to_string(),
            file: i.file.to_string(),
            line: i.line,
        }),
        ctx: c.ctx,
        irq_ns: c.irq_ns,
        lost: c.lost,
    })
}

/// `--json`: one record per completed call on the output.
#[derive(Debug, Default)]
pub struct JsonLines;

impl Sink for JsonLines {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        match record_of(c) {
            Some(r) => record::write_record(out, &r),
            None => Ok(()),
        }
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }

    fn takes_json_lines(&self) -> bool {
        true
    }

    fn json_line(&mut self, line: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        out.extend_from_slice(line);
        Ok(())
    }
}

/// `--output FILE`: the saved-calls stream (header, then a record per completed call).
pub struct SavedCalls<'w> {
    sink: RecordSink<'w>,
}

impl<'w> SavedCalls<'w> {
    /// Start the stream on `out` with a header naming `source`.
    pub fn new(out: Box<dyn Write + 'w>, source: &str) -> io::Result<SavedCalls<'w>> {
        Ok(SavedCalls {
            sink: RecordSink::new(out, source)?,
        })
    }
}

impl Sink for SavedCalls<'_> {
    fn call(&mut self, c: &CallView<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        match record_of(c) {
            Some(r) => self.sink.write(&r),
            None => Ok(()),
        }
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }

    fn finish(&mut self, _: &mut Vec<u8>) -> io::Result<()> {
        self.sink.flush()
    }

    fn takes_json_lines(&self) -> bool {
        true
    }

    fn json_line(&mut self, line: &[u8], _: &mut Vec<u8>) -> io::Result<()> {
        self.sink.write_line(line)
    }
}

/// Completed calls collected in memory, in completion order (reports). The records are
/// taken through the [`Collected`] handle once the stream has ended.
#[derive(Debug, Default)]
pub struct Collect {
    records: Rc<RefCell<Vec<CallRecord>>>,
}

/// The handle to what a [`Collect`] sink gathered.
#[derive(Debug, Clone)]
pub struct Collected(Rc<RefCell<Vec<CallRecord>>>);

impl Collect {
    /// An empty collection.
    pub fn new() -> Collect {
        Collect::default()
    }

    /// The handle to take the records from.
    pub fn handle(&self) -> Collected {
        Collected(Rc::clone(&self.records))
    }
}

impl Collected {
    /// The records gathered so far (taken out).
    pub fn take(&self) -> Vec<CallRecord> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

impl Sink for Collect {
    fn call(&mut self, c: &CallView<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        if let Some(r) = record_of(c) {
            self.records.borrow_mut().push(r);
        }
        Ok(())
    }

    fn note(&mut self, _: &Note<'_>, _: &mut Vec<u8>) -> io::Result<()> {
        Ok(())
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }
}
