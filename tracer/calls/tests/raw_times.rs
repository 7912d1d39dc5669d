//! function_graph's binary records on one clock: a call's end is its exit record's time,
//! the same clock as its entry's, not the entry's time plus the kernel's own duration
//! (`rettime - calltime`, measured on the local clock around the hooks). When the entry
//! record was written late, that sum put the call's end past its real return, outside
//! the user call around it in a joint session (a CI failure: a `do_sys_openat2` shown
//! ending 0.63 ms after the `load_config` that made it had returned). Where the entry
//! record was lost, the kernel's duration is all there is.

mod common;

use dcg_calls::saved_format::CallRecord;
use dcg_dbset::DbSet;

/// `open` entered at 1000 on the kernel's clock, its entry record stamped 1600 (written
/// late), its exit record stamped 9100; `lookup` inside it recorded normally; then a
/// second `open` whose entry record is missing. JSON lines or the text.
fn trace(json: bool) -> String {
    let set = DbSet::new(Vec::new());
    let (base, syms) = (common::KBASE, common::open_and_lookup());
    let mut dec = common::raw_decoder(&set, json);
    let entry = |func: u64, ts: u64, depth: u32| common::graph_entry(7, func, ts, depth);
    let exit = |func: u64, ts: u64, calltime: u64, rettime: u64, depth: u32| {
        common::graph_exit(7, func, ts, (calltime, rettime), depth)
    };
    let mut out = Vec::new();
    for r in [
        entry(base, 1_600, 0),
        entry(base + 0x1000, 2_000, 1),
        exit(base + 0x1000, 2_500, 2_000, 2_480, 1),
        exit(base, 9_100, 1_000, 9_000, 0),
        exit(base, 20_100, 12_000, 20_000, 0),
    ] {
        dec.feed_record(&r, 0, 0, &syms, &mut out).unwrap();
    }
    dec.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn saved() -> Vec<CallRecord> {
    trace(true)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_call_ends_at_its_exit_records_time() {
    let calls = saved();
    let open = calls.iter().find(|c| c.func == "open").expect("open");
    let lookup = calls.iter().find(|c| c.func == "lookup").expect("lookup");
    assert_eq!((open.time_ns, open.duration_ns), (Some(1_600), Some(7_500)));
    assert_eq!(
        (lookup.time_ns, lookup.duration_ns),
        (Some(2_000), Some(500))
    );
    // The child lies within its parent on the one clock.
    let end = |c: &CallRecord| c.time_ns.unwrap() + c.duration_ns.unwrap();
    assert!(lookup.time_ns >= open.time_ns && end(lookup) <= end(open));
}

#[test]
fn without_its_entry_record_a_call_keeps_the_kernels_duration() {
    let text = trace(false);
    assert!(
        text.contains(" 7.500 us    |  } /* open ret=0x3 (raw) */"),
        "{text}"
    );
    assert!(
        text.contains(" 8.000 us    |  } /* open ret=0x3 (raw) (entry not seen) */"),
        "{text}"
    );
}
