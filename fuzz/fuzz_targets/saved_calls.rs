//! The saved-calls reader `dcg report` uses (JSON lines, with or without the header)
//! and every report format it feeds, on arbitrary bytes: no panic, and memory bounded by
//! the input (the harness runs with `-rss_limit_mb=256`). The first byte picks the
//! shape: a valid header is put before the rest, or not; the lines are read as records
//! without a header; the report format.
#![no_main]

use dcg_report::{
    load_records, load_saved, write_report, CallGraph, FoldedWeight, Format, InputKind,
    ReportInput, ReportOptions,
};
use libfuzzer_sys::fuzz_target;

const HEADER: &[u8] = b"{\"dcg\":\"calls\",\"version\":1,\"source\":\"fuzz\"}\n";

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let mut input = Vec::with_capacity(HEADER.len() + data.len());
    if first & 1 != 0 {
        input.extend_from_slice(HEADER);
    }
    input.extend_from_slice(data);
    let loaded = if first & 2 != 0 {
        load_records(&input[..], "fuzz")
    } else {
        load_saved(&input[..], "fuzz")
    };
    let Ok(loaded) = loaded else {
        return;
    };
    let Ok(graph) = CallGraph::new(loaded.records) else {
        return;
    };
    let format = match (first >> 2) % 5 {
        0 => Format::Text,
        1 => Format::Json,
        2 => Format::Dot,
        3 => Format::Folded,
        _ => Format::Chrome,
    };
    let opts = ReportOptions {
        format,
        top: 20,
        folded_weight: if first & 0x80 != 0 {
            FoldedWeight::SelfNs
        } else {
            FoldedWeight::Calls
        },
    };
    let input = ReportInput {
        source: "fuzz".into(),
        kind: InputKind::SavedCalls,
        root: None,
    };
    let root = (first & 0x40 != 0)
        .then(|| graph.names.first().cloned())
        .flatten();
    let graph = match root {
        Some(f) => graph.restrict_to(&f),
        None => graph,
    };
    let mut out = Vec::new();
    let _ = write_report(&opts, &input, &graph, &mut out);
});
