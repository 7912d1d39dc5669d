//! The string section as the writer lays it out: every string stored once, a string that
//! ends another one stored as that one's tail, cut into frames of whole strings.

use rayon::prelude::*;
use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::layout::STRING_FRAME_BYTES;
use crate::Error;

/// The string section, laid out before the writer runs from the set of strings it will
/// store (`DbBuilder::strings_written`): each string that ends another one is stored as
/// that one's tail (suffix sharing). The writer then only looks strings up; the table
/// borrows them from the builder.
pub(crate) struct StringTable<'s> {
    pub(super) bytes: Vec<u8>,
    /// Where each compressed frame starts in `bytes` (the first at 0): a frame holds
    /// whole strings, ending after the first one that reaches [`STRING_FRAME_BYTES`].
    pub(super) frames: Vec<u32>,
    offsets: HashMap<&'s str, u32>,
}

impl<'s> StringTable<'s> {
    /// The final layout of `strings`, which depends on the set alone. Sorted by their
    /// reversed bytes, a string that is a suffix of the next one in that order is not
    /// stored but points into it; the strings stored are laid out in byte order (which
    /// compresses better: neighbours share prefixes), cut into frames of whole strings.
    pub(super) fn laid_out(
        strings: impl Iterator<Item = &'s str>,
    ) -> Result<StringTable<'s>, Error> {
        // Interior NULs cannot be represented; strings keep the part before the first one.
        let strings: Vec<&'s str> = strings
            .map(|s| s.split('\0').next().unwrap_or(""))
            .filter(|s| !s.is_empty())
            .collect();
        // Sorted by their reversed bytes, kept reversed side by side so that two strings
        // compare as two byte slices (one memcmp) rather than byte by byte.
        let mut reversed = Vec::with_capacity(strings.iter().map(|s| s.len()).sum());
        for s in &strings {
            reversed.extend(s.bytes().rev());
        }
        let mut keyed: Vec<(&[u8], &'s str)> = Vec::with_capacity(strings.len());
        let mut at = 0;
        for s in strings {
            keyed.push((&reversed[at..at + s.len()], s));
            at += s.len();
        }
        // Equal strings are the same bytes: which copy the unstable sort puts first cannot
        // show in the output.
        keyed.par_sort_unstable_by(|a, b| a.0.cmp(b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        let sorted: Vec<&'s str> = keyed.into_iter().map(|(_, s)| s).collect();
        // Each string's (stored string holding it, offset in that one). Longest first
        // within each chain of suffixes: walk from the end.
        let mut home = vec![(0usize, 0usize); sorted.len()];
        let mut stored = Vec::new();
        for i in (0..sorted.len()).rev() {
            home[i] = match sorted.get(i + 1) {
                Some(next) if next.ends_with(sorted[i]) => {
                    let (root, at) = home[i + 1];
                    (root, at + next.len() - sorted[i].len())
                }
                _ => {
                    stored.push(i);
                    (i, 0)
                }
            };
        }
        stored.par_sort_unstable_by_key(|&i| sorted[i]);
        let mut start = vec![0u32; sorted.len()];
        let mut bytes = vec![0];
        let mut frames = vec![0];
        let mut frame_start = 0;
        for &i in &stored {
            if bytes.len() - frame_start >= STRING_FRAME_BYTES {
                frame_start = bytes.len();
                frames.push(frame_start as u32);
            }
            start[i] = u32::try_from(bytes.len()).map_err(|_| Error::TooLarge("strings"))?;
            bytes.extend_from_slice(sorted[i].as_bytes());
            bytes.push(0);
        }
        u32::try_from(bytes.len()).map_err(|_| Error::TooLarge("strings"))?;
        let mut offsets = HashMap::with_capacity_and_hasher(sorted.len() + 1, FxBuildHasher);
        offsets.insert("", 0);
        offsets.extend(
            sorted
                .into_iter()
                .zip(home)
                .map(|(s, (root, at))| (s, start[root] + at as u32)),
        );
        Ok(StringTable {
            bytes,
            frames,
            offsets,
        })
    }

    /// The offset of `s`, which the layout must hold.
    pub(crate) fn add(&self, s: &str) -> Result<u32, Error> {
        if let Some(&o) = self.offsets.get(s) {
            return Ok(o);
        }
        // Interior NULs cannot be represented; the layout holds the part before the first
        // one.
        let s = s.split('\0').next().unwrap_or("");
        match self.offsets.get(s) {
            Some(&o) => Ok(o),
            None => Err(Error::Builder(format!(
                "string {s:?} is not in the string layout"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_share_suffixes_whatever_the_order() {
        let words = [
            "__x64_sys_open",
            "sys_open",
            "open",
            "pen",
            "close",
            "ö",
            "aö",
        ];
        let a = StringTable::laid_out(words.iter().copied()).unwrap();
        let b = StringTable::laid_out(words.iter().rev().copied()).unwrap();
        assert_eq!(a.bytes, b.bytes);
        // Stored: the empty string, "__x64_sys_open", "close", "aö".
        assert_eq!(a.bytes.len(), 1 + 15 + 6 + 4);
        for w in words {
            let off = a.offsets[w] as usize;
            let tail = &a.bytes[off..];
            let end = tail.iter().position(|&c| c == 0).unwrap();
            assert_eq!(&tail[..end], w.as_bytes());
        }
        let table = a;
        assert_eq!(table.add("open").unwrap(), table.offsets["open"]);
        assert!(table.add("unseen").is_err());
    }
}
