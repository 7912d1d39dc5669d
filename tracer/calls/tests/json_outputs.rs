//! `--json` with `--output FILE`: both sinks get the same line for each completed call
//! (made once), the file starts with its header, and a saved-calls stream gathers lines
//! into large writes without losing any: neither at `finish` nor when dropped unflushed.

mod common;

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use common::Ev::{Enter, Exit};
use dcg_calls::funcs::FuncTable;
use dcg_calls::record_sinks::SavedCalls;
use dcg_calls::saved_format::{self, RecordSink};
use dcg_calls::sink::{Sink, Task};
use dcg_calls::tree::{CallTree, Shape};
use dcg_dbset::DbSet;

/// A writer that keeps what it was given and counts the writes.
#[derive(Clone, Default)]
struct Kept(Rc<RefCell<(Vec<u8>, usize)>>);

impl Write for Kept {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let mut k = self.0.borrow_mut();
        k.0.extend_from_slice(b);
        k.1 += 1;
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn task() -> Task<'static> {
    Task {
        key: 3,
        pid: Some(3),
        comm: Some("sh"),
        cpu: Some(1),
        process: None,
    }
}

#[test]
fn json_output_and_saved_calls_have_the_same_lines() {
    let set = DbSet::new(Vec::new());
    let mut sinks = common::sinks(true);
    let file = Kept::default();
    sinks.push(Box::new(
        SavedCalls::new(Box::new(file.clone()), "json_outputs").unwrap(),
    ));
    let header_writes = file.0.borrow().1;
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let mut events = Vec::new();
    for i in 0..2_000u64 {
        events.extend([
            Enter("outer", i * 100, None),
            Enter("inner", i * 100 + 10, None),
            Exit("inner", i * 100 + 20),
            Exit("outer", i * 100 + 30),
        ]);
    }
    let out = common::drive(&mut tree, &mut sinks, task(), &events);
    let kept = file.0.borrow();
    let saved = String::from_utf8(kept.0.clone()).unwrap();
    let (header, rest) = saved.split_once('\n').unwrap();
    assert!(saved_format::is_header(header), "{header}");
    assert_eq!(out.lines().count(), 4_000);
    assert_eq!(rest, out, "the file's records are the output's lines");
    // Gathered: 4,000 records in chunks of ~256 KiB, not a write a line.
    let writes = kept.1 - header_writes;
    assert!(writes <= 5, "{writes} writes for {} bytes", kept.0.len());
}

#[test]
fn a_dropped_stream_still_writes_its_lines() {
    let file = Kept::default();
    {
        let mut sink = RecordSink::new(Box::new(file.clone()), "dropped").unwrap();
        sink.write_line(b"{\"id\":1}\n").unwrap();
        sink.write_line(b"{\"id\":2}\n").unwrap();
    }
    let text = String::from_utf8(file.0.borrow().0.clone()).unwrap();
    assert!(text.ends_with("{\"id\":1}\n{\"id\":2}\n"), "{text}");
}

#[test]
fn saved_calls_alone_still_writes_records() {
    // Fed directly (not through Sinks), the sink makes its own lines.
    let set = DbSet::new(Vec::new());
    let file = Kept::default();
    let mut saved = SavedCalls::new(Box::new(file.clone()), "alone").unwrap();
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let out = common::drive(
        &mut tree,
        &mut saved,
        task(),
        &[Enter("f", 0, None), Exit("f", 5)],
    );
    assert!(out.is_empty());
    saved.finish(&mut Vec::new()).unwrap();
    let text = String::from_utf8(file.0.borrow().0.clone()).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.lines().nth(1).unwrap().contains("\"func\":\"f\""),
        "{text}"
    );
}
