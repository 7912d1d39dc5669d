//! Where decoded output goes: text collected in the decoder's buffer and written in
//! chunks, lines kept or buffered per task for `--errors-only`, error values in color, and
//! completed calls as records for `--json` and the `--output` file.

use std::io::Write;

use super::Decoder;
use crate::errpaths::{write_error_paths, Item, ItemKind};
use crate::record::{self, ArgValue, CallRecord, RecordSink};
use dcg_fgraph as fgraph;

/// Output text collected before it is handed to the writer.
pub(super) const OUT_CHUNK: usize = 1 << 16;

impl<'a> Decoder<'a> {
    /// Write the collected text.
    pub(super) fn flush_out(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.obuf.is_empty() {
            out.write_all(self.obuf.as_bytes())?;
            self.obuf.clear();
        }
        Ok(())
    }

    /// A line printed unchanged (or buffered inside a call tree with `--errors-only`).
    pub(super) fn passthrough(
        &mut self,
        line: &str,
        key: Option<u64>,
        _out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if self.opts.json {
            return Ok(());
        }
        if self.opts.errors_only {
            if let Some(k) = key {
                let ti = self.task(k);
                let task = &mut self.tasks[ti];
                if !task.items.is_empty() {
                    task.items.push(Item {
                        kind: ItemKind::Note,
                        error: false,
                        text: line.to_string(),
                    });
                }
            }
            return Ok(());
        }
        self.obuf.push_str(line);
        self.obuf.push('\n');
        Ok(())
    }

    /// ` /* <-retaddr ret=VALUE */` (or the original comment text).
    pub(super) fn push_comment_tail(
        &self,
        s: &mut String,
        retaddr: Option<&str>,
        ret: Option<&str>,
        error: bool,
        other: Option<&str>,
    ) {
        if retaddr.is_none() && ret.is_none() {
            if let Some(o) = other {
                s.push_str(" /* ");
                s.push_str(o);
                s.push_str(" */");
            }
            return;
        }
        s.push_str(" /* ");
        if let Some(ra) = retaddr {
            s.push_str("<-");
            s.push_str(ra);
            if ret.is_some() {
                s.push(' ');
            }
        }
        if let Some(v) = ret {
            s.push_str("ret=");
            self.push_value(s, v, error);
        }
        s.push_str(" */");
    }

    pub(super) fn push_value(&self, s: &mut String, v: &str, error: bool) {
        dcg_render::push_value(s, v, error && self.opts.color);
    }

    /// Also write every completed call as a [`CallRecord`] line to `sink` (after a header
    /// naming `source`): the `--output` file.
    pub fn save_records(&mut self, sink: Box<dyn Write + 'a>, source: &str) -> std::io::Result<()> {
        self.records = Some(RecordSink::new(sink, source)?);
        Ok(())
    }

    pub(super) fn wants_records(&self) -> bool {
        self.opts.json || self.records.is_some()
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn make_record(
        &self,
        p: fgraph::Prefix<'_>,
        id: u32,
        call_id: u64,
        parent: Option<u64>,
        args: &[(String, String)],
        ret: Option<&str>,
        raw: Option<&str>,
        error: bool,
        time_ns: Option<u64>,
        duration_ns: Option<u64>,
    ) -> CallRecord {
        let info = &self.funcs[id as usize];
        let (func, module) = match info.func {
            Some(f) => (
                f.symbol().to_string(),
                f.module()
                    .filter(|m| m.kind() == sigdb::ModuleKind::KernelModule)
                    .map(|m| m.name().to_string()),
            ),
            None => (info.name.clone(), None),
        };
        CallRecord {
            id: call_id,
            parent,
            func,
            module,
            cpu: p.cpu,
            comm: p.comm.map(str::to_string),
            pid: p.pid,
            depth: p.depth,
            time_ns,
            duration_ns,
            args: args
                .iter()
                .map(|(n, v)| ArgValue {
                    name: n.clone(),
                    value: v.clone(),
                })
                .collect(),
            ret: ret.map(str::to_string),
            ret_raw: raw.map(str::to_string),
            error,
            decoded: info.func.is_some(),
        }
    }

    /// Send a completed call to the JSON output and/or the `--output` file.
    pub(super) fn save(&mut self, rec: &CallRecord, out: &mut dyn Write) -> std::io::Result<()> {
        if self.opts.json {
            self.flush_out(out)?;
            record::write_record(out, rec)?;
        }
        if let Some(sink) = self.records.as_mut() {
            sink.write(rec)?;
        }
        Ok(())
    }

    /// A rewritten line built at `s[start..]` (`s` is the collected output): keep it, or
    /// buffer it inside a call tree for `--errors-only`.
    pub(super) fn emit_built(
        &mut self,
        ti: usize,
        kind: ItemKind,
        error: bool,
        mut s: String,
        start: usize,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if !self.opts.errors_only {
            s.push('\n');
            self.obuf = s;
            return Ok(());
        }
        let text = s.get(start..).unwrap_or("").to_string();
        s.truncate(start);
        self.obuf = s;
        let task = &mut self.tasks[ti];
        task.items.push(Item { kind, error, text });
        // A tree is complete when nothing is open any more.
        if task.stack.is_empty() && kind != ItemKind::Note {
            let items = std::mem::take(&mut task.items);
            self.flush_out(out)?;
            write_error_paths(&items, out)?;
        }
        Ok(())
    }
}
