//! Fuzz the function_graph and event line parsers: no input may panic, and every
//! offset and iterator must stay within the line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use dcg_fgraph::{parse_event_line, parse_line, parse_number, Line, Marker};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        check(line);
    }
});

fn check(line: &str) {
    let parsed = parse_line(line);
    if let Some(p) = parsed.prefix() {
        assert!(p.indent_start <= p.prefix_end && p.prefix_end <= line.len());
        let _ = (p.abstime_ns(), p.abstime_secs());
    }
    match parsed {
        Line::Entry(c) | Line::Leaf(c) => {
            assert!(c.call_end <= line.len());
            for (name, value) in c.arg_pairs() {
                let _ = (name.len(), parse_number(value));
            }
            if let Some(r) = c.ret {
                let _ = (r.value, r.is_decimal());
            }
        }
        Line::Exit(e) => {
            if let Some(r) = e.ret {
                let _ = (r.value, r.is_decimal());
            }
        }
        Line::Comment(c) => {
            if let Some(p) = c.probe {
                for (name, value) in p.fields() {
                    let _ = (name.len(), parse_number(value));
                }
            }
        }
        Line::Marker(Marker::ContextSwitch { from, to, .. }) => {
            let _ = (from.comm.len(), to.pid);
        }
        Line::Marker(_) | Line::Other => {}
    }
    if let Some(e) = parse_event_line(line) {
        assert!(e.text_start <= line.len());
        let _ = e.timestamp_ns();
        if let Some(p) = e.probe() {
            for (name, value) in p.fields() {
                let _ = (name.len(), parse_number(value));
            }
        }
    }
}
