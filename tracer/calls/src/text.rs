//! The function_graph text printer: one line per open, close and leaf, in the kernel's
//! layout. Lines of text sources keep their columns byte for byte (only the values are
//! rewritten); calls of other sources get the columns laid out here:
//!
//! ```text
//!  1)               |  outer(x=3) {
//!  1)   2.000 us    |    inner(x=3); /* ret=-EINVAL */
//!  1) + 14.000 us   |  } /* outer ret=-EINVAL from inner */
//! ```
//!
//! A top-level call that returned an error names the call where that error first appeared
//! after its value, `ret=-EINVAL from inner` ([`crate::origin`]), unless it is the call
//! itself.
//!
//! The `comm-tid` column appears once a second task has been seen (the kernel's way), or,
//! for user space, on every line with the thread's whole name ([`TextOptions::threads`]).

use std::fmt::Write as _;
use std::io;

use crate::saved_format::{Context, StackFrame};
use crate::sink::{CallView, Kind, Layout, Note, Sink};

/// Printer options.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// ANSI color for error values.
    pub color: bool,
    /// Width of the CPU column for laid-out lines (digits of the highest CPU number).
    pub cpu_width: usize,
    /// Print probe events joined to calls in place (saved text); off for live tracing.
    pub probe_notes: bool,
    /// The `comm-tid` column on every laid-out line, the name whole (user space).
    pub threads: bool,
}

/// The function_graph text printer.
pub struct TextPrinter {
    opts: TextOptions,
    line: String,
}

impl TextPrinter {
    /// A printer.
    pub fn new(opts: TextOptions) -> TextPrinter {
        TextPrinter {
            opts,
            line: String::with_capacity(256),
        }
    }

    /// The line for a call, or `None` when it is not printed (beyond `--depth`).
    pub fn call_line(&mut self, c: &CallView<'_>) -> Option<&str> {
        if !c.visible {
            return None;
        }
        let mut s = std::mem::take(&mut self.line);
        s.clear();
        match c.layout {
            Some(l) => self.text_line(&mut s, c, l),
            None => self.laid_out(&mut s, c),
        }
        self.line = s;
        Some(&self.line)
    }

    /// The line for a note, or `None` when it is not printed.
    pub fn note_line<'n>(&'n mut self, n: &Note<'n>) -> Option<&'n str> {
        match *n {
            Note::Line { text, .. } => Some(text),
            Note::Probe {
                layout,
                event,
                location,
                fields,
                error,
                ..
            } => {
                if !self.opts.probe_notes {
                    return None;
                }
                let s = &mut self.line;
                s.clear();
                push_head(s, layout);
                s.push_str("/* ");
                s.push_str(event);
                s.push_str(": (");
                s.push_str(location);
                s.push(')');
                for (name, v) in fields.iter() {
                    s.push(' ');
                    s.push_str(name);
                    s.push('=');
                    dcg_render::push_value(s, v, error && self.opts.color);
                }
                s.push_str(" */");
                Some(&self.line)
            }
            Note::Comment { task, depth, text } => {
                let mut s = std::mem::take(&mut self.line);
                s.clear();
                self.comment_columns(&mut s, task, depth);
                s.push_str("/* ");
                s.push_str(text);
                s.push_str(" */");
                self.line = s;
                Some(&self.line)
            }
            Note::Lost { .. } => None,
        }
    }

    /// A top-level call's stack, as comment lines above it: outermost first, so that it
    /// runs into the call (`function+0xoff [module]`; an inlined function with no offset,
    /// marked).
    fn stack_lines(&mut self, c: &CallView<'_>, stack: &[StackFrame], out: &mut Vec<u8>) {
        let mut s = std::mem::take(&mut self.line);
        s.clear();
        self.comment_columns(&mut s, c.task, 0);
        let head = s.len();
        s.push_str("/* stack, outermost first: */\n");
        out.extend_from_slice(s.as_bytes());
        for f in stack.iter().rev() {
            s.truncate(head);
            s.push_str("/*   ");
            f.push_label(&mut s);
            s.push_str(" */\n");
            out.extend_from_slice(s.as_bytes());
        }
        self.line = s;
    }

    /// The columns of a comment line of a source without text.
    fn comment_columns(&self, s: &mut String, task: crate::sink::Task<'_>, depth: u32) {
        let _ = write!(
            s,
            " {:>w$}) ",
            task.cpu.unwrap_or(0),
            w = self.opts.cpu_width.max(1)
        );
        s.push_str("              |  ");
        for _ in 0..depth {
            s.push_str("  ");
        }
    }

    /// A line of a text source: its columns, the call with the values rewritten.
    fn text_line(&self, s: &mut String, c: &CallView<'_>, l: Layout<'_>) {
        push_head(s, l);
        match c.kind {
            Kind::Open | Kind::Leaf => {
                s.push_str(c.name);
                if let Some(m) = c.module {
                    s.push_str(" [");
                    s.push_str(m);
                    s.push(']');
                }
                s.push('(');
                push_args(s, c, false);
                if c.kind == Kind::Leaf {
                    s.push_str(");");
                    push_inlined(s, c);
                } else {
                    s.push(')');
                    push_inlined(s, c);
                    s.push_str(" {");
                }
                self.comment_tail(s, c);
            }
            Kind::Close => {
                s.push('}');
                if c.named {
                    s.push_str(" /* ");
                    s.push_str(c.func.shown());
                    self.push_ret(s, c);
                    s.push_str(" */");
                }
            }
        }
    }

    /// ` /* <-callsite ret=VALUE */` (or the line's other comment); `kernel` first where
    /// a kernel call begins below a user call.
    fn comment_tail(&self, s: &mut String, c: &CallView<'_>) {
        let outs = c.outs.is_some_and(|o| !o.is_empty());
        if c.callsite.is_none() && c.ret.is_none() && !outs {
            match (c.space_entry, c.comment) {
                (true, _) => s.push_str(" /* kernel */"),
                (false, Some(o)) => {
                    s.push_str(" /* ");
                    s.push_str(o);
                    s.push_str(" */");
                }
                (false, None) => {}
            }
            return;
        }
        s.push_str(" /* ");
        if c.space_entry {
            s.push_str("kernel ");
        }
        if let Some(ra) = c.callsite {
            s.push_str("<-");
            s.push_str(ra);
            if c.ret.is_some() {
                s.push(' ');
            }
        }
        if let Some(v) = c.ret {
            s.push_str("ret=");
            dcg_render::push_value(s, v, c.error && self.opts.color);
            push_origin(s, c);
        }
        push_outs(s, c, c.callsite.is_some() || c.ret.is_some());
        s.push_str(" */");
    }

    fn push_ret(&self, s: &mut String, c: &CallView<'_>) {
        if let Some(v) = c.ret {
            s.push_str(" ret=");
            dcg_render::push_value(s, v, c.error && self.opts.color);
            push_origin(s, c);
        }
        push_outs(s, c, true);
    }

    /// A call of a source without text: columns laid out here.
    fn laid_out(&self, s: &mut String, c: &CallView<'_>) {
        let shows_duration = matches!(c.kind, Kind::Close | Kind::Leaf) && !c.unfinished;
        let depth = if c.entry_missing { 0 } else { c.depth };
        self.columns(
            s,
            c,
            shows_duration.then_some(c.duration_ns).flatten(),
            depth,
        );
        match (c.kind, c.entry_missing, c.unfinished) {
            (Kind::Open, _, _) => {
                call_text(s, c);
                push_inlined(s, c);
                s.push_str(" {");
                self.comment_tail(s, c);
            }
            (Kind::Close, true, _) => {
                s.push_str("} /* ");
                s.push_str(c.func.shown());
                self.push_ret(s, c);
                s.push_str(" (entry not seen) */");
            }
            (Kind::Close, false, false) => {
                s.push_str("} /* ");
                s.push_str(c.func.shown());
                self.push_ret(s, c);
                s.push_str(" */");
                if let Some(ns) = c.irq_ns {
                    // The interrupts' share of the duration.
                    s.push_str(" /* irqs ");
                    push_duration_plain(s, ns);
                    s.push_str(" */");
                }
                push_lost(s, c);
            }
            (Kind::Close, false, true) => {
                s.push_str("} /* ");
                s.push_str(c.func.shown());
                s.push_str(if c.exec {
                    " (exec) */"
                } else {
                    " (no return) */"
                });
                push_lost(s, c);
            }
            (Kind::Leaf, _, false) => {
                call_text(s, c);
                s.push(';');
                push_inlined(s, c);
                self.comment_tail(s, c);
                push_lost(s, c);
            }
            (Kind::Leaf, _, true) => {
                call_text(s, c);
                s.push_str(if c.exec {
                    "; /* exec */"
                } else {
                    "; /* no return */"
                });
                push_lost(s, c);
            }
        }
    }

    /// ` 1) ` [` comm-tid | `] duration `|  `, two spaces a level.
    fn columns(&self, s: &mut String, c: &CallView<'_>, dur: Option<u64>, depth: u32) {
        push_cpu(s, c.task.cpu.unwrap_or(0), self.opts.cpu_width);
        if self.opts.threads {
            // The whole name (at most 15 bytes) and the thread id, in 22 columns.
            let _ = write!(
                s,
                "{:<22} | ",
                format!("{}-{}", c.task.comm.unwrap_or(""), c.task.pid.unwrap_or(0))
            );
        } else if c.tasks > 1 {
            push_proc(s, c.task.comm.unwrap_or(""), c.task.pid.unwrap_or(0));
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
}

impl Sink for TextPrinter {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        let marked = c.irq_entry && c.visible && c.layout.is_none();
        if marked && matches!(c.kind, Kind::Open | Kind::Leaf) {
            self.irq_mark(c, true, out);
        }
        if let Some(stack) = c.stack.filter(|_| c.visible && c.kind != Kind::Close) {
            self.stack_lines(c, stack, out);
        }
        if let Some(l) = self.call_line(c) {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }
        if marked && matches!(c.kind, Kind::Close | Kind::Leaf) {
            self.irq_mark(c, false, out);
        }
        Ok(())
    }

    fn note(&mut self, n: &Note<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        if let Note::Lost {
            cpu,
            count: Some(count),
        } = *n
        {
            // Sources without text report losses here; text sources pass their own
            // notice through as a line.
            let _ = writeln!(
                self.line_buf(),
                "CPU:{} [LOST {count} EVENTS]",
                cpu.unwrap_or(0)
            );
            out.extend_from_slice(self.line.as_bytes());
            return Ok(());
        }
        if let Some(l) = self.note_line(n) {
            out.extend_from_slice(l.as_bytes());
            out.push(b'\n');
        }
        Ok(())
    }

    fn wants_notes(&self) -> bool {
        self.opts.probe_notes
    }
}

impl TextPrinter {
    /// Where an interrupt subtree begins (`==========> irq`) or ends (`<==========`) in
    /// a task's tree, as function_graph marks them.
    fn irq_mark(&mut self, c: &CallView<'_>, begins: bool, out: &mut Vec<u8>) {
        let (width, threads) = (self.opts.cpu_width.max(1), self.opts.threads);
        let s = self.line_buf();
        let _ = write!(s, " {:>width$}) ", c.task.cpu.unwrap_or(0));
        if threads {
            let _ = write!(
                s,
                "{:<22} | ",
                format!("{}-{}", c.task.comm.unwrap_or(""), c.task.pid.unwrap_or(0))
            );
        } else if c.tasks > 1 {
            push_proc(s, c.task.comm.unwrap_or(""), c.task.pid.unwrap_or(0));
            s.push_str(" | ");
        }
        if begins {
            let what = interrupt_name(c.ctx);
            let _ = write!(s, "  ==========> |  {what}");
        } else {
            s.push_str("  <========== |");
        }
        s.push('\n');
        out.extend_from_slice(s.as_bytes());
    }

    fn line_buf(&mut self) -> &mut String {
        self.line.clear();
        &mut self.line
    }
}

/// The word that marks where an interrupt subtree of context `ctx` begins: `irq`,
/// `softirq`, `nmi`.
pub fn interrupt_name(ctx: Option<Context>) -> &'static str {
    ctx.filter(|&c| c != Context::Task)
        .unwrap_or(Context::Irq)
        .name()
}

/// ` /* inlined in FUNC */` for an inline frame.
fn push_inlined(s: &mut String, c: &CallView<'_>) {
    if let Some(i) = c.inlined {
        s.push_str(" /* inlined in ");
        s.push_str(i.container);
        s.push_str(" */");
    }
}

/// ` from FUNC`: where a top-level call's error first appeared, when not in the call itself.
fn push_origin(s: &mut String, c: &CallView<'_>) {
    if let Some(e) = c.origin.and_then(|o| o.errno) {
        s.push_str(" errno=");
        s.push_str(e.trim_start_matches('-'));
    }
    if let Some(o) = c.origin.filter(|o| o.id != c.id) {
        s.push_str(" from ");
        s.push_str(o.func.shown());
    }
}

/// The columns and indentation of a text line (less `shift` spaces).
fn push_head(s: &mut String, l: Layout<'_>) {
    if l.shift == 0 {
        s.push_str(l.head);
        return;
    }
    let columns = l.head.get(..l.indent_start).unwrap_or("");
    let spaces = l.head.len().saturating_sub(l.indent_start);
    s.push_str(columns);
    for _ in 0..spaces.saturating_sub(l.shift) {
        s.push(' ');
    }
}

/// `name=value, ...` (a name only where the source gave one).
fn push_args(s: &mut String, c: &CallView<'_>, always_named: bool) {
    push_arg_list(s, c.args.iter(), always_named);
}

/// An argument list as the printer writes it between the parentheses, `name=value, ...`
/// from `(name, value)` pairs: a name where the source gave one (or every name but the
/// variadic marker's with `always_named`). Reports of saved calls use it too.
pub fn push_arg_list<'a>(
    s: &mut String,
    args: impl IntoIterator<Item = (&'a str, &'a str)>,
    always_named: bool,
) {
    for (i, (n, v)) in args.into_iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        // The variadic marker `...` stands alone.
        if (always_named && v != crate::sink::VARIADIC) || !n.is_empty() {
            s.push_str(n);
            s.push('=');
        }
        s.push_str(v);
    }
}

/// `func(args)`.
fn call_text(s: &mut String, c: &CallView<'_>) {
    s.push_str(c.func.shown());
    s.push('(');
    push_args(s, c, true);
    s.push(')');
}

/// ` 1) `: the CPU column, right-aligned in `width` (at least 1) columns.
fn push_cpu(s: &mut String, cpu: u32, width: usize) {
    s.push(' ');
    for _ in decimal_len(cpu)..width.max(1) {
        s.push(' ');
    }
    dcg_render::push_u64(s, u64::from(cpu));
    s.push_str(") ");
}

/// How many digits `v` has in decimal.
fn decimal_len(v: u32) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// `comm-tid` centered in 14 columns, the comm cut to 7 bytes (as the kernel prints it).
fn push_proc(s: &mut String, comm: &str, tid: u32) {
    let mut end = comm.len().min(7);
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    let spaces = 14usize.saturating_sub(end + 1 + decimal_len(tid));
    for _ in 0..spaces / 2 {
        s.push(' ');
    }
    s.push_str(&comm[..end]);
    s.push('-');
    dcg_render::push_u64(s, u64::from(tid));
    for _ in 0..spaces - spaces / 2 {
        s.push(' ');
    }
}

/// The function_graph duration column: `+ 12.345 us   |  `.
pub fn push_duration(s: &mut String, ns: u64) {
    let start = s.len();
    push_duration_value(s, ns);
    // The mark, a space, the number, ` us`.
    let len = s.len() - start - 5;
    s.push(' ');
    for _ in len..8 {
        s.push(' ');
    }
    s.push_str("|  ");
}

/// The duration as its column shows it, without the padding: `+ 12.345 us` (the
/// kernel's mark of its magnitude, or a space, then at most 7 digits of µs).
pub fn push_duration_value(s: &mut String, ns: u64) {
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
    let before = s.len();
    dcg_render::push_u64(s, ns / 1000);
    let len = s.len() - before;
    if len < 7 {
        // The fraction's first digits, as many as fit in 7 (a line per call: no
        // formatting machinery).
        let frac = ns % 1000;
        let digits = [frac / 100, frac / 10 % 10, frac % 10];
        s.push('.');
        for d in &digits[..(7 - len).min(3)] {
            s.push(char::from(b'0' + *d as u8));
        }
    }
    s.push_str(" us");
}

/// Where calls were lost (the call being recorded then) and at the top of its tree:
/// ` /* N calls lost */`.
fn push_lost(s: &mut String, c: &CallView<'_>) {
    if let Some(n) = c.lost.filter(|_| c.lost_here || c.depth == 0) {
        s.push_str(" /* ");
        push_lost_count(s, n);
        s.push_str(" */");
    }
}

/// `N calls lost` (`1 call lost`).
pub fn push_lost_count(s: &mut String, n: u64) {
    let _ = write!(s, "{n} call{} lost", if n == 1 { "" } else { "s" });
}

/// `12.345 us`: a duration in a comment (the interrupts' share of a call).
pub fn push_duration_plain(s: &mut String, ns: u64) {
    let _ = write!(s, "{}.{:03} us", ns / 1000, ns % 1000);
}

/// `*NAME=VALUE` for each output parameter read at the return, space-separated (a space
/// before the first too with `after`).
fn push_outs(s: &mut String, c: &CallView<'_>, after: bool) {
    for (i, (name, value)) in c.outs.into_iter().flat_map(|o| o.iter()).enumerate() {
        if after || i > 0 {
            s.push(' ');
        }
        s.push('*');
        s.push_str(name);
        s.push('=');
        s.push_str(value);
    }
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
    fn cpu_column() {
        let col = |cpu, width| {
            let mut s = String::new();
            push_cpu(&mut s, cpu, width);
            s
        };
        assert_eq!(col(0, 0), " 0) ");
        assert_eq!(col(3, 2), "  3) ");
        assert_eq!(col(12, 2), " 12) ");
        assert_eq!(col(123, 2), " 123) ");
        assert_eq!(col(u32::MAX, 1), " 4294967295) ");
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
