//! Parser for the text output of the ftrace `function_graph` tracer (`trace`, `trace_pipe`).
//!
//! [`parse_line`] classifies one line and borrows every field from it; it never allocates
//! and never panics, whatever the input. The layout it understands is the one printed by
//! `kernel/trace/trace_functions_graph.c` (checked against real 7.2 captures):
//!
//! ```text
//! [abstime |  ][ cpu) ][ comm-pid | ][ lat | ][X duration us |  ]<2*depth spaces><call>
//!    12.300766 |   1)    cat-102     | + 11.509 us   |            alloc_from_pcs.constprop.0(); /* ret=0x0 */
//! ```
//!
//! Every column is optional. The indentation is counted from the end of the last column
//! (after `|  ` for the duration and abstime columns, after `) ` / ` | ` for cpu, proc and
//! latency flags), and `depth` is half of it. For calls and closing braces this is the
//! kernel's call depth. Comments (`/* ... */`) are printed one level deeper than the
//! function most recently entered (so at the level of its children), except that nothing
//! is indented when that function is at depth 0: their `depth` is the visual level.
//!
//! The non-graph layout (`nop` / `function` tracer, e.g. uprobe and kprobe events) is
//! handled by [`parse_event_line`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod body;
mod event;
mod prefix;
mod scan;
#[cfg(test)]
mod tests;

pub use body::parse_number;
use body::{
    context_switch, header_marker, lost_events, parse_call, parse_comment, parse_exit,
    split_comm_pid, split_event,
};
pub use event::{parse_event_line, EventLine, Fields, ProbeEvent};
use prefix::{parse_fixed_point, parse_prefix};
pub(crate) use scan::{at, is_ident_byte, scan_digits, skip_sp, strip_eol, sub};
use scan::{
    eat_sp, find_byte, find_special, find_within, hex_word, is_lat_byte, is_sym_byte, rskip_sp,
    word, HEX_VAL,
};

/// One parsed line; borrowed from the input line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// `func(args) {` — entry of a non-leaf call.
    Entry(Call<'a>),
    /// `func(args);` — a leaf call (entry+exit on one line), with optional retval comment.
    Leaf(Call<'a>),
    /// `}` or `} /* func */` or `} /* func ret=-22 */` / `} /* func = -22 */`.
    Exit(Exit<'a>),
    /// `/* ... */` comment inside the graph: event lines such as fprobe/kretprobe exit
    /// events, or `/* cmd: ... */` markers.
    Comment(Comment<'a>),
    /// Context-switch blocks, irq arrows, buffer/lost-event notices, headers, stack traces.
    Marker(Marker<'a>),
    /// Anything else (passes through untouched).
    Other,
}

impl<'a> Line<'a> {
    /// The column prefix of a call, exit or comment line (or of an irq arrow).
    pub fn prefix(&self) -> Option<&Prefix<'a>> {
        match self {
            Line::Entry(c) | Line::Leaf(c) => Some(&c.prefix),
            Line::Exit(e) => Some(&e.prefix),
            Line::Comment(c) => Some(&c.prefix),
            Line::Marker(Marker::IrqEntry(p) | Marker::IrqExit(p)) => Some(p),
            _ => None,
        }
    }
}

/// The optional leading columns of a graph line, and where the indented text starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prefix<'a> {
    /// `funcgraph-abstime` column, raw (`12.300766`); see [`Prefix::abstime_ns`].
    pub abstime: Option<&'a str>,
    /// `funcgraph-cpu` column (`1)`).
    pub cpu: Option<u32>,
    /// `funcgraph-proc` command name (the kernel truncates it to 7 bytes; may contain
    /// spaces and `-`).
    pub comm: Option<&'a str>,
    /// `funcgraph-proc` pid (the digits after the last `-`).
    pub pid: Option<u32>,
    /// Latency flags column (`latency-format` option), raw, e.g. `d..1.`.
    pub lat: Option<&'a str>,
    /// Duration marker (`+ ! # * @ $`) when one is printed.
    pub overhead: Option<char>,
    /// Duration in nanoseconds, exactly as printed (the kernel prints at most 7 digits,
    /// so large values lose their lowest digits).
    pub duration_ns: Option<u64>,
    /// Whether the duration column is present (filled with spaces on entry lines).
    pub duration_column: bool,
    /// Indentation level: spaces between `indent_start` and `prefix_end`, divided by 2.
    pub depth: u32,
    /// Byte offset where the indentation starts (end of the columns).
    pub indent_start: usize,
    /// Byte offset where the call / `}` / `/*` text starts: `&line[..prefix_end]` is
    /// the columns plus indentation.
    pub prefix_end: usize,
}

impl Prefix<'_> {
    /// The abstime column in nanoseconds (exact, from the printed digits).
    pub fn abstime_ns(&self) -> Option<u64> {
        self.abstime
            .and_then(|t| parse_fixed_point(t, 1_000_000_000))
    }

    /// The abstime column in seconds.
    pub fn abstime_secs(&self) -> Option<f64> {
        self.abstime.and_then(|t| t.parse().ok())
    }
}

/// A call: entry (`func(args) {`) or leaf (`func(args);`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call<'a> {
    /// Columns and indentation.
    pub prefix: Prefix<'a>,
    /// Function name as printed by `%ps`, without module (`do_getname.constprop.0`).
    pub func: &'a str,
    /// Module of a module function (`bm_status_write [binfmt_misc]` gives `binfmt_misc`).
    pub module: Option<&'a str>,
    /// Raw text inside the parentheses (`funcgraph-args`); `None` for `()`.
    pub args: Option<&'a str>,
    /// Return address (`funcgraph-retaddr`) without the `<-`, e.g.
    /// `__kmalloc_noprof+0x28c/0x390`; on entry and leaf lines.
    pub retaddr: Option<&'a str>,
    /// Return value of a leaf (`funcgraph-retval`).
    pub ret: Option<RetInfo<'a>>,
    /// Raw text of the trailing comment, without `/*` and `*/`.
    pub comment: Option<&'a str>,
    /// Byte offset just past the `{` or `;` that ends the call text.
    pub call_end: usize,
}

impl<'a> Call<'a> {
    /// Iterator over the arguments as `(name, value)`; see [`Args`].
    pub fn arg_pairs(&self) -> Args<'a> {
        Args {
            rest: self.args.unwrap_or(""),
        }
    }
}

/// A closing brace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit<'a> {
    /// Columns and indentation.
    pub prefix: Prefix<'a>,
    /// Function name from `} /* func ... */` (funcgraph-tail, funcgraph-retval, or an
    /// exit whose entry was lost).
    pub func: Option<&'a str>,
    /// Module of the function (`} /* bm_status_write [binfmt_misc] ret=-22 */`).
    pub module: Option<&'a str>,
    /// Return value (`funcgraph-retval`).
    pub ret: Option<RetInfo<'a>>,
}

/// A return value as printed by `funcgraph-retval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetInfo<'a> {
    /// The value text (`0xff1100000062b240`, `-22`, `0x0`).
    pub raw: &'a str,
    /// The value as u64: hex as is, negative decimal two's complement (`-22` gives
    /// `0xffff_ffff_ffff_ffea`, also when the kernel sign-extended a 32-bit register).
    /// `None` if the text is not a number (`true`/`false` give 1/0).
    pub value: Option<u64>,
    /// Old `= X` or new `ret=X` syntax.
    pub style: RetStyle,
}

impl RetInfo<'_> {
    /// Whether the kernel printed the value in decimal (only errno values are).
    pub fn is_decimal(&self) -> bool {
        !self.raw.starts_with("0x")
            && self
                .raw
                .bytes()
                .next()
                .is_some_and(|c| c == b'-' || c.is_ascii_digit())
    }
}

/// Syntax of a return value comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetStyle {
    /// 6.5 to 6.11: `func(); /* = 0x0 */`, `} /* func = -22 */`.
    Equals,
    /// Since the funcgraph-retaddr change: `func(); /* ret=0x0 */`, `} /* func ret=-22 */`.
    RetEq,
}

/// A `/* ... */` comment line inside the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comment<'a> {
    /// Columns and indentation (see the module docs for how comments are indented).
    pub prefix: Prefix<'a>,
    /// Text between `/* ` and ` */`, trimmed.
    pub text: &'a str,
    /// Leading `name:` of the text (event name, or `cmd` for `/* cmd: ... */` markers).
    pub event: Option<&'a str>,
    /// Parsed probe event (`name: (location) fields` or `name: (caller <- func) fields`).
    pub probe: Option<ProbeEvent<'a>>,
    /// False when the line has no closing `*/` (a multi-line `trace_printk`).
    pub closed: bool,
}

/// A task in a context-switch line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task<'a> {
    /// Command name (truncated to 7 bytes by the kernel).
    pub comm: &'a str,
    /// Process id.
    pub pid: u32,
}

/// Non-call lines of the graph output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker<'a> {
    /// `# tracer: function_graph`; holds the tracer name.
    Tracer(&'a str),
    /// Any other `#` header line (column headers, `#`).
    Header(&'a str),
    /// ` ------------------------------------------` around a context switch.
    Separator,
    /// ` 1)    cat-102     =>    cat-103    `.
    ContextSwitch {
        /// CPU column of the line.
        cpu: Option<u32>,
        /// Task switched out.
        from: Task<'a>,
        /// Task switched in.
        to: Task<'a>,
    },
    /// `==========>` irq entry arrow.
    IrqEntry(Prefix<'a>),
    /// `<==========` irq exit arrow.
    IrqExit(Prefix<'a>),
    /// `##### CPU 1 buffer started ####`.
    BufferStarted {
        /// The CPU.
        cpu: u32,
    },
    /// `CPU:1 [LOST 123 EVENTS]` (count `None` for `CPU:1 [LOST EVENTS]`).
    LostEvents {
        /// The CPU.
        cpu: u32,
        /// Number of lost events, when known.
        count: Option<u64>,
    },
    /// ` (Overruns: 3)` after an exit (funcgraph-overrun).
    Overruns(u64),
    /// ` <stack trace>` / ` <user stack trace>` header.
    StackTrace,
    /// ` => func+0x12/0x40` stack trace entry; holds the text after `=> `.
    StackEntry(&'a str),
}

/// Iterator over `name=value` items of a `funcgraph-args` list, split at top-level `, `.
///
/// Yields `(name, value)`; `name` is empty for unnamed items (`...` when there are more
/// than 6 arguments, `=?0x2a` for a variadic argument). Values are raw: `0x...`,
/// decimal, `3 [HK_TYPE_KERNEL_NOISE]` (enum), `(STRUCT)[0x6b0158f4:0x2b8520a8]`.
#[derive(Debug, Clone)]
pub struct Args<'a> {
    rest: &'a str,
}

impl<'a> Args<'a> {
    /// The arguments of `text` (what funcgraph-args prints inside the parentheses).
    pub fn new(text: &'a str) -> Args<'a> {
        Args { rest: text }
    }
}

impl<'a> Iterator for Args<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest.trim_ascii_start();
        if s.is_empty() {
            self.rest = "";
            return None;
        }
        let b = s.as_bytes();
        let mut depth = 0i32;
        let mut end = b.len();
        let mut i = 0;
        loop {
            i = find_special(b, i, true);
            let Some(&c) = b.get(i) else { break };
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth <= 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let item = sub(s, 0, end).trim_ascii_end();
        self.rest = s.get(end + 1..).unwrap_or("");
        Some(split_name_value(item))
    }
}

/// Splits `name=value`; a name must look like an identifier (possibly empty).
fn split_name_value(item: &str) -> (&str, &str) {
    // The first `=` ends the name; a name is all identifier bytes, so it is the first
    // non-identifier byte or there is no name.
    let b = item.as_bytes();
    let mut k = 0;
    while k < b.len() && is_ident_byte(b[k]) {
        k += 1;
    }
    if at(b, k) == b'=' {
        return (sub(item, 0, k), item.get(k + 1..).unwrap_or(""));
    }
    ("", item)
}

/// Parses one line of `function_graph` text output. Never panics.
pub fn parse_line(line: &str) -> Line<'_> {
    let line = strip_eol(line);
    let b = line.as_bytes();
    let first = skip_sp(b, 0);
    let Some(&c) = b.get(first) else {
        return Line::Other;
    };
    let t = sub(line, first, b.len());
    match c {
        b'#' => return Line::Marker(header_marker(t)),
        b'-' if t.trim_ascii_end().len() >= 3 && t.trim_ascii_end().bytes().all(|c| c == b'-') => {
            return Line::Marker(Marker::Separator)
        }
        b'C' if t.starts_with("CPU:") => {
            if let Some(m) = lost_events(t) {
                return Line::Marker(m);
            }
        }
        b'(' if t.starts_with("(Overruns: ") => {
            let n = t.get(11..).unwrap_or("").trim_end_matches([' ', ')']);
            if let Ok(n) = n.parse() {
                return Line::Marker(Marker::Overruns(n));
            }
        }
        b'=' if t.starts_with("=> ") => {
            return Line::Marker(Marker::StackEntry(t.get(3..).unwrap_or("").trim_end()));
        }
        b'<' if t.starts_with("<stack trace>") || t.starts_with("<user stack trace>") => {
            return Line::Marker(Marker::StackTrace);
        }
        _ => {}
    }

    let prefix = parse_prefix(line);
    let start = prefix.prefix_end;
    let body = sub(line, start, b.len());
    let bb = body.as_bytes();
    match bb.first() {
        None => Line::Other,
        Some(b'/') if body.starts_with("/*") => Line::Comment(parse_comment(prefix, body)),
        Some(b'}') => parse_exit(prefix, body).map_or(Line::Other, Line::Exit),
        Some(b'=') if body.starts_with("==========>") => Line::Marker(Marker::IrqEntry(prefix)),
        Some(b'<') if body.starts_with("<==========") => Line::Marker(Marker::IrqExit(prefix)),
        Some(_) => {
            if let Some((call, leaf)) = parse_call(prefix, body) {
                if leaf {
                    Line::Leaf(call)
                } else {
                    Line::Entry(call)
                }
            } else if let Some(m) = context_switch(prefix.cpu, body) {
                Line::Marker(m)
            } else {
                Line::Other
            }
        }
    }
}
