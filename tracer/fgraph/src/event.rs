//! Non-graph trace lines (`nop` / `function` tracer) and probe event bodies.

use super::{at, is_ident_byte, scan_digits, skip_sp, split_comm_pid, sub};

/// One line of the default (non-graph) trace format:
/// `            t-8239    [000] DBZff   676.255548: check: (0x555c4e9c2190) x=1 s="hi"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventLine<'a> {
    /// Task command name (right-aligned by the kernel; may contain spaces and `-`).
    pub comm: &'a str,
    /// Task pid (after the last `-`).
    pub pid: u32,
    /// `record-tgid` column (`(   123)`); `None` when absent or `(-------)`.
    pub tgid: Option<u32>,
    /// CPU (`[000]`).
    pub cpu: u32,
    /// `irq-info` flags (`.....`, `DBZff`), raw.
    pub flags: Option<&'a str>,
    /// Timestamp, raw (`676.255548`; an integer with counter clocks).
    pub timestamp: &'a str,
    /// Event name before `: ` (`check`, `tracing_mark_write`); `None` for function
    /// tracer lines (`func <-parent`).
    pub event: Option<&'a str>,
    /// Text after the event name (or after the timestamp when there is no event name).
    pub body: &'a str,
    /// Byte offset where the event text (name or body) starts.
    pub text_start: usize,
}

impl<'a> EventLine<'a> {
    /// The timestamp in nanoseconds, exact from the printed digits (seconds with fraction).
    pub fn timestamp_ns(&self) -> Option<u64> {
        super::parse_fixed_point(self.timestamp, 1_000_000_000)
    }

    /// The body parsed as a kprobe/uprobe/fprobe event, if it has that shape.
    pub fn probe(&self) -> Option<ProbeEvent<'a>> {
        parse_probe(self.event?, self.body)
    }
}

/// A probe event body: `name: (func+0x0/0x20) a=1 b=2` (entry) or
/// `name: (caller+0x5c/0xe0 <- callee) arg1=0x...` (return).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeEvent<'a> {
    /// Event name.
    pub event: &'a str,
    /// Raw text inside the parentheses.
    pub location: &'a str,
    /// The probed function without `+off/size` (for a return probe, the `<- X` part);
    /// a hex address for uprobes.
    pub func: Option<&'a str>,
    /// Whether this is a return probe (`caller <- func`).
    pub is_return: bool,
    /// For a return probe, where it returned to (`do_sys_openat2+0x4f/0xd0`; under the
    /// graph tracer a kretprobe reports `return_to_handler+0x0/0x50`).
    pub caller: Option<&'a str>,
    /// Raw text of the fields after the parentheses.
    pub fields_raw: &'a str,
}

impl<'a> ProbeEvent<'a> {
    /// Iterator over the `name=value` fields.
    pub fn fields(&self) -> Fields<'a> {
        Fields {
            rest: self.fields_raw,
        }
    }
}

/// Parses a probe event body (the text after `name: `).
pub(crate) fn parse_probe<'a>(event: &'a str, body: &'a str) -> Option<ProbeEvent<'a>> {
    let inner_start = body.strip_prefix('(')?;
    let close = inner_start.find(')')?;
    let location = sub(inner_start, 0, close);
    let fields_raw = inner_start.get(close + 1..)?.trim_ascii();
    let (func, caller, is_return) = match location.split_once(" <- ") {
        Some((caller, func)) => (func, Some(caller), true),
        None => (location, None, false),
    };
    let func = func.split('+').next().unwrap_or("").trim_ascii();
    Some(ProbeEvent {
        event,
        location,
        func: if func.is_empty() { None } else { Some(func) },
        is_return,
        caller,
        fields_raw,
    })
}

/// Iterator over space-separated `name=value` probe fields, yielding `(name, value)`.
///
/// Values are raw; a value starting with `"` runs to the closing quote that ends the
/// field (strings are printed unescaped, so this is a best guess), one starting with `{`
/// to the matching `}`. Text without `=` is yielded with an empty name.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest.trim_ascii_start();
        let b = s.as_bytes();
        if b.is_empty() {
            self.rest = "";
            return None;
        }
        let mut k = 0;
        while k < b.len() && is_ident_byte(b[k]) {
            k += 1;
        }
        if at(b, k) != b'=' {
            // Not a field: yield the word.
            let end = s.find(' ').unwrap_or(s.len());
            self.rest = s.get(end..).unwrap_or("");
            return Some(("", sub(s, 0, end)));
        }
        let name = sub(s, 0, k);
        let v = k + 1;
        let end = match at(b, v) {
            b'"' => quoted_end(b, v),
            b'{' => {
                let mut depth = 0i32;
                let mut e = b.len();
                for (i, &c) in b.iter().enumerate().skip(v) {
                    match c {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                e = i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                e
            }
            _ => b
                .get(v..)
                .and_then(|r| r.iter().position(|&c| c == b' '))
                .map_or(b.len(), |p| p + v),
        };
        self.rest = s.get(end..).unwrap_or("");
        Some((name, sub(s, v, end)))
    }
}

/// End (exclusive) of a quoted value starting at `v`: the first `"` followed by the end
/// or by ` name=`; else the first `"` followed by a space or the end; else the line end.
fn quoted_end(b: &[u8], v: usize) -> usize {
    let mut fallback = None;
    let mut i = v + 1;
    while i < b.len() {
        if b[i] == b'"' {
            if i + 1 == b.len() {
                return i + 1;
            }
            if b[i + 1] == b' ' {
                fallback.get_or_insert(i + 1);
                let mut k = i + 2;
                while k < b.len() && is_ident_byte(b[k]) {
                    k += 1;
                }
                if k > i + 2 && at(b, k) == b'=' {
                    return i + 1;
                }
            }
        }
        i += 1;
    }
    fallback.unwrap_or(b.len())
}

/// Parses a line of the non-graph trace format (task-pid, cpu, flags, timestamp, event,
/// body). Returns `None` for headers and anything else. Never panics.
pub fn parse_event_line(line: &str) -> Option<EventLine<'_>> {
    let line = line.trim_end_matches(['\n', '\r']);
    let b = line.as_bytes();
    if at(b, skip_sp(b, 0)) == b'#' {
        return None;
    }
    // Find " [ddd] " whose left side is "comm-pid[ (tgid)]".
    let mut from = 0;
    while let Some(off) = b.get(from..)?.iter().position(|&c| c == b'[') {
        let p = from + off;
        from = p + 1;
        if p == 0 || b[p - 1] != b' ' {
            continue;
        }
        let q = scan_digits(b, p + 1);
        if q == p + 1 || q - p - 1 > 6 || at(b, q) != b']' || at(b, q + 1) != b' ' {
            continue;
        }
        let mut head = sub(line, 0, p - 1).trim_ascii_end();
        let mut tgid = None;
        if let Some(h) = head.strip_suffix(')') {
            if let Some(lp) = h.rfind('(') {
                let t = sub(h, lp + 1, h.len()).trim_ascii();
                if t.bytes().all(|c| c == b'-') {
                    tgid = None;
                } else if let Ok(v) = t.parse() {
                    tgid = Some(v);
                } else {
                    continue;
                }
                head = sub(h, 0, lp).trim_ascii_end();
            }
        }
        let Some((comm, pid)) = split_comm_pid(head.trim_ascii_start()) else {
            continue;
        };
        let Ok(cpu) = sub(line, p + 1, q).parse() else {
            continue;
        };
        // Optional flags, then the timestamp ending in ':'.
        let j = skip_sp(b, q + 2);
        let k = j + b
            .get(j..)?
            .iter()
            .position(|&c| c == b' ')
            .unwrap_or(b.len() - j);
        let (flags, ts_start, ts_end) = if is_timestamp(sub(line, j, k)) {
            (None, j, k)
        } else {
            let j2 = skip_sp(b, k);
            let k2 = j2
                + b.get(j2..)?
                    .iter()
                    .position(|&c| c == b' ')
                    .unwrap_or(b.len() - j2);
            if !is_timestamp(sub(line, j2, k2)) {
                continue;
            }
            (Some(sub(line, j, k)), j2, k2)
        };
        let timestamp = sub(line, ts_start, ts_end - 1);
        let text_start = (ts_end + 1).min(b.len());
        let text = sub(line, text_start, b.len());
        let (event, body) = match super::split_event(text) {
            Some((e, body)) => (Some(e), body),
            None => (None, text),
        };
        return Some(EventLine {
            comm,
            pid,
            tgid,
            cpu,
            flags,
            timestamp,
            event,
            body,
            text_start,
        });
    }
    None
}

/// `digits[.digits]:`
fn is_timestamp(t: &str) -> bool {
    let Some(t) = t.strip_suffix(':') else {
        return false;
    };
    let (a, f) = t.split_once('.').unwrap_or((t, "0"));
    !a.is_empty()
        && !f.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && f.bytes().all(|c| c.is_ascii_digit())
}
