//! Bad input: every truncation is rejected; random byte flips are rejected or read
//! safely, also when the checksum is recomputed so the structural checks must catch them.

mod common;

use proptest::prelude::*;
use sigdb::layout::{Header, HEADER_SIZE, SECTION_COUNT};
use sigdb::*;
use zerocopy::FromBytes;

fn sample() -> Vec<u8> {
    common::sample_builder().finish().unwrap()
}

/// Touch everything a reader can reach; must never panic.
fn exercise(db: &Db) -> usize {
    let mut n = 0;
    for f in db.functions() {
        n += common::db_function(f).len();
        n += f.ret().display().len();
        for p in f.params() {
            n += p.ty().declare(p.name()).len() + p.ty().resolve().size() as usize;
            n += p.loc().to_string().len();
        }
        n += f.inlined_into().count();
        n += db.by_name(f.name()).count();
        n += db.by_addr(f.module_index(), f.addr()).is_some() as usize;
        for i in f.inline_instances() {
            n += format!("{i:?}").len() + i.ranges().count() + i.call_file().len();
            n += i
                .params()
                .map(|(p, l)| p.name().len() + l.to_string().len())
                .sum::<usize>();
            let mut up = i.parent();
            while let Some(p) = up {
                n += 1;
                up = p.parent();
            }
        }
        n += db.instances_of(f.index()).count();
    }
    for m in db.modules() {
        n += m.name().len() + m.functions().count() + m.build_id().len();
    }
    n += db.instances().count() + db.inline_count();
    n += db.check_frames().is_ok() as usize;
    n + db.names().count()
}

fn fix_checksum(bytes: &mut [u8]) {
    let hsize = std::mem::size_of::<Header>();
    if bytes.len() >= hsize {
        let crc = crc32fast::hash(&bytes[hsize..]);
        bytes[32..36].copy_from_slice(&crc.to_le_bytes());
    }
}

#[test]
fn every_truncation_is_rejected() {
    let bytes = sample();
    for len in 0..bytes.len() {
        let err = Db::from_bytes(bytes[..len].to_vec()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("<memory>: "), "{msg}");
        assert!(msg.contains("offset"), "{msg}");
    }
    assert!(Db::from_bytes(bytes).is_ok());
}

#[test]
fn clear_messages() {
    let mut bytes = sample();
    type Mutation = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|b| b[0] = b'X'),
            "not a dcg signature database (bad magic) (at offset 0x0)",
        ),
        (
            Box::new(|b| b[8] = 1),
            "format version 1 is not supported (this dcg reads versions 5 to 7); rebuild the \
             db from its ELF files: dwarfscan FILE... -o DB (at offset 0x8)",
        ),
        (
            Box::new(|b| b[8] = 2),
            "format version 2 is not supported (this dcg reads versions 5 to 7); rebuild the \
             db from its ELF files: dwarfscan FILE... -o DB (at offset 0x8)",
        ),
        (
            Box::new(|b| b[8] = 3),
            "format version 3 is not supported (this dcg reads versions 5 to 7); rebuild the \
             db from its ELF files: dwarfscan FILE... -o DB (at offset 0x8)",
        ),
        (
            Box::new(|b| b[8] = 4),
            "format version 4 is not supported (this dcg reads versions 5 to 7); rebuild the \
             db from its ELF files: dwarfscan FILE... -o DB (at offset 0x8)",
        ),
        (
            Box::new(|b| {
                let n = b.len();
                b[n - 1] ^= 1
            }),
            "checksum mismatch",
        ),
        (
            Box::new(|b| b.push(0)),
            "bytes after the recorded file size",
        ),
        (
            Box::new(|b| b.truncate(100)),
            "truncated: needs 704 bytes, has 100 (at offset 0x0)",
        ),
    ];
    for (mutate, want) in cases {
        let mut b = bytes.clone();
        mutate(&mut b);
        let msg = Db::from_bytes(b).unwrap_err().to_string();
        assert!(msg.contains(want), "{msg:?} lacks {want:?}");
    }
    // A structural error behind a valid checksum names the section and record: in a
    // section read in place, and in a function block.
    let names_at = {
        let (h, _) = Header::ref_from_prefix(&bytes[..]).unwrap();
        h.sections[8].offset.get() as usize
    };
    let mut bad = bytes.clone();
    bad[names_at..names_at + 3].copy_from_slice(&[0xff; 3]); // function index
    fix_checksum(&mut bad);
    let msg = Db::from_bytes(bad).unwrap_err().to_string();
    assert!(
        msg.contains("names record 0: function out of bounds"),
        "{msg}"
    );
    let msg = open_verified(with_functions(&bytes, |i, rec| {
        if i == 0 {
            rec[2] = u32::MAX >> 14; // return type
        }
    }))
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("functions record 0: return type out of bounds"),
        "{msg}"
    );
    bytes.clear();
}

/// `bytes` with the records of the first function block changed by `edit` (record index,
/// its three words) and stored as one block of LZ4 literals (byte-transposed), the
/// sections after it moved, behind a valid checksum.
fn with_functions(bytes: &[u8], edit: impl Fn(usize, &mut [u32; 3])) -> Vec<u8> {
    let db = Db::from_bytes(bytes.to_vec()).unwrap();
    let count = db.function_count().min(64);
    let (h, _) = Header::ref_from_prefix(bytes).unwrap();
    let blocks = h.sections[24].count.get() as usize;
    // The first block's records, from the raw file: decompress it.
    let (at, len) = (
        h.sections[5].offset.get() as usize,
        h.sections[5].length.get() as usize,
    );
    let offsets: Vec<usize> = bytes[h.sections[24].offset.get() as usize..]
        .chunks(4)
        .take(blocks)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize)
        .collect();
    let end = offsets.get(1).copied().unwrap_or(len);
    let raw = lz4_flex::block::decompress(&bytes[at..at + end], count * 12).unwrap();
    let mut recs: Vec<[u32; 3]> = (0..count)
        .map(|i| {
            std::array::from_fn(|w| {
                u32::from_le_bytes(std::array::from_fn(|b| raw[(4 * w + b) * count + i]))
            })
        })
        .collect();
    for (i, r) in recs.iter_mut().enumerate() {
        edit(i, r);
    }
    let flat: Vec<u8> = recs
        .iter()
        .flat_map(|r| r.iter().flat_map(|w| w.to_le_bytes()))
        .collect();
    let transposed: Vec<u8> = (0..12)
        .flat_map(|k| (0..count).map(move |i| (i, k)))
        .map(|(i, k)| flat[i * 12 + k])
        .collect();
    let block = lz4_literals(&transposed);
    let mut data = block.clone();
    data.extend_from_slice(&bytes[at + end..at + len]);
    let shift = block.len() as u32;
    let mut table = Vec::new();
    for (b, o) in offsets.iter().enumerate() {
        let o = if b == 0 {
            0
        } else {
            *o as u32 - end as u32 + shift
        };
        table.extend_from_slice(&o.to_le_bytes());
    }
    rebuild(bytes, &[(5, data), (24, table)])
}

/// `bytes` with the sections `replaced` (id, new bytes) and every section laid out again
/// in order, behind a valid checksum.
fn rebuild(bytes: &[u8], replaced: &[(usize, Vec<u8>)]) -> Vec<u8> {
    let (h, _) = Header::ref_from_prefix(bytes).unwrap();
    let h = *h;
    let mut out = bytes[..HEADER_SIZE].to_vec();
    for id in 0..SECTION_COUNT {
        let e = &h.sections[id];
        let (at, len) = (e.offset.get() as usize, e.length.get() as usize);
        let data = replaced
            .iter()
            .find(|(r, _)| *r == id)
            .map_or(&bytes[at..at + len], |(_, d)| &d[..]);
        while !out.len().is_multiple_of(8) {
            out.push(0);
        }
        let entry = HEADER_SIZE - 24 * SECTION_COUNT + 24 * id;
        let size = e.record_size.get() as usize;
        let offset = out.len() as u64;
        out[entry..entry + 8].copy_from_slice(&offset.to_le_bytes());
        out[entry + 8..entry + 16].copy_from_slice(&(data.len() as u64).to_le_bytes());
        out[entry + 16..entry + 20].copy_from_slice(&((data.len() / size) as u32).to_le_bytes());
        out.extend_from_slice(data);
    }
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let len = out.len() as u64;
    out[24..32].copy_from_slice(&len.to_le_bytes());
    fix_checksum(&mut out);
    out
}

/// `bytes` opened, and every frame and block checked ([`Db::verify`]).
fn open_verified(bytes: Vec<u8>) -> Result<Db, Error> {
    let db = Db::from_bytes(bytes)?;
    db.verify()?;
    Ok(db)
}

/// A damaged compressed frame behind a valid checksum: opening does not read it, but
/// [`Db::verify`] decompresses and checks every frame, so it fails naming the file and
/// the section, and the frame reads as empty.
#[test]
fn bad_frames_read_empty_and_are_reported() {
    let bytes = sample();
    let good = Db::from_bytes(bytes.clone()).unwrap();
    assert!(good.instance_count() > 0 && good.inline_count() > 0);
    good.check_frames().unwrap();
    for (section, name) in [(10usize, "inline_callers"), (12, "instance_data")] {
        let (at, len) = {
            let (h, _) = Header::ref_from_prefix(&bytes[..]).unwrap();
            let s = &h.sections[section];
            (s.offset.get() as usize, s.length.get() as usize)
        };
        // Zero the frame's body, past the zstd frame header.
        let mut b = bytes.clone();
        for x in &mut b[at + 6..at + len] {
            *x = 0;
        }
        fix_checksum(&mut b);
        let msg = open_verified(b.clone()).unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("<memory>: {name} record 0: frame")),
            "{msg}"
        );
        let bad = Db::from_bytes(b.clone()).unwrap();
        let left = if section == 10 {
            bad.functions().map(|f| f.inlined_into().count()).sum()
        } else {
            bad.instances().count()
        };
        assert_eq!(left, 0, "{name}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.sigdb");
        std::fs::write(&p, &b).unwrap();
        let msg = Db::open(&p).unwrap().verify().unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("{}: {name} record 0: frame", p.display())),
            "{msg}"
        );
    }
}

/// Two damaged sections: [`Db::verify`], which decodes the frames and blocks on all cores,
/// reports the first in file order, every time.
#[test]
fn the_first_bad_frame_in_file_order_is_reported() {
    let bytes = sample();
    let mut b = bytes.clone();
    for section in [10usize, 12] {
        let (at, len) = {
            let (h, _) = Header::ref_from_prefix(&bytes[..]).unwrap();
            let s = &h.sections[section];
            (s.offset.get() as usize, s.length.get() as usize)
        };
        for x in &mut b[at + 6..at + len] {
            *x = 0;
        }
    }
    fix_checksum(&mut b);
    for _ in 0..8 {
        let msg = open_verified(b.clone()).unwrap_err().to_string();
        assert!(
            msg.starts_with("<memory>: inline_callers record 0: frame"),
            "{msg}"
        );
    }
}

/// Damaged strings, parameter, type, member and function blocks behind a valid checksum:
/// [`Db::verify`] fails naming the section, and so does [`Db::check_frames`].
#[test]
fn bad_strings_params_and_types_read_empty_and_are_reported() {
    let bytes = sample();
    let good = Db::from_bytes(bytes.clone()).unwrap();
    let named = good.functions().find(|f| f.params().len() > 0).unwrap();
    assert!(!named.name().is_empty());
    for (section, name, skip) in [
        (0usize, "strings", 6),
        (7, "params", 0),
        (2, "types", 0),
        (22, "members", 0),
        (5, "functions", 0),
    ] {
        let (at, len) = {
            let (h, _) = Header::ref_from_prefix(&bytes[..]).unwrap();
            let s = &h.sections[section];
            (s.offset.get() as usize, s.length.get() as usize)
        };
        let mut b = bytes.clone();
        for x in &mut b[at + skip..at + len] {
            *x = 0xff;
        }
        fix_checksum(&mut b);
        let msg = open_verified(b.clone()).unwrap_err().to_string();
        assert!(msg.contains(&format!("{name} record 0:")), "{msg}");
        let db = Db::from_bytes(b).unwrap();
        let msg = db.check_frames().unwrap_err().to_string();
        assert!(msg.contains(&format!("{name} record 0:")), "{msg}");
    }
}

/// `records` as one LZ4 block of literals only (a valid block: the format requires its
/// last five bytes to be literals, and here they all are).
fn lz4_literals(records: &[u8]) -> Vec<u8> {
    let n = records.len();
    let mut out = vec![(n.min(15) as u8) << 4];
    if n >= 15 {
        let mut rest = n - 15;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    }
    out.extend_from_slice(records);
    out
}

/// The sample with its member records replaced by `records` (as many as it has, one
/// block, byte-transposed as stored) behind a valid checksum.
fn with_members(records: impl Fn(usize) -> [u32; 3]) -> Vec<u8> {
    let bytes = sample();
    let (h, _) = Header::ref_from_prefix(&bytes[..]).unwrap();
    let count = h.member_count.get() as usize;
    assert!((1..=64).contains(&count));
    let raw: Vec<u8> = (0..count)
        .flat_map(|i| records(i).into_iter().flat_map(u32::to_le_bytes))
        .collect();
    // Stored byte-transposed: byte k of record i at k * count + i.
    let raw: Vec<u8> = (0..12)
        .flat_map(|k| (0..count).map(move |i| (i, k)))
        .map(|(i, k)| raw[i * 12 + k])
        .collect();
    rebuild(
        &bytes,
        &[(22, lz4_literals(&raw)), (23, 0u32.to_le_bytes().to_vec())],
    )
}

/// Member records that break the rules behind a valid checksum: [`Db::verify`] fails
/// naming the member record (and a member past its struct's end is an error of the
/// struct's member list when the db is only opened); records that keep them verify.
#[test]
fn bad_members_are_reported() {
    // All members of every struct: `int` at offset 0 (type 1 is the first the sample's
    // functions reach; whatever it is, it fits at offset 0 of the 8-byte union).
    let db = open_verified(with_members(|_| [0, 1, 0])).unwrap();
    assert!(db.member_count() > 0);
    let msg = open_verified(with_members(|i| [0, if i == 3 { 1 << 20 } else { 1 }, 0]))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("members record 3: type out of bounds"),
        "{msg}"
    );
    let msg = open_verified(with_members(|i| [if i == 2 { u32::MAX } else { 0 }, 1, 0]))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("members record 2: name is not a string"),
        "{msg}"
    );
    let msg = open_verified(with_members(|i| [0, 1, if i == 5 { 8 * 233 } else { 0 }]))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("members record 5: member outside its struct"),
        "{msg}"
    );
    let db = Db::from_bytes(with_members(|i| [0, 1, if i == 5 { 8 * 233 } else { 0 }])).unwrap();
    let errors: Vec<String> = (0..db.type_count() as u32)
        .filter_map(|i| db.type_at(i)?.members().ok())
        .flat_map(|m| m.filter_map(|m| m.err()))
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("members record 5: member outside its struct"),
        "{errors:?}"
    );
}

#[test]
fn open_reports_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.sigdb");
    std::fs::write(&p, b"hello").unwrap();
    let msg = Db::open(&p).unwrap_err().to_string();
    let want = format!("{}: not a dcg signature database", p.display());
    assert!(msg.starts_with(&want), "{msg}");
    std::fs::write(&p, b"DCGSIG").unwrap();
    let msg = Db::open(&p).unwrap_err().to_string();
    assert!(
        msg.starts_with(&format!("{}: truncated", p.display())),
        "{msg}"
    );
    let missing = dir.path().join("missing.sigdb");
    assert!(Db::open(&missing)
        .unwrap_err()
        .to_string()
        .contains("missing.sigdb"));
    let good = dir.path().join("good.sigdb");
    common::sample_builder().write_to(&good).unwrap();
    assert_eq!(Db::open(&good).unwrap().function_count(), 5);
    // The atomic writer leaves nothing else behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn byte_flips_are_rejected_or_safe(pos in any::<usize>(), xor in 1u8..=255, refix in any::<bool>()) {
        let mut bytes = sample();
        let pos = pos % bytes.len();
        bytes[pos] ^= xor;
        if refix {
            fix_checksum(&mut bytes);
        }
        if let Ok(db) = Db::from_bytes(bytes) {
            exercise(&db);
        }
    }

    #[test]
    fn multi_byte_corruption_behind_valid_checksum(edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut bytes = sample();
        let hsize = std::mem::size_of::<Header>();
        for (pos, val) in edits {
            let pos = hsize + pos % (bytes.len() - hsize);
            bytes[pos] = val;
        }
        fix_checksum(&mut bytes);
        if let Ok(db) = Db::from_bytes(bytes) {
            exercise(&db);
        }
    }
}

/// Writes the sample db as a fuzzing seed: `DCG_FUZZ_SEED=path cargo test -p sigdb
/// --test corruption write_fuzz_seed -- --ignored`.
#[test]
#[ignore]
fn write_fuzz_seed() {
    let path = std::env::var_os("DCG_FUZZ_SEED").expect("set DCG_FUZZ_SEED");
    std::fs::write(path, sample()).unwrap();
}
