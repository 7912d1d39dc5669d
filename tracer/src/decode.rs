//! Decoding ftrace function_graph text: every return value and argument rewritten by its
//! DWARF type, the rest of each line untouched.
//!
//! Probe events printed inside the graph are joined to the calls they belong to: an exit
//! event (`/* x: (caller <- func) arg1=-2 */`) gives the return value of the next `}` of
//! `func`, an entry event (`/* x: (func+0x0/0xd0) dfd=... */`) gives the arguments of the
//! next entry of `func`. That is how kernels without `funcgraph-retval` get values.

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use sigdb::Function;

use crate::dbset::DbSet;
use crate::errpaths::{write_error_paths, Item, ItemKind};
use crate::fgraph::{self, Call, Line, ProbeEvent};
use crate::output::OutputFile;
use crate::record::{self, ArgValue, CallRecord, RecordSink};
use crate::render::{render, render_into, Role};

/// Command-line options of `dcg decode`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DecodeArgs {
    /// Signature db (repeat for module dbs); default: the store's db for the running kernel.
    #[arg(long = "db", value_name = "FILE")]
    pub db: Vec<PathBuf>,
    /// Saved `trace` / `trace_pipe` text; `-` or nothing for standard input.
    pub input: Option<PathBuf>,
    /// One JSON object per completed call.
    #[arg(long)]
    pub json: bool,
    /// Only call paths that contain an error return.
    #[arg(long)]
    pub errors_only: bool,
    /// Also save the decoded calls to FILE (saved-calls JSON lines, for `dcg report`).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Color error values: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_name = "WHEN")]
    pub color: ColorChoice,
}

/// When to color error values.
#[derive(clap::ValueEnum, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColorChoice {
    /// On a terminal.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
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

/// Run `dcg decode`: returns the exit code.
pub fn run(args: &DecodeArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let set = DbSet::resolve(&args.db)?;
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::io::stdout().is_terminal() && !args.json,
    };
    let opts = Options {
        json: args.json,
        errors_only: args.errors_only,
        color,
        hide_probe_events: false,
    };
    let mut dec = Decoder::new(&set, opts);
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
            let f = std::fs::File::open(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            dec.decode_stream(std::io::BufReader::with_capacity(1 << 16, f), out)?;
        }
    }
    dec.finish(out)?;
    let summary = dec.summary();
    drop(dec);
    if let Some(file) = saved {
        file.commit()?;
    }
    if let Some(summary) = summary {
        eprintln!("{summary}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Per-name lookup result, interned.
struct FuncInfo<'a> {
    name: String,
    func: Option<Function<'a>>,
}

/// An open call of a task.
struct Frame {
    depth: u32,
    id: u32,
    call_id: u64,
    parent: Option<u64>,
    args: Vec<(String, String)>,
    time_ns: Option<u64>,
}

#[derive(Default)]
struct Task {
    stack: Vec<Frame>,
    /// (function id, raw value) from an exit probe event, for the next `}` of it.
    pending_ret: Option<(u32, u64)>,
    /// (function id, fields) from an entry probe event, for the next entry of it.
    pending_args: Option<(u32, Vec<(String, String)>)>,
    /// Buffered top-level call tree (`--errors-only`).
    items: Vec<Item>,
}

/// Streaming decoder: feed lines, get rewritten output.
pub struct Decoder<'a> {
    set: &'a DbSet,
    opts: Options,
    ids: FxHashMap<String, u32>,
    funcs: Vec<FuncInfo<'a>>,
    tasks: FxHashMap<u64, Task>,
    stats: Stats,
    buf: String,
    next_call: u64,
    records: Option<RecordSink<'a>>,
}

const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

impl<'a> Decoder<'a> {
    /// A decoder over `set`.
    pub fn new(set: &'a DbSet, opts: Options) -> Decoder<'a> {
        Decoder {
            set,
            opts,
            ids: FxHashMap::default(),
            funcs: Vec::new(),
            tasks: FxHashMap::default(),
            stats: Stats::default(),
            buf: String::with_capacity(256),
            next_call: 0,
            records: None,
        }
    }

    /// Also write every completed call as a [`CallRecord`] line to `sink` (after a header
    /// naming `source`): the `--output` file.
    pub fn save_records(&mut self, sink: Box<dyn Write + 'a>, source: &str) -> std::io::Result<()> {
        self.records = Some(RecordSink::new(sink, source)?);
        Ok(())
    }

    /// Counters so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Decode every line of `input`.
    pub fn decode_stream(
        &mut self,
        mut input: impl BufRead,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let mut raw = Vec::with_capacity(512);
        loop {
            raw.clear();
            if input.read_until(b'\n', &mut raw)? == 0 {
                return Ok(());
            }
            let body = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            match std::str::from_utf8(body) {
                Ok(line) => self.decode_line(line, out)?,
                Err(_) => {
                    self.stats.lines += 1;
                    if !self.opts.json && !self.opts.errors_only {
                        out.write_all(body)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
        }
    }

    fn intern(&mut self, name: &str, module: Option<&str>) -> u32 {
        let key_owned;
        let key = match module {
            None => name,
            Some(m) => {
                key_owned = format!("{name} [{m}]");
                &key_owned
            }
        };
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = self.funcs.len() as u32;
        let func = self.set.find(name, module);
        self.funcs.push(FuncInfo {
            name: key.to_string(),
            func,
        });
        self.ids.insert(key.to_string(), id);
        id
    }

    fn task_key(p: &fgraph::Prefix<'_>) -> u64 {
        match (p.pid, p.cpu) {
            (Some(pid), _) => pid as u64,
            (None, Some(cpu)) => (1u64 << 32) | cpu as u64,
            (None, None) => 0,
        }
    }

    /// Decode one line (without its newline).
    pub fn decode_line(&mut self, line: &str, out: &mut dyn Write) -> std::io::Result<()> {
        self.stats.lines += 1;
        match fgraph::parse_line(line) {
            Line::Entry(c) => self.call(line, &c, false, out),
            Line::Leaf(c) => self.call(line, &c, true, out),
            Line::Exit(e) => self.exit(line, &e, out),
            Line::Comment(c) => self.comment(line, &c, out),
            _ => self.passthrough(line, None, out),
        }
    }

    /// A line printed unchanged (or buffered inside a call tree with `--errors-only`).
    fn passthrough(
        &mut self,
        line: &str,
        key: Option<u64>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if self.opts.json {
            return Ok(());
        }
        if self.opts.errors_only {
            if let Some(task) = key.and_then(|k| self.tasks.get_mut(&k)) {
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
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")
    }

    /// Render the return value of function `id` from `raw`; (text, is_error), `None` for void.
    fn ret_text(&mut self, id: u32, raw_text: &str, raw: Option<u64>) -> Option<(String, bool)> {
        let info = &self.funcs[id as usize];
        match (info.func, raw) {
            (Some(f), Some(v)) => {
                let text = render(f.ret(), v, Role::Return)?;
                let error = text.starts_with("-E") || text.starts_with("ERR_PTR(");
                Some((text, error))
            }
            _ => Some((format!("{raw_text} (raw)"), false)),
        }
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
        let func = self.funcs[id as usize].func;
        pairs
            .map(|(name, value)| {
                let mut typed = String::new();
                if !push_typed_arg(&mut typed, func, name, value) {
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
        // Arguments: from funcgraph-args, else from a pending entry probe of this function.
        let mut args: Vec<(String, String)> = Vec::new();
        let task = self.tasks.entry(key).or_default();
        let pending = match task.pending_args.take() {
            Some((pid, fields)) if pid == id => Some(fields),
            Some(other) => {
                task.pending_args = Some(other);
                None
            }
            None => None,
        };
        let line_args = c.args.is_some_and(|a| !a.trim().is_empty());
        if self.wants_records() || !line_args {
            if line_args {
                args = self.render_args(id, c.arg_pairs());
            } else if let Some(fields) = &pending {
                args = self.render_args(id, fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            }
        }
        let decoded = self.funcs[id as usize].func.is_some();
        // A leaf without a printed value takes a pending exit-probe value of the same
        // function (live tracing shows a probed leaf as `func();` after its event).
        let task = self.tasks.entry(key).or_default();
        let probe = match (leaf && c.ret.is_none(), task.pending_ret) {
            (true, Some((pid, v))) if pid == id => {
                task.pending_ret = None;
                Some(v)
            }
            _ => None,
        };
        let (ret, error) = if leaf {
            match (c.ret, probe) {
                (Some(r), _) => match self.ret_text(id, r.raw, r.value) {
                    Some((t, e)) => (Some(t), e),
                    None => (None, false),
                },
                (None, Some(v)) => match self.ret_text(id, &format!("{v:#x}"), Some(v)) {
                    Some((t, e)) => (Some(t), e),
                    None => (None, false),
                },
                (None, None) => (None, false),
            }
        } else {
            (None, false)
        };
        if decoded {
            self.stats.decoded += 1;
        }
        if error {
            self.stats.errors += 1;
        }
        let depth = c.prefix.depth;
        let call_id = self.next_call;
        self.next_call += 1;
        let parent = self.parent_of(key, depth);
        if leaf && self.wants_records() {
            let rec = self.make_record(
                c.prefix,
                id,
                call_id,
                parent,
                &args,
                ret.as_deref(),
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
                args: if self.wants_records() {
                    args.clone()
                } else {
                    Vec::new()
                },
                time_ns: c.prefix.abstime_ns(),
            };
            self.push_frame(key, frame);
        }
        if self.opts.json {
            return Ok(());
        }
        // Text: columns and indentation as printed, then the rewritten call.
        let mut s = std::mem::take(&mut self.buf);
        s.clear();
        s.push_str(line.get(..c.prefix.prefix_end).unwrap_or(""));
        s.push_str(c.func);
        if let Some(m) = c.module {
            s.push_str(" [");
            s.push_str(m);
            s.push(']');
        }
        s.push('(');
        if args.is_empty() && line_args {
            // Text only: render straight into the line, no intermediate strings.
            let func = self.funcs[id as usize].func;
            for (i, (n, v)) in c.arg_pairs().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                if !n.is_empty() {
                    s.push_str(n);
                    s.push('=');
                }
                if !push_typed_arg(&mut s, func, n, v) {
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
        s.push(')');
        s.push_str(if leaf { ";" } else { " {" });
        self.push_comment_tail(
            &mut s,
            c.retaddr,
            ret.as_deref(),
            error,
            c.comment.filter(|_| c.ret.is_none() && c.retaddr.is_none()),
        );
        let kind = if leaf { ItemKind::Leaf } else { ItemKind::Open };
        self.emit(key, kind, error, &s, out)?;
        self.buf = s;
        Ok(())
    }

    /// ` /* <-retaddr ret=VALUE */` (or the original comment text).
    fn push_comment_tail(
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

    fn push_value(&self, s: &mut String, v: &str, error: bool) {
        if error && self.opts.color {
            s.push_str(RED);
            s.push_str(v);
            s.push_str(RESET);
        } else {
            s.push_str(v);
        }
    }

    fn push_frame(&mut self, key: u64, frame: Frame) {
        let task = self.tasks.entry(key).or_default();
        while task.stack.last().is_some_and(|f| f.depth >= frame.depth) {
            task.stack.pop();
        }
        task.stack.push(frame);
    }

    /// Pop the frame a `}` at `depth` closes.
    fn pop_frame(&mut self, key: u64, depth: u32) -> Option<Frame> {
        let task = self.tasks.get_mut(&key)?;
        while let Some(f) = task.stack.pop() {
            if f.depth <= depth {
                return Some(f);
            }
        }
        None
    }

    fn exit(
        &mut self,
        line: &str,
        e: &fgraph::Exit<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let key = Self::task_key(&e.prefix);
        let frame = self.pop_frame(key, e.prefix.depth);
        let id = match (e.func, &frame) {
            (Some(name), _) => Some(self.intern(name, e.module)),
            (None, Some(f)) => Some(f.id),
            (None, None) => None,
        };
        // The value: printed by funcgraph-retval, or joined from an exit probe event.
        let task = self.tasks.entry(key).or_default();
        let probe = match (task.pending_ret, id) {
            (Some((pid, v)), Some(id)) if pid == id => {
                task.pending_ret = None;
                Some(v)
            }
            _ => None,
        };
        let (ret, error) = match (id, e.ret, probe) {
            (Some(id), Some(r), _) => self
                .ret_text(id, r.raw, r.value)
                .map_or((None, false), |(t, e)| (Some(t), e)),
            (Some(id), None, Some(v)) => {
                let raw = format!("{v:#x}");
                self.ret_text(id, &raw, Some(v))
                    .map_or((None, false), |(t, e)| (Some(t), e))
            }
            _ => (None, false),
        };
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
                ret.as_deref(),
                e.ret.map(|r| r.raw),
                error,
                f.time_ns,
                dur,
            );
            self.save(&rec, out)?;
        }
        if self.opts.json {
            return Ok(());
        }
        let Some(id) = id else {
            return self.passthrough(line, Some(key), out);
        };
        let mut s = std::mem::take(&mut self.buf);
        s.clear();
        s.push_str(line.get(..e.prefix.prefix_end).unwrap_or(""));
        s.push('}');
        let named = e.func.is_some() || ret.is_some();
        if named {
            s.push_str(" /* ");
            s.push_str(&self.funcs[id as usize].name);
            if let Some(v) = &ret {
                s.push_str(" ret=");
                self.push_value(&mut s, v, error);
            }
            s.push_str(" */");
        }
        self.emit(key, ItemKind::Close, error, &s, out)?;
        self.buf = s;
        Ok(())
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
                self.tasks.entry(key).or_default().pending_ret = Some((id, v));
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
            self.tasks.entry(key).or_default().pending_args = Some((id, fields));
        }
        if self.funcs[id as usize].func.is_some() {
            self.stats.decoded += 1;
        }
        if self.opts.hide_probe_events || self.opts.json {
            return Ok(());
        }
        let mut s = String::with_capacity(line.len() + 16);
        s.push_str(line.get(..c.prefix.prefix_end).unwrap_or(""));
        s.push_str("/* ");
        s.push_str(c.event.unwrap_or(p.event));
        s.push_str(": (");
        s.push_str(probe_location(&p, c.text));
        s.push(')');
        for (n, v) in &rendered {
            s.push(' ');
            s.push_str(n);
            s.push('=');
            self.push_value(&mut s, v, error && p.is_return);
        }
        s.push_str(" */");
        self.emit(key, ItemKind::Note, false, &s, out)
    }

    fn wants_records(&self) -> bool {
        self.opts.json || self.records.is_some()
    }

    /// The call a new call at `depth` is made from: the innermost open frame above it.
    fn parent_of(&self, key: u64, depth: u32) -> Option<u64> {
        let task = self.tasks.get(&key)?;
        task.stack
            .iter()
            .rev()
            .find(|f| f.depth < depth)
            .map(|f| f.call_id)
    }

    #[allow(clippy::too_many_arguments)]
    fn make_record(
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
    fn save(&mut self, rec: &CallRecord, out: &mut dyn Write) -> std::io::Result<()> {
        if self.opts.json {
            record::write_record(out, rec)?;
        }
        if let Some(sink) = self.records.as_mut() {
            sink.write(rec)?;
        }
        Ok(())
    }

    /// Write a rewritten line, or buffer it inside a call tree for `--errors-only`.
    fn emit(
        &mut self,
        key: u64,
        kind: ItemKind,
        error: bool,
        text: &str,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if !self.opts.errors_only {
            out.write_all(text.as_bytes())?;
            return out.write_all(b"\n");
        }
        let task = self.tasks.entry(key).or_default();
        task.items.push(Item {
            kind,
            error,
            text: text.to_string(),
        });
        // A tree is complete when nothing is open any more.
        let open = task.stack.len();
        if open == 0 && kind != ItemKind::Note {
            let items = std::mem::take(&mut task.items);
            write_error_paths(&items, out)?;
        }
        Ok(())
    }

    /// Flush buffered trees and the record file at end of input.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if let Some(sink) = self.records.as_mut() {
            sink.flush()?;
        }
        let mut keys: Vec<u64> = self.tasks.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            if let Some(task) = self.tasks.get_mut(&k) {
                let items = std::mem::take(&mut task.items);
                if self.opts.errors_only {
                    write_error_paths(&items, out)?;
                }
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

/// Append argument `name`'s `value` rendered by the type of `func`'s parameter of that
/// name; false (nothing appended) when the function, parameter or number is unknown.
fn push_typed_arg(out: &mut String, func: Option<Function<'_>>, name: &str, value: &str) -> bool {
    let Some(f) = func else { return false };
    let Some(p) = f.params().find(|p| p.name() == name) else {
        return false;
    };
    let Some(raw) = value
        .split_ascii_whitespace()
        .next()
        .and_then(fgraph::parse_number)
    else {
        return false;
    };
    render_into(out, p.ty(), raw, Role::Arg)
}

/// The text of a probe's location in parentheses, as printed.
fn probe_location<'t>(p: &ProbeEvent<'t>, text: &'t str) -> &'t str {
    let _ = p;
    text.find('(')
        .and_then(|a| text[a + 1..].find(')').map(|b| &text[a + 1..a + 1 + b]))
        .unwrap_or("")
}
