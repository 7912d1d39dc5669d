//! The x87 80-bit extended format (`long double` on x86): its shortest decimal text, and
//! the exact conversion of decimal text back to it.
//!
//! A value is a sign bit, a 15-bit biased exponent `E` and a 64-bit mantissa `M` whose top
//! bit is the integer bit (explicit, unlike `double`'s): `M * 2^(E - 16383 - 63)`, with
//! `E = 0` read as exponent 1 (denormals, integer bit 0). No library prints this format
//! shortest, so both directions are here, on exact big integers: [`shortest`] finds the
//! fewest significant digits that [`parse`] (round to nearest, ties to even, as the FPU
//! and glibc's `strtold` read) turns back into the same bits.
//!
//! Encodings the 387 and later refuse as operands (an exponent with the integer bit clear:
//! unnormals, pseudo-infinities, pseudo-NaNs) read as `nan`, what arithmetic and glibc's
//! `printf` make of them; pseudo-denormals (exponent 0, integer bit set) are the value
//! they stand for, as the FPU reads them.

use num_bigint::BigUint;

/// Bias of the exponent field.
const BIAS: i32 = 16383;
/// The binary exponent of the mantissa's lowest bit at exponent field 1 (denormals too).
const MIN_EXP: i32 = 1 - BIAS - 63;

/// What 80 bits hold, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum X87 {
    /// Not a number (quiet or signalling; also the invalid encodings, see the module doc).
    Nan,
    /// An infinity; `true`: negative.
    Inf(bool),
    /// A zero; `true`: negative.
    Zero(bool),
    /// `(-1)^neg * mant * 2^exp`, `mant` not 0.
    Finite {
        /// Negative.
        neg: bool,
        /// The 64-bit mantissa, integer bit included.
        mant: u64,
        /// The binary exponent of its lowest bit.
        exp: i32,
    },
}

/// Decode the mantissa word and the sign-and-exponent word.
pub fn classify(mant: u64, se: u16) -> X87 {
    let neg = se & 0x8000 != 0;
    let field = i32::from(se & 0x7fff);
    let integer_bit = mant >> 63 == 1;
    match field {
        0x7fff if integer_bit && mant << 1 == 0 => X87::Inf(neg),
        0x7fff => X87::Nan,
        0 if mant == 0 => X87::Zero(neg),
        0 => X87::Finite {
            neg,
            mant,
            exp: MIN_EXP,
        },
        _ if !integer_bit => X87::Nan,
        f => X87::Finite {
            neg,
            mant,
            exp: f - BIAS - 63,
        },
    }
}

/// The shortest decimal digits (no leading or trailing zeros) and decimal exponent `k`
/// with `0.d1d2… * 10^k` reading back to `mant * 2^exp` (`mant` not 0) in the x87 format.
pub fn shortest_digits(mant: u64, exp: i32) -> (Vec<u8>, i32) {
    // Normalize pseudo-denormals and denormals alike: the value is what counts; the
    // spacing of neighbours is 2^exp at this exponent whatever the integer bit says.
    // Steele & White / Dragon4 with the "free-format" stopping rule, on exact integers:
    // v = r / s, and the values within m_minus / s below and m_plus / s above read back
    // to v (the rounding interval, closed when the mantissa is even: ties go to even).
    let even = mant & 1 == 0;
    // At a power of two the next value below is half as far (unless exp is the lowest).
    let uneven = mant == 1 << 63 && exp > MIN_EXP;
    let m = BigUint::from(mant);
    let (mut r, mut s, mut m_plus, mut m_minus);
    if exp >= 0 {
        let ulp = BigUint::from(1u8) << exp as u32;
        if uneven {
            r = (m << (exp as u32 + 2)) as BigUint;
            s = BigUint::from(4u8);
            m_plus = &ulp << 1;
            m_minus = ulp;
        } else {
            r = (m << (exp as u32 + 1)) as BigUint;
            s = BigUint::from(2u8);
            m_plus = ulp.clone();
            m_minus = ulp;
        }
    } else if uneven {
        r = m << 2;
        s = BigUint::from(1u8) << (2 - exp) as u32;
        m_plus = BigUint::from(2u8);
        m_minus = BigUint::from(1u8);
    } else {
        r = m << 1;
        s = BigUint::from(1u8) << (1 - exp) as u32;
        m_plus = BigUint::from(1u8);
        m_minus = BigUint::from(1u8);
    }
    // k: the smallest with (r + m_plus) / s < 10^k (<= when the high end reads back).
    let high_in = |r: &BigUint, mp: &BigUint, s: &BigUint| {
        let hi = r + mp;
        if even {
            hi >= *s
        } else {
            hi > *s
        }
    };
    let mut k = estimate_k(mant, exp);
    let ten = BigUint::from(10u8);
    if k >= 0 {
        s *= ten.pow(k as u32);
    } else {
        let f = ten.pow((-k) as u32);
        r *= &f;
        m_plus *= &f;
        m_minus *= &f;
    }
    // Fix the estimate (it may be one too low or too high).
    while high_in(&r, &m_plus, &s) {
        s *= &ten;
        k += 1;
    }
    loop {
        let r10 = &r * &ten;
        let mp10 = &m_plus * &ten;
        if high_in(&r10, &mp10, &s) {
            break;
        }
        r = r10;
        m_plus = mp10;
        m_minus *= &ten;
        k -= 1;
    }
    let mut digits = Vec::new();
    loop {
        r *= &ten;
        m_plus *= &ten;
        m_minus *= &ten;
        let d = (&r / &s).to_u32_digits().first().copied().unwrap_or(0) as u8;
        r -= &s * BigUint::from(d);
        let low = if even { r <= m_minus } else { r < m_minus };
        let high = high_in(&r, &m_plus, &s);
        match (low, high) {
            (false, false) => digits.push(d),
            (true, false) => {
                digits.push(d);
                break;
            }
            (false, true) => {
                digits.push(d + 1);
                break;
            }
            (true, true) => {
                // Both d and d + 1 read back: the nearer, the even one on a tie.
                let twice = &r << 1;
                let up = twice > s || (twice == s && d % 2 == 1);
                digits.push(if up { d + 1 } else { d });
                break;
            }
        }
    }
    (digits, k)
}

/// An estimate of the decimal exponent of `mant * 2^exp`, within one of the right `k`.
fn estimate_k(mant: u64, exp: i32) -> i32 {
    let bits = 64 - mant.leading_zeros() as i32 + exp;
    // log10(2) rounded up a little: the estimate errs by at most one either way.
    (f64::from(bits) * std::f64::consts::LOG10_2).ceil() as i32
}

/// The x87 value as text: the shortest decimal that reads back to the same bits, in the
/// form [`crate`]'s other floats take (`2.5`, `-2000000.00000000009`, `1e-20`,
/// `1.2345e300`), and `inf`, `-inf`, `nan`, `0`, `-0`.
pub fn shortest(mant: u64, se: u16) -> String {
    match classify(mant, se) {
        X87::Nan => "nan".into(),
        X87::Inf(neg) => if neg { "-inf" } else { "inf" }.into(),
        X87::Zero(neg) => if neg { "-0" } else { "0" }.into(),
        X87::Finite { neg, mant, exp } => {
            let (digits, k) = shortest_digits(mant, exp);
            let mut out = String::with_capacity(digits.len() + 8);
            if neg {
                out.push('-');
            }
            // Plain between 1e-5 and 1e16, as the other floats print; else exponent form.
            let text: Vec<char> = digits.iter().map(|d| char::from(b'0' + d)).collect();
            let n = text.len() as i32;
            if (-4..=16).contains(&k) {
                if k <= 0 {
                    out.push_str("0.");
                    out.extend(std::iter::repeat_n('0', (-k) as usize));
                    out.extend(&text);
                } else if k >= n {
                    out.extend(&text);
                    out.extend(std::iter::repeat_n('0', (k - n) as usize));
                } else {
                    out.extend(&text[..k as usize]);
                    out.push('.');
                    out.extend(&text[k as usize..]);
                }
            } else {
                out.push(text[0]);
                if n > 1 {
                    out.push('.');
                    out.extend(&text[1..]);
                }
                out.push('e');
                out.push_str(&(k - 1).to_string());
            }
            out
        }
    }
}

/// Why decimal text is not a number [`parse`] reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a decimal number: {0:?}")]
pub struct ParseError(pub String);

/// The x87 bits (mantissa word, sign-and-exponent word) nearest to decimal `text`
/// (`-12.5e-3`, `inf`, `nan`), ties to even, exactly: what `strtold` returns.
pub fn parse(text: &str) -> Result<(u64, u16), ParseError> {
    let bad = || ParseError(text.to_string());
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let sign = if neg { 0x8000u16 } else { 0 };
    match body.to_ascii_lowercase().as_str() {
        "inf" | "infinity" => return Ok((1 << 63, sign | 0x7fff)),
        "nan" => return Ok((0xc000_0000_0000_0000, 0x7fff)),
        _ => {}
    }
    let (mantissa, exp10) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i64>().map_err(|_| bad())?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits: String = int.chars().chain(frac.chars()).collect();
    let n = BigUint::parse_bytes(digits.as_bytes(), 10).ok_or_else(bad)?;
    if n == BigUint::ZERO {
        return Ok((0, sign));
    }
    let exp10 = exp10 - frac.len() as i64;
    // Far outside the format: infinity or zero without the big powers.
    if exp10 > 5000 {
        return Ok((1 << 63, sign | 0x7fff));
    }
    if exp10 < -5100 {
        return Ok((0, sign));
    }
    // value = num / den exactly.
    let ten = BigUint::from(10u8);
    let (num, den) = if exp10 >= 0 {
        (n * ten.pow(exp10 as u32), BigUint::from(1u8))
    } else {
        (n, ten.pow((-exp10) as u32))
    };
    Ok(nearest(&num, &den, sign))
}

/// The x87 value nearest `num / den` (both not 0), ties to even.
fn nearest(num: &BigUint, den: &BigUint, sign: u16) -> (u64, u16) {
    // e: the exponent of the lowest mantissa bit, chosen so that the quotient has 64
    // bits (fewer at the denormal floor).
    let mut e = num.bits() as i64 - den.bits() as i64 - 64;
    let quotient = |e: i64| {
        let (n, d) = if e >= 0 {
            (num.clone(), den << e as u64)
        } else {
            (num << (-e) as u64, den.clone())
        };
        let q = &n / &d;
        let rem = n - &q * &d;
        (q, rem, d)
    };
    let (mut q, mut rem, mut d) = quotient(e);
    while q.bits() > 64 {
        e += 1;
        (q, rem, d) = quotient(e);
    }
    while q.bits() < 64 && e > i64::from(MIN_EXP) {
        e -= 1;
        (q, rem, d) = quotient(e);
    }
    if e < i64::from(MIN_EXP) {
        e = i64::from(MIN_EXP);
        (q, rem, d) = quotient(e);
    }
    let twice = rem << 1u8;
    let odd = q.bit(0);
    if twice > d || (twice == d && odd) {
        q += 1u8;
        if q.bits() > 64 {
            q >>= 1u8;
            e += 1;
        }
    }
    let mant = q.iter_u64_digits().next().unwrap_or(0);
    if mant == 0 {
        return (0, sign);
    }
    let field = if mant >> 63 == 0 {
        0 // a denormal (at MIN_EXP)
    } else {
        e + 63 + i64::from(BIAS)
    };
    if field >= 0x7fff {
        return (1 << 63, sign | 0x7fff);
    }
    (mant, sign | field as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bits as parse returns them for a finite value, pseudo-denormals normalized.
    fn canonical(mant: u64, se: u16) -> (u64, u16) {
        match classify(mant, se) {
            X87::Finite { neg, mant, exp } if exp == MIN_EXP && mant >> 63 == 1 => {
                (mant, u16::from(neg) << 15 | 1)
            }
            _ => (mant, se),
        }
    }

    fn round_trips(mant: u64, se: u16) {
        let text = shortest(mant, se);
        assert_eq!(
            parse(&text).unwrap(),
            canonical(mant, se),
            "{text} for {mant:#x} {se:#x}"
        );
        // Shortest: no decimal of one digit fewer reads back.
        if let X87::Finite { mant: m, exp, .. } = classify(mant, se) {
            let (digits, k) = shortest_digits(m, exp);
            if digits.len() > 1 {
                let n = digits.len() - 1;
                let head: BigUint = digits[..n].iter().fold(BigUint::ZERO, |a, &d| a * 10u8 + d);
                for cand in [head.clone(), head + 1u8] {
                    let t = format!("{cand}e{}", k - n as i32);
                    let (pm, pse) = parse(&t).unwrap();
                    assert_ne!(
                        (pm, pse & 0x7fff),
                        canonical(m, se & 0x7fff),
                        "{t} is shorter"
                    );
                }
            }
        }
    }

    #[test]
    fn known_values() {
        // uftrace's -2000000 case: -0x1.e848000000000638p+20, -2e6 less 796 * 2^-43.
        assert_eq!(
            shortest(0xf424_0000_0000_031c, 0xc013),
            "-2000000.0000000000905"
        );
        assert_eq!(shortest(0xa000_0000_0000_0000, 0x4000), "2.5");
        assert_eq!(shortest(0xc000_0000_0000_0000, 0xbffe), "-0.75");
        // 1/3L.
        assert_eq!(
            shortest(0xaaaa_aaaa_aaaa_aaab, 0x3ffd),
            "0.33333333333333333334"
        );
        // 0.1L, and the double 0.1 widened (not the same value).
        assert_eq!(shortest(0xcccc_cccc_cccc_cccd, 0x3ffb), "0.1");
        assert_eq!(
            shortest(0xcccc_cccc_cccc_d000, 0x3ffb),
            "0.10000000000000000555"
        );
        assert_eq!(shortest(0x8000_0000_0000_0000, 0x3fff), "1");
        assert_eq!(shortest(0xad78_ebc5_ac62_0000, 0x4041), "1e20");
        assert_eq!(shortest(0, 0x8000), "-0");
        assert_eq!(shortest(1 << 63, 0x7fff), "inf");
        assert_eq!(shortest(1 << 63, 0xffff), "-inf");
        assert_eq!(shortest(0xc000_0000_0000_0000, 0x7fff), "nan");
        // The largest, the smallest normal and the smallest denormal.
        assert_eq!(shortest(u64::MAX, 0x7ffe), "1.189731495357231765e4932");
        assert_eq!(shortest(1 << 63, 1), "3.3621031431120935063e-4932");
        assert_eq!(shortest(1, 0), "4e-4951");
        // Unnormal, pseudo-infinity: invalid operands, nan; a pseudo-denormal: its value.
        assert_eq!(shortest(0x4000_0000_0000_0000, 0x3fff), "nan");
        assert_eq!(shortest(0, 0x7fff), "nan");
        assert_eq!(shortest(1 << 63, 0), shortest(1 << 63, 1));
    }

    #[test]
    fn parse_reads_exactly() {
        assert_eq!(parse("2.5").unwrap(), (0xa000_0000_0000_0000, 0x4000));
        assert_eq!(parse("-0.75").unwrap(), (0xc000_0000_0000_0000, 0xbffe));
        assert_eq!(parse("0.1").unwrap(), (0xcccc_cccc_cccc_cccd, 0x3ffb));
        assert_eq!(parse("1e5000").unwrap(), (1 << 63, 0x7fff));
        assert_eq!(parse("1e-5000").unwrap(), (0, 0));
        assert_eq!(parse("3.6e-4951").unwrap(), (1, 0));
        assert!(parse("1.2.3").is_err());
        assert!(parse("e5").is_err());
    }

    #[test]
    fn edges_round_trip() {
        for (m, se) in [
            (1u64, 0u16),
            (u64::MAX >> 1, 0),
            (1 << 63, 1),
            (1 << 63, 2),
            ((1 << 63) | 1, 1),
            (u64::MAX, 0x7ffe),
            (1 << 63, 0x7ffe),
            (1 << 63, 0x3fff),
            (u64::MAX, 0x3ffe),
            (0xf424_0000_0000_031c, 0xc013),
        ] {
            round_trips(m, se);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn normals_round_trip(m in any::<u64>(), se in 1u16..0x7fff, neg in any::<bool>()) {
            round_trips(m | 1 << 63, se | u16::from(neg) << 15);
        }

        #[test]
        fn near_one_round_trip(m in any::<u64>(), se in 0x3f00u16..0x4100) {
            round_trips(m | 1 << 63, se);
        }

        #[test]
        fn denormals_round_trip(m in 1u64..1 << 63) {
            round_trips(m, 0);
        }
    }
}
