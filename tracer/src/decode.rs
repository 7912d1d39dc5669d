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

use sigdb::{Function, Type, TypeKind};

use crate::dbset::DbSet;
use crate::errpaths::{write_error_paths, Item, ItemKind};
use crate::fgraph::{self, Call, Line, ProbeEvent};
use crate::output::OutputFile;
use crate::record::{self, ArgValue, CallRecord, RecordSink};
use crate::render::{
    aggregate_label, is_hex_of, pointer_is_hex, push_aggregate, render_resolved, Role,
};

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
            dec.decode_stream(std::io::BufReader::with_capacity(1 << 18, f), out)?;
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

/// Output text collected before it is handed to the writer.
const OUT_CHUNK: usize = 1 << 16;

/// Slots of the cache of interned names.
const RECENT: usize = 256;

/// The slot of `name` in the cache of interned names: a hash of its length and its
/// first and last 8 bytes.
fn recent_slot(name: &str) -> usize {
    let b = name.as_bytes();
    let n = b.len();
    let word = |at: usize| {
        b.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let edges = match n {
        8.. => word(0) ^ word(n - 8).rotate_left(29),
        1..8 => u64::from(b[0]) << 8 | u64::from(b[n - 1]),
        0 => 0,
    };
    let h = edges ^ n as u64;
    (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % RECENT
}

/// A parameter of a known function, resolved once.
struct ParamInfo<'a> {
    name: &'a str,
    render: Render<'a>,
    /// No earlier parameter has the same name (so a by-position match is the by-name one).
    first: bool,
}

/// Per-name lookup result, interned, with what rendering needs resolved once.
struct FuncInfo<'a> {
    name: String,
    func: Option<Function<'a>>,
    /// Return type (`None`: function unknown).
    ret: Option<Render<'a>>,
    params: Vec<ParamInfo<'a>>,
}

/// How a value of one type is rendered, worked out once per parameter or return type.
struct Render<'a> {
    ty: Type<'a>,
    /// `ty` with typedefs and qualifiers peeled off.
    resolved: Type<'a>,
    /// A pointer (or array or function): hex unless NULL or an error.
    pointer: bool,
    /// For a struct or union passed by value, its label.
    label: Option<String>,
}

impl<'a> Render<'a> {
    fn new(ty: Type<'a>) -> Render<'a> {
        let resolved = ty.resolve();
        Render {
            ty,
            resolved,
            pointer: matches!(
                resolved.kind(),
                TypeKind::Pointer | TypeKind::Array | TypeKind::Func
            ),
            label: matches!(resolved.kind(), TypeKind::Struct | TypeKind::Union)
                .then(|| aggregate_label(ty, resolved)),
        }
    }

    /// Append `raw` (printed as `text`) rendered by the type: what [`render_resolved`]
    /// writes; false (nothing appended) for void.
    #[inline]
    fn push(&self, out: &mut String, text: &str, raw: u64, role: Role) -> bool {
        if self.pointer && pointer_is_hex(raw) && is_hex_of(text, raw) {
            // Already printed the way it would be rendered.
            out.push_str(text);
            return true;
        }
        match &self.label {
            Some(l) => {
                push_aggregate(out, l, raw);
                true
            }
            None => render_resolved(out, self.ty, self.resolved, raw, role),
        }
    }
}

impl<'a> FuncInfo<'a> {
    fn new(name: String, func: Option<Function<'a>>) -> FuncInfo<'a> {
        let ret = func.map(|f| Render::new(f.ret()));
        let mut params: Vec<ParamInfo<'a>> = Vec::new();
        for p in func.iter().flat_map(|f| f.params()) {
            let name = p.name();
            let first = !params.iter().any(|q| q.name == name);
            params.push(ParamInfo {
                name,
                render: Render::new(p.ty()),
                first,
            });
        }
        FuncInfo {
            name,
            func,
            ret,
            params,
        }
    }

    /// The first parameter named `name`; `i` is where it usually is (the argument's
    /// position), tried first.
    #[inline]
    fn param(&self, i: usize, name: &str) -> Option<&ParamInfo<'a>> {
        match self.params.get(i) {
            Some(p) if p.first && p.name == name => Some(p),
            _ => self.params.iter().find(|p| p.name == name),
        }
    }

    /// Append argument `name`'s `value` (argument number `i`) rendered by the type of the
    /// parameter of that name; false (nothing appended) when the function, parameter or
    /// number is unknown.
    fn push_arg(&self, out: &mut String, i: usize, name: &str, value: &str) -> bool {
        let Some(p) = self.param(i, name) else {
            return false;
        };
        // The first word of the value is the number (`3 [ENUM]`); `parse_number` stops at
        // the same place unless the value starts with blanks.
        let raw = if value
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_whitespace)
        {
            value
                .split_ascii_whitespace()
                .next()
                .and_then(fgraph::parse_number)
        } else {
            fgraph::parse_number(value)
        };
        let Some(raw) = raw else {
            return false;
        };
        p.render.push(out, value, raw, Role::Arg)
    }

    /// Render the return value from `raw` into `buf` (cleared first): whether it is an
    /// error, `None` for void (nothing to show).
    fn ret_into(&self, raw_text: &str, raw: Option<u64>, buf: &mut String) -> Option<bool> {
        buf.clear();
        match (&self.ret, raw) {
            (Some(r), Some(v)) => {
                if !r.push(buf, raw_text, v, Role::Return) {
                    return None;
                }
                Some(buf.starts_with("-E") || buf.starts_with("ERR_PTR("))
            }
            _ => {
                buf.push_str(raw_text);
                buf.push_str(" (raw)");
                Some(false)
            }
        }
    }
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

const RED: &str = "\x1b[31m";
const RESET: &str = "\x1b[0m";

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
    ///
    /// Reads whole buffers: the complete lines of each are checked for UTF-8 at once and
    /// split in place; only a line cut by the buffer end is copied.
    pub fn decode_stream(
        &mut self,
        mut input: impl BufRead,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if self.obuf.capacity() < OUT_CHUNK {
            self.obuf.reserve(OUT_CHUNK + 4096);
        }
        let mut carry: Vec<u8> = Vec::new();
        loop {
            // Everything decoded so far goes out before a read that may block.
            self.flush_out(out)?;
            let buf = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            let n = buf.len();
            if n == 0 {
                if !carry.is_empty() {
                    self.bytes_line(&carry, out)?;
                }
                return self.flush_out(out);
            }
            let mut start = 0;
            if !carry.is_empty() {
                match memchr::memchr(b'\n', buf) {
                    None => {
                        carry.extend_from_slice(buf);
                        input.consume(n);
                        continue;
                    }
                    Some(p) => {
                        carry.extend_from_slice(&buf[..p]);
                        self.bytes_line(&carry, out)?;
                        carry.clear();
                        start = p + 1;
                    }
                }
            }
            let rest = &buf[start..];
            let end = memchr::memrchr(b'\n', rest).map_or(0, |p| p + 1);
            self.block(&rest[..end], out)?;
            carry.extend_from_slice(&rest[end..]);
            input.consume(n);
        }
    }

    /// Complete lines (each ending in `\n`).
    fn block(&mut self, mut b: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        while !b.is_empty() {
            match std::str::from_utf8(b) {
                Ok(s) => return self.str_lines(s, out),
                Err(e) => {
                    // The lines before the bad one are fine; the bad one goes out raw.
                    let good = e.valid_up_to();
                    let ls = memchr::memrchr(b'\n', &b[..good]).map_or(0, |p| p + 1);
                    if let Ok(s) = std::str::from_utf8(&b[..ls]) {
                        self.str_lines(s, out)?;
                    }
                    let le = memchr::memchr(b'\n', &b[good..]).map_or(b.len(), |p| good + p);
                    self.bytes_line(&b[ls..le], out)?;
                    b = b.get(le + 1..).unwrap_or(&[]);
                }
            }
        }
        Ok(())
    }

    /// Complete lines (each ending in `\n`), already checked.
    fn str_lines(&mut self, s: &str, out: &mut dyn Write) -> std::io::Result<()> {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let e = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |p| i + p);
            let line = s.get(i..e).unwrap_or("");
            let line = line.strip_suffix('\r').unwrap_or(line);
            self.line(line, out)?;
            if self.obuf.len() >= OUT_CHUNK {
                self.flush_out(out)?;
            }
            i = e + 1;
        }
        Ok(())
    }

    /// One line of unchecked bytes, without (or with) its `\n`.
    fn bytes_line(&mut self, raw: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
        let body = raw.strip_suffix(b"\n").unwrap_or(raw);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        match std::str::from_utf8(body) {
            Ok(line) => self.line(line, out),
            Err(_) => {
                self.stats.lines += 1;
                if !self.opts.json && !self.opts.errors_only {
                    self.flush_out(out)?;
                    out.write_all(body)?;
                    out.write_all(b"\n")?;
                }
                Ok(())
            }
        }
    }

    /// Write the collected text.
    fn flush_out(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        if !self.obuf.is_empty() {
            out.write_all(self.obuf.as_bytes())?;
            self.obuf.clear();
        }
        Ok(())
    }

    fn intern(&mut self, name: &str, module: Option<&str>) -> u32 {
        if module.is_some() {
            return self.intern_map(name, module);
        }
        let slot = recent_slot(name);
        let id = self.recent[slot];
        if self.funcs.get(id as usize).is_some_and(|f| f.name == name) {
            return id;
        }
        let id = self.intern_map(name, None);
        self.recent[slot] = id;
        id
    }

    fn intern_map(&mut self, name: &str, module: Option<&str>) -> u32 {
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
        self.funcs.push(FuncInfo::new(key.to_string(), func));
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

    /// The task of `key`, created when new.
    #[inline]
    fn task(&mut self, key: u64) -> usize {
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

    /// A line printed unchanged (or buffered inside a call tree with `--errors-only`).
    fn passthrough(
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

    fn push_frame(&mut self, ti: usize, frame: Frame) {
        let task = &mut self.tasks[ti];
        while task.stack.last().is_some_and(|f| f.depth >= frame.depth) {
            task.stack.pop();
        }
        task.stack.push(frame);
    }

    /// Pop the frame a `}` at `depth` closes.
    fn pop_frame(&mut self, ti: usize, depth: u32) -> Option<Frame> {
        let task = &mut self.tasks[ti];
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
        s.push_str(probe_location(&p, c.text));
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

    fn wants_records(&self) -> bool {
        self.opts.json || self.records.is_some()
    }

    /// The call a new call at `depth` is made from: the innermost open frame above it.
    fn parent_of(&self, ti: usize, depth: u32) -> Option<u64> {
        self.tasks[ti]
            .stack
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
    fn emit_built(
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
fn probe_location<'t>(p: &ProbeEvent<'t>, text: &'t str) -> &'t str {
    let _ = p;
    text.find('(')
        .and_then(|a| text[a + 1..].find(')').map(|b| &text[a + 1..a + 1 + b]))
        .unwrap_or("")
}
