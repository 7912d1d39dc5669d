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

mod event;
mod scan;
#[cfg(test)]
mod tests;

pub use event::{parse_event_line, EventLine, Fields, ProbeEvent};
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

fn header_marker(t: &str) -> Marker<'_> {
    if let Some(rest) = t.strip_prefix("##### CPU ") {
        let digits = &rest[..scan_digits(rest.as_bytes(), 0)];
        if let (Ok(cpu), true) = (digits.parse(), rest.contains("buffer started")) {
            return Marker::BufferStarted { cpu };
        }
    }
    if let Some(name) = t.strip_prefix("# tracer: ") {
        return Marker::Tracer(name.trim());
    }
    Marker::Header(t)
}

/// `CPU:%d [LOST %lu EVENTS]` or `CPU:%d [LOST EVENTS]`.
fn lost_events(t: &str) -> Option<Marker<'_>> {
    let rest = t.get(4..)?;
    let n = scan_digits(rest.as_bytes(), 0);
    let cpu = sub(rest, 0, n).parse().ok()?;
    let rest = rest.get(n..)?.trim_start().strip_prefix("[LOST ")?;
    if rest.starts_with("EVENTS]") {
        return Some(Marker::LostEvents { cpu, count: None });
    }
    let m = scan_digits(rest.as_bytes(), 0);
    let count = sub(rest, 0, m).parse().ok()?;
    rest.get(m..)?.strip_prefix(" EVENTS]")?;
    Some(Marker::LostEvents {
        cpu,
        count: Some(count),
    })
}

/// Parses the optional columns and the indentation.
fn parse_prefix(line: &str) -> Prefix<'_> {
    let b = line.as_bytes();
    let n = b.len();
    let mut p = Prefix::default();
    let mut i = 0; // just past the last column delimiter
    let mut base = 0; // where the indentation starts

    // Absolute time: "%5lu.%06lu |  "
    let mut j = skip_sp(b, 0);
    let mut k = scan_digits(b, j);
    if k > j && at(b, k) == b'.' {
        let k2 = scan_digits(b, k + 1);
        if k2 > k + 1 && at(b, k2) == b' ' && at(b, k2 + 1) == b'|' {
            p.abstime = Some(sub(line, j, k2));
            i = k2 + 2;
            base = eat_sp(b, i, 2);
            j = skip_sp(b, i);
            k = scan_digits(b, j);
        }
    }

    // CPU: " %*d) " (`j..k`: the digits after the spaces at `i`)
    if k > j && k - j <= 6 && at(b, k) == b')' && (k + 1 == n || at(b, k + 1) == b' ') {
        p.cpu = Some(
            b[j..k]
                .iter()
                .fold(0u32, |v, &c| v * 10 + u32::from(c - b'0')),
        );
        i = k + 1;
        base = eat_sp(b, i, 1);
    }

    // Proc: "comm-pid" centred in 14 columns, then " | "
    let mut bar = find_within(b, i, b'|', 48);
    // End of the segment before `bar` without trailing spaces (`i` if all spaces).
    let mut seg_end = bar.map(|br| rskip_sp(b, i, br));
    if let (Some(br), Some(e)) = (bar, seg_end) {
        // Fast reject: the segment must end in "<digit> " (pid then padding).
        if e < br && e > i && b[e - 1].is_ascii_digit() && (br + 1 == n || at(b, br + 1) == b' ') {
            let t = sub(line, i, br).trim_ascii();
            if !t.starts_with("/*") {
                if let Some((comm, pid)) = split_comm_pid(t) {
                    p.comm = Some(comm);
                    p.pid = Some(pid);
                    i = br + 1;
                    base = eat_sp(b, i, 1);
                    bar = find_within(b, i, b'|', 40);
                    seg_end = None;
                }
            }
        }
    }

    // Latency flags (latency-format): " d..1. | ", one space after the previous column.
    let j = eat_sp(b, i, 2);
    let mut k = j;
    while k < n && k - j <= 8 && is_lat_byte(b[k]) {
        k += 1;
    }
    if k > j
        && k - j <= 8
        && at(b, k) == b' '
        && at(b, k + 1) == b'|'
        && (k + 2 == n || at(b, k + 2) == b' ')
    {
        p.lat = Some(sub(line, j, k));
        i = k + 2;
        base = eat_sp(b, i, 1);
        bar = find_within(b, i, b'|', 40);
        seg_end = None;
    }

    // Duration: "X 1.234 us    |  " or "              |  "
    if let Some(br) = bar.filter(|&br| br >= i && br - i <= 40) {
        let e = seg_end.unwrap_or_else(|| rskip_sp(b, i, br));
        let col = if br > i && e == i {
            true
        } else if let Some((mark, ns)) = parse_duration(b.get(i..br).unwrap_or(&[])) {
            p.overhead = mark;
            p.duration_ns = Some(ns);
            true
        } else {
            false
        };
        if col {
            p.duration_column = true;
            i = br + 1;
            base = eat_sp(b, i, 2);
        }
    }

    let body = skip_sp(b, base);
    p.indent_start = base;
    p.prefix_end = body;
    p.depth = ((body - base) / 2) as u32;
    p
}

/// Parses the duration column text (between the previous column and `|`).
fn parse_duration(b: &[u8]) -> Option<(Option<char>, u64)> {
    // Short runs of spaces: plain loops beat `skip_sp` here.
    let n = b.len();
    let mut i = 0;
    while i < n && b[i] == b' ' {
        i += 1;
    }
    let mut mark = None;
    if let (m @ (b'+' | b'!' | b'#' | b'*' | b'@' | b'$'), b' ') = (at(b, i), at(b, i + 1)) {
        mark = Some(m as char);
        i += 2;
        while i < n && b[i] == b' ' {
            i += 1;
        }
    }
    let num_start = i;
    let mut v: u64 = 0;
    while i < n && b[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(u64::from(b[i] - b'0'))?;
        i += 1;
    }
    if i == num_start {
        return None;
    }
    let frac_start = if at(b, i) == b'.' { i + 1 } else { i };
    let mut frac_end = frac_start;
    while frac_end < n && b[frac_end].is_ascii_digit() {
        frac_end += 1;
    }
    if at(b, frac_end) != b' ' {
        return None;
    }
    let mut u = frac_end + 1;
    while u < n && b[u] == b' ' {
        u += 1;
    }
    let mut ue = u;
    while ue < n && b[ue] != b' ' {
        ue += 1;
    }
    let mult: u64 = match (ue - u, at(b, u), at(b, u + 1)) {
        (2, b'u', b's') => 1_000,
        (2, b'm', b's') => 1_000_000,
        (1, b's', _) => 1_000_000_000,
        (2, b'n', b's') => 1,
        _ => return None,
    };
    let mut t = ue;
    while t < n && b[t] == b' ' {
        t += 1;
    }
    if t != n {
        return None;
    }
    let mut ns = v.checked_mul(mult)?;
    let mut scale = mult;
    for &c in b.get(frac_start..frac_end)? {
        scale /= 10;
        if scale == 0 {
            break;
        }
        ns = ns.checked_add(u64::from(c - b'0') * scale)?;
    }
    Some((mark, ns))
}

/// Exact `digits[.digits]` times `mult` (units per 1), truncating excess fraction digits.
fn parse_fixed_point(s: &str, mult: u64) -> Option<u64> {
    let (int, frac) = match s.split_once('.') {
        Some((a, f)) => (a, f),
        None => (s, ""),
    };
    if int.is_empty()
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let mut v: u64 = int.parse::<u64>().ok()?.checked_mul(mult)?;
    let mut scale = mult;
    for c in frac.bytes() {
        scale /= 10;
        if scale == 0 {
            break;
        }
        v = v.checked_add(u64::from(c - b'0') * scale)?;
    }
    Some(v)
}

fn parse_comment<'a>(prefix: Prefix<'a>, body: &'a str) -> Comment<'a> {
    let inner = body.get(2..).unwrap_or("");
    let trimmed = inner.trim_ascii_end();
    let (text, closed) = match trimmed.strip_suffix("*/") {
        Some(t) => (t, true),
        None => (trimmed, false),
    };
    let text = text.trim_ascii();
    let (event, probe) = match split_event(text) {
        Some((name, rest)) => (Some(name), event::parse_probe(name, rest)),
        None => (None, None),
    };
    Comment {
        prefix,
        text,
        event,
        probe,
        closed,
    }
}

/// Splits `name: rest` where name is an event-name-like identifier.
fn split_event(text: &str) -> Option<(&str, &str)> {
    let b = text.as_bytes();
    let mut k = 0;
    while k < b.len() && is_ident_byte(b[k]) {
        k += 1;
    }
    if k == 0 || at(b, k) != b':' || !(k + 1 == b.len() || at(b, k + 1) == b' ') {
        return None;
    }
    Some((
        sub(text, 0, k),
        text.get(k + 1..).unwrap_or("").trim_ascii_start(),
    ))
}

fn parse_exit<'a>(prefix: Prefix<'a>, body: &'a str) -> Option<Exit<'a>> {
    let rest = body.get(1..)?;
    let mut e = Exit {
        prefix,
        func: None,
        module: None,
        ret: None,
    };
    if skip_sp(rest.as_bytes(), 0) == rest.len() {
        return Some(e);
    }
    let inner = comment_inner(rest)?;
    let mut toks = Toks { s: inner, i: 0 };
    // Where the value tokens start: after the name and module, if any.
    let mut from = 0;
    if let Some(f) = toks.next() {
        if !f.starts_with("ret=") && f != "=" {
            e.func = Some(f);
            from = toks.i;
            if let Some(m) = toks
                .next()
                .and_then(|t| t.strip_prefix('['))
                .and_then(|t| t.strip_suffix(']'))
            {
                e.module = Some(m);
                from = toks.i;
            }
        }
    }
    toks.i = from;
    let (_, ret) = comment_tokens(toks);
    e.ret = ret;
    Some(e)
}

/// Reads `<-retaddr`, `ret=X` and `= X` tokens.
fn comment_tokens(mut toks: Toks<'_>) -> (Option<&str>, Option<RetInfo<'_>>) {
    let mut retaddr = None;
    let mut ret = None;
    while let Some(t) = toks.next() {
        if let Some(a) = t.strip_prefix("<-") {
            retaddr = Some(a);
        } else if let Some(v) = t.strip_prefix("ret=") {
            ret = Some(ret_info(v, RetStyle::RetEq));
        } else if t == "=" {
            if let Some(v) = toks.next() {
                ret = Some(ret_info(v, RetStyle::Equals));
            }
        }
    }
    (retaddr, ret)
}

fn ret_info(raw: &str, style: RetStyle) -> RetInfo<'_> {
    let value = match raw {
        "true" => Some(1),
        "false" => Some(0),
        _ => parse_number(raw),
    };
    RetInfo { raw, value, style }
}

/// Parses a number as ftrace prints it: `0x` hex, decimal, or negative decimal (two's
/// complement). A leading `?` (unknown BTF type) is skipped, and text after the number
/// is allowed if it starts with a non-alphanumeric byte (`3 [ENUM]`, `0x1(trunc)`).
pub fn parse_number(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let mut i = usize::from(at(b, 0) == b'?');
    let neg = at(b, i) == b'-';
    i += usize::from(neg);
    let mut v: u64 = 0;
    let start;
    if at(b, i) == b'0' && (at(b, i + 1) | 0x20) == b'x' {
        i += 2;
        start = i;
        // Whole words of eight digits at once (pointers have 16), the rest bytewise.
        while let Some(d) = word(b, i).and_then(hex_word) {
            if v >> 32 != 0 {
                return None;
            }
            v = (v << 32) | u64::from(d);
            i += 8;
        }
        while let Some(&c) = b.get(i) {
            let d = HEX_VAL[usize::from(c)];
            if d > 15 {
                break;
            }
            if v >> 60 != 0 {
                return None;
            }
            v = (v << 4) | u64::from(d);
            i += 1;
        }
    } else {
        start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(u64::from(b[i] - b'0'))?;
            i += 1;
        }
    }
    if i == start
        || b.get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        return None;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

fn parse_call<'a>(prefix: Prefix<'a>, body: &'a str) -> Option<(Call<'a>, bool)> {
    let b = body.as_bytes();
    let n = b.len();
    let first = *b.first()?;
    if !(first.is_ascii_alphanumeric() || first == b'_' || first == b'.' || first == b'$') {
        return None;
    }
    let mut k = 0;
    while k < n && is_sym_byte(b[k]) {
        k += 1;
    }
    let func = sub(body, 0, k);
    let mut module = None;
    if at(b, k) == b' ' && at(b, k + 1) == b'[' {
        let close = k + 2 + b.get(k + 2..)?.iter().position(|&c| c == b']')?;
        module = Some(sub(body, k + 2, close));
        k = close + 1;
    }
    if at(b, k) != b'(' {
        return None;
    }
    // Matching ')'.
    let open = k;
    let close = if at(b, k + 1) == b')' {
        k + 1
    } else {
        let mut depth = 0i32;
        let mut close = None;
        loop {
            k = find_special(b, k, false);
            let Some(&c) = b.get(k) else { break };
            if matches!(c, b'(' | b'[' | b'{') {
                depth += 1;
            } else {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            k += 1;
        }
        close?
    };
    let args = sub(body, open + 1, close);
    let (leaf, end) = match (at(b, close + 1), at(b, close + 2)) {
        (b';', _) => (true, close + 2),
        (b' ', b'{') => (false, close + 3),
        _ => return None,
    };
    let tail = body.get(end..)?;
    let mut comment = None;
    let (mut retaddr, mut ret) = (None, None);
    if skip_sp(tail.as_bytes(), 0) != tail.len() {
        let inner = comment_inner(tail)?.trim_ascii();
        comment = Some(inner);
        (retaddr, ret) = comment_tokens(Toks { s: inner, i: 0 });
    }
    let call_end = prefix.prefix_end + end;
    Some((
        Call {
            prefix,
            func,
            module,
            args: if args.is_empty() { None } else { Some(args) },
            retaddr,
            ret,
            comment,
            call_end,
        },
        leaf,
    ))
}

/// ` 1)    cat-102     =>    cat-103    ` (the cpu column is already consumed).
fn context_switch<'a>(cpu: Option<u32>, body: &'a str) -> Option<Marker<'a>> {
    let (from, to) = body.split_once(" => ")?;
    let (fc, fp) = split_comm_pid(from.trim_ascii())?;
    let (tc, tp) = split_comm_pid(to.trim_ascii())?;
    Some(Marker::ContextSwitch {
        cpu,
        from: Task { comm: fc, pid: fp },
        to: Task { comm: tc, pid: tp },
    })
}

/// Splits `comm-pid` at the last `-`; comm must be non-empty, pid all digits.
pub(crate) fn split_comm_pid(t: &str) -> Option<(&str, u32)> {
    let b = t.as_bytes();
    let mut k = b.len();
    let mut pid: u32 = 0;
    let mut mul: u32 = 1;
    while k > 0 && b[k - 1].is_ascii_digit() {
        k -= 1;
        pid = pid.checked_add(mul.checked_mul(u32::from(b[k] - b'0'))?)?;
        mul = mul.checked_mul(10).unwrap_or(0);
    }
    if k == b.len() || k < 2 || b[k - 1] != b'-' || b.len() - k > 10 {
        return None;
    }
    Some((sub(t, 0, k - 1), pid))
}

/// Space-separated tokens of `s` (empty tokens skipped).
struct Toks<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Iterator for Toks<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let b = self.s.as_bytes();
        let a = skip_sp(b, self.i);
        if a >= b.len() {
            self.i = b.len();
            return None;
        }
        let k = find_byte(b, a, b.len(), b' ').unwrap_or(b.len());
        self.i = k;
        Some(sub(self.s, a, k))
    }
}

/// The text inside a `/* ... */` comment that makes up all of `s` (spaces around allowed).
#[inline]
fn comment_inner(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let n = b.len();
    // As printed: " /* ... */".
    let (a, e) = if n >= 5 && b[0] == b' ' && b[1] == b'/' && b[n - 1] != b' ' {
        (1, n)
    } else {
        let a = skip_sp(b, 0);
        (a, rskip_sp(b, a, n))
    };
    if e < a + 4 || b[a] != b'/' || b[a + 1] != b'*' || b[e - 2] != b'*' || b[e - 1] != b'/' {
        return None;
    }
    Some(sub(s, a + 2, e - 2))
}
