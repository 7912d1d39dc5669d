//! Fuzz dwarfscan on mutated ELF/DWARF files: a scan must return a db or an error, never
//! panic or hang; a db it returns must validate.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = dwarfscan::Options::default();
    if let Ok(mut result) = dwarfscan::scan_elf_bytes("fuzz.o", data, &opts) {
        if let Ok(bytes) = result.to_bytes() {
            let db = sigdb::Db::from_bytes(bytes).expect("dwarfscan wrote an invalid db");
            db.check_frames().expect("dwarfscan wrote an invalid frame");
        }
    }
});
