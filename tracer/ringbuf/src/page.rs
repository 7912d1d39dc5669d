//! Ring-buffer pages as `per_cpu/cpuN/trace_pipe_raw` hands them out: a header (the
//! page's time stamp and how many data bytes it holds, plus flags for events lost before
//! it), then events, each behind a 32-bit header of a 5-bit type-or-length and a 27-bit
//! time delta:
//!
//! - type 1..=28: a record of `type * 4` bytes follows;
//! - type 0: the next word is the record's length (+4), the record follows it;
//! - type 29: padding (a zero delta: the rest of the page);
//! - type 30: a time extend (`word << 27 | delta`), type 31: an absolute time stamp.

use crate::RingError;

/// Commit flag: events were lost before this page.
const MISSED_EVENTS: u64 = 1 << 31;
/// Commit flag: how many is stored after the data.
const MISSED_STORED: u64 = 1 << 30;
/// Type of a padding event.
const PADDING: u32 = 29;
/// Type of a time extend.
const TIME_EXTEND: u32 = 30;
/// Type of an absolute time stamp.
const TIME_STAMP: u32 = 31;

/// One event record with its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Time stamp in ns (the trace clock).
    pub ts: u64,
    /// The record: `common_type`, flags, preempt count, pid, then the event's fields.
    pub data: &'a [u8],
}

/// What one page held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<'a> {
    /// Its records, in time order.
    pub records: Vec<Record<'a>>,
    /// Events lost before this page: `None` none, `Some(Some(n))` n of them, `Some(None)`
    /// an unknown number.
    pub missed: Option<Option<u64>>,
}

/// Read the pages of `bytes` (a whole number of `page_size` pages; a short last page is
/// an error).
pub fn pages(bytes: &[u8], page_size: usize) -> Result<Vec<Page<'_>>, RingError> {
    let mut out = Vec::new();
    for (i, page) in bytes.chunks(page_size).enumerate() {
        let offset = i * page_size;
        if page.len() < page_size {
            return Err(RingError::Page {
                offset,
                what: format!("{} bytes, not a whole page of {page_size}", page.len()),
            });
        }
        out.push(parse_page(page, offset)?);
    }
    Ok(out)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// One page: header, then events until the committed length.
pub fn parse_page(page: &[u8], offset: usize) -> Result<Page<'_>, RingError> {
    let bad = |at: usize, what: &str| RingError::Page {
        offset,
        what: format!("{what} (at byte {at} of the page)"),
    };
    let mut ts = u64_at(page, 0).ok_or_else(|| bad(0, "no header"))?;
    let commit = u64_at(page, 8).ok_or_else(|| bad(8, "no header"))?;
    let len = (commit & (MISSED_STORED - 1)) as usize;
    let data = page.get(16..16 + len).ok_or_else(|| {
        bad(
            8,
            &format!("holds {len} bytes, more than the page ({})", page.len()),
        )
    })?;
    let missed = if commit & MISSED_EVENTS == 0 {
        None
    } else if commit & MISSED_STORED != 0 {
        Some(u64_at(page, 16 + len))
    } else {
        Some(None)
    };
    let mut records = Vec::new();
    let mut at = 0usize;
    while at + 4 <= data.len() {
        let head = u32_at(data, at).expect("4 bytes");
        let kind = head & 0x1f;
        let delta = u64::from(head >> 5);
        match kind {
            PADDING => {
                if delta == 0 {
                    break;
                }
                let n = u32_at(data, at + 4).ok_or_else(|| bad(at, "short padding"))?;
                at += 4 + n as usize;
            }
            TIME_EXTEND => {
                let hi = u32_at(data, at + 4).ok_or_else(|| bad(at, "short time extend"))?;
                // Wrapping: a corrupt page must not panic.
                ts = ts.wrapping_add((u64::from(hi) << 27) | delta);
                at += 8;
            }
            TIME_STAMP => {
                let hi = u32_at(data, at + 4).ok_or_else(|| bad(at, "short time stamp"))?;
                // The absolute stamp's top bits are the current time's.
                let abs = (u64::from(hi) << 27) | delta;
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                at += 8;
            }
            0 => {
                let n = u32_at(data, at + 4).ok_or_else(|| bad(at, "short length"))? as usize;
                let rec = n
                    .checked_sub(4)
                    .and_then(|n| data.get(at + 8..at + 8 + n))
                    .ok_or_else(|| bad(at, "event past the end"))?;
                ts = ts.wrapping_add(delta);
                records.push(Record { ts, data: rec });
                at += 4 + n.max(4);
            }
            n => {
                let n = n as usize * 4;
                let rec = data
                    .get(at + 4..at + 4 + n)
                    .ok_or_else(|| bad(at, "event past the end"))?;
                ts = ts.wrapping_add(delta);
                records.push(Record { ts, data: rec });
                at += 4 + n;
            }
        }
    }
    Ok(Page { records, missed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ts: u64, commit: u64, data: &[u8]) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend(commit.to_le_bytes());
        p.extend(data);
        p.resize(64, 0);
        p
    }

    #[test]
    fn events_deltas_extends_and_padding() {
        let mut d = Vec::new();
        // 8-byte record, delta 3.
        d.extend(((3u32 << 5) | 2).to_le_bytes());
        d.extend([1, 0, 0, 0, 7, 0, 0, 0]);
        // time extend of (1 << 27) + 5.
        d.extend(((5u32 << 5) | TIME_EXTEND).to_le_bytes());
        d.extend(1u32.to_le_bytes());
        // a long record (type 0): 12 bytes, delta 1.
        d.extend((1u32 << 5).to_le_bytes());
        d.extend(16u32.to_le_bytes());
        d.extend([2, 0, 0, 0, 9, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd]);
        let n = d.len() as u64;
        let p = page(1000, n | MISSED_EVENTS, &d);
        let got = parse_page(&p, 0).unwrap();
        assert_eq!(got.records.len(), 2);
        assert_eq!(got.records[0].ts, 1003);
        assert_eq!(got.records[0].data, &[1, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(got.records[1].ts, 1003 + (1 << 27) + 5 + 1);
        assert_eq!(got.records[1].data.len(), 12);
        assert_eq!(got.missed, Some(None));
    }

    #[test]
    fn bad_pages_are_errors_not_panics() {
        assert!(pages(&[0u8; 10], 64).is_err());
        // More committed bytes than the page has.
        assert!(parse_page(&page(0, 1000, &[]), 0).is_err());
        // An event running past the committed data.
        let mut d = Vec::new();
        d.extend(8u32.to_le_bytes());
        assert!(parse_page(&page(0, 4, &d), 0).is_err());
        // Time stamps near the top of the range wrap, never overflow.
        let mut d = Vec::new();
        d.extend(((5u32 << 5) | TIME_EXTEND).to_le_bytes());
        d.extend(u32::MAX.to_le_bytes());
        d.extend(((3u32 << 5) | 2).to_le_bytes());
        d.extend([0u8; 8]);
        let n = d.len() as u64;
        assert_eq!(
            parse_page(&page(u64::MAX - 1, n, &d), 0)
                .unwrap()
                .records
                .len(),
            1
        );
        // Every truncation and every byte of a real-looking page: no panic.
        let p = page(5, 12, &[2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
        for i in 0..p.len() {
            for v in [0u8, 0x1d, 0x1e, 0x1f, 0xff] {
                let mut q = p.clone();
                q[i] = v;
                let _ = parse_page(&q, 0);
            }
            let _ = parse_page(&p[..i], 0);
        }
    }
}
