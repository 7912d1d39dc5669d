//! `dcg decode --raw` on arbitrary bytes: ring-buffer pages of 256 bytes, their
//! function_graph records decoded by the test kernel's layouts and fed to the decoder
//! (functions named through a small kallsyms), text or JSON. No panic, and the output
//! bounded by the records (a corrupt depth must not become gigabytes of indentation);
//! run with `-rss_limit_mb=256`.
#![no_main]

use dcg_calls::decode::{Decoder, Options};
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::DbSet;
use dcg_ringbuf::format::Format;
use dcg_ringbuf::graph::{GraphFormats, MAX_DEPTH};
use libfuzzer_sys::fuzz_target;

const FORMATS: &str = include_str!("ringbuf_formats.txt");

const KALLSYMS: &str = "ffffffff81000000 T _stext
ffffffff81000100 T do_sys_open
ffffffff81000200 t path_openat
ffffffff81000300 T vfs_read [ext4]
";

/// The most text one record may print: its indentation at the deepest depth, and the
/// rest of its line (name, values) well below a page.
const PER_RECORD: usize = 2 * MAX_DEPTH as usize + 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let formats = GraphFormats::new(&Format::parse_all(FORMATS).expect("formats")).expect("graph");
    let syms = Kallsyms::parse(KALLSYMS);
    let set = DbSet::new(Vec::new());
    let mut dec = Decoder::new(
        &set,
        Options {
            json: first & 1 != 0,
            errors_only: first & 2 != 0,
            collapse_empty: true,
            ..Options::default()
        },
    );
    if first & 4 != 0 {
        dec.mark_contexts();
    }
    let mut out = Vec::new();
    let mut records = 0usize;
    for (i, page) in data.chunks_exact(256).enumerate() {
        let Ok(page) = dcg_ringbuf::page::parse_page(page, i * 256) else {
            continue;
        };
        for rec in &page.records {
            records += 1;
            if let Some(g) = formats.decode(rec) {
                dec.feed_record(&g, 0, 0, &syms, &mut out)
                    .expect("writing to a Vec");
            }
        }
    }
    dec.finish(&mut out).expect("writing to a Vec");
    assert!(
        out.len() <= (records + 1) * PER_RECORD,
        "{} bytes of output for {records} records",
        out.len()
    );
});
