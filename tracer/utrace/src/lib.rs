//! Live user-space tracing with uprobes: `dcg trace --func ./prog:PATTERN -- ./prog`.
//!
//! For each function a pattern selects in an unmodified binary with DWARF, dcg places in
//! its private tracefs instance a uprobe at the entry, fetching the arguments from their
//! DWARF locations (and the text of `char *` arguments), and a uretprobe fetching
//! `$retval`. The event stream is rebuilt into per-thread call trees with durations and
//! printed in the function_graph layout, every value rendered by its type exactly as the
//! kernel tracer does (`ret=-EINVAL`, `true`, enum names, `NULL`, `"string"`).
//!
//! A command is started stopped, so no call is missed; `-p PID` attaches to a running
//! process and its threads and detaches (removing every probe) when dcg stops. Without
//! either, every process running the binary is traced. The probes and the instance are
//! removed on every exit path: normal end, error, SIGINT/SIGTERM, the traced program
//! exiting or crashing.

pub mod hooks;
pub mod inproc;
pub mod plan;
pub mod probe_feed;
pub mod symbolize;

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use dcg_fgraph::parse_event_line;
use dcg_live::options::{split_user_func, TraceOptions};
use dcg_live::tracefs::{self, EventFile, Session, TracePipe};

use dcg_live::process::{self, Child, Ended};
use plan::{InlineSite, Probe, Target, Value};
use probe_feed::{Calls, EventSink, Meta};

/// Exit code when a pattern matches nothing.
pub const EXIT_NO_MATCH: u8 = 2;

/// Why tracing stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The traced command ended.
    Ended(Ended),
    /// The attached process is gone.
    Gone,
    /// `--count` reached.
    Count,
    /// `--duration` elapsed.
    Duration,
    /// A signal asked to stop.
    Signal(i32),
    /// Standard output was closed.
    OutputClosed,
}

/// Errors of a user-space trace session.
#[derive(Debug, thiserror::Error)]
pub enum UtraceError {
    /// A `--func` that is not `PATH:PATTERN`.
    #[error("--func {0}: not of the form PATH:PATTERN")]
    Spec(String),
    /// A binary that cannot be found or read.
    #[error("{path}: {what}")]
    Binary {
        /// The path given or resolved.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// No db for a binary.
    #[error(transparent)]
    Db(#[from] dcg_dbresolve::DbError),
    /// The command could not be started, or `-p` names no process.
    #[error(transparent)]
    Process(#[from] dcg_live::process::ProcessError),
    /// `-p PID` names no running process.
    #[error("process {0}: no such process")]
    NoProcess(i32),
    /// The kernel has no uprobe events.
    #[error(
        "this kernel has no uprobe events ({0} is missing: a kernel built without \
         CONFIG_UPROBE_EVENTS); trace a command with --engine inproc instead"
    )]
    NoUprobes(String),
    /// Not root: tracefs or its uprobe_events file is not this user's.
    #[error("uprobes need root (CAP_SYS_ADMIN and tracefs access): run as root ({0})")]
    NeedsRoot(String),
    /// A probe could not be created.
    #[error("probing {what}: {error}")]
    Probe {
        /// Which function (and whether its return).
        what: String,
        /// tracefs's refusal.
        error: dcg_live::tracefs::TraceFsError,
    },
    /// tracefs refused something.
    #[error(transparent)]
    TraceFs(#[from] dcg_live::tracefs::TraceFsError),
    /// Reading the stream or writing the output failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing an output file failed (the message names it).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
    /// Setting up or closing the outputs failed.
    #[error(transparent)]
    Pipeline(#[from] dcg_calls::pipeline::PipelineError),
}

pub(crate) type Result<T> = std::result::Result<T, UtraceError>;

/// How a session ended.
#[derive(Debug, Default)]
pub struct Finished {
    /// The exit code: the traced command's (128 + signal when it was killed), 2 when a
    /// pattern matches nothing, 1 when dcg could not clean up.
    pub exit: u8,
    /// The calls, when collected for a report (`--report`).
    pub calls: Option<Vec<dcg_calls::saved_format::CallRecord>>,
}

/// Run `dcg trace` for `PATH:PATTERN` functions, notes for the user to `note` as they
/// come.
pub fn run(
    args: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    out: &mut dyn Write,
    note: &mut dyn FnMut(&str),
) -> Result<Finished> {
    // A stop signal before tracefs is touched ends dcg at once (see tracefs).
    tracefs::install_stop_handlers();
    let mut notes = Vec::new();
    // Targets, one per distinct file.
    let mut targets: Vec<Target> = Vec::new();
    let mut specs: Vec<(usize, String)> = Vec::new();
    for f in &args.func {
        let Some((path, pattern)) = split_user_func(f) else {
            return Err(UtraceError::Spec(f.clone()));
        };
        let resolved = plan::resolve_binary(path, args.pid).or_else(|e| {
            match args.command.first() {
                // `dcg trace --func prog:main -- prog`: the command's own file.
                Some(cmd) if cmd == path => process::command_path(cmd).map_err(Into::into),
                // `--func libc.so.6:strlen -- prog`: a library the command loads.
                Some(cmd) => process::command_path(cmd)
                    .ok()
                    .and_then(|exe| plan::library_of_command(&exe, path))
                    .ok_or(e),
                None => Err(e),
            }
        })?;
        let resolved = resolved.canonicalize().unwrap_or(resolved);
        let idx = match targets.iter().position(|t| t.path == resolved) {
            Some(i) => i,
            None => {
                targets.push(plan::load_target(
                    path, &resolved, &args.db, sources, &mut notes,
                )?);
                targets.len() - 1
            }
        };
        specs.push((idx, pattern.to_string()));
    }
    // The engine: in process for a command dcg starts, else uprobes.
    use dcg_live::options::Engine;
    let in_process = match (args.engine, inproc::unavailable(args, &targets)) {
        (Engine::Uprobe, _) => false,
        (Engine::Inproc, Some(why)) => {
            return Err(UtraceError::Io(std::io::Error::other(format!(
                "--engine inproc: {why}"
            ))))
        }
        (Engine::Inproc, None) => true,
        (_, Some(why)) => {
            notes.push(format!("engine: uprobes ({why})"));
            false
        }
        (_, None) => true,
    };
    if in_process {
        notes.push(format!(
            "engine: in process ({} preloaded into {})",
            inproc::RECORDER,
            args.command.first().map_or("the command", String::as_str)
        ));
        notes.extend(inproc::unseen_constructors(args, &targets));
    }
    let reads = if in_process {
        plan::Reads::IN_PROCESS
    } else {
        plan::Reads::UPROBES
    };
    // Inlined copies are shown as frames: calls made from their code under them.
    let frames = !args.no_inline_frames;
    let mut selected = Vec::new();
    let mut copies = Vec::new();
    let mut failed = Vec::new();
    // The command's own DWARF declares the library functions it calls: prototypes for
    // those no DWARF describes (named without wildcards; the command not a target).
    let command_db = args
        .command
        .first()
        .filter(|_| specs.iter().any(|(_, p)| !p.contains(['*', '?'])))
        .and_then(|c| plan::resolve_binary(c, None).ok())
        .filter(|c| !targets.iter().any(|t| &t.path == c))
        .and_then(|c| {
            let given = c.display().to_string();
            let local = dcg_dbresolve::DbSources {
                net: None,
                ..sources.clone()
            };
            plan::load_target(&given, &c, &[], &local, &mut Vec::new()).ok()
        })
        .map(|t| t.db);
    let prototypes: Vec<&sigdb::Db> = command_db.iter().collect();
    for (t, pattern) in &specs {
        match plan::select(&targets, &prototypes, *t, pattern, frames, &mut notes) {
            Ok(s) => {
                selected.extend(s.funcs);
                copies.extend(s.copies);
            }
            Err(msg) => failed.push(msg),
        }
    }
    let mut probes = plan::plan_probes(
        &targets,
        &selected,
        args.args,
        args.show_retvals,
        frames,
        reads,
        &mut notes,
    );
    let inlines = if frames {
        plan::plan_inlines(
            &targets,
            &copies,
            &mut probes,
            args.args,
            !in_process,
            &mut notes,
        )
    } else {
        Vec::new()
    };
    // In process: how each function is hooked; those the recorder cannot hook are
    // traced with uprobes, planned for what uprobes read.
    let hooks = if in_process {
        let hooks = inproc::hooks(&targets, &prototypes, &mut probes, &mut notes)?;
        if hooks.iter().any(Option::is_none) {
            let by_uprobes = plan::plan_probes(
                &targets,
                &selected,
                args.args,
                args.show_retvals,
                frames,
                plan::Reads::UPROBES,
                &mut Vec::new(),
            );
            for (i, h) in hooks.iter().enumerate() {
                if h.is_none() {
                    probes[i] = by_uprobes[i].clone();
                }
            }
        }
        hooks
    } else {
        Vec::new()
    };
    if let Some(why) = plan::unreadable_note(&probes) {
        notes.push(why);
    }
    for n in notes.drain(..) {
        note(&n);
    }
    if !failed.is_empty() {
        for f in &failed {
            note(f);
        }
        return Ok(Finished {
            exit: EXIT_NO_MATCH,
            calls: None,
        });
    }
    if probes.is_empty() {
        note("nothing to probe");
        return Ok(Finished {
            exit: EXIT_NO_MATCH,
            calls: None,
        });
    }
    if in_process {
        let no_db = dcg_dbset::DbSet::new(Vec::new());
        let source = source_name(args, &targets, "in process");
        let mut calls = calls_for(&no_db, &probes, &inlines, &targets, args, source)?;
        let finished = inproc::run(&targets, &probes, hooks, &mut calls, args, out, note)?;
        calls.close()?;
        return Ok(finished);
    }
    if let Some(pid) = args.pid {
        if !process::is_alive(pid) {
            return Err(UtraceError::NoProcess(pid));
        }
    }
    let root = uprobe_root()?;
    // Handlers first: a SIGINT in the middle of removing stale sessions must not leave
    // one half removed, unreported (the stop is seen once the trace starts).
    tracefs::arm_stop_handlers();
    for r in tracefs::remove_stale(&root) {
        note(&format!("removed stale {r}"));
    }
    let mut tracer = Tracer::setup(&root, &targets, &probes, &inlines, args, note)?;
    let result = tracer.trace(&targets, &probes, &inlines, args, out, note);
    let failures = tracer.session.close();
    for f in &failures {
        note(&format!("cleanup: {f}"));
    }
    let mut finished = result?;
    if !failures.is_empty() {
        finished.exit = 1;
    }
    Ok(finished)
}

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
const EXEC_EVENT: &str = "sched_process_exec";

/// A running trace: the session with its probes, and the traced process.
struct Tracer {
    session: Session,
    child: Option<Child>,
    events: HashMap<String, Event>,
}

impl Tracer {
    /// Create the instance and the probes, start the command (stopped) or find the
    /// threads of `-p`, filter the instance on them and enable the probes.
    fn setup(
        root: &std::path::Path,
        targets: &[Target],
        probes: &[Probe<'_>],
        inlines: &[InlineSite<'_>],
        args: &TraceOptions,
        note: &mut dyn FnMut(&str),
    ) -> Result<Tracer> {
        let (mut session, mut events) =
            probe_session(root, targets, probes, 0..probes.len(), !args.no_children)?;
        let group = session.group().to_string();
        for (i, s) in inlines.iter().enumerate() {
            let (Some(event), Some(line)) = (&s.event, s.def(&group, &targets[s.target].path))
            else {
                continue;
            };
            match session.add_event(EventFile::Uprobe, event, &line) {
                Ok(()) => {
                    events.insert(event.clone(), Event::Inline(i));
                }
                // The copy's frame still opens at its first call, without arguments.
                Err(e) => {
                    for c in &s.copies {
                        note(&format!(
                            "no probe on {} inlined in {} ({e}): its frame opens at its \
                             first call, without arguments",
                            c.callee().map_or("?", |f| f.name()),
                            c.caller().map_or("?", |f| f.symbol()),
                        ));
                    }
                }
            }
        }
        // An exec ends the calls its thread had open: the new program starts a new tree.
        let exec = format!("events/sched/{EXEC_EVENT}/enable");
        if session.has(&exec) {
            session.write(&exec, "1")?;
            events.insert(EXEC_EVENT.to_string(), Event::Exec);
        }
        let mut child = None;
        let pids: Vec<i32> = if let Some(pid) = args.pid {
            process::threads_of(pid)?
        } else if !args.command.is_empty() {
            let c = Child::spawn_at_exec(&args.command)?;
            let pid = c.pid();
            child = Some(c);
            vec![pid]
        } else {
            Vec::new()
        };
        if !pids.is_empty() {
            let list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
            session.write("set_event_pid", &list.join(" "))?;
        }
        session.write(&format!("events/{group}/enable"), "1")?;
        session.write("tracing_on", "1")?;
        Ok(Tracer {
            session,
            child,
            events,
        })
    }

    /// Stream events until a stop condition; print calls; returns the exit code.
    fn trace(
        &mut self,
        targets: &[Target],
        probes: &[Probe<'_>],
        inlines: &[InlineSite<'_>],
        args: &TraceOptions,
        out: &mut dyn Write,
        note: &mut dyn FnMut(&str),
    ) -> Result<Finished> {
        // Probes name their functions: the tree looks nothing up by name.
        let no_db = dcg_dbset::DbSet::new(Vec::new());
        let source = source_name(args, targets, "uprobes");
        let mut calls = calls_for(&no_db, probes, inlines, targets, args, source)?;
        let mut pipe = self.session.open_pipe()?;
        if let Some(c) = self.child.as_mut() {
            c.resume()?;
        }
        let mut stream = Stream::new(&self.events, probes, inlines);
        if args.no_children {
            let pid = self.child.as_ref().map(|c| c.pid()).or(args.pid);
            stream.only_process(pid);
        }
        let stop = read_until_stop(
            &mut self.child,
            &mut pipe,
            &mut stream,
            &mut calls,
            args,
            out,
        )?;
        // Stop recording, then drain what is already in the buffer.
        let _ = self.session.write("tracing_on", "0");
        if matches!(
            stop,
            Stop::Ended(_) | Stop::Gone | Stop::Duration | Stop::Signal(_)
        ) {
            drain(&mut pipe, &mut stream, &mut calls, out, args.count)?;
        }
        stream.flush_carry(&mut calls, out)?;
        let (overrun, dropped) = self.session.buffer_stats();
        drop(pipe);
        ignore_closed(calls.finish(out))?;
        ignore_closed(out.flush())?;
        let collected = calls.take_collected();
        calls.close()?;
        let lost = stream.lost_seen.max(overrun + dropped);
        if lost > 0 {
            note(&format!(
                "LOST {lost} events (ring buffer overrun): some calls are missing or incomplete"
            ));
        }
        if stream.unparsed > 0 {
            note(&format!(
                "{} event lines could not be parsed",
                stream.unparsed
            ));
        }
        Ok(Finished {
            exit: end_of(stop, &mut self.child, args, note),
            calls: collected,
        })
    }
}

/// What became of the traced process, said in a note; the exit code.
pub(crate) fn end_of(
    stop: Stop,
    child: &mut Option<Child>,
    args: &TraceOptions,
    note: &mut dyn FnMut(&str),
) -> u8 {
    {
        match stop {
            Stop::Ended(e) => {
                let c = child.as_ref().map_or(0, |c| c.pid());
                let cmd = args.command.first().map_or("command", String::as_str);
                if e != Ended::Exited(0) {
                    note(&format!("{cmd} (pid {c}) {}", e.describe()));
                }
                return e.code();
            }
            Stop::Gone => {
                if let Some(p) = args.pid {
                    note(&format!("process {p} exited"));
                }
            }
            Stop::Count | Stop::Duration | Stop::Signal(_) | Stop::OutputClosed => {
                if let Some(p) = args.pid {
                    note(&format!(
                        "detached from process {p} ({}); its probes are removed",
                        process::comm_of(p)
                    ));
                } else if let Some(c) = child.as_mut() {
                    // Like `perf record -- CMD`: the command runs for the trace; end it
                    // (with the signal dcg got, else SIGTERM).
                    let sig = match stop {
                        Stop::Signal(s) if s != nix::libc::SIGPIPE => {
                            nix::sys::signal::Signal::try_from(s)
                                .unwrap_or(nix::sys::signal::Signal::SIGTERM)
                        }
                        _ => nix::sys::signal::Signal::SIGTERM,
                    };
                    let pid = c.pid();
                    if let Some(e) = c.terminate(sig) {
                        note(&format!(
                            "stopped tracing; {} (pid {pid}) was still running: {}",
                            args.command.first().map_or("command", String::as_str),
                            e.describe()
                        ));
                    }
                }
            }
        }
        0
    }
}

/// A private tracefs instance with the entry and return uprobes of `probes[which]`
/// (event-fork on: threads and children of a filtered pid follow; without `children`
/// each event names its process, `record-tgid`, for [`Stream::only_process`]), tracing
/// off; their events.
pub(crate) fn probe_session(
    root: &std::path::Path,
    targets: &[Target],
    probes: &[Probe<'_>],
    which: impl Iterator<Item = usize>,
    children: bool,
) -> Result<(Session, HashMap<String, Event>)> {
    let mut session = Session::create(root)?;
    let group = session.group().to_string();
    let _ = session.write("tracing_on", "0");
    if session.has("options/event-fork") {
        session.write("options/event-fork", "1")?;
    }
    if !children {
        session.write("options/record-tgid", "1")?;
    }
    let mut events = HashMap::new();
    for i in which {
        let p = &probes[i];
        let path = &targets[p.target].path;
        session
            .add_event(
                EventFile::Uprobe,
                &p.entry_event,
                &p.entry_def(&group, path),
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

/// Read the pipe into the calls until a stop condition.
fn read_until_stop(
    child: &mut Option<Child>,
    pipe: &mut TracePipe,
    stream: &mut Stream<'_, '_>,
    calls: &mut Calls<'_>,
    args: &TraceOptions,
    out: &mut dyn Write,
) -> Result<Stop> {
    let deadline = args
        .duration
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let mut lines = Vec::new();
    loop {
        if let Some(sig) = tracefs::stop_requested() {
            return Ok(Stop::Signal(sig));
        }
        // Check for the end before reading, so what the process did last is drained.
        let ended = match child.as_mut() {
            Some(c) => c.poll().map(Stop::Ended),
            None => args
                .pid
                .filter(|&p| !process::is_alive(p))
                .map(|_| Stop::Gone),
        };
        let timeout = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
            None => Duration::from_millis(100),
        };
        lines.clear();
        pipe.read_lines(timeout, &mut lines)?;
        match stream.feed(&lines, calls, out, args.count) {
            Ok(true) => return Ok(Stop::Count),
            Ok(false) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Stop::OutputClosed),
            Err(e) => return Err(e.into()),
        }
        if let Some(s) = ended {
            return Ok(s);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Stop::Duration);
        }
        match out.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Stop::OutputClosed),
            r => r?,
        }
    }
}

/// The call pipeline of a session: its output options, and the name to show for tasks
/// the trace lost the name of (the traced program's).
fn calls_for<'a>(
    no_db: &'a dcg_dbset::DbSet,
    probes: &'a [Probe<'a>],
    inlines: &'a [InlineSite<'a>],
    targets: &'a [Target],
    args: &TraceOptions,
    source: String,
) -> Result<Calls<'a>> {
    let opts = probe_feed::Options {
        args: args.args,
        retvals: args.show_retvals,
        max_depth: args.depth,
        errno: args.errno,
        inline_frames: !args.no_inline_frames,
    };
    let spec = dcg_calls::outputs::OutputSpec {
        json: args.json,
        errors_only: args.errors_only,
        color: args.color,
        cpu_width: cpu_width(),
        threads: true,
        report: args.report,
        saved: args.output.clone(),
        source,
        ..Default::default()
    };
    let mut calls = Calls::new(no_db, probes, inlines, targets, opts, &spec)?;
    calls.set_default_comm(match (args.pid, args.command.first()) {
        (Some(p), _) => Some(process::comm_of(p)),
        // The kernel names a task after the first 15 bytes of the executable's name.
        (None, Some(cmd)) => std::path::Path::new(cmd).file_name().map(|n| {
            let n = n.to_string_lossy();
            let mut end = n.len().min(15);
            while !n.is_char_boundary(end) {
                end -= 1;
            }
            n[..end].to_string()
        }),
        (None, None) => None,
    });
    Ok(calls)
}

/// A closed standard output at the end is not an error.
pub(crate) fn ignore_closed(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Turns trace_pipe lines into calls: event lookup, field parsing, multi-line strings.
pub(crate) struct Stream<'e, 'p> {
    events: &'e HashMap<String, Event>,
    probes: &'e [Probe<'p>],
    inlines: &'e [InlineSite<'p>],
    /// An event whose string field continues on the next line (a `\n` in it).
    carry: Option<String>,
    /// `[LOST N EVENTS]` totals.
    lost_seen: u64,
    /// Event lines of this session that did not parse.
    unparsed: u64,
    done: bool,
    /// `--no-children`: only this process's threads (by the events' `record-tgid`).
    only: Option<u32>,
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
        }
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
        line.ends_with('"') || line.ends_with("(fault)")
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
        let values: Vec<Value> = match plan::parse_fields(pe.fields_raw, fields) {
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
            cpu: ev.cpu,
            ts: ev.timestamp_ns().unwrap_or(0),
            ip: (!is_return)
                .then(|| pe.func.and_then(dcg_fgraph::parse_number))
                .flatten(),
        };
        if is_return {
            calls.ret(&m, probe, &values, out)
        } else {
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
fn drain(
    pipe: &mut TracePipe,
    stream: &mut Stream<'_, '_>,
    calls: &mut Calls<'_>,
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

/// Width of the CPU column: digits of the highest possible CPU number.
fn cpu_width() -> usize {
    let max = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            s.trim()
                .rsplit([',', '-'])
                .next()
                .and_then(|n| n.parse::<u32>().ok())
        })
        .unwrap_or(0);
    max.to_string().len()
}

fn source_name(args: &TraceOptions, targets: &[Target], engine: &str) -> String {
    let files: Vec<String> = targets
        .iter()
        .map(|t| t.path.display().to_string())
        .collect();
    match (args.pid, args.command.is_empty()) {
        (Some(p), _) => format!("{engine} on {} in pid {p}", files.join(", ")),
        (None, false) => format!(
            "{engine} on {}: {}",
            files.join(", "),
            args.command.join(" ")
        ),
        (None, true) => format!("{engine} on {}", files.join(", ")),
    }
}
