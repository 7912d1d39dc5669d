//! Fuzz the sigdb reader: open arbitrary bytes, and when they validate, run every lookup
//! and walk every record. Must never panic. Each input is opened as it is and with its
//! body checksum recomputed, so that mutations reach the structural checks behind it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sigdb::layout::HEADER_SIZE;
use sigdb::Db;

fuzz_target!(|data: &[u8]| {
    if let Ok(db) = Db::from_bytes(data.to_vec()) {
        exercise(&db);
    }
    if data.len() >= HEADER_SIZE {
        let mut fixed = data.to_vec();
        let crc = crc32(&fixed[HEADER_SIZE..]);
        fixed[32..36].copy_from_slice(&crc.to_le_bytes());
        if let Ok(db) = Db::from_bytes(fixed) {
            exercise(&db);
        }
    }
});

/// CRC-32 (IEEE, as zlib's `crc32`), bitwise: the fuzz target needs no extra crate.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { crc >> 1 ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn exercise(db: &Db) {
    let mut n = 0usize;
    for f in db.functions() {
        n += f.name().len() + f.symbol().len() + f.size() as usize;
        n += f.ret().display().len() + f.ret().resolve().size() as usize;
        for p in f.params() {
            n += p.ty().declare(p.name()).len() + p.loc().to_string().len();
            n += p.ty().enumerators().count() + p.ty().params().count();
        }
        n += f.inlined_into().count();
        n += db.by_name(f.name()).count() + db.by_name(f.symbol()).count();
        n += db.by_addr(f.module_index(), f.addr()).is_some() as usize;
        n += f.module().map_or(0, |m| m.name().len());
        n += f.inline_instances().count() + db.instances_of(f.index()).count();
    }
    for i in db.instances() {
        n += i.callee().map_or(0, |f| f.name().len()) + i.caller().map_or(0, |f| f.name().len());
        n += i.ranges().count() + i.call_file().len() + i.call_line() as usize;
        n += i.params().map(|(p, l)| p.name().len() + l.to_string().len()).sum::<usize>();
        let mut up = i.parent();
        while let Some(p) = up {
            n += p.entry_pc() as usize & 1;
            up = p.parent();
        }
    }
    for m in db.modules() {
        n += m.functions().count() + m.build_id().len();
    }
    for (name, f) in db.names() {
        n += name.len() + f.index() as usize;
    }
    for i in 0..db.type_count() as u32 {
        n += db.type_at(i).map_or(0, |t| t.display().len());
        if let Some(Ok(members)) = db.type_at(i).map(|t| t.members()) {
            for m in members.flatten() {
                n += m.ty().declare(m.name()).len() + m.offset() as usize + m.bit_size() as usize;
            }
        }
    }
    n += db.by_addr_any(0x1234).is_some() as usize + db.by_name("").count();
    n += db.inline_count() + db.check_frames().is_ok() as usize;
    for k in [0, 1, 15, 16, 17, db.instance_count().saturating_sub(1), db.instance_count()] {
        n += db.instance(k).map_or(0, |i| i.locations().count() + i.index() as usize);
    }
    for f in [0u32, 1, u32::MAX] {
        n += db.instances_in(f).count() + db.inlined_into(f).count();
    }
    std::hint::black_box(n);
}
