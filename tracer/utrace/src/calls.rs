//! Rebuilding per-thread call trees from uprobe entry and return events, and printing
//! them in the function_graph layout with every value rendered by its type:
//!
//! ```text
//!  1)               |  outer(x=3) {
//!  1)   2.000 us    |    inner(x=3); /* ret=-EINVAL */
//!  1) + 14.000 us   |  } /* outer ret=-EINVAL */
//! ```
//!
//! A call prints as a leaf (`f(); /* ret=... */`) when no traced call happened inside
//! it, so each thread keeps its newest entry pending until the next event. The
//! `comm-tid` column appears once a second task has been seen.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use dcg_calls::errpaths::{write_error_paths, Item, ItemKind as Kind};
use dcg_calls::record::{self, ArgValue, CallRecord, RecordSink};
use dcg_render::Role;

use super::plan::{render_arg, render_words, Probe, Target, Value};

/// Output options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Print arguments.
    pub args: bool,
    /// Print return values.
    pub retvals: bool,
    /// Print calls only down to this depth (0: all).
    pub max_depth: u32,
    /// Records as JSON lines instead of text.
    pub json: bool,
    /// Only call paths with an error return.
    pub errors_only: bool,
    /// ANSI color for error values.
    pub color: bool,
    /// Width of the CPU column (digits of the highest CPU number).
    pub cpu_width: usize,
}

/// Where and when an event happened.
#[derive(Debug, Clone, Copy)]
pub struct Meta<'e> {
    /// Thread command name.
    pub comm: &'e str,
    /// Thread id.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// Timestamp in ns.
    pub ts: u64,
}

/// An open call.
struct Frame {
    probe: usize,
    call_id: u64,
    parent: Option<u64>,
    depth: u32,
    ts: u64,
    cpu: u32,
    args: Vec<(String, String)>,
    /// Printed as `f(...) {` (a visible child was entered).
    opened: bool,
}

struct Task {
    comm: String,
    stack: Vec<Frame>,
    /// `--errors-only`: the current top-level tree.
    items: Vec<Item>,
}

/// Counters of a run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Completed calls.
    pub calls: u64,
    /// Completed top-level calls (what `--count` counts).
    pub top_level: u64,
    /// Return events whose entry was not seen.
    pub lone_returns: u64,
    /// Calls left open (no return seen: the task ended, crashed, or the trace stopped).
    pub unfinished: u64,
    /// Events lost (`[LOST N EVENTS]`).
    pub lost: u64,
}

/// The call-tree builder and printer.
pub struct Calls<'a> {
    probes: &'a [Probe<'a>],
    targets: &'a [Target],
    opts: Options,
    tasks: HashMap<u32, Task>,
    next_call: u64,
    counts: Counts,
    records: Option<RecordSink<'a>>,
    line: String,
    default_comm: Option<String>,
}

/// What trace_pipe prints for a task whose name it no longer knows.
const UNKNOWN_COMM: &str = "<...>";

impl<'a> Calls<'a> {
    /// A builder for events of `probes`.
    pub fn new(probes: &'a [Probe<'a>], targets: &'a [Target], opts: Options) -> Calls<'a> {
        Calls {
            probes,
            targets,
            opts,
            tasks: HashMap::new(),
            next_call: 0,
            counts: Counts::default(),
            records: None,
            line: String::with_capacity(256),
            default_comm: None,
        }
    }

    /// Also write every call as a [`CallRecord`] to `sink`, after a header naming `source`.
    pub fn save_records(&mut self, sink: Box<dyn Write + 'a>, source: &str) -> std::io::Result<()> {
        self.records = Some(RecordSink::new(sink, source)?);
        Ok(())
    }

    /// Counters so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Number of distinct tasks seen.
    pub fn tasks_seen(&self) -> usize {
        self.tasks.len()
    }

    fn task(&mut self, m: &Meta<'_>) -> &mut Task {
        let t = self.tasks.entry(m.tid).or_insert_with(|| Task {
            comm: String::new(),
            stack: Vec::new(),
            items: Vec::new(),
        });
        if m.comm != UNKNOWN_COMM {
            if t.comm != m.comm {
                t.comm.clear();
                t.comm.push_str(m.comm);
            }
        } else if t.comm.is_empty() {
            // The kernel's pid→comm cache (saved_cmdlines) lost this task: ask /proc, else
            // use the traced program's name.
            t.comm = std::fs::read_to_string(format!("/proc/{}/comm", m.tid))
                .map(|c| c.trim_end().to_string())
                .ok()
                .or_else(|| self.default_comm.clone())
                .unwrap_or_else(|| UNKNOWN_COMM.to_string());
        }
        t
    }

    /// The name to show for tasks whose name the trace lost (`<...>`): the traced
    /// program's.
    pub fn set_default_comm(&mut self, comm: Option<String>) {
        self.default_comm = comm;
    }

    /// An entry event of probe `probe` with its field values.
    pub fn entry(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let p = &self.probes[probe];
        let args: Vec<(String, String)> = if self.opts.args {
            p.args
                .iter()
                .zip(p.func.params())
                .map(|((name, plan), param)| (name.clone(), render_arg(param.ty(), plan, values)))
                .collect()
        } else {
            Vec::new()
        };
        let call_id = self.next_call;
        self.next_call += 1;
        self.task(m);
        let max = self.opts.max_depth;
        let task = self.tasks.get_mut(&m.tid).expect("task exists");
        let depth = task.stack.len() as u32;
        let parent = task.stack.last().map(|f| f.call_id);
        let visible = max == 0 || depth < max;
        // The parent gets its `{` now that it has a visible child.
        let open_parent = visible && task.stack.last().is_some_and(|f| !f.opened);
        if open_parent {
            let top = task.stack.len() - 1;
            task.stack[top].opened = true;
            let f = &task.stack[top];
            let (pp, pdepth, pcpu) = (f.probe, f.depth, f.cpu);
            let pargs = f.args.clone();
            let mut s = std::mem::take(&mut self.line);
            s.clear();
            self.prefix(&mut s, pcpu, m.tid, None, pdepth);
            self.call_text(&mut s, pp, &pargs);
            s.push_str(" {");
            self.emit(m.tid, Kind::Open, false, &s, out)?;
            self.line = s;
        }
        let task = self.tasks.get_mut(&m.tid).expect("task exists");
        task.stack.push(Frame {
            probe,
            call_id,
            parent,
            depth,
            ts: m.ts,
            cpu: m.cpu,
            args,
            opened: false,
        });
        Ok(())
    }

    /// A return event of probe `probe` with its field values.
    pub fn ret(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.task(m);
        let task = self.tasks.get_mut(&m.tid).expect("task exists");
        let Some(pos) = task.stack.iter().rposition(|f| f.probe == probe) else {
            self.counts.lone_returns += 1;
            let (text, error, _) = self.ret_value(probe, values);
            let mut s = std::mem::take(&mut self.line);
            s.clear();
            self.prefix(&mut s, m.cpu, m.tid, None, 0);
            s.push_str("} /* ");
            s.push_str(self.probes[probe].func.symbol());
            self.push_ret(&mut s, text.as_deref(), error);
            s.push_str(" (entry not seen) */");
            self.emit(m.tid, Kind::Note, error, &s, out)?;
            self.line = s;
            return Ok(());
        };
        // Frames above it returned without an event (longjmp, lost events).
        while self.tasks[&m.tid].stack.len() > pos + 1 {
            self.unfinished(m.tid, out)?;
        }
        let task = self.tasks.get_mut(&m.tid).expect("task exists");
        let f = task.stack.pop().expect("frame at pos");
        let (ret, error, raw) = self.ret_value(probe, values);
        let dur = m.ts.saturating_sub(f.ts);
        let visible = self.opts.max_depth == 0 || f.depth < self.opts.max_depth;
        if visible {
            let mut s = std::mem::take(&mut self.line);
            s.clear();
            if f.opened {
                self.prefix(&mut s, m.cpu, m.tid, Some(dur), f.depth);
                s.push_str("} /* ");
                s.push_str(self.probes[probe].func.symbol());
                self.push_ret(&mut s, ret.as_deref(), error);
                s.push_str(" */");
                self.emit(m.tid, Kind::Close, error, &s, out)?;
            } else {
                self.prefix(&mut s, m.cpu, m.tid, Some(dur), f.depth);
                self.call_text(&mut s, probe, &f.args);
                s.push(';');
                if ret.is_some() {
                    s.push_str(" /*");
                    self.push_ret(&mut s, ret.as_deref(), error);
                    s.push_str(" */");
                }
                self.emit(m.tid, Kind::Leaf, error, &s, out)?;
            }
            self.line = s;
        }
        self.counts.calls += 1;
        if f.depth == 0 {
            self.counts.top_level += 1;
        }
        let rec = self.record(m, &f, probe, ret, raw, error, Some(dur));
        self.save(&rec, out)
    }

    /// Events were lost on `cpu`: print the notice in the stream.
    pub fn lost(&mut self, cpu: u32, n: u64, out: &mut dyn Write) -> std::io::Result<()> {
        self.counts.lost += n;
        if self.opts.json {
            return Ok(());
        }
        writeln!(out, "CPU:{cpu} [LOST {n} EVENTS]")
    }

    /// Close every open call (end of trace): `f(...); /* no return */` or
    /// `} /* f (no return) */`, and flush buffered trees.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut tids: Vec<u32> = self.tasks.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            while !self.tasks[&tid].stack.is_empty() {
                self.unfinished(tid, out)?;
            }
            let items = std::mem::take(&mut self.tasks.get_mut(&tid).expect("task").items);
            if self.opts.errors_only && !self.opts.json {
                write_error_paths(&items, out)?;
            }
        }
        if let Some(sink) = self.records.as_mut() {
            sink.flush()?;
        }
        Ok(())
    }

    /// Pop the innermost open call of `tid`, which never returned.
    fn unfinished(&mut self, tid: u32, out: &mut dyn Write) -> std::io::Result<()> {
        let task = self.tasks.get_mut(&tid).expect("task exists");
        let Some(f) = task.stack.pop() else {
            return Ok(());
        };
        let comm = task.comm.clone();
        self.counts.unfinished += 1;
        let visible = self.opts.max_depth == 0 || f.depth < self.opts.max_depth;
        if visible {
            let mut s = std::mem::take(&mut self.line);
            s.clear();
            self.prefix(&mut s, f.cpu, tid, None, f.depth);
            if f.opened {
                s.push_str("} /* ");
                s.push_str(self.probes[f.probe].func.symbol());
                s.push_str(" (no return) */");
                self.emit(tid, Kind::Close, false, &s, out)?;
            } else {
                self.call_text(&mut s, f.probe, &f.args);
                s.push_str("; /* no return */");
                self.emit(tid, Kind::Leaf, false, &s, out)?;
            }
            self.line = s;
        }
        let m = Meta {
            comm: &comm,
            tid,
            cpu: f.cpu,
            ts: f.ts,
        };
        let rec = self.record(&m, &f, f.probe, None, None, false, None);
        self.save(&rec, out)
    }

    /// The rendered return value: (text, is_error, raw text); text `None` for void or
    /// when return values are not shown.
    fn ret_value(&self, probe: usize, values: &[Value]) -> (Option<String>, bool, Option<String>) {
        let p = &self.probes[probe];
        if p.ret_fields.is_empty() {
            return (None, false, None);
        }
        let words: Vec<u64> = values
            .iter()
            .map(|v| match v {
                Value::Num(n) => *n,
                _ => 0,
            })
            .collect();
        let text = render_words(p.func.ret(), &words, Role::Return);
        let raw = words.first().map(|w| format!("{w:#x}"));
        let error = text.starts_with("-E") || text.starts_with("ERR_PTR(");
        (Some(text), error, raw)
    }

    fn push_ret(&self, s: &mut String, ret: Option<&str>, error: bool) {
        let Some(v) = ret else { return };
        s.push_str(" ret=");
        dcg_render::push_value(s, v, error && self.opts.color);
    }

    fn call_text(&self, s: &mut String, probe: usize, args: &[(String, String)]) {
        s.push_str(self.probes[probe].func.symbol());
        s.push('(');
        for (i, (n, v)) in args.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(n);
            s.push('=');
            s.push_str(v);
        }
        s.push(')');
    }

    /// Columns and indentation: ` 1) ` [` comm-tid | `] duration `|  `, 2 spaces a level.
    fn prefix(&self, s: &mut String, cpu: u32, tid: u32, dur: Option<u64>, depth: u32) {
        let _ = write!(s, " {cpu:>w$}) ", w = self.opts.cpu_width.max(1));
        if self.tasks.len() > 1 {
            let comm = self.tasks.get(&tid).map_or("", |t| t.comm.as_str());
            push_proc(s, comm, tid);
            s.push_str(" | ");
        }
        match dur {
            Some(ns) => push_duration(s, ns),
            None => s.push_str("              |  "),
        }
        for _ in 0..depth {
            s.push_str("  ");
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        m: &Meta<'_>,
        f: &Frame,
        probe: usize,
        ret: Option<String>,
        raw: Option<String>,
        error: bool,
        duration: Option<u64>,
    ) -> CallRecord {
        let p = &self.probes[probe];
        CallRecord {
            id: f.call_id,
            parent: f.parent,
            func: p.func.symbol().to_string(),
            module: Some(self.targets[p.target].name.clone()),
            cpu: Some(f.cpu),
            comm: Some(
                self.tasks
                    .get(&m.tid)
                    .map_or(m.comm, |t| t.comm.as_str())
                    .to_string(),
            ),
            pid: Some(m.tid),
            depth: f.depth,
            time_ns: Some(f.ts),
            duration_ns: duration,
            args: f
                .args
                .iter()
                .map(|(n, v)| ArgValue {
                    name: n.clone(),
                    value: v.clone(),
                })
                .collect(),
            ret,
            ret_raw: raw,
            error,
            decoded: true,
        }
    }

    fn save(&mut self, rec: &CallRecord, out: &mut dyn Write) -> std::io::Result<()> {
        if self.opts.json {
            record::write_record(out, rec)?;
        }
        if let Some(sink) = self.records.as_mut() {
            sink.write(rec)?;
        }
        Ok(())
    }

    /// Print a line, or buffer it in the task's tree for `--errors-only`.
    fn emit(
        &mut self,
        tid: u32,
        kind: Kind,
        error: bool,
        text: &str,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if self.opts.json {
            return Ok(());
        }
        if !self.opts.errors_only {
            out.write_all(text.as_bytes())?;
            return out.write_all(b"\n");
        }
        let task = self.tasks.get_mut(&tid).expect("task exists");
        task.items.push(Item {
            kind,
            error,
            text: text.to_string(),
        });
        if task.stack.is_empty() && kind != Kind::Open {
            let items = std::mem::take(&mut task.items);
            write_error_paths(&items, out)?;
        }
        Ok(())
    }
}

/// `comm-tid` centered in 14 columns, the comm cut to 7 bytes (as the kernel prints it).
fn push_proc(s: &mut String, comm: &str, tid: u32) {
    let mut end = comm.len().min(7);
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    let text = format!("{}-{tid}", &comm[..end]);
    let spaces = 14usize.saturating_sub(text.len());
    for _ in 0..spaces / 2 {
        s.push(' ');
    }
    s.push_str(&text);
    for _ in 0..spaces - spaces / 2 {
        s.push(' ');
    }
}

/// The function_graph duration column: `+ 12.345 us   |  `.
pub fn push_duration(s: &mut String, ns: u64) {
    let mark = match ns {
        n if n > 1_000_000_000 => '$',
        n if n > 100_000_000 => '@',
        n if n > 10_000_000 => '*',
        n if n > 1_000_000 => '#',
        n if n > 100_000 => '!',
        n if n > 10_000 => '+',
        _ => ' ',
    };
    s.push(mark);
    s.push(' ');
    let usecs = (ns / 1000).to_string();
    let mut len = usecs.len();
    s.push_str(&usecs);
    if len < 7 {
        let digits = (7 - len).min(3);
        let frac = format!("{:03}", ns % 1000);
        s.push('.');
        s.push_str(&frac[..digits]);
        len += digits + 1;
    }
    s.push_str(" us ");
    for _ in len..8 {
        s.push(' ');
    }
    s.push_str("|  ");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dur(ns: u64) -> String {
        let mut s = String::new();
        push_duration(&mut s, ns);
        s
    }

    #[test]
    fn durations_match_the_kernel() {
        assert_eq!(dur(3_436), "  3.436 us    |  ");
        assert_eq!(dur(34_600), "+ 34.600 us   |  ");
        assert_eq!(dur(123_456), "! 123.456 us  |  ");
        assert_eq!(dur(1_234_567), "# 1234.567 us |  ");
        assert_eq!(dur(12_345_678), "* 12345.67 us |  ");
        assert_eq!(dur(1_234_567_000), "$ 1234567 us  |  ");
        assert_eq!(dur(0).len(), "              |  ".len());
    }

    #[test]
    fn proc_column() {
        let mut s = String::new();
        push_proc(&mut s, "cat", 102);
        assert_eq!(s, "   cat-102    ");
        s.clear();
        push_proc(&mut s, "values_threads", 4242);
        assert_eq!(s, " values_-4242 ");
    }
}
