//! Uprobe events, read by both engines (the in-process engine for the functions its
//! recorder cannot hook): the tracefs root they need, a private instance with each
//! function's entry and return probes, and the trace_pipe lines turned into calls.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use dcg_fgraph::parse_event_line;
use dcg_live::process;
use dcg_live::tracefs::{self, EventFile, Session, TracePipe};

use crate::error::{Result, UtraceError};
use crate::plan::{self, InlineSite, Probe, Target, Value};
use crate::probe_feed::{self, EventSink, Meta};

/// The tracefs directory whose `uprobe_events` this user may write: a typed error when
/// tracefs is not this user's (not root) or the kernel has no uprobe events.
pub(crate) fn uprobe_root() -> Result<std::path::PathBuf> {
    let denied = |e: tracefs::TraceFsError| match e {
        tracefs::TraceFsError::NoAccess { path, reason } => {
            UtraceError::NeedsRoot(format!("{}: {reason}", path.display()))
        }
        tracefs::TraceFsError::NotRoot { path } => {
            UtraceError::NeedsRoot(format!("tracefs is not mounted at {}", path.display()))
        }
        e => UtraceError::TraceFs(e),
    };
    let root = tracefs::mount_point().map_err(denied)?;
    let events = root.join("uprobe_events");
    if !tracefs::writable(&events).map_err(denied)? {
        return Err(UtraceError::NoUprobes(events.display().to_string()));
    }
    Ok(root)
}

/// What an event of the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// The entry of probe N's function.
    Entry(usize),
    /// Its return.
    Return(usize),
    /// The first instruction of inlined copies (inline site N).
    Inline(usize),
    /// The entry of probe N's function, where its return address is read when its entry
    /// probe sits after the prologue.
    CallSite(usize),
    /// A traced thread called `exec` (`sched_process_exec`).
    Exec,
}

/// The tracepoint that says a process runs another program.
pub(crate) const EXEC_EVENT: &str = "sched_process_exec";

/// Bytes of stack an entry event copies with `--stack`: four arrays of 64 words (the
/// longest array a probe's fetch takes), within the page a uprobe's fetched values share.
pub(crate) const STACK_COPY: usize = 2048;

/// The instance's buffer per CPU with `--stack` (KiB).
const STACK_BUFFER_KB: &str = "8192";

/// The fetches an entry event adds with `--stack`, after all others: the stack and frame
/// pointers, then [`STACK_COPY`] bytes from the stack pointer up.
fn stack_fetches() -> String {
    let mut s = String::from(" ssp=%sp:x64 sbp=%bp:x64");
    for k in 0..STACK_COPY / 512 {
        s.push_str(&format!(" sk{k}=+{}(%sp):x64[64]", k * 512));
    }
    s
}

/// The stack an entry event's fields end with (`--stack`): the fields before it and its
/// words (the stack and frame pointers, then the copied words).
fn split_stack(raw: &str) -> Option<(&str, Vec<u64>)> {
    let at = raw.rfind(" ssp=")?;
    let mut words = Vec::with_capacity(2 + STACK_COPY / 8);
    for field in raw[at..].split_whitespace() {
        let (_, value) = field.split_once('=')?;
        let value = value.trim_start_matches('{').trim_end_matches('}');
        for w in value.split(',') {
            words.push(dcg_fgraph::parse_number(w)?);
        }
    }
    Some((&raw[..at], words))
}

/// A private tracefs instance with the entry and return uprobes of `probes[which]`
/// (event-fork on: threads and children of a filtered pid follow; each event names its
/// process, `record-tgid`), tracing off; their events.
pub(crate) fn probe_session(
    root: &std::path::Path,
    targets: &[Target],
    probes: &[Probe<'_>],
    which: impl Iterator<Item = usize>,
    stacks: bool,
) -> Result<(Session, HashMap<String, Event>)> {
    let mut session = Session::create(root)?;
    let group = session.group().to_string();
    let _ = session.write("tracing_on", "0");
    if stacks {
        // Each entry event carries STACK_COPY bytes: room for a few thousand per CPU
        // (the default holds some six hundred).
        session.write("buffer_size_kb", STACK_BUFFER_KB)?;
    }
    if session.has("options/event-fork") {
        session.write("options/event-fork", "1")?;
    }
    // Each event names its process: the saved calls' `tgid` (`--filter pid`), and
    // without `children` what [`Stream::only_process`] keeps.
    session.write("options/record-tgid", "1")?;
    let mut events = HashMap::new();
    for i in which {
        let p = &probes[i];
        let path = &targets[p.target].path;
        session
            .add_event(
                EventFile::Uprobe,
                &p.entry_event,
                &(p.entry_def(&group, path)
                    + if stacks {
                        stack_fetches()
                    } else {
                        String::new()
                    }
                    .as_str()),
            )
            .map_err(|error| UtraceError::Probe {
                what: format!("{} in {}", p.symbol, path.display()),
                error,
            })?;
        if !p.jump.returns_twice() {
            session
                .add_event(
                    EventFile::Uprobe,
                    &p.return_event,
                    &p.return_def(&group, path),
                )
                .map_err(|error| UtraceError::Probe {
                    what: format!("the return of {} in {}", p.symbol, path.display()),
                    error,
                })?;
            events.insert(p.return_event.clone(), Event::Return(i));
        }
        events.insert(p.entry_event.clone(), Event::Entry(i));
        if let (Some(event), Some(line)) = (&p.ra_event, p.ra_def(&group, path)) {
            session
                .add_event(EventFile::Uprobe, event, &line)
                .map_err(|error| UtraceError::Probe {
                    what: format!("the entry of {} in {}", p.symbol, path.display()),
                    error,
                })?;
            events.insert(event.clone(), Event::CallSite(i));
        }
    }
    Ok((session, events))
}

/// Turns trace_pipe lines into calls: event lookup, field parsing, multi-line strings.
pub(crate) struct Stream<'e, 'p> {
    events: &'e HashMap<String, Event>,
    probes: &'e [Probe<'p>],
    inlines: &'e [InlineSite<'p>],
    /// An event whose string field continues on the next line (a `\n` in it).
    carry: Option<String>,
    /// `[LOST N EVENTS]` totals.
    pub(crate) lost_seen: u64,
    /// Event lines of this session that did not parse.
    pub(crate) unparsed: u64,
    done: bool,
    /// `--no-children`: only this process's threads (by the events' `record-tgid`).
    only: Option<u32>,
    /// `--stack`: entry events end with the stack's top ([`stack_fetches`]).
    stacks: bool,
}

impl<'e, 'p> Stream<'e, 'p> {
    pub(crate) fn new(
        events: &'e HashMap<String, Event>,
        probes: &'e [Probe<'p>],
        inlines: &'e [InlineSite<'p>],
    ) -> Self {
        Stream {
            events,
            probes,
            inlines,
            carry: None,
            lost_seen: 0,
            unparsed: 0,
            done: false,
            only: None,
            stacks: false,
        }
    }

    /// Entry events end with the stack's top (the session was made with stacks).
    pub(crate) fn with_stacks(&mut self) {
        self.stacks = true;
    }

    /// Pass on only the events of process `pid`'s threads (`--no-children`: event-fork
    /// adds the children to the pid filter along with the threads). The session must
    /// record tgids ([`probe_session`] without `children`).
    pub(crate) fn only_process(&mut self, pid: Option<i32>) {
        self.only = pid.map(|p| p as u32);
    }

    /// Feed lines; returns true once `count` top-level calls completed (the rest is
    /// ignored).
    pub(crate) fn feed(
        &mut self,
        lines: &[String],
        calls: &mut dyn EventSink,
        out: &mut dyn Write,
        count: Option<u64>,
    ) -> std::io::Result<bool> {
        for line in lines {
            if self.done {
                return Ok(true);
            }
            if let Some(mut c) = self.carry.take() {
                if parse_event_line(line).is_none() && lost_line(line).is_none() {
                    c.push('\n');
                    c.push_str(line);
                    if self.entry_complete(&c) {
                        self.line(&c, calls, out, true)?;
                    } else {
                        self.carry = Some(c);
                    }
                    continue;
                }
                self.line(&c, calls, out, true)?;
            }
            self.line(line, calls, out, false)?;
            if count.is_some_and(|n| calls.top_level() >= n) {
                self.done = true;
                return Ok(true);
            }
        }
        Ok(self.done)
    }

    pub(crate) fn flush_carry(
        &mut self,
        calls: &mut dyn EventSink,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        if let Some(c) = self.carry.take() {
            self.line(&c, calls, out, true)?;
        }
        Ok(())
    }

    /// Whether a (possibly joined) entry line with string fields has all of them.
    fn entry_complete(&self, line: &str) -> bool {
        line.ends_with('"') || line.ends_with("(fault)") || (self.stacks && line.ends_with('}'))
    }

    fn line(
        &mut self,
        line: &str,
        calls: &mut dyn EventSink,
        out: &mut dyn Write,
        joined: bool,
    ) -> std::io::Result<()> {
        if let Some((cpu, n)) = lost_line(line) {
            self.lost_seen += n;
            return calls.lost(cpu, n, out);
        }
        let Some(ev) = parse_event_line(line) else {
            return Ok(());
        };
        if let Some(want) = self.only {
            // A tgid the kernel had not saved: the thread's own, while it lives.
            if ev.tgid.or_else(|| process::tgid_of(ev.pid)) != Some(want) {
                return Ok(());
            }
        }
        let Some(name) = ev.event else {
            return Ok(());
        };
        let Some(&event) = self.events.get(name) else {
            return Ok(());
        };
        if event == Event::Exec {
            // `filename=/usr/bin/ls pid=12 old_pid=13`: a thread other than the leader
            // that calls exec takes the leader's id; the calls of both end.
            let old = ev
                .body
                .split_whitespace()
                .find_map(|f| f.strip_prefix("old_pid="))
                .and_then(|p| p.parse::<u32>().ok());
            let ts = ev.timestamp_ns().unwrap_or(0);
            for tid in std::iter::once(ev.pid).chain(old.filter(|&o| o != ev.pid)) {
                let m = Meta {
                    comm: probe_feed::UNKNOWN_COMM,
                    tid,
                    pid: ev.tgid,
                    cpu: ev.cpu,
                    ts,
                    ip: None,
                };
                calls.exec(&m, out)?;
            }
            return Ok(());
        }
        let Some(pe) = ev.probe() else {
            self.unparsed += 1;
            return Ok(());
        };
        let (probe, is_return) = match event {
            Event::Entry(p) => (p, false),
            Event::Return(p) => (p, true),
            Event::Inline(i) => {
                let values = plan::parse_fields(pe.fields_raw, &self.inlines[i].fields);
                if values.is_none() {
                    self.unparsed += 1;
                }
                let m = Meta {
                    comm: ev.comm,
                    tid: ev.pid,
                    pid: ev.tgid,
                    cpu: ev.cpu,
                    ts: ev.timestamp_ns().unwrap_or(0),
                    ip: pe.func.and_then(dcg_fgraph::parse_number),
                };
                return calls.inline(&m, i, values.as_deref(), out);
            }
            Event::CallSite(p) => {
                match plan::parse_fields(pe.fields_raw, &plan::ra_fields()).as_deref() {
                    Some(&[Value::Num(ra)]) => calls.call_site(ev.pid, p, ra),
                    _ => self.unparsed += 1,
                }
                return Ok(());
            }
            Event::Exec => return Ok(()),
        };
        let p = &self.probes[probe];
        let fields = if is_return {
            &p.ret_fields
        } else {
            &p.entry_fields
        };
        if !joined && fields.last().is_some_and(|f| f.string) && !self.entry_complete(line) {
            self.carry = Some(line.to_string());
            return Ok(());
        }
        let (raw, stack) = match (self.stacks && !is_return, split_stack(pe.fields_raw)) {
            (true, Some((raw, words))) => (raw, Some(words)),
            _ => (pe.fields_raw, None),
        };
        let values: Vec<Value> = match plan::parse_fields(raw, fields) {
            Some(v) => v,
            None => {
                self.unparsed += 1;
                Vec::new()
            }
        };
        // The name the entry probe fetched; a return takes its call's (`<...>`: known).
        let comm = match (is_return, values.last()) {
            (false, Some(Value::Str(c))) => c.as_str(),
            (true, _) => probe_feed::UNKNOWN_COMM,
            _ => ev.comm,
        };
        let m = Meta {
            comm,
            tid: ev.pid,
            pid: ev.tgid,
            cpu: ev.cpu,
            ts: ev.timestamp_ns().unwrap_or(0),
            ip: (!is_return)
                .then(|| pe.func.and_then(dcg_fgraph::parse_number))
                .flatten(),
        };
        if is_return {
            calls.ret(&m, probe, &values, out)
        } else {
            if let Some(words) = stack {
                calls.user_stack(&m, probe, &words);
            }
            calls.entry(&m, probe, &values, out)
        }
    }
}

/// `CPU:1 [LOST 123 EVENTS]` → (cpu, count).
fn lost_line(line: &str) -> Option<(u32, u64)> {
    let rest = line.trim().strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let n = rest
        .trim()
        .strip_prefix("[LOST ")?
        .strip_suffix(" EVENTS]")?;
    Some((cpu.parse().ok()?, n.parse().ok()?))
}

/// Read what is left in the buffer (recording is off) until the pipe is empty.
pub(crate) fn drain(
    pipe: &mut TracePipe,
    stream: &mut Stream<'_, '_>,
    calls: &mut dyn EventSink,
    out: &mut dyn Write,
    count: Option<u64>,
) -> Result<()> {
    let mut lines = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        lines.clear();
        pipe.read_lines(Duration::from_millis(30), &mut lines)?;
        if lines.is_empty() || Instant::now() > until {
            return Ok(());
        }
        match stream.feed(&lines, calls, out, count) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}
