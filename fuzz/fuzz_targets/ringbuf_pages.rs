//! The ring-buffer reader on arbitrary bytes: pages of 256 bytes (small pages reach every
//! header and event kind quickly), each record decoded as function_graph by formats with
//! the test kernel's layouts. No panic, whatever the input.
#![no_main]

use dcg_ringbuf::format::Format;
use dcg_ringbuf::graph::GraphFormats;
use libfuzzer_sys::fuzz_target;

const FORMATS: &str = include_str!("ringbuf_formats.txt");

fuzz_target!(|data: &[u8]| {
    let formats = GraphFormats::new(&Format::parse_all(FORMATS).expect("formats")).expect("graph");
    let whole = data.len() / 256 * 256;
    if let Ok(pages) = dcg_ringbuf::page::pages(&data[..whole], 256) {
        for p in &pages {
            for r in &p.records {
                let _ = formats.decode(r);
            }
        }
    }
    let _ = dcg_ringbuf::page::parse_page(data, 0);
});
