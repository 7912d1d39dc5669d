//! Command-line options of `dcg decode` and `dcg report`, and the colour choice; each
//! converts into the plain options its library takes.

use std::path::PathBuf;

use dcg_calls::decode::{DecodeJob, Options};
use dcg_report::{FoldedWeight, Format, ReportOptions};

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

/// The longest `--duration`: a year, so that the deadline it sets stays representable.
const MAX_DURATION_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// `--duration SECS`: a finite number of seconds, more than 0, at most a year.
pub fn duration_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds (e.g. 2 or 0.5)"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!(
            "{s:?}: the duration must be a finite number of seconds greater than 0"
        ));
    }
    if v > MAX_DURATION_SECS {
        return Err(format!(
            "{s:?}: the duration must be at most a year ({MAX_DURATION_SECS} seconds)"
        ));
    }
    Ok(v)
}

/// `--count N`: a whole number of calls, at least 1.
pub fn positive_count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("0: the count must be at least 1 (leave --count out for no limit)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number of calls (1 or more)")),
    }
}

/// `-p PID`: a process id, at least 1 (0 and negative numbers name process groups).
pub fn process_id(s: &str) -> Result<i32, String> {
    match s.trim().parse::<i32>() {
        Ok(p) if p >= 1 => Ok(p),
        Ok(_) => Err(format!("{s}: a process id is at least 1")),
        Err(_) => Err(format!("{s:?} is not a process id")),
    }
}

/// `--page-size BYTES`: a power of two, from 64 bytes to 1 MiB.
pub fn page_size(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n.is_power_of_two() && (64..=1 << 20).contains(&n) => Ok(n),
        Ok(_) => Err(format!(
            "{s}: the page size must be a power of two from 64 to 1048576"
        )),
        Err(_) => Err(format!("{s:?} is not a number of bytes")),
    }
}

/// A duration with its unit (`10us`, `1.5ms`), in ns.
pub fn duration(s: &str) -> Result<u64, String> {
    dcg_filter::parse_duration(s).map_err(|e| format!("{s:?}: {e}"))
}

impl ColorChoice {
    /// The decision, given whether the output is a terminal that shows text.
    pub fn decide(self, terminal_text: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal_text,
        }
    }
}

/// Command-line options of `dcg decode`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DecodeArgs {
    /// Signature db (repeat for module dbs); default: /sys/kernel/dcg, else the store's db
    /// for the running kernel.
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
    /// The input is binary ring-buffer pages (`per_cpu/cpuN/trace_pipe_raw`), not text;
    /// needs --formats and --kallsyms.
    #[arg(long, requires_all = ["formats", "kallsyms"])]
    pub raw: bool,
    /// The kernel's `events/ftrace/*/format` files, one after the other (raw input).
    #[arg(long, value_name = "FILE")]
    pub formats: Option<PathBuf>,
    /// The kernel's `/proc/kallsyms` or `System.map`: names functions of raw input, and
    /// pointers that land on a symbol (`idmap=&nop_mnt_idmap`) in any input.
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// The CPU whose buffer the raw input is (for the CPU column).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub cpu: u32,
    /// Ring-buffer page size of the raw input.
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = crate::args::page_size)]
    pub page_size: usize,
    /// Do not show inlined code as frames of the inlined functions. By default, where the
    /// trace has return addresses (`funcgraph-retaddr`) and the db inline instances, a
    /// call made from a function's inlined code is shown under a frame for it.
    #[arg(long)]
    pub no_inline_frames: bool,
    /// Only the trees whose top-level call passes EXPR (repeat: all must hold), as `dcg
    /// report --filter` takes it; `FUNC: EXPR` keeps the trees where some call of FUNC
    /// passes it. The saved-calls file (--output) keeps every call.
    #[arg(long = "filter", value_name = "EXPR", conflicts_with = "raw")]
    pub filter: Vec<String>,
    /// Only the calls at least D long (`10us`, `1.5ms`, `2s`) and the calls leading to
    /// them.
    #[arg(long, value_name = "D", value_parser = crate::args::duration, conflicts_with = "raw")]
    pub min_duration: Option<u64>,
}

impl DecodeArgs {
    /// The decoding job; `terminal` tells whether standard output is a terminal.
    pub fn job(
        &self,
        terminal: bool,
        select: Option<std::rc::Rc<dyn dcg_calls::selected::TreeSelect>>,
    ) -> DecodeJob {
        DecodeJob {
            select,
            input: self.input.clone(),
            output: self.output.clone(),
            opts: Options {
                json: self.json,
                errors_only: self.errors_only,
                color: self.color.decide(terminal && !self.json),
                hide_probe_events: false,
                collapse_empty: false,
                inline_frames: !self.no_inline_frames,
            },
        }
    }
}

/// Report formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatArg {
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
    /// One self-contained HTML page (call trees with every value, flame graph, call
    /// graph, tables) for a browser; write it with -o FILE.
    Html,
}

/// Weight of a folded stack line.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightArg {
    /// Calls whose stack it is: the weights add up to the number of calls.
    Calls,
    /// Self time in ns of those calls (needs durations).
    SelfNs,
}

/// Command-line options of `dcg report`.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArgs {
    /// Signature db for ftrace text input (repeat for module dbs); default: /sys/kernel/dcg,
    /// else the store's db
    /// for the running kernel, else values stay raw.
    #[arg(long = "db", value_name = "FILE")]
    pub db: Vec<PathBuf>,
    /// A saved-calls file (`--output` of decode/trace; `--json` output too) or saved
    /// ftrace function_graph text; `-` or nothing for standard input.
    pub input: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
    /// Rows per table in the text report.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Weight of a folded stack: the number of calls ending there, or their self time.
    #[arg(long, value_enum, default_value = "calls", value_name = "WEIGHT")]
    pub folded_weight: WeightArg,
    /// Only calls of FUNC (`func` or `func [module]`) and what they call; FUNC's calls
    /// become the top-level calls.
    #[arg(long, value_name = "FUNC")]
    pub root: Option<String>,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Only the trees whose top-level call passes EXPR (repeat: all must hold), e.g.
    /// 'ret == -ENOENT', 'name ~ "*.conf"', 'flags & 0x40', 'duration > 1ms'; `FUNC: EXPR`
    /// keeps the trees where some call of FUNC passes it. Names: the parameters, ret,
    /// duration, comm, tid, cpu (saved calls do not know the process id, pid).
    #[arg(long = "filter", value_name = "EXPR")]
    pub filter: Vec<String>,
    /// Only the calls at least D long (`10us`, `1.5ms`, `2s`) and the calls leading to
    /// them.
    #[arg(long, value_name = "D", value_parser = crate::args::duration)]
    pub min_duration: Option<u64>,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
            FormatArg::Dot => Format::Dot,
            FormatArg::Folded => Format::Folded,
            FormatArg::Chrome => Format::Chrome,
            FormatArg::Html => Format::Html,
        }
    }
}

impl ReportArgs {
    /// How to write the report.
    pub fn options(&self) -> ReportOptions {
        ReportOptions {
            format: self.format.into(),
            top: self.top,
            folded_weight: match self.folded_weight {
                WeightArg::Calls => FoldedWeight::Calls,
                WeightArg::SelfNs => FoldedWeight::SelfNs,
            },
        }
    }
}
