//! Where the prologue of unoptimized code ends: the first address at which the frame
//! slots DWARF gives its parameters (`DW_OP_fbreg` at `-O0`) hold them, and rbp is the
//! frame pointer (CFA - 16) a probe can address them from.

use crate::units::Builder;

/// Length of a frame-pointer setup at the start of `code`: `[endbr64] push %rbp; mov
/// %rsp,%rbp`, after which rbp is CFA - 16. `None` when the code does not start so.
pub fn frame_pointer_setup(code: &[u8]) -> Option<usize> {
    const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
    let start = if code.starts_with(&ENDBR64) { 4 } else { 0 };
    let rest = code.get(start..)?;
    // push %rbp, then mov %rsp,%rbp in either encoding.
    (rest.starts_with(&[0x55, 0x48, 0x89, 0xe5]) || rest.starts_with(&[0x55, 0x48, 0x8b, 0xec]))
        .then_some(start + 4)
}

/// The first body address of a function `[entry, hi)` from its unit's line rows (sorted
/// `(address, prologue_end)`): the row marked `prologue_end` (clang), else the second row
/// (gcc marks none; its first row after the entry's starts the body).
pub fn body_start(rows: &[(u64, bool)], entry: u64, hi: u64) -> Option<u64> {
    let from = rows.partition_point(|&(a, _)| a <= entry);
    let inside = rows[from..].iter().take_while(|&&(a, _)| a < hi);
    let mut first = None;
    for &(a, end) in inside {
        if end {
            return Some(a);
        }
        first = first.or(Some(a));
    }
    first
}

impl Builder<'_, '_, '_> {
    /// The line rows of the current unit (statement rows, sorted), read once.
    fn line_rows(&mut self) -> &[(u64, bool)] {
        if self.line_rows.is_none() {
            let mut rows = Vec::new();
            if let Some(lp) = self.units.cur.line_program.clone() {
                let mut it = lp.rows();
                while let Ok(Some((_, row))) = it.next_row() {
                    if row.is_stmt() && !row.end_sequence() {
                        rows.push((row.address(), row.prologue_end()));
                    }
                }
            }
            rows.sort_unstable();
            rows.dedup_by_key(|r| r.0);
            self.line_rows = Some(rows);
        }
        self.line_rows.as_deref().unwrap_or(&[])
    }

    /// Bytes from `entry` to the end of the prologue of a function with a frame-pointer
    /// prologue, `[entry, hi)`; `None` when the code or the line table does not show one.
    pub(crate) fn prologue_len(&mut self, entry: u64, hi: u64) -> Option<u16> {
        let setup = frame_pointer_setup(self.ctx.elf.code_at(entry)?)?;
        let body = body_start(self.line_rows(), entry, hi)?;
        let len = u16::try_from(body - entry).ok()?;
        (usize::from(len) >= setup).then_some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups() {
        assert_eq!(
            frame_pointer_setup(&[0x55, 0x48, 0x89, 0xe5, 0x89]),
            Some(4)
        );
        assert_eq!(
            frame_pointer_setup(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5]),
            Some(8)
        );
        assert_eq!(frame_pointer_setup(&[0x48, 0x83, 0xec, 0x08]), None);
        assert_eq!(frame_pointer_setup(&[0x55]), None);
    }

    #[test]
    fn bodies() {
        let rows = [(0x10, false), (0x1c, false), (0x30, false), (0x40, false)];
        assert_eq!(body_start(&rows, 0x10, 0x40), Some(0x1c));
        let clang = [(0x10, false), (0x18, false), (0x20, true)];
        assert_eq!(body_start(&clang, 0x10, 0x40), Some(0x20));
        assert_eq!(body_start(&rows, 0x40, 0x50), None);
    }
}
