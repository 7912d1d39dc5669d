//! Byte scanning for the trace line parsers: bounds-checked indexing and slicing, skipping
//! spaces and digits, finding a byte or bracket (eight bytes at a time where runs are long),
//! hex digit values, and the byte classes of identifiers, symbols and latency flags. Every
//! access is checked, so no input can make these panic.

// ---- byte helpers (positions are always at ASCII bytes, so slicing is safe; `sub`
// still uses `get` so that no input can make it panic) ----

#[inline]
pub(crate) fn sub(s: &str, a: usize, b: usize) -> &str {
    s.get(a..b).unwrap_or("")
}

/// Strips trailing `\n` / `\r`.
#[inline]
pub(crate) fn strip_eol(s: &str) -> &str {
    let b = s.as_bytes();
    let mut e = b.len();
    while e > 0 && (b[e - 1] == b'\n' || b[e - 1] == b'\r') {
        e -= 1;
    }
    sub(s, 0, e)
}

/// The end of `b[a..e]` with trailing spaces removed (never below `a`).
#[inline]
pub(super) fn rskip_sp(b: &[u8], a: usize, mut e: usize) -> usize {
    e = e.min(b.len());
    while e >= a.saturating_add(8) {
        let Some(w) = word(b, e - 8) else { break };
        let x = w ^ SPACES;
        if x != 0 {
            // The last non-space byte is the highest nonzero byte of `x`.
            return e - (x.leading_zeros() / 8) as usize;
        }
        e -= 8;
    }
    while e > a && b[e - 1] == b' ' {
        e -= 1;
    }
    e
}

#[inline]
pub(crate) fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

#[inline]
pub(crate) fn skip_sp(b: &[u8], mut i: usize) -> usize {
    // Indentation is long: 8 bytes at a time.
    while let Some(w) = word(b, i) {
        let x = w ^ SPACES;
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    i
}

/// Advances over at most `max` spaces.
#[inline]
pub(super) fn eat_sp(b: &[u8], i: usize, max: usize) -> usize {
    let mut k = i;
    while k < i + max && at(b, k) == b' ' {
        k += 1;
    }
    k
}

#[inline]
pub(crate) fn scan_digits(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

#[inline]
pub(super) fn find_within(b: &[u8], i: usize, needle: u8, window: usize) -> Option<usize> {
    let end = b.len().min(i.saturating_add(window));
    find_byte(b, i, end, needle)
}

/// Value of a hex digit, 255 for other bytes.
pub(super) static HEX_VAL: [u8; 256] = {
    let mut t = [255u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => 255,
        };
        c += 1;
    }
    t
};

// ---- eight bytes at a time (SWAR): a word's first byte is its lowest ----

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;
const SPACES: u64 = 0x2020_2020_2020_2020;

/// The 8 bytes at `i` as a little-endian word, if there are 8.
#[inline]
pub(super) fn word(b: &[u8], i: usize) -> Option<u64> {
    let w: [u8; 8] = b.get(i..i.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// High bit set in the bytes of `v` that are zero. Only the lowest set bit is exact
/// (a borrow can mark bytes above a zero byte), so use it through `trailing_zeros`.
#[inline]
fn zero_bytes(v: u64) -> u64 {
    v.wrapping_sub(LO) & !v & HI
}

/// High bit set in the bytes `c` of `w` with `m < c < n` (exact for every byte; `n` at
/// most 128).
#[inline]
fn bytes_between(w: u64, m: u8, n: u8) -> u64 {
    let low7 = w & (LO * 0x7f);
    (LO * (127 + u64::from(n)) - low7) & !w & (low7 + LO * (127 - u64::from(m))) & HI
}

/// The value of eight hex digits (the first is the most significant), if all are.
#[inline]
pub(super) fn hex_word(w: u64) -> Option<u32> {
    let digits = bytes_between(w, b'0' - 1, b'9' + 1);
    let letters = bytes_between(w | (LO * 0x20), b'a' - 1, b'f' + 1);
    if digits | letters != HI {
        return None;
    }
    // One digit value per byte, then pairs, quads and all eight packed into nibbles.
    let x = (w & (LO * 0x0f)) + (letters >> 7) * 9;
    let x = ((x & 0x0f00_0f00_0f00_0f00) >> 8) | ((x & 0x000f_000f_000f_000f) << 4);
    let x = ((x & 0x00ff_0000_00ff_0000) >> 16) | ((x & 0x0000_00ff_0000_00ff) << 8);
    let x = ((x & 0x0000_ffff_0000_0000) >> 32) | ((x & 0x0000_0000_0000_ffff) << 16);
    Some(x as u32)
}

/// First `needle` in `b[i..end]` (`end <= b.len()`).
#[inline]
pub(super) fn find_byte(b: &[u8], mut i: usize, end: usize, needle: u8) -> Option<usize> {
    let pat = LO * u64::from(needle);
    while i.checked_add(8).is_some_and(|e| e <= end) {
        let Some(w) = word(b, i) else { break };
        let m = zero_bytes(w ^ pat);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    while i < end {
        if at(b, i) == needle {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Index of the first bracket `()[]{}` (and `,` with `comma`) at or after `i`; `b.len()`
/// when there is none.
#[inline]
pub(super) fn find_special(b: &[u8], mut i: usize, comma: bool) -> usize {
    while let Some(w) = word(b, i) {
        // `(` `)` are 0x28 0x29; `[` `{` are 0x5b 0x7b and `]` `}` 0x5d 0x7d.
        let paren = zero_bytes((w & !LO) ^ (LO * 0x28));
        let lw = w | (LO * 0x20);
        let open = zero_bytes(lw ^ (LO * 0x7b));
        let close = zero_bytes(lw ^ (LO * 0x7d));
        let com = if comma {
            zero_bytes(w ^ (LO * u64::from(b',')))
        } else {
            0
        };
        let m = paren | open | close | com;
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < b.len()
        && !matches!(b[i], b'(' | b')' | b'[' | b']' | b'{' | b'}')
        && !(comma && b[i] == b',')
    {
        i += 1;
    }
    i.min(b.len())
}

#[inline]
pub(crate) fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

#[inline]
pub(super) fn is_sym_byte(c: u8) -> bool {
    SYM_BYTE[usize::from(c)]
}

/// `[A-Za-z0-9_.$]`
static SYM_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'$';
        c += 1;
    }
    t
};

#[inline]
pub(super) fn is_lat_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'.'
}
