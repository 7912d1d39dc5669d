//! Fuzz the whole `dcg decode` pipeline (block reader, line parser, decoder, rendering)
//! on arbitrary bytes with a real kernel's db: no input may panic, and the output must
//! not depend on where the reader's buffer boundaries fall (the block reader splits and
//! carries lines across them). The db is `$DCG_FUZZ_DB`, by default `decode.sigdb` in
//! this directory (written by `./seeds.sh` from the test kernel).
#![no_main]

use std::io::BufReader;
use std::sync::OnceLock;

use dcg_calls::decode::{Decoder, Options};
use dcg_dbset::DbSet;
use libfuzzer_sys::fuzz_target;

fn db() -> &'static DbSet {
    static DB: OnceLock<DbSet> = OnceLock::new();
    DB.get_or_init(|| {
        let path = std::env::var("DCG_FUZZ_DB").unwrap_or_else(|_| "decode.sigdb".into());
        let db = sigdb::Db::open(&path)
            .unwrap_or_else(|e| panic!("{path}: {e} (run ./seeds.sh or set DCG_FUZZ_DB)"));
        DbSet::new(vec![db])
    })
}

/// The output, or `None` when a line is over the reader's cap (1 MiB).
fn decode(data: &[u8], block: usize, opts: Options) -> Option<Vec<u8>> {
    let mut dec = Decoder::new(db(), opts);
    let mut out = Vec::new();
    if let Err(e) = dec.decode_stream(BufReader::with_capacity(block, data), &mut out) {
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
        return None;
    }
    dec.finish(&mut out).expect("writing to a Vec");
    let _ = dec.summary();
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let opts = Options {
        json: first & 1 != 0,
        errors_only: first & 2 != 0,
        color: first & 4 != 0,
        hide_probe_events: first & 8 != 0,
        // Live tracing's held entries (shares its bit with the block size's lowest).
        collapse_empty: first & 0x10 != 0,
        // Inline frames (the db seeds.sh writes has the test kernel's inline instances;
        // shares its bit with the block size's second).
        inline_frames: first & 0x20 != 0,
    };
    // A small buffer (1..=16 bytes) cuts lines everywhere; a big one reads all at once.
    let small = decode(data, usize::from(first >> 4) + 1, opts);
    let whole = decode(data, data.len().max(1), opts);
    assert!(small == whole, "output depends on the read block size");
});
