//! LEB128 varints, as `FORMAT.md` describes them: 7 bits per byte, least significant
//! group first, bit 7 set on every byte but the last; at most 10 bytes for a `u64`.
//! Signed values are zigzag-mapped first (0, -1, 1, -2, ... → 0, 1, 2, 3, ...).

/// Append `v` as an unsigned varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Append `v` zigzag-mapped, as an unsigned varint.
pub(crate) fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A cursor over packed bytes. Every read returns `None` instead of running past the end
/// or accepting a varint longer than 10 bytes or wider than 64 bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    pub data: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8], pos: usize) -> Self {
        Cursor { data, pos }
    }

    #[inline(always)]
    pub(crate) fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    #[inline(always)]
    pub(crate) fn uint(&mut self) -> Option<u64> {
        // Most values take one byte.
        let b = *self.data.get(self.pos)?;
        if b < 0x80 {
            self.pos += 1;
            return Some(u64::from(b));
        }
        self.uint_slow()
    }

    fn uint_slow(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            // The tenth byte may only carry the top bit of a u64.
            if shift == 63 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    #[inline]
    pub(crate) fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    #[inline]
    pub(crate) fn int(&mut self) -> Option<i64> {
        let u = self.uint()?;
        Some((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    #[inline]
    pub(crate) fn i32(&mut self) -> Option<i32> {
        i32::try_from(self.int()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_limits() {
        let vals = [0u64, 1, 127, 128, 300, 1 << 32, u64::MAX - 1, u64::MAX];
        let mut out = Vec::new();
        for &v in &vals {
            put(&mut out, v);
        }
        for &v in &[0i64, -1, 1, -64, 64, i64::MIN, i64::MAX] {
            put_signed(&mut out, v);
        }
        let mut c = Cursor::new(&out, 0);
        for &v in &vals {
            assert_eq!(c.uint(), Some(v));
        }
        for &v in &[0i64, -1, 1, -64, 64, i64::MIN, i64::MAX] {
            assert_eq!(c.int(), Some(v));
        }
        assert_eq!(c.uint(), None);
        // 11 bytes, and a 10th byte with more than one bit.
        assert_eq!(Cursor::new(&[0x80; 11], 0).uint(), None);
        let mut wide = vec![0xffu8; 9];
        wide.push(0x02);
        assert_eq!(Cursor::new(&wide, 0).uint(), None);
        assert_eq!(Cursor::new(&[0x80], 0).uint(), None);
    }
}
