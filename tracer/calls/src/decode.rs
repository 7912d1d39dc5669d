//! The function_graph text source: every line parsed once into call events for the call
//! tree ([`crate::tree`]), whose sinks print the text with every return value and argument
//! rewritten by its DWARF type (the rest of each line untouched), JSON lines, saved calls.
//!
//! Probe events printed inside the graph are joined to the calls they belong to: an exit
//! event (`/* x: (caller <- func) arg1=-2 */`) gives the return value of the next `}` of
//! `func`, an entry event (`/* x: (func+0x0/0xd0) dfd=... */`) gives the arguments of the
//! next entry of `func`. That is how kernels without `funcgraph-retval` get values.

mod input;
pub mod pages;
mod raw;

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;

use dcg_dbset::DbSet;
use dcg_fgraph::{self as fgraph, Call, Line, Prefix};

use crate::funcs::FuncTable;
use crate::outputs::{OutputSpec, Outputs};
use crate::pipeline::{Pipeline, PipelineError};
use crate::saved_format::CallRecord;
use crate::sink::{ArgList, Layout, Note, Sink, Sinks, Task};
use crate::tree::{ArgsIn, CallTree, CodeSite, Entry, Exit, RetIn, Shape};

/// Output text collected before it is handed to the writer.
const OUT_CHUNK: usize = Pipeline::CHUNK;

/// What `dcg decode` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct DecodeJob {
    /// Saved `trace` / `trace_pipe` text; `None` or `-` for standard input.
    pub input: Option<PathBuf>,
    /// Also save the decoded calls to this file.
    pub output: Option<PathBuf>,
    /// How to decode.
    pub opts: Options,
    /// Show only the calls this keeps of each tree (`--filter`, `--min-duration`).
    pub select: Option<std::rc::Rc<dyn crate::selected::TreeSelect>>,
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
    /// Print a call whose lines up to its `}` were all dropped or joined as a leaf (live
    /// tracing, where the stream is filtered and probe events sit inside their calls).
    pub collapse_empty: bool,
    /// Place calls under frames for the inlined code they are made from, by their return
    /// addresses (`funcgraph-retaddr`) and the db's inline instances.
    pub inline_frames: bool,
}

impl Options {
    /// The outputs these options ask for: text (or JSON lines), nothing saved.
    pub fn output(&self) -> OutputSpec {
        OutputSpec {
            json: self.json,
            errors_only: self.errors_only,
            color: self.color,
            cpu_width: 1,
            probe_notes: !self.hide_probe_events,
            ..OutputSpec::default()
        }
    }
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
    names: Option<&dcg_dbset::symbols::SymbolMap>,
    out: &mut dyn Write,
) -> Result<Option<String>, DecodeError> {
    let spec = OutputSpec {
        saved: args.output.clone(),
        source: args
            .input
            .as_deref()
            .map_or("stdin".to_string(), |p| p.display().to_string()),
        ..args.opts.output()
    };
    let mut dec = Decoder::with_outputs(set, args.opts, Outputs::open(spec)?);
    if let Some(select) = &args.select {
        dec.pipe.select_trees(select.clone(), set);
    }
    if let Some(n) = names {
        dec.set_pointer_names(n);
    }
    // The input's own errors (a line over the cap) name it; the output's do not.
    let read = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::InvalidData => DecodeError::Read { path, source },
            _ => DecodeError::Io(source),
        }
    };
    match args.input.as_deref() {
        None => dec
            .decode_stream(std::io::stdin().lock(), out)
            .map_err(read("stdin".as_ref()))?,
        Some(p) if p.as_os_str() == "-" => dec
            .decode_stream(std::io::stdin().lock(), out)
            .map_err(read("stdin".as_ref()))?,
        Some(p) => {
            let f = open_text(p)?;
            dec.decode_stream(std::io::BufReader::with_capacity(1 << 18, f), out)
                .map_err(read(p))?;
        }
    }
    dec.finish(out)?;
    let summary = dec.summary();
    dec.close()?;
    Ok(summary)
}

/// Open a saved trace (or a FIFO that streams one). A device is refused before it is
/// opened: it is no saved trace, and `/dev/zero` would never end.
pub fn open_text(path: &std::path::Path) -> Result<std::fs::File, DecodeError> {
    let open = |source| DecodeError::Open {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(open)?;
    if let Some(kind) = sigdb::filekind::special_kind(meta.file_type()) {
        if !meta.file_type().is_fifo() {
            return Err(open(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{kind}, not a saved trace"),
            )));
        }
    }
    std::fs::File::open(path).map_err(open)
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
    /// Reading the input failed: a line of text over [`crate::lines::MAX_LINE`], or a
    /// read of ring-buffer pages.
    #[error("{}: {source}", path.display())]
    Read {
        /// The input (`stdin` for standard input).
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Reading the input or writing the output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing an output file failed (the message names it).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
    /// Setting up or closing the outputs failed.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// Ring-buffer pages or their event formats are not what function_graph writes.
    #[error("{}: {error}", path.display())]
    Ring {
        /// The pages' or the formats' file.
        path: PathBuf,
        /// What is wrong.
        error: dcg_ringbuf::RingError,
    },
    /// A page size out of range.
    #[error("--page-size {size}: not between 16 and {max}")]
    PageSize {
        /// The size given.
        size: usize,
        /// The largest accepted.
        max: usize,
    },
}

/// Streaming decoder: feed function_graph lines, the sinks get typed calls.
pub struct Decoder<'a> {
    pipe: Pipeline<'a>,
    opts: Options,
    lines: u64,
    /// Spaces of indentation removed from every line (trees re-rooted at a deeper call).
    shift: usize,
    /// Scratch for a probe event's fields.
    fields: ArgList,
    /// Calls from binary records carry the context their records were written in.
    contexts: bool,
    /// Task names for binary records, which carry only the thread id ([`Decoder::name_task`]).
    comms: std::collections::HashMap<u32, String>,
    /// The probe events that read at their function's entry (`--fields`, `--deref`) or
    /// return (output parameters), by event name, and what their fields give.
    read_events: std::collections::HashMap<String, Box<dyn crate::members::EventReads + 'a>>,
}

impl<'a> Decoder<'a> {
    /// A decoder over `set` printing text (or JSON lines, per `opts`), saving nothing.
    pub fn new(set: &'a DbSet, opts: Options) -> Decoder<'a> {
        let tree = Decoder::tree(set, opts);
        Decoder::on(Pipeline::shown(tree, &opts.output()), opts)
    }

    /// A decoder over `set` feeding `outputs` (the saved-calls file too).
    pub fn with_outputs(set: &'a DbSet, opts: Options, outputs: Outputs) -> Decoder<'a> {
        let tree = Decoder::tree(set, opts);
        Decoder::on(Pipeline::new(tree, outputs), opts)
    }

    /// A decoder over `set` feeding `sinks`.
    pub fn with_sinks(set: &'a DbSet, opts: Options, sinks: Sinks<'a>) -> Decoder<'a> {
        let tree = Decoder::tree(set, opts);
        Decoder::on(Pipeline::with_sinks(tree, sinks), opts)
    }

    /// The call tree of a decoder over `set`.
    fn tree(set: &'a DbSet, opts: Options) -> CallTree<'a> {
        let mut tree = CallTree::new(FuncTable::new(set), Shape::Shaped, 0);
        tree.hold_opens(opts.collapse_empty);
        tree.show_inline_frames(opts.inline_frames && set.has_inline_instances());
        tree
    }

    /// A decoder driving `pipe`.
    fn on(pipe: Pipeline<'a>, opts: Options) -> Decoder<'a> {
        Decoder {
            pipe,
            opts,
            lines: 0,
            shift: 0,
            fields: ArgList::default(),
            contexts: false,
            comms: std::collections::HashMap::new(),
            read_events: std::collections::HashMap::new(),
        }
    }

    /// Probe event `event` reads `members` at its function's entry (`--fields`): they are
    /// shown after the call's arguments, rendered by their types.
    pub fn read_members(&mut self, event: &str, members: Vec<crate::members::MemberField<'a>>) {
        self.read_event(event, Box::new(members));
    }

    /// Probe event `event` reads data at its function's entry, which `reads` turns into
    /// arguments of the call (merged: [`crate::sink::ArgList::merge`]), or at its return
    /// (a return event), into the call's output parameters.
    pub fn read_event(&mut self, event: &str, reads: Box<dyn crate::members::EventReads + 'a>) {
        self.read_events.insert(event.to_string(), reads);
    }

    /// Name pointers that land on a symbol of `names` (kallsyms, `System.map`):
    /// `idmap=&nop_mnt_idmap`, `actor=filldir64`.
    pub fn set_pointer_names(&mut self, names: &'a dcg_dbset::symbols::SymbolMap) {
        self.pipe.tree_mut().funcs.set_pointer_names(names);
    }

    /// Name the values of the integer typedefs `tables` has (`gfp_t`: `GFP_KERNEL`).
    pub fn set_flag_tables(&mut self, tables: std::rc::Rc<crate::funcs::FlagTables>) {
        self.pipe.tree_mut().funcs.set_flag_tables(tables);
    }

    /// Give every call from binary records ([`Decoder::feed_record`]) the context it ran
    /// in (task, irq, softirq, NMI: its records' flags), and mark where an interrupt
    /// subtree begins and ends inside a task's tree.
    pub fn mark_contexts(&mut self) {
        self.contexts = true;
    }

    /// Name thread `pid` in the calls of binary records ([`Decoder::feed_record`]), whose
    /// records carry no name.
    pub fn name_task(&mut self, pid: u32, comm: &str) {
        self.comms.insert(pid, comm.to_string());
    }

    /// Also feed `sink`.
    pub fn add_sink(&mut self, sink: Box<dyn Sink + 'a>) {
        self.pipe.add_sink(sink);
    }

    /// Counters so far.
    pub fn stats(&self) -> Stats {
        let tree = self.pipe.tree();
        let c = tree.counts();
        Stats {
            lines: self.lines,
            decoded: c.decoded,
            unknown: c
                .unknown
                .iter()
                .map(|(&id, &n)| (tree.funcs.get(id).name.clone(), n))
                .collect(),
            errors: c.errors,
        }
    }

    /// Decode one line (without its newline).
    pub fn decode_line(&mut self, line: &str, out: &mut dyn Write) -> std::io::Result<()> {
        self.line(line)?;
        self.flush_out(out)
    }

    /// A line its caller already parsed, printed `shift` levels less indented (a tree
    /// re-rooted at a deeper call); nothing is written until [`Decoder::flush_out`].
    pub fn feed_parsed(&mut self, text: &str, line: &Line<'_>, shift: u32) -> std::io::Result<()> {
        self.lines += 1;
        self.shift = 2 * shift as usize;
        let r = self.dispatch(text, line);
        self.shift = 0;
        r
    }

    /// Forget probe-event arguments of task `key` waiting for an entry that did not come.
    pub fn forget_pending_args(&mut self, key: u64) {
        self.pipe.tree_mut().forget_pending_args(key);
    }

    /// Calls that closed without a value to show, by function name (most first).
    pub fn valueless(&self) -> Vec<(String, u64)> {
        let tree = self.pipe.tree();
        let mut v: Vec<(String, u64)> = tree
            .counts()
            .valueless
            .iter()
            .map(|(&id, &n)| (tree.funcs.get(id).name.clone(), n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    /// The trees shown so far, as `--count` counts them ([`Pipeline::trees_shown`]).
    pub fn trees_shown(&self) -> u64 {
        self.pipe.trees_shown()
    }

    /// Whether a selection decides which trees are shown ([`Pipeline::selects`]).
    pub fn selects(&self) -> bool {
        self.pipe.selects()
    }

    /// Write the collected output.
    pub fn flush_out(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.pipe.flush_to(out)
    }

    /// Decode one line into the collected output.
    fn line(&mut self, line: &str) -> std::io::Result<()> {
        self.lines += 1;
        self.dispatch(line, &fgraph::parse_line(line))
    }

    #[inline]
    fn dispatch(&mut self, text: &str, line: &Line<'_>) -> std::io::Result<()> {
        match line {
            Line::Entry(c) => self.call(text, c, false),
            Line::Leaf(c) => self.call(text, c, true),
            Line::Exit(e) => self.exit(text, e),
            Line::Comment(c) => self.comment(text, c),
            _ => self.passthrough(text, None),
        }
    }

    fn task<'l>(p: &Prefix<'l>) -> Task<'l> {
        Task {
            key: match (p.pid, p.cpu) {
                (Some(pid), _) => pid as u64,
                (None, Some(cpu)) => (1u64 << 32) | cpu as u64,
                (None, None) => 0,
            },
            pid: p.pid,
            comm: p.comm,
            cpu: p.cpu,
            process: None,
        }
    }

    fn layout<'l>(&self, line: &'l str, p: &Prefix<'_>) -> Layout<'l> {
        Layout {
            head: line.get(..p.prefix_end).unwrap_or(""),
            indent_start: p.indent_start,
            shift: self.shift,
        }
    }

    /// A return address as function_graph prints it (`caller+0x4f/0xd0`, perhaps with
    /// ` [module]`) as the place in the caller it is, when inline frames are shown.
    fn site_of(&mut self, retaddr: &str) -> Option<CodeSite> {
        if !self.pipe.tree().inline_frames() {
            return None;
        }
        let (text, module) = match retaddr.split_once(" [") {
            Some((t, m)) => (t, m.strip_suffix(']')),
            None => (retaddr, None),
        };
        let (name, rest) = text.rsplit_once('+')?;
        let off = rest.split('/').next()?.strip_prefix("0x")?;
        let offset = u64::from_str_radix(off, 16).ok()?;
        Some(CodeSite {
            func: self.pipe.tree_mut().funcs.intern(name, module),
            offset,
        })
    }

    /// A line passed on as it is.
    fn passthrough(&mut self, line: &str, task: Option<u64>) -> std::io::Result<()> {
        self.pipe.note(&Note::Line { task, text: line })
    }

    fn call(&mut self, line: &str, c: &Call<'_>, leaf: bool) -> std::io::Result<()> {
        let func = self.pipe.tree_mut().funcs.intern(c.func, c.module);
        let entry = Entry {
            task: Self::task(&c.prefix),
            depth: c.prefix.depth,
            func,
            name: c.func,
            module: c.module,
            args: ArgsIn::Text(c.args.unwrap_or("")),
            ret: c.ret.map(|r| RetIn::Text {
                raw: r.raw,
                value: r.value,
            }),
            leaf,
            time_ns: c.prefix.abstime.and(c.prefix.abstime_ns()),
            duration_ns: c.prefix.duration_ns,
            callsite: c.retaddr,
            site: c.retaddr.and_then(|r| self.site_of(r)),
            comment: c.comment.filter(|_| c.ret.is_none() && c.retaddr.is_none()),
            layout: Some(self.layout(line, &c.prefix)),
            ctx: None,
        };
        self.pipe.enter(&entry)
    }

    fn exit(&mut self, line: &str, e: &fgraph::Exit<'_>) -> std::io::Result<()> {
        let func = e
            .func
            .map(|n| self.pipe.tree_mut().funcs.intern(n, e.module));
        let task = Self::task(&e.prefix);
        let exit = Exit {
            outs: None,
            task,
            depth: e.prefix.depth,
            func,
            ret: e.ret.map(|r| RetIn::Text {
                raw: r.raw,
                value: r.value,
            }),
            time_ns: None,
            duration_ns: e.prefix.duration_ns,
            layout: Some(self.layout(line, &e.prefix)),
        };
        if !self.pipe.exit(&exit)? {
            return self.passthrough(line, Some(task.key));
        }
        Ok(())
    }

    fn comment(&mut self, line: &str, c: &fgraph::Comment<'_>) -> std::io::Result<()> {
        let key = Self::task(&c.prefix).key;
        let Some(p) = c.probe else {
            return self.passthrough(line, Some(key));
        };
        let Some(func) = p.func else {
            return self.passthrough(line, Some(key));
        };
        let id = self.pipe.tree_mut().funcs.intern(func, None);
        let mut fields = std::mem::take(&mut self.fields);
        if let Some(reads) = self.read_events.get(c.event.unwrap_or(p.event)) {
            fields.clear();
            {
                let symbols = self.pipe.tree().funcs.symbols();
                let values: Vec<(&str, &str)> = p.fields().collect();
                reads.render(&values, &symbols, &mut fields);
            }
            let r = if p.is_return {
                self.pipe.pending_outs(key, id, &fields)
            } else {
                self.pipe.pending_members(key, id, &fields)
            };
            self.fields = fields;
            return r;
        }
        let error = self
            .pipe
            .tree_mut()
            .render_fields(id, p.fields(), p.is_return, &mut fields);
        if p.is_return {
            // The first numeric field is the return value ($retval).
            if let Some(v) = p.fields().find_map(|(_, v)| fgraph::parse_number(v)) {
                self.pipe.pending_ret(key, id, v)?;
            }
        } else {
            self.pipe.pending_args(key, id, fields.clone())?;
        }
        if self.pipe.wants_notes() {
            let note = Note::Probe {
                task: key,
                layout: self.layout(line, &c.prefix),
                event: c.event.unwrap_or(p.event),
                location: probe_location(c.text),
                fields: &fields,
                error: error && p.is_return,
            };
            self.pipe.note(&note)?;
        }
        self.fields = fields;
        Ok(())
    }

    /// Flush buffered trees and the record file at end of input.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.pipe.finish(out)
    }

    /// Close the outputs: the saved-calls file committed, the calls a report collected
    /// returned ([`Pipeline::close`]).
    pub fn close(self) -> Result<Option<Vec<CallRecord>>, PipelineError> {
        self.pipe.close()
    }

    /// The stderr summary: undecoded functions, if any.
    pub fn summary(&self) -> Option<String> {
        let unknown = self.stats().unknown;
        if unknown.is_empty() {
            return None;
        }
        let mut v: Vec<(&String, &u64)> = unknown.iter().collect();
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
