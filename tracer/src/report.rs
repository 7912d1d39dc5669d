//! `dcg report`: the dynamic call graph of saved calls or saved ftrace text — per
//! function calls, total and self time, error returns, caller → callee edges, the
//! "called way too often" view — as text, JSON, Graphviz DOT, folded stacks or Chrome
//! trace-event JSON. Formats are described in `tracer/REPORT.md`.

pub mod chrome;
pub mod dot;
pub mod folded;
pub mod json;
pub mod model;
pub mod text;

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};

use crate::dbset::DbSet;
use crate::decode::{Decoder, Options};
use crate::output::OutputFile;
use crate::record::{self, CallRecord};

pub use model::{CallGraph, EdgeStats, FuncStats, Summary};

/// Command-line options of `dcg report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Signature db for ftrace text input (repeat for module dbs); default: the store's db
    /// for the running kernel, else values stay raw.
    #[arg(long = "db", value_name = "FILE")]
    pub db: Vec<PathBuf>,
    /// A saved-calls file (`--output` of decode/trace; `--json` output too) or saved
    /// ftrace function_graph text; `-` or nothing for standard input.
    pub input: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Rows per table in the text report.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Weight of a folded stack: the number of calls ending there, or their self time.
    #[arg(long, value_enum, default_value = "calls", value_name = "WEIGHT")]
    pub folded_weight: FoldedWeight,
    /// Only calls of FUNC (`func` or `func [module]`) and what they call; FUNC's calls
    /// become the top-level calls.
    #[arg(long, value_name = "FUNC")]
    pub root: Option<String>,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl Default for ReportArgs {
    fn default() -> Self {
        ReportArgs {
            db: Vec::new(),
            input: None,
            format: Format::Text,
            top: 20,
            folded_weight: FoldedWeight::Calls,
            root: None,
            output: None,
        }
    }
}

/// Report formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Tables for people.
    Text,
    /// One JSON object with every function and edge.
    Json,
    /// Graphviz DOT of the call graph, call counts on the edges.
    Dot,
    /// Folded stacks (`root;child;leaf COUNT`) for flame graph tools.
    Folded,
    /// Chrome trace-event JSON (Perfetto, chrome://tracing): one slice per call.
    Chrome,
}

/// Weight of a folded stack line.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoldedWeight {
    /// Calls whose stack it is: the weights add up to the number of calls.
    Calls,
    /// Self time in ns of those calls (needs durations).
    SelfNs,
}

/// What the calls were read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    /// A saved-calls file.
    SavedCalls,
    /// ftrace text, decoded with this many dbs (0: values left raw).
    FtraceText {
        /// Number of dbs used.
        dbs: usize,
    },
}

/// Calls read from an input.
#[derive(Debug)]
pub struct Loaded {
    /// The input's name (the header's source for saved calls).
    pub source: String,
    /// Its kind.
    pub kind: InputKind,
    /// The calls.
    pub records: Vec<CallRecord>,
}

/// Run `dcg report`: returns the exit code.
pub fn run(args: &ReportArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let name = match args.input.as_deref() {
        None => "stdin".to_string(),
        Some(p) if p.as_os_str() == "-" => "stdin".to_string(),
        Some(p) => p.display().to_string(),
    };
    let bytes = match args.input.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            std::fs::read(p).with_context(|| format!("{}", p.display()))?
        }
        _ => {
            let mut v = Vec::new();
            std::io::stdin().lock().read_to_end(&mut v)?;
            v
        }
    };
    let loaded = if looks_like_saved_calls(&bytes) {
        load_saved(&bytes[..])?
    } else if looks_like_records(&bytes) {
        load_records(&bytes, &name)?
    } else {
        let set = if args.db.is_empty() {
            DbSet::resolve(&[]).unwrap_or_else(|e| {
                eprintln!(
                    "dcg report: no signature db, values stay raw (no errnos): {e}\n\
                     dcg report: give one with --db FILE"
                );
                DbSet::new(Vec::new())
            })
        } else {
            DbSet::resolve(&args.db)?
        };
        load_ftrace(&bytes, &name, &set)?
    };
    let mut graph = CallGraph::new(loaded.records)?;
    if let Some(f) = &args.root {
        graph = graph.restrict_to(f);
        if graph.is_empty() {
            eprintln!("dcg report: no calls of {f} in the input");
        }
    }
    let input = ReportInput {
        source: loaded.source,
        kind: loaded.kind,
        root: args.root.clone(),
    };
    match &args.output {
        Some(path) => {
            let file = OutputFile::create(path)?;
            let mut w = std::io::BufWriter::new(file.file()?);
            write_report(args, &input, &graph, &mut w)?;
            w.flush()?;
            drop(w);
            file.commit()?;
        }
        None => write_report(args, &input, &graph, out)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Where a report's calls came from, for its heading.
#[derive(Debug, Clone)]
pub struct ReportInput {
    /// Input name.
    pub source: String,
    /// Input kind.
    pub kind: InputKind,
    /// The `--root` function, if any.
    pub root: Option<String>,
}

/// Write the report of `graph` in the format of `args`.
pub fn write_report(
    args: &ReportArgs,
    input: &ReportInput,
    graph: &CallGraph,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match args.format {
        Format::Text => text::write(out, input, graph, &graph.summarize(), args.top)?,
        Format::Json => json::write(out, input, graph, &graph.summarize())?,
        Format::Dot => dot::write(out, graph, &graph.summarize())?,
        Format::Folded => {
            if args.folded_weight == FoldedWeight::SelfNs
                && graph.calls.iter().all(|c| c.duration_ns.is_none())
            {
                bail!("no durations in the input: use --folded-weight calls");
            }
            folded::write(out, graph, args.folded_weight)?
        }
        Format::Chrome => chrome::write(out, input, graph)?,
    }
    Ok(())
}

/// Whether `bytes` starts with a saved-calls header line.
pub fn looks_like_saved_calls(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    std::str::from_utf8(first).is_ok_and(|l| record::is_header(l.trim_end_matches('\r')))
}

/// Whether `bytes` starts with a call record but no header (`dcg decode --json` output).
pub fn looks_like_records(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    first.starts_with(b"{") && serde_json::from_slice::<CallRecord>(first).is_ok()
}

/// Read call records without a header, one per line (`dcg decode --json` output).
pub fn load_records(bytes: &[u8], source: &str) -> anyhow::Result<Loaded> {
    let mut records = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        records.push(
            serde_json::from_slice(line).with_context(|| format!("{source}: line {}", i + 1))?,
        );
    }
    Ok(Loaded {
        source: source.to_string(),
        kind: InputKind::SavedCalls,
        records,
    })
}

/// Read a saved-calls file.
pub fn load_saved(input: impl BufRead) -> anyhow::Result<Loaded> {
    let (header, records) = record::read(input)?;
    Ok(Loaded {
        source: header.source,
        kind: InputKind::SavedCalls,
        records,
    })
}

/// Decode ftrace function_graph text into calls with the dbs of `set` (functions missing
/// from them are listed on stderr).
pub fn load_ftrace(input: &[u8], source: &str, set: &DbSet) -> anyhow::Result<Loaded> {
    let mut dec = Decoder::new(
        set,
        Options {
            json: true,
            ..Options::default()
        },
    );
    let mut sink = RecordSink::default();
    dec.decode_stream(input, &mut sink)?;
    dec.finish(&mut sink)?;
    if let Some(s) = dec.summary().filter(|_| !set.dbs().is_empty()) {
        let s = s.strip_prefix("dcg decode: ").unwrap_or(&s);
        eprintln!("dcg report: {s}");
    }
    sink.flush()?;
    Ok(Loaded {
        source: source.to_string(),
        kind: InputKind::FtraceText {
            dbs: set.dbs().len(),
        },
        records: sink.records,
    })
}

/// Parses the decoder's JSON lines into records as they are written.
#[derive(Default)]
struct RecordSink {
    buf: Vec<u8>,
    records: Vec<CallRecord>,
}

fn parse_record(records: &mut Vec<CallRecord>, line: &[u8]) -> std::io::Result<()> {
    if !line.is_empty() {
        let r = serde_json::from_slice(line)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        records.push(r);
    }
    Ok(())
}

impl Write for RecordSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut rest = data;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            if self.buf.is_empty() {
                parse_record(&mut self.records, &rest[..nl])?;
            } else {
                self.buf.extend_from_slice(&rest[..nl]);
                parse_record(&mut self.records, &self.buf)?;
                self.buf.clear();
            }
            rest = &rest[nl + 1..];
        }
        self.buf.extend_from_slice(rest);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        parse_record(&mut self.records, &self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

/// ns as µs with three decimals: `11007` → `11.007`.
pub fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}
