//! `dcg report`: the dynamic call graph of saved calls or saved ftrace text — per
//! function calls, total and self time, error returns, where the errors of failing
//! top-level calls first appeared, caller → callee edges, the "called way too often" view — as text, JSON, Graphviz DOT, folded stacks or Chrome
//! trace-event JSON, or one self-contained HTML page. Formats are described in
//! `tracer/REPORT.md`.

pub mod chrome;
pub mod dot;
pub mod folded;
pub mod html;
pub mod json;
pub mod model;
pub mod text;

use std::io::{BufRead, Write};

use dcg_calls::decode::{Decoder, Options};
use dcg_calls::outputs::{OutputSpec, Outputs};
use dcg_calls::saved_format::{self, CallRecord};
use dcg_dbset::DbSet;

pub use model::{CallGraph, EdgeStats, ErrnoOrigins, FuncStats, OriginStats, RootStacks, Summary};

/// How to write a report.
#[derive(Debug, Clone, Copy)]
pub struct ReportOptions {
    /// Output format.
    pub format: Format,
    /// Rows per table in the text report.
    pub top: usize,
    /// Weight of a folded stack.
    pub folded_weight: FoldedWeight,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            format: Format::Text,
            top: 20,
            folded_weight: FoldedWeight::Calls,
        }
    }
}

/// Errors of reading calls or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Setting up or closing the report's call collection failed.
    #[error(transparent)]
    Pipeline(#[from] dcg_calls::pipeline::PipelineError),
    /// Reading the input failed (a line over [`dcg_calls::lines::MAX_LINE`] included).
    #[error("{input}: {error}")]
    Read {
        /// The input's name.
        input: String,
        /// The error.
        error: std::io::Error,
    },
    /// A saved-calls file is not valid.
    #[error("{input}: {error}")]
    Records {
        /// The input's name.
        input: String,
        /// What is wrong.
        error: saved_format::RecordError,
    },
    /// A JSON record line is not valid.
    #[error("{input}: line {line}: {error}")]
    Json {
        /// The input's name.
        input: String,
        /// 1-based line number.
        line: usize,
        /// The parse error.
        error: serde_json::Error,
    },
    /// The call graph cannot be built from the records.
    #[error("{0}")]
    Graph(String),
    /// The report cannot be written from this input.
    #[error("{0}")]
    Unsupported(&'static str),
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// One self-contained HTML page: call trees, flame graph, call graph, tables.
    Html,
}

/// Weight of a folded stack line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// A live trace (`dcg trace --report`).
    Live,
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
    /// What the reader has to say about the input (functions it could not decode).
    pub note: Option<String>,
}

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
    args: &ReportOptions,
    input: &ReportInput,
    graph: &CallGraph,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    match args.format {
        Format::Text => text::write(out, input, graph, &graph.summarize(), args.top)?,
        Format::Json => json::write(out, input, graph, &graph.summarize())?,
        Format::Dot => dot::write(out, graph, &graph.summarize())?,
        Format::Folded => {
            if args.folded_weight == FoldedWeight::SelfNs
                && graph.calls.iter().all(|c| c.duration_ns.is_none())
            {
                return Err(ReportError::Unsupported(
                    "no durations in the input: use --folded-weight calls",
                ));
            }
            folded::write(out, graph, args.folded_weight)?
        }
        Format::Chrome => chrome::write(out, input, graph)?,
        Format::Html => html::write(out, input, graph, &graph.summarize(), args.top)?,
    }
    Ok(())
}

/// Whether `bytes` starts with a saved-calls header line.
pub fn looks_like_saved_calls(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    std::str::from_utf8(first).is_ok_and(|l| saved_format::is_header(l.trim_end_matches('\r')))
}

/// Whether `bytes` starts with a call record but no header (`dcg decode --json` output).
pub fn looks_like_records(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    first.starts_with(b"{") && serde_json::from_slice::<CallRecord>(first).is_ok()
}

/// Read call records without a header, one per line (`dcg decode --json` output).
pub fn load_records(input: impl BufRead, source: &str) -> Result<Loaded, ReportError> {
    let mut records = Vec::new();
    let mut lines = dcg_calls::lines::Lines::new(input);
    while let Some(line) = lines.next_line().map_err(|error| ReportError::Read {
        input: source.to_string(),
        error,
    })? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        records.push(
            serde_json::from_slice(line).map_err(|error| ReportError::Json {
                input: source.to_string(),
                line: lines.number() as usize,
                error,
            })?,
        );
    }
    Ok(Loaded {
        source: source.to_string(),
        kind: InputKind::SavedCalls,
        records,
        note: None,
    })
}

/// Read a saved-calls file.
pub fn load_saved(input: impl BufRead, name: &str) -> Result<Loaded, ReportError> {
    let (header, records) = saved_format::read(input).map_err(|error| ReportError::Records {
        input: name.to_string(),
        error,
    })?;
    Ok(Loaded {
        source: header.source,
        kind: InputKind::SavedCalls,
        records,
        note: None,
    })
}

/// Decode ftrace function_graph text into calls with the dbs of `set` (functions missing
/// from them are named in the [`Loaded::note`]).
pub fn load_ftrace(input: impl BufRead, source: &str, set: &DbSet) -> Result<Loaded, ReportError> {
    let spec = OutputSpec {
        report: true,
        ..OutputSpec::default()
    };
    let mut dec = Decoder::with_outputs(set, Options::default(), Outputs::open(spec)?);
    dec.decode_stream(input, &mut std::io::sink())
        .map_err(|error| ReportError::Read {
            input: source.to_string(),
            error,
        })?;
    dec.finish(&mut std::io::sink())?;
    let note = dec.summary().filter(|_| !set.dbs().is_empty()).map(|s| {
        s.strip_prefix("dcg decode: ")
            .map(str::to_string)
            .unwrap_or(s)
    });
    let records = dec.close()?.unwrap_or_default();
    Ok(Loaded {
        source: source.to_string(),
        kind: InputKind::FtraceText {
            dbs: set.dbs().len(),
        },
        records,
        note,
    })
}

/// ns as µs with three decimals: `11007` → `11.007`.
pub fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}
