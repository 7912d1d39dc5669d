//! The name index: every function name and symbol, hashed into buckets, for lookups
//! by name.

use rustc_hash::FxHashSet;

use crate::layout::{name_bucket, name_bucket_bits, name_hash, NameRecord, MAX_NAME_FUNCTION};
use crate::Error;

/// The name index: one entry per (key, function), sorted by (FNV-1a hash of the key, key
/// bytes, function), and the start of each hash bucket (a power of two of them, about
/// one per eight entries, chosen by the hash's top bits).
pub(super) fn name_index(
    strings: &[u8],
    names: Vec<(u32, u32)>,
) -> Result<(Vec<NameRecord>, Vec<u32>), Error> {
    let str_at = |off: u32| -> &[u8] {
        let s = &strings[off as usize..];
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    };
    let mut keyed: Vec<(u32, &[u8], u32)> = names
        .into_iter()
        .map(|(n, f)| {
            let bytes = str_at(n);
            (name_hash(bytes), bytes, f)
        })
        .collect();
    keyed.sort_unstable();
    keyed.dedup();
    let mut names: Vec<(u32, u32)> = keyed.into_iter().map(|(h, _, f)| (h, f)).collect();
    // A name and a symbol of one function with the same hash need one entry.
    let mut seen = FxHashSet::default();
    names.retain(|&e| seen.insert(e));
    let bits = name_bucket_bits(names.len());
    let mut buckets = Vec::with_capacity((1 << bits) + 1);
    let mut records = Vec::with_capacity(names.len());
    for (i, &(h, f)) in names.iter().enumerate() {
        if f > MAX_NAME_FUNCTION {
            return Err(Error::TooLarge("functions (name index)"));
        }
        while buckets.len() <= name_bucket(h, bits) as usize {
            buckets.push(i as u32);
        }
        records.push(NameRecord {
            entry: (f | (h & 0xff) << 24).into(),
        });
    }
    while buckets.len() <= 1 << bits {
        buckets.push(names.len() as u32);
    }
    Ok((records, buckets))
}
