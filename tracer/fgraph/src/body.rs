//! The indented text of a function_graph line: calls, `}` exits with their comments,
//! return values, probe-event comments, context switches and other markers.

use super::*;

pub(crate) fn header_marker(t: &str) -> Marker<'_> {
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
pub(crate) fn lost_events(t: &str) -> Option<Marker<'_>> {
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

pub(crate) fn parse_comment<'a>(prefix: Prefix<'a>, body: &'a str) -> Comment<'a> {
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
pub(crate) fn split_event(text: &str) -> Option<(&str, &str)> {
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

pub(crate) fn parse_exit<'a>(prefix: Prefix<'a>, body: &'a str) -> Option<Exit<'a>> {
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
pub(crate) fn comment_tokens(mut toks: Toks<'_>) -> (Option<&str>, Option<RetInfo<'_>>) {
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

pub(crate) fn ret_info(raw: &str, style: RetStyle) -> RetInfo<'_> {
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

pub(crate) fn parse_call<'a>(prefix: Prefix<'a>, body: &'a str) -> Option<(Call<'a>, bool)> {
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
    // `tail`: where a comment can be (after the `;` or `{`, or before the `{` of an
    // inline frame's entry: `f(x=1) /* inlined in g */ {`).
    let (leaf, end, tail) = match (at(b, close + 1), at(b, close + 2)) {
        (b';', _) => (true, close + 2, body.get(close + 2..)?),
        (b' ', b'{') => (false, close + 3, body.get(close + 3..)?),
        (b' ', b'/') => {
            let line = body.trim_ascii_end();
            let before = line.strip_suffix(" {")?;
            (false, line.len(), body.get(close + 1..before.len())?)
        }
        _ => return None,
    };
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
pub(crate) fn context_switch<'a>(cpu: Option<u32>, body: &'a str) -> Option<Marker<'a>> {
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
pub(crate) struct Toks<'a> {
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
pub(crate) fn comment_inner(s: &str) -> Option<&str> {
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
