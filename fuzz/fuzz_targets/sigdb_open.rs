//! Fuzz the sigdb reader: open arbitrary bytes, and when they validate, run every lookup
//! and walk every record. Must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sigdb::Db;

fuzz_target!(|data: &[u8]| {
    let Ok(db) = Db::from_bytes(data.to_vec()) else {
        return;
    };
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
    }
    n += db.by_addr_any(0x1234).is_some() as usize + db.by_name("").count();
    std::hint::black_box(n);
});
