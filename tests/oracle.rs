//! Values a traced C program prints for itself (`= f(a=1, b=2)`, `= f ret=3`: the oracle)
//! against the ones dcg shows, call by call: the user-space engines' value tests.

/// Split `a=1, b=(struct x){0x1, 0x2}, s="x, y"` at the commas between arguments.
pub fn split_args(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quoted, mut escaped) =
        (Vec::new(), String::new(), 0i32, false, false);
    for c in s.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '{' | '(' if !quoted => depth += 1,
            '}' | ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Where the `)` closing a call's argument list is in `s` (after its `(`).
pub fn matching_paren(s: &str) -> Option<usize> {
    let (mut depth, mut quoted, mut escaped) = (0i32, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' | '{' if !quoted => depth += 1,
            ')' if !quoted && depth == 0 => return Some(i),
            ')' | '}' if !quoted => depth -= 1,
            _ => {}
        }
    }
    None
}

/// One call's values: (function, [(name, value)]), arguments then `ret`.
pub type CallValues = (String, Vec<(String, String)>);

/// The oracle lines the program printed: `= f(a=1, b=2)` and `= f ret=3`.
pub fn oracle_calls(stdout: &str) -> Vec<CallValues> {
    let mut calls: Vec<CallValues> = Vec::new();
    for l in stdout.lines().filter_map(|l| l.strip_prefix("= ")) {
        let is_ret = l
            .split_once(' ')
            .is_some_and(|(f, r)| !f.contains('(') && r.starts_with("ret="));
        if let (false, Some((f, args))) = (is_ret, l.split_once('(')) {
            let args = args.strip_suffix(')').expect("oracle line ends with )");
            let vals = split_args(args)
                .into_iter()
                .map(|a| match a.split_once('=') {
                    Some((n, v)) => (n.to_string(), v.to_string()),
                    None => (String::new(), a),
                })
                .collect();
            calls.push((f.to_string(), vals));
        } else if let Some((f, ret)) = l.split_once(" ret=") {
            let c = calls
                .iter_mut()
                .rev()
                .find(|(g, _)| g == f)
                .expect("oracle return after its entry");
            c.1.push(("ret".into(), ret.to_string()));
        }
    }
    calls
}

/// The calls dcg printed, in the same form (entries `f(args) {` get the `ret` of their
/// `} /* f ret=V */`).
pub fn dcg_calls(trace: &str) -> Vec<CallValues> {
    let mut calls: Vec<CallValues> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for l in trace.lines().filter(|l| l.starts_with(' ')) {
        let (_, rest) = call_text(l).expect("function_graph line");
        let t = rest.trim();
        if let Some(c) = t.strip_prefix("} /* ") {
            let i = open.pop().expect("exit after entry");
            if let Some((_, ret)) = c.strip_suffix(" */").and_then(|c| c.split_once(" ret=")) {
                calls[i].1.push(("ret".into(), ret.to_string()));
            }
            continue;
        }
        let (f, rest) = t.split_once('(').expect("call line");
        let end = matching_paren(rest).expect("call line");
        let (args, tail) = (&rest[..end], &rest[end + 1..]);
        let mut vals: Vec<(String, String)> = split_args(args)
            .into_iter()
            .map(|a| match a.split_once('=') {
                Some((n, v)) if !a.starts_with('.') => (n.to_string(), v.to_string()),
                _ => (String::new(), a),
            })
            .collect();
        if let Some((_, ret)) = tail.split_once("/* ret=") {
            vals.push(("ret".into(), ret.trim_end_matches(" */").to_string()));
        }
        calls.push((f.to_string(), vals));
        if tail.trim_end().ends_with('{') {
            open.push(calls.len() - 1);
        }
    }
    calls
}

/// A function_graph line split before its call text: the last `|  ` ahead of the call's
/// `(` or `}` (the columns before it: CPU, the thread, the duration).
pub fn call_text(line: &str) -> Option<(&str, &str)> {
    let cut = line.find(['(', '}']).unwrap_or(line.len());
    let at = line[..cut].rfind("|  ")?;
    Some((&line[..at], &line[at + 3..]))
}

/// Values compared: (checked, agreeing, unreadable markers `?…` as `f.name=?loc`).
#[derive(Debug, Default)]
pub struct Agreement {
    /// Values compared.
    pub checked: usize,
    /// Equal to the program's.
    pub agree: usize,
    /// Shown as unreadable (`f.name=?loc`).
    pub unreadable: Vec<String>,
    /// Different from the program's (`f.name: dcg X, program Y`).
    pub wrong: Vec<String>,
}

/// Every value the program printed for itself against dcg's, call by call in order.
pub fn agreement(oracle: &[CallValues], traced: &[CallValues]) -> Agreement {
    let mut a = Agreement::default();
    let mut used = vec![false; traced.len()];
    for (f, want) in oracle {
        let i = (0..traced.len())
            .find(|&i| !used[i] && traced[i].0 == *f)
            .unwrap_or_else(|| panic!("dcg did not show the call of {f}: {traced:#?}"));
        used[i] = true;
        let got = &traced[i].1;
        assert_eq!(got.len(), want.len(), "{f}: {got:?} vs {want:?}");
        for ((wn, wv), (gn, gv)) in want.iter().zip(got) {
            assert_eq!(wn, gn, "{f}: argument names");
            a.checked += 1;
            if gv.starts_with('?') {
                a.unreadable.push(format!("{f}.{wn}={gv}"));
            } else if gv == wv {
                a.agree += 1;
            } else {
                a.wrong.push(format!("{f}.{wn}: dcg {gv}, program {wv}"));
            }
        }
    }
    a
}
