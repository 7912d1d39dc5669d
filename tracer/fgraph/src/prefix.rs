//! The leading columns of a function_graph line: abstime, cpu, proc, latency flags and
//! duration, and where the indented text starts.

use super::*;

/// Parses the optional columns and the indentation.
pub(crate) fn parse_prefix(line: &str) -> Prefix<'_> {
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
pub(crate) fn parse_duration(b: &[u8]) -> Option<(Option<char>, u64)> {
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
pub(crate) fn parse_fixed_point(s: &str, mult: u64) -> Option<u64> {
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
