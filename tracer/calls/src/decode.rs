//! Decoding ftrace function_graph text: every return value and argument rewritten by its
//! DWARF type, the rest of each line untouched.
//!
//! Probe events printed inside the graph are joined to the calls they belong to: an exit
//! event (`/* x: (caller <- func) arg1=-2 */`) gives the return value of the next `}` of
//! `func`, an entry event (`/* x: (func+0x0/0xd0) dfd=... */`) gives the arguments of the
//! next entry of `func`. That is how kernels without `funcgraph-retval` get values.

mod funcinfo;
mod input;
mod output;
mod task;

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::io::Write;
use std::path::PathBuf;

use crate::errpaths::{write_error_paths, ItemKind};
use crate::output::OutputFile;
use crate::record::RecordSink;
use dcg_dbset::DbSet;
use dcg_fgraph::{self as fgraph, Call, Line};

use funcinfo::{FuncInfo, RECENT};
use task::{Frame, Task};

/// What `dcg decode` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct DecodeJob {
    /// Saved `trace` / `trace_pipe` text; `None` or `-` for standard input.
    pub input: Option<PathBuf>,
    /// Also save the decoded calls to this file.
    pub output: Option<PathBuf>,
    /// How to decode.
    pub opts: Options,
}

/// Options of a [`Decoder`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// One JSON object per completed call instead of text.
    pub json: bool,
    /// Only call paths that contain an error return.
    pub errors_only: bool,
    /// ANSI color for error values.
    pub color: bool,
    /// Drop probe-event comment lines once their values are joined to calls (live tracing
    /// with dcg's own probes).
    pub hide_probe_events: bool,
}

/// Counters of a decoding run.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Lines read.
    pub lines: u64,
    /// Call, exit and probe lines whose values were rewritten by type.
    pub decoded: u64,
    /// Calls of functions the db does not know, by name.
    pub unknown: HashMap<String, u64>,
    /// Error returns seen.
    pub errors: u64,
}

/// Run `dcg decode` over `set`: returns the summary of undecoded functions, if any.
pub fn run(
    set: &DbSet,
    args: &DecodeJob,
    out: &mut dyn Write,
) -> Result<Option<String>, DecodeError> {
    let mut dec = Decoder::new(set, args.opts);
    let saved = match &args.output {
        Some(path) => {
            let file = OutputFile::create(path)?;
            let source = args
                .input
                .as_deref()
                .map_or("stdin".to_string(), |p| p.display().to_string());
            dec.save_records(Box::new(std::io::BufWriter::new(file.file()?)), &source)?;
            Some(file)
        }
        None => None,
    };
    match args.input.as_deref() {
        None => dec.decode_stream(std::io::stdin().lock(), out)?,
        Some(p) if p.as_os_str() == "-" => dec.decode_stream(std::io::stdin().lock(), out)?,
        Some(p) => {
            let f = std::fs::File::open(p).map_err(|source| DecodeError::Open {
                path: p.to_path_buf(),
                source,
            })?;
            dec.decode_stream(std::io::BufReader::with_capacity(1 << 18, f), out)?;
        }
    }
    dec.finish(out)?;
    let summary = dec.summary();
    drop(dec);
    if let Some(file) = saved {
        file.commit()?;
    }
    Ok(summary)
}

/// Errors of a decoding run.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The input file could not be opened.
    #[error("{}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Reading the input or writing the output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Streaming decoder: feed lines, get rewritten output.
pub struct Decoder<'a> {
    set: &'a DbSet,
    opts: Options,
    ids: FxHashMap<String, u32>,
    /// A direct-mapped cache of `ids` for names without a module (checked by name).
    recent: Box<[u32; RECENT]>,
    funcs: Vec<FuncInfo<'a>>,
    /// Tasks by key (pid, or cpu without the proc column).
    task_ids: FxHashMap<u64, usize>,
    tasks: Vec<Task>,
    /// The task of the previous line (traces stay on one task for long runs).
    last_task: Option<(u64, usize)>,
    stats: Stats,
    /// Rewritten text not yet written.
    obuf: String,
    /// Scratch for a rendered return value.
    rbuf: String,
    next_call: u64,
    records: Option<RecordSink<'a>>,
}

impl<'a> Decoder<'a> {
    /// A decoder over `set`.
    pub fn new(set: &'a DbSet, opts: Options) -> Decoder<'a> {
        Decoder {
            set,
            opts,
            ids: FxHashMap::default(),
            recent: Box::new([u32::MAX; RECENT]),
            funcs: Vec::new(),
            task_ids: FxHashMap::default(),
            tasks: Vec::new(),
            last_task: None,
            stats: Stats::default(),
            obuf: String::new(),
            rbuf: String::with_capacity(64),
            next_call: 0,
            records: None,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Decode one line (without its newline).
    pub fn decode_line(&mut self, line: &str, out: &mut dyn Write) -> std::io::Result<()> {
        self.line(line, out)?;
        self.flush_out(out)
    }

    /// Decode one line into the collected output.
    fn line(&mut self, line: &str, out: &mut dyn Write) -> std::io::Result<()> {
        self.stats.lines += 1;
        match fgraph::parse_line(line) {
            Line::Entry(c) => self.call(line, &c, false, out),
            Line::Leaf(c) => self.call(line, &c, true, out),
            Line::Exit(e) => self.exit(line, &e, out),
            Line::Comment(c) => self.comment(line, &c, out),
            _ => self.passthrough(line, None, out),
        }
    }

    /// Render the return value of function `id` from `raw`; (text, is_error), `None` for void.
    fn ret_text(&self, id: u32, raw_text: &str, raw: Option<u64>) -> Option<(String, bool)> {
        let mut text = String::new();
        let error = self.funcs[id as usize].ret_into(raw_text, raw, &mut text)?;
        Some((text, error))
    }

    fn note_unknown(&mut self, id: u32) {
        if self.funcs[id as usize].func.is_none() {
            let name = &self.funcs[id as usize].name;
            match self.stats.unknown.get_mut(name) {
                Some(n) => *n += 1,
                None => {
                    self.stats.unknown.insert(name.clone(), 1);
                }
            }
        }
    }

    /// Arguments rendered by the parameter types of `id`, as owned pairs.
    fn render_args<'s>(
        &self,
        id: u32,
        pairs: impl Iterator<Item = (&'s str, &'s str)>,
    ) -> Vec<(String, String)> {
        let info = &self.funcs[id as usize];
        pairs
            .enumerate()
            .map(|(i, (name, value))| {
                let mut typed = String::new();
                if !info.push_arg(&mut typed, i, name, value) {
                    typed.push_str(value);
                }
                (name.to_string(), typed)
            })
            .collect()
    }

    fn call(
        &mut self,
        line: &str,
        c: &Call<'_>,
        leaf: bool,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let key = Self::task_key(&c.prefix);
        let id = self.intern(c.func, c.module);
        self.note_unknown(id);
        let records = self.wants_records();
        // Arguments: from funcgraph-args, else from a pending entry probe of this function.
        let mut args: Vec<(String, String)> = Vec::new();
        let ti = self.task(key);
        let task = &mut self.tasks[ti];
        let pending = if task.pending_args.as_ref().is_some_and(|(p, _)| *p == id) {
            task.pending_args.take().map(|(_, fields)| fields)
        } else {
            None
        };
        let line_args = c.args.is_some_and(|a| !a.trim().is_empty());
        if records || !line_args {
            if line_args {
                args = self.render_args(id, c.arg_pairs());
            } else if let Some(fields) = &pending {
                args = self.render_args(id, fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            }
        }
        let info = &self.funcs[id as usize];
        let decoded = info.func.is_some();
        // A leaf without a printed value takes a pending exit-probe value of the same
        // function (live tracing shows a probed leaf as `func();` after its event).
        let task = &mut self.tasks[ti];
        let probe = match (leaf && c.ret.is_none(), task.pending_ret) {
            (true, Some((pid, v))) if pid == id => {
                task.pending_ret = None;
                Some(v)
            }
            _ => None,
        };
        let mut rbuf = std::mem::take(&mut self.rbuf);
        let shown = if leaf {
            match (c.ret, probe) {
                (Some(r), _) => info.ret_into(r.raw, r.value, &mut rbuf),
                (None, Some(v)) => info.ret_into(&format!("{v:#x}"), Some(v), &mut rbuf),
                (None, None) => None,
            }
        } else {
            None
        };
        let error = shown == Some(true);
        let ret = shown.map(|_| rbuf.as_str());
        if decoded {
            self.stats.decoded += 1;
        }
        if error {
            self.stats.errors += 1;
        }
        let depth = c.prefix.depth;
        let call_id = self.next_call;
        self.next_call += 1;
        let parent = self.parent_of(ti, depth);
        if leaf && records {
            let rec = self.make_record(
                c.prefix,
                id,
                call_id,
                parent,
                &args,
                ret,
                c.ret.map(|r| r.raw),
                error,
                c.prefix.abstime_ns(),
                c.prefix.duration_ns,
            );
            self.save(&rec, out)?;
        } else if !leaf {
            let frame = Frame {
                depth,
                id,
                call_id,
                parent,
                args: if records { args.clone() } else { Vec::new() },
                time_ns: if records { c.prefix.abstime_ns() } else { None },
            };
            self.push_frame(ti, frame);
        }
        if self.opts.json {
            self.rbuf = rbuf;
            return Ok(());
        }
        // Text: columns, indentation and `func [module](` as printed, then the rewritten
        // call.
        let mut s = std::mem::take(&mut self.obuf);
        let start = s.len();
        let open = c.prefix.prefix_end + c.func.len() + c.module.map_or(0, |m| m.len() + 3);
        match line.get(..open + 1) {
            Some(head) if head.ends_with('(') => s.push_str(head),
            _ => {
                s.push_str(line.get(..c.prefix.prefix_end).unwrap_or(""));
                s.push_str(c.func);
                if let Some(m) = c.module {
                    s.push_str(" [");
                    s.push_str(m);
                    s.push(']');
                }
                s.push('(');
            }
        }
        if args.is_empty() && line_args {
            // Text only: render straight into the line, no intermediate strings.
            let info = &self.funcs[id as usize];
            for (i, (n, v)) in c.arg_pairs().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                if !n.is_empty() {
                    s.push_str(n);
                    s.push('=');
                }
                if !info.push_arg(&mut s, i, n, v) {
                    s.push_str(v);
                }
            }
        }
        for (i, (n, v)) in args.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            if !n.is_empty() {
                s.push_str(n);
                s.push('=');
            }
            s.push_str(v);
        }
        s.push_str(if leaf { ");" } else { ") {" });
        self.push_comment_tail(
            &mut s,
            c.retaddr,
            ret,
            error,
            c.comment.filter(|_| c.ret.is_none() && c.retaddr.is_none()),
        );
        self.rbuf = rbuf;
        let kind = if leaf { ItemKind::Leaf } else { ItemKind::Open };
        self.emit_built(ti, kind, error, s, start, out)
    }

    fn exit(
        &mut self,
        line: &str,
        e: &fgraph::Exit<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let key = Self::task_key(&e.prefix);
        let ti = self.task(key);
        let frame = self.pop_frame(ti, e.prefix.depth);
        let id = match (e.func, &frame) {
            // The usual case: the name of the frame's function (no lookup needed).
            (Some(name), Some(f))
                if e.module.is_none() && self.funcs[f.id as usize].name == name =>
            {
                Some(f.id)
            }
            (Some(name), _) => Some(self.intern(name, e.module)),
            (None, Some(f)) => Some(f.id),
            (None, None) => None,
        };
        // The value: printed by funcgraph-retval, or joined from an exit probe event.
        let task = &mut self.tasks[ti];
        let probe = match (task.pending_ret, id) {
            (Some((pid, v)), Some(id)) if pid == id => {
                task.pending_ret = None;
                Some(v)
            }
            _ => None,
        };
        let mut rbuf = std::mem::take(&mut self.rbuf);
        let shown = match (id, e.ret, probe) {
            (Some(id), Some(r), _) => self.funcs[id as usize].ret_into(r.raw, r.value, &mut rbuf),
            (Some(id), None, Some(v)) => {
                let raw = format!("{v:#x}");
                self.funcs[id as usize].ret_into(&raw, Some(v), &mut rbuf)
            }
            _ => None,
        };
        let error = shown == Some(true);
        let ret = shown.map(|_| rbuf.as_str());
        if id.is_some_and(|id| self.funcs[id as usize].func.is_some()) {
            self.stats.decoded += 1;
        }
        if error {
            self.stats.errors += 1;
        }
        if let (Some(id), Some(f), true) = (id, &frame, self.wants_records()) {
            let dur = e.prefix.duration_ns;
            let rec = self.make_record(
                e.prefix,
                id,
                f.call_id,
                f.parent,
                &f.args,
                ret,
                e.ret.map(|r| r.raw),
                error,
                f.time_ns,
                dur,
            );
            self.save(&rec, out)?;
        }
        if self.opts.json {
            self.rbuf = rbuf;
            return Ok(());
        }
        let Some(id) = id else {
            self.rbuf = rbuf;
            return self.passthrough(line, Some(key), out);
        };
        let mut s = std::mem::take(&mut self.obuf);
        let start = s.len();
        s.push_str(line.get(..e.prefix.prefix_end).unwrap_or(""));
        s.push('}');
        let named = e.func.is_some() || ret.is_some();
        if named {
            s.push_str(" /* ");
            s.push_str(&self.funcs[id as usize].name);
            if let Some(v) = ret {
                s.push_str(" ret=");
                self.push_value(&mut s, v, error);
            }
            s.push_str(" */");
        }
        self.rbuf = rbuf;
        self.emit_built(ti, ItemKind::Close, error, s, start, out)
    }

    fn comment(
        &mut self,
        line: &str,
        c: &fgraph::Comment<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let key = Self::task_key(&c.prefix);
        let Some(p) = c.probe else {
            return self.passthrough(line, Some(key), out);
        };
        let Some(func) = p.func else {
            return self.passthrough(line, Some(key), out);
        };
        let id = self.intern(func, None);
        let ti = self.task(key);
        let fields: Vec<(String, String)> = p
            .fields()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let rendered: Vec<(String, String)>;
        let mut error = false;
        if p.is_return {
            // The first numeric field is the return value ($retval).
            let raw = fields.iter().find_map(|(_, v)| fgraph::parse_number(v));
            if let Some(v) = raw {
                self.tasks[ti].pending_ret = Some((id, v));
            }
            let mut first = true;
            let mut out_fields = Vec::new();
            for (n, v) in fields {
                if first {
                    first = false;
                    if let Some((t, e)) = self.ret_text(id, &v, fgraph::parse_number(&v)) {
                        error = e;
                        out_fields.push((n, t));
                        continue;
                    }
                }
                out_fields.push((n, v));
            }
            rendered = out_fields;
        } else {
            rendered = self.render_args(id, fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            self.tasks[ti].pending_args = Some((id, fields));
        }
        if self.funcs[id as usize].func.is_some() {
            self.stats.decoded += 1;
        }
        if self.opts.hide_probe_events || self.opts.json {
            return Ok(());
        }
        let mut s = std::mem::take(&mut self.obuf);
        let start = s.len();
        s.push_str(line.get(..c.prefix.prefix_end).unwrap_or(""));
        s.push_str("/* ");
        s.push_str(c.event.unwrap_or(p.event));
        s.push_str(": (");
        s.push_str(probe_location(c.text));
        s.push(')');
        for (n, v) in &rendered {
            s.push(' ');
            s.push_str(n);
            s.push('=');
            self.push_value(&mut s, v, error && p.is_return);
        }
        s.push_str(" */");
        self.emit_built(ti, ItemKind::Note, false, s, start, out)
    }

    /// Flush buffered trees and the record file at end of input.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.flush_out(out)?;
        if let Some(sink) = self.records.as_mut() {
            sink.flush()?;
        }
        let mut keys: Vec<(u64, usize)> = self.task_ids.iter().map(|(&k, &i)| (k, i)).collect();
        keys.sort_unstable();
        for (_, i) in keys {
            let items = std::mem::take(&mut self.tasks[i].items);
            if self.opts.errors_only {
                write_error_paths(&items, out)?;
            }
        }
        Ok(())
    }

    /// The stderr summary: undecoded functions, if any.
    pub fn summary(&self) -> Option<String> {
        if self.stats.unknown.is_empty() {
            return None;
        }
        let mut v: Vec<(&String, &u64)> = self.stats.unknown.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let total: u64 = v.iter().map(|(_, n)| **n).sum();
        let list: Vec<String> = v
            .iter()
            .take(10)
            .map(|(n, c)| format!("{n} ({c})"))
            .collect();
        let more = if v.len() > 10 {
            format!(", and {} more", v.len() - 10)
        } else {
            String::new()
        };
        Some(format!(
            "dcg decode: {total} calls of {} functions not in the db, values left raw: {}{more}",
            v.len(),
            list.join(", ")
        ))
    }
}

/// The text of a probe's location in parentheses, as printed.
fn probe_location(text: &str) -> &str {
    text.find('(')
        .and_then(|a| text[a + 1..].find(')').map(|b| &text[a + 1..a + 1 + b]))
        .unwrap_or("")
}
