//! Chrome trace-event JSON (the format Perfetto and chrome://tracing open): one complete
//! (`"ph":"X"`) slice per call, its arguments and return value as slice args.
//!
//! A track (pid/tid) is a task when the trace names it (`pid`), else a CPU (pid 0, tid =
//! CPU). Slices always nest: where the trace has entry times they are used, clamped into
//! the parent call and after the previous sibling (entry times are printed in µs, durations
//! in ns); without entry times calls are laid out from their durations, each call's self
//! time spread evenly in the gaps between its children. A call without a duration lasts
//! as long as its children plus 1 µs.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::model::{error_of, CallGraph};
use super::ReportInput;

/// Gap between top-level calls and length of a childless call without a duration, ns.
const FILL_NS: u64 = 1000;

/// A track: (pid, tid).
type Track = (u32, u32);

#[derive(Serialize)]
struct Slice<'a> {
    name: &'a str,
    cat: &'static str,
    ph: &'static str,
    ts: f64,
    dur: f64,
    pid: u32,
    tid: u32,
    args: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct Meta {
    name: &'static str,
    ph: &'static str,
    pid: u32,
    tid: u32,
    args: BTreeMap<&'static str, String>,
}

/// Start and end (ns) of every call, and its track.
pub fn layout(graph: &CallGraph) -> (Vec<u64>, Vec<u64>, Vec<Track>) {
    let n = graph.len();
    // Durations, bottom-up (children have larger indexes than their parents).
    let mut dur = vec![0u64; n];
    for i in (0..n).rev() {
        dur[i] = graph.calls[i].duration_ns.unwrap_or_else(|| {
            let kids: u64 = graph.children[i].iter().map(|&c| dur[c]).sum();
            kids + FILL_NS
        });
    }
    let mut start = vec![0u64; n];
    let mut end = vec![0u64; n];
    let mut track = vec![(0, 0); n];
    let mut cursor: BTreeMap<Track, u64> = BTreeMap::new();
    for &r in &graph.roots {
        let c = &graph.calls[r];
        let t = match (c.pid, c.cpu) {
            (Some(pid), _) => (pid, pid),
            (None, Some(cpu)) => (0, cpu),
            (None, None) => (0, 0),
        };
        track[r] = t;
        let s = match (cursor.get(&t), c.time_ns) {
            (Some(&cur), Some(ts)) => ts.max(cur),
            (None, Some(ts)) => ts,
            (Some(&cur), None) => cur + FILL_NS,
            (None, None) => 0,
        };
        start[r] = s;
        end[r] = s + dur[r];
        cursor.insert(t, end[r]);
    }
    for i in 0..n {
        let kids = &graph.children[i];
        if kids.is_empty() {
            continue;
        }
        let (ps, pe) = (start[i], end[i]);
        let sum: u64 = kids.iter().map(|&c| dur[c]).sum();
        let gap = (pe - ps).saturating_sub(sum) / (kids.len() as u64 + 1);
        let mut cur = ps;
        for &c in kids {
            let s = match graph.calls[c].time_ns {
                Some(ts) => ts.max(cur),
                None => cur + gap,
            }
            .min(pe);
            start[c] = s;
            end[c] = (s + dur[c]).min(pe);
            track[c] = track[i];
            cur = end[c];
        }
    }
    (start, end, track)
}

/// Write the trace: metadata naming the tracks, then the slices by track and start.
pub fn write(out: &mut dyn Write, input: &ReportInput, graph: &CallGraph) -> std::io::Result<()> {
    let (start, end, track) = layout(graph);
    // Track names.
    let mut names: BTreeMap<Track, String> = BTreeMap::new();
    for (i, c) in graph.calls.iter().enumerate() {
        names
            .entry(track[i])
            .or_insert_with(|| match (c.pid, &c.comm) {
                (Some(pid), Some(comm)) => format!("{comm}-{pid}"),
                (Some(pid), None) => format!("pid {pid}"),
                (None, _) => format!("CPU {}", track[i].1),
            });
    }
    out.write_all(b"{\"traceEvents\":[")?;
    let mut first = true;
    let mut sep = |out: &mut dyn Write| -> std::io::Result<()> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        first = false;
        Ok(())
    };
    let mut pids: BTreeMap<u32, ()> = BTreeMap::new();
    for (&(pid, tid), name) in &names {
        if pids.insert(pid, ()).is_none() {
            sep(out)?;
            let pname = if pid == 0 {
                "CPUs".to_string()
            } else {
                name.clone()
            };
            serde_json::to_writer(&mut *out, &meta("process_name", pid, 0, pname))?;
        }
        sep(out)?;
        serde_json::to_writer(&mut *out, &meta("thread_name", pid, tid, name.clone()))?;
    }
    let mut order: Vec<usize> = (0..graph.len()).collect();
    order.sort_by_key(|&i| (track[i], start[i], i));
    for i in order {
        let c = &graph.calls[i];
        let mut args: BTreeMap<String, String> = BTreeMap::new();
        for (k, a) in c.args.iter().enumerate() {
            let key = match a.name.as_str() {
                "" => format!("arg{k}"),
                "ret" => "ret (arg)".to_string(),
                n => n.to_string(),
            };
            args.insert(key, a.value.clone());
        }
        if let Some(r) = &c.ret {
            args.insert("ret".into(), r.clone());
        }
        for o in &c.out {
            args.insert(format!("*{}", o.name), o.value.clone());
        }
        let error = error_of(c).is_some();
        let slice = Slice {
            name: &graph.names[graph.func[i] as usize],
            cat: if error { "call,error" } else { "call" },
            ph: "X",
            ts: start[i] as f64 / 1000.0,
            dur: (end[i] - start[i]) as f64 / 1000.0,
            pid: track[i].0,
            tid: track[i].1,
            args,
        };
        sep(out)?;
        serde_json::to_writer(&mut *out, &slice)?;
    }
    let other = serde_json::json!({ "source": input.source, "generator": "dcg report" });
    write!(
        out,
        "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{}}}\n",
        other
    )
}

fn meta(name: &'static str, pid: u32, tid: u32, value: String) -> Meta {
    Meta {
        name,
        ph: "M",
        pid,
        tid,
        args: BTreeMap::from([("name", value)]),
    }
}
