//! The function_graph engine: function_graph in a private instance
//! (`instances/dcg-<pid>`), graph roots multiplexed through the shared top-level
//! `set_graph_function` ([`dcg_live::graphfilter`]), the stream cut to this session's
//! trees ([`crate::stream_filter::TreeFilter`], or [`crate::rawtree`] for binary pages) and
//! decoded by type ([`dcg_calls::decode::Decoder`]). Kernels without `funcgraph-retval` /
//! `funcgraph-args` get values from exit / entry probe events ([`crate::probes`]) joined to
//! the calls.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use dcg_calls::decode::{Decoder, Options};
use dcg_calls::outputs::Outputs;
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::symbols::SymbolMap;
use dcg_dbset::DbSet;
use dcg_live::graphfilter::{Registration, Registry};
use dcg_live::process::Child;
use dcg_live::tracefs::{self, Session};

use crate::error::{KtraceError, Result};
use crate::features::Features;
use crate::funcs::{self, Available};
use crate::outcome::{Notice, Summary};
use crate::plan::KernelPlan;
use crate::probes::Probes;
use crate::stream_filter::{Feedback, TreeFilter};
use crate::{debug, rawtree, PROBE_CAP};

mod probing;

/// Levels of static callee discovery below the roots when `--depth` is not given.
const STATIC_DEPTH: u32 = 2;
/// Most functions given lazy probes per read of the pipe.
const LAZY_PER_ROUND: usize = 8;
/// At most this many bytes of binary pages wait undecoded in memory (past the spool's
/// bound they go to its file; where it cannot take them, they are decoded as they come
/// from this size on).
const DEFER_MAX: usize = 256 << 20;
/// Longest the session keeps recording after the command exited (children it forked may
/// still run); what was recorded is then read whole.
const DRAIN_MAX: Duration = Duration::from_secs(3);

/// What a probe event's dereferences call in the kernel (mm/maccess.c), and what a read
/// through a `NULL` pointer (an address below the user-space top: a user read) runs when
/// it faults and the kernel fixes it up: not traced in a session with `--fields` or
/// `--deref` probes (globs of the instance's `set_ftrace_notrace`).
const FETCH_HELPERS: [&str; 9] = [
    "copy_from_kernel_nofault",
    "copy_from_kernel_nofault_allowed",
    "copy_from_user_nofault",
    "nmi_uaccess_okay",
    "bad_area_nosemaphore",
    "__bad_area_nosemaphore",
    "kernelmode_fixup_or_oops*",
    "fixup_exception",
    "search_exception_tables",
];

/// Where the session's records are read from: the binary pages, or the text pipe (and the
/// lines read from it).
struct Reader {
    pipe: Option<tracefs::TracePipe>,
    raw: Option<rawtree::RawSource>,
    lines: Vec<String>,
}

/// Add the stream's lost-event notices to the summary.
fn count_lost(summary: &mut Summary, lost: Vec<Option<u64>>) {
    for n in lost {
        match n {
            Some(n) => summary.lost_in_stream += n,
            None => summary.lost_unknown = true,
        }
    }
}

/// The trees shown so far, as `--count` counts them: those a filter kept, else every
/// completed one.
fn shown(dec: &Decoder<'_>, summary: &Summary) -> u64 {
    if dec.selects() {
        dec.trees_shown()
    } else {
        summary.completed
    }
}

fn opt(sess: &mut Session, name: &str, on: bool) -> Result<()> {
    Ok(sess.set_option(name, on)?)
}

/// Trace `roots` (already resolved) with function_graph: set the instance up, create the
/// probe events, run until a stop condition, clean up.
pub(crate) fn run(
    plan: &KernelPlan<'_>,
    outputs: Outputs,
    out: &mut dyn Write,
    notify: &mut dyn FnMut(Notice),
) -> Result<Summary> {
    run_when_ready(plan, outputs, out, notify, &mut || {})
}

/// [`run`], calling `ready` once the kernel records (the kernel half of a session tracing
/// both sides lets the command run then).
pub(crate) fn run_when_ready(
    plan: &KernelPlan<'_>,
    outputs: Outputs,
    out: &mut dyn Write,
    notify: &mut dyn FnMut(Notice),
    ready: &mut dyn FnMut(),
) -> Result<Summary> {
    let mut s = Setup::new(plan)?;
    s.probe(notify)?;
    s.start(notify)?;
    ready();
    let mut summary = s.trace(outputs, out, notify)?;
    s.close(&mut summary)?;
    Ok(summary)
}

/// A session being set up and run.
struct Setup<'s> {
    plan: &'s KernelPlan<'s>,
    set: &'s DbSet,
    root: &'s Path,
    avail: &'s Available,
    roots: &'s [String],
    // Declared before the session so that it is dropped after it: the instance goes
    // first, then the graph functions are given back.
    registration: Option<Registration>,
    sess: Session,
    child: Option<Child>,
    filter: TreeFilter,
    probes: Probes,
    want_exit: bool,
    want_entry: bool,
    /// Callees this many levels below a root get probes (static discovery and lazily).
    lazy_depth: u32,
    pipe: Option<tracefs::TracePipe>,
    /// The binary source, when the session needs no probe events.
    raw: Option<rawtree::RawSource>,
    /// `/proc/kallsyms`, read and parsed once (names of functions in binary records, of
    /// pointers; the kernel text the probes' callees are found in).
    kallsyms: Kallsyms,
    /// The kernel's flag tables, read while the session is set up (taken by the decoder).
    flags: Option<crate::plan::FlagTablesRead>,
    /// The probe events reading `--fields` members: (event, function).
    member_events: Vec<(String, String)>,
    /// `--deref`, `--fields`: each traced function gets probe events copying its structs
    /// at the entry (`--deref`) and reading its output parameters at the return.
    want_reads: bool,
    /// Those probe events: (event, function, what it reads); those from `reads_told` on
    /// are not yet known to the decoder (created lazily).
    read_events: Vec<(String, String, probing::Reads)>,
    reads_told: usize,
}

impl<'s> Setup<'s> {
    /// The instance: output columns, values the kernel can print itself, pid filter.
    fn new(plan: &'s KernelPlan<'s>) -> Result<Setup<'s>> {
        let (root, roots) = (plan.tracefs.as_path(), plan.roots.as_slice());
        let flags = plan.flag_tables();
        let mut sess = Session::create(root)?;
        let feat = Features::detect(&sess, plan.tuning.fgraph_probes);
        let want_reads = !plan.derefs.by_func.is_empty() || !plan.derefs.outs.is_empty();
        let probes_needed = (plan.session.values.retvals && !feat.retval)
            || (plan.session.values.args && !feat.args)
            || !plan.fields.is_empty()
            || want_reads;
        let raw = !probes_needed && !plan.tuning.fgraph_text;
        if plan.session.joined && !raw {
            return Err(KtraceError::JointNeedsBinary(if probes_needed {
                "the values asked for need probe events here (their lines have no times)"
            } else {
                "--fgraph-text reads text"
            }));
        }
        if plan.session.values.retvals && !feat.retval && feat.fprobe_on_fgraph {
            return Err(KtraceError::ExitProbesWarn);
        }
        let child = if plan.session.target.command().is_empty() {
            None
        } else {
            Some(Child::spawn_stopped(plan.session.target.command())?)
        };
        let target = child
            .as_ref()
            .map(|c| c.pid())
            .or(plan.session.target.pid());
        opt(&mut sess, "funcgraph-proc", true)?;
        opt(&mut sess, "funcgraph-tail", false)?;
        let kernel_retvals = plan.session.values.retvals && feat.retval;
        opt(&mut sess, "funcgraph-retval", kernel_retvals)?;
        opt(
            &mut sess,
            "funcgraph-retaddr",
            kernel_retvals && feat.retaddr,
        )?;
        let kernel_args = plan.session.values.args && feat.args;
        opt(&mut sess, "funcgraph-args", kernel_args)?;
        if plan.session.stack && !raw {
            return Err(KtraceError::StackNeedsBinary(if probes_needed {
                "the values asked for need probe events here (their text has no stacks)"
            } else {
                "--fgraph-text reads text"
            }));
        }
        // Interrupts in the traced tasks' trees (`--irqs show`): the kernel records the
        // hardirqs' calls with funcgraph-irqs (softirqs always), each record with the
        // context it ran in, read from the binary records. With `--irqs hide` the kernel
        // leaves hardirqs out itself (recording them only to drop them costs the traced
        // load, and every BPF program an interrupt runs is recorded too); the outputs
        // leave out the rest. The text (probe events' sessions) has no context per line:
        // hardirqs are left out there.
        opt(
            &mut sess,
            "funcgraph-irqs",
            raw && !plan.outputs.hide_interrupts,
        )?;
        if plan.session.joined {
            // The user side's clock.
            sess.write("trace_clock", "mono")?;
        }
        // Binary reading (no probe events: see `start`) copies pages out faster than the
        // text is formatted, but a 4 MiB buffer per CPU is still only ~140 ms of a busy
        // traced loop under TCG: give it 16 MiB.
        let _ = sess.write("buffer_size_kb", if raw { "16384" } else { "4096" });
        if let Some(pid) = target {
            sess.write("set_ftrace_pid", &pid.to_string())?;
            opt(&mut sess, "function-fork", true)?;
            if sess.has("set_event_pid") {
                sess.write("set_event_pid", &pid.to_string())?;
                opt(&mut sess, "event-fork", true)?;
            }
        }
        // `--notrace`: those functions are not traced; their callees are, under the
        // nearest traced caller.
        for p in &plan.notrace {
            // The instance is removed whole when the session ends.
            tracefs::append(&sess.file("set_ftrace_notrace"), p)
                .map_err(|e| KtraceError::Notrace(p.clone(), e))?;
        }
        // `--fields`, `--deref`: the probe events' reads of kernel memory call these below
        // the traced function, before the event is written: left out, so that the event
        // follows its call's line (and a traced function's own calls of them are not
        // shown).
        if !plan.fields.is_empty() || want_reads {
            for f in FETCH_HELPERS {
                let _ = tracefs::append(&sess.file("set_ftrace_notrace"), f);
            }
        }
        // Never dcg itself (reading the pipe would trace itself).
        let me = std::process::id().to_string();
        if sess.has("set_ftrace_notrace_pid") {
            let _ = sess.write("set_ftrace_notrace_pid", &me);
        }
        if sess.has("set_event_notrace_pid") {
            let _ = sess.write("set_event_notrace_pid", &me);
        }
        debug(format_args!("instance set up, features {feat:?}"));
        let filter = TreeFilter::new(roots.iter().cloned(), plan.session.depth);
        let lazy_depth = match plan.session.depth {
            0 => STATIC_DEPTH,
            d => (d - 1).min(STATIC_DEPTH + 1),
        };
        Ok(Setup {
            plan,
            set: plan.dbs,
            root,
            avail: &plan.avail,
            roots,
            registration: None,
            sess,
            child,
            filter,
            probes: Probes::new(PROBE_CAP),
            want_exit: plan.session.values.retvals && !feat.retval,
            want_entry: plan.session.values.args && !feat.args,
            lazy_depth,
            pipe: None,
            raw: None,
            kallsyms: Kallsyms::parse(
                &std::fs::read_to_string("/proc/kallsyms").unwrap_or_default(),
            ),
            flags: Some(flags),
            member_events: Vec::new(),
            want_reads,
            read_events: Vec::new(),
            reads_told: 0,
        })
    }

    /// Register the roots in the graph filter, switch to function_graph.
    fn start(&mut self, notify: &mut dyn FnMut(Notice)) -> Result<()> {
        let registration = Registry::system(self.root)
            .register(std::process::id(), self.roots)
            .map_err(KtraceError::Register)?;
        if !registration.rejected.is_empty() {
            notify(Notice::GraphRejected(registration.rejected.clone()));
        }
        self.registration = Some(registration);
        debug(format_args!(
            "{} probes; graph functions registered",
            self.probes.len()
        ));
        self.sess.write("current_tracer", "function_graph")?;
        debug(format_args!("function_graph on"));
        self.sess.write("tracing_on", "1")?;
        // Binary pages where no probe events are needed (probe events are decoded from
        // their text); the text pipe otherwise, or when the binary layout is unusable.
        let events = self.want_exit
            || self.want_entry
            || !self.member_events.is_empty()
            || !self.read_events.is_empty();
        if !(events || self.plan.tuning.fgraph_text) {
            let filter =
                rawtree::RawTreeFilter::new(self.roots.iter().cloned(), self.plan.session.depth);
            match rawtree::RawSource::open(&self.sess, self.root, &self.kallsyms, filter) {
                Ok(mut raw) => {
                    debug(format_args!("reading trace_pipe_raw"));
                    let bound = self.plan.tuning.records_in_memory;
                    raw.keep_in_memory(bound.unwrap_or(dcg_spool::IN_MEMORY));
                    if self.plan.session.stack {
                        self.stack_probes(&raw)?;
                    }
                    self.raw = Some(raw);
                    return Ok(());
                }
                Err(e) if self.plan.session.joined => {
                    debug(format_args!("trace_pipe_raw unusable: {e}"));
                    return Err(KtraceError::JointNeedsBinary("they are unusable here"));
                }
                Err(e) if self.plan.session.stack => {
                    debug(format_args!("trace_pipe_raw unusable: {e}"));
                    return Err(KtraceError::StackNeedsBinary("they are unusable here"));
                }
                Err(e) => {
                    debug(format_args!("trace_pipe_raw unusable ({e}): reading text"));
                    opt(&mut self.sess, "funcgraph-irqs", false)?;
                }
            }
        }
        self.pipe = Some(self.sess.open_pipe()?);
        Ok(())
    }

    /// `--stack`: a `stacktrace` function probe on each root, in the instance (its
    /// records go to the instance's buffer; the instance's removal takes the probes with
    /// it). Registered after function_graph started, the probe runs before function_graph's
    /// entry hook: a root's stack comes just before its entry record. The kernel's own
    /// unwinder takes it at the root's entry, where only the root's own return on the stack
    /// goes through function_graph's return trampoline.
    fn stack_probes(&mut self, raw: &rawtree::RawSource) -> Result<()> {
        if !raw.reads_stacks() {
            return Err(KtraceError::StackNeedsBinary(
                "this kernel has no kernel_stack event",
            ));
        }
        for r in self.roots {
            tracefs::append(
                &self.sess.file("set_ftrace_filter"),
                &format!("{r}:stacktrace"),
            )
            .map_err(|e| KtraceError::StackProbe(r.clone(), e))?;
        }
        Ok(())
    }

    /// The trace loop: read the pipe, keep this session's trees, decode them to `out`,
    /// add lazy probes for callees seen; until a stop condition.
    fn trace(
        &mut self,
        outputs: Outputs,
        out: &mut dyn Write,
        notify: &mut dyn FnMut(Notice),
    ) -> Result<Summary> {
        // Pointers that land on a kernel symbol are named (`idmap=&nop_mnt_idmap`).
        let pointer_names = self.kallsyms.symbol_map();
        let flags = self.flags.take().and_then(|f| f.join());
        let mut dec = self.decoder(&pointer_names, outputs, flags)?;
        self.tell_reads(&mut dec);
        self.announce(notify)?;
        let mut summary = Summary::default();
        let mut reader = Reader {
            pipe: self.pipe.take(),
            raw: self.raw.take(),
            lines: Vec::new(),
        };
        let stop_reason = self.record(&mut reader, &mut dec, out, &mut summary)?;
        debug(format_args!("loop ended: {stop_reason}"));
        let _ = self.sess.write("tracing_on", "0");
        self.read_rest(&mut reader, &mut dec, out, &mut summary)?;
        if let Some(raw) = reader.raw.as_ref() {
            debug(format_args!(
                "pages kept in the temporary directory while the command ran: {} bytes",
                raw.spooled()
            ));
        }
        dec.finish(out)?;
        out.flush()?;
        if let Some(c) = self.child.as_mut() {
            c.terminate(Signal::SIGTERM);
        }
        drop(reader);
        (summary.overrun, summary.dropped) = self.sess.buffer_stats();
        if self.want_exit {
            summary.valueless = dec
                .valueless()
                .into_iter()
                .filter(|(f, _)| !funcs::returns_void(self.set, f))
                .collect();
        }
        summary.stop_reason = stop_reason;
        summary.probes = self.probes.len();
        summary.probes_capped = self.probes.capped;
        summary.probes_failed = self.probes.failed.clone();
        summary.undecoded = dec.summary();
        summary.calls = dec.close()?;
        Ok(summary)
    }

    /// The decoder with the session's outputs (the saved-calls file, when `--output` asks
    /// for one, committed once the trace ends: [`Decoder::close`]).
    fn decoder<'d>(
        &self,
        pointer_names: &'d SymbolMap,
        outputs: Outputs,
        flags: Option<std::rc::Rc<dcg_kflags::FlagTables>>,
    ) -> Result<Decoder<'d>>
    where
        's: 'd,
    {
        let plan = self.plan;
        let opts = Options {
            json: plan.outputs.json,
            errors_only: plan.outputs.errors_only,
            color: plan.outputs.color,
            hide_probe_events: true,
            collapse_empty: true,
            inline_frames: plan.session.inline_frames,
        };
        let mut dec = Decoder::with_outputs(self.set, opts, outputs);
        dec.set_pointer_names(pointer_names);
        if let Some(t) = flags {
            dec.set_flag_tables(t);
        }
        for (ev, func) in &self.member_events {
            if let Some(reads) = plan.fields.by_func.get(func) {
                dec.read_members(ev, crate::probes::member_fields(reads));
            }
        }
        dec.mark_contexts();
        Ok(dec)
    }

    /// Say what is traced, and let the command run.
    fn announce(&mut self, notify: &mut dyn FnMut(Notice)) -> Result<()> {
        notify(Notice::Tracing {
            functions: self.roots.len(),
            target: self
                .plan
                .session
                .traced(self.child.as_ref().map(|c| c.pid())),
            probes: self.probes.len(),
        });
        if let Some(c) = self.child.as_mut() {
            c.resume()?;
        }
        Ok(())
    }

    /// Read and decode until a stop condition; the reason it stopped.
    fn record<'d>(
        &mut self,
        reader: &mut Reader,
        dec: &mut Decoder<'d>,
        out: &mut dyn Write,
        summary: &mut Summary,
    ) -> Result<String>
    where
        's: 'd,
    {
        let plan = self.plan;
        let start = Instant::now();
        let deadline = plan.session.stop.deadline(start);
        let mut drain_until: Option<Instant> = None;
        let mut drain_end: Option<Instant> = None;
        Ok(loop {
            if let Some(sig) = tracefs::stop_requested() {
                break format!("signal {sig}");
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break "duration reached".into();
            }
            if drain_until.is_none() {
                // The command ended, or the process given with -p is gone: what is left
                // in the buffers is read, then the session stops.
                let ended = match (self.child.as_mut(), plan.session.target.pid()) {
                    (Some(c), _) => c.poll().is_some(),
                    (None, Some(p)) => !dcg_live::process::is_alive(p),
                    (None, None) => false,
                };
                if ended {
                    drain_until = Some(Instant::now() + Duration::from_millis(700));
                    drain_end = Some(Instant::now() + DRAIN_MAX);
                }
            }
            if drain_end.is_some_and(|d| Instant::now() >= d) {
                break "command exited".into();
            }
            reader.lines.clear();
            // No poll: a waiting reader makes the ring buffer raise an irq_work per event,
            // which function_graph records inside the traced calls.
            // Nothing shown before the end and nothing to count: while the command
            // runs, pages are only copied out (decoding them competes with the traced
            // load for the CPU), and decoded once it ends or too many wait.
            if let Some(raw) = reader.raw.as_mut() {
                if plan.session.shown_at_end
                    && plan.session.stop.count.is_none()
                    && drain_until.is_none()
                    && raw.pending() < DEFER_MAX
                {
                    // A short pause whatever was read: the per-CPU buffers hold far
                    // more than one, and spinning on partly filled pages takes the CPU
                    // from the traced load.
                    if raw.drain()? < rawtree::PAGES_PER_ROUND {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    continue;
                }
            }
            let (got, fb, done) = self.read_round(reader, dec, out, summary.completed, true)?;
            // What this round decoded counts whether or not the session ends here.
            dec.flush_out(out)?;
            summary.completed += fb.completed;
            out.flush()?;
            count_lost(summary, fb.lost);
            if got == 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            if let Some(d) = drain_until {
                if got == 0 && Instant::now() >= d {
                    break "command exited".into();
                }
                if got > 0 {
                    drain_until = Some(Instant::now() + Duration::from_millis(400));
                }
            }
            self.lazy_probes(fb.seen);
            self.tell_reads(dec);
            if done {
                break format!("{} calls", shown(dec, summary));
            }
        })
    }

    /// What was recorded before tracing stopped, read whole (a time limit here silently
    /// lost the last calls of a long capture), unless the count is reached.
    fn read_rest(
        &mut self,
        reader: &mut Reader,
        dec: &mut Decoder<'_>,
        out: &mut dyn Write,
        summary: &mut Summary,
    ) -> Result<()> {
        while self
            .plan
            .session
            .stop
            .count
            .is_none_or(|n| shown(dec, summary) < n)
        {
            reader.lines.clear();
            let (got, fb, _) = self.read_round(reader, dec, out, summary.completed, false)?;
            summary.completed += fb.completed;
            count_lost(summary, fb.lost);
            dec.flush_out(out)?;
            if got == 0 {
                break;
            }
        }
        Ok(())
    }

    /// One read of the binary pages or the text pipe, decoded as far as `--count` allows
    /// (`completed` top-level calls so far): pages or lines read, what the stream said,
    /// and whether the count is reached. `log`: say what the pipe gave (debug level).
    fn read_round(
        &mut self,
        reader: &mut Reader,
        dec: &mut Decoder<'_>,
        out: &mut dyn Write,
        completed: u64,
        log: bool,
    ) -> Result<(usize, Feedback, bool)> {
        // Trees a filter selects are counted once decoded (the outputs show no more
        // than the count), not in the stream.
        let count = self.plan.session.stop.count;
        let (count, shown_count) = if dec.selects() {
            (None, count)
        } else {
            (count, None)
        };
        let mut fb = Feedback::default();
        let mut done = false;
        let got = if let Some(raw) = reader.raw.as_mut() {
            let left = count.map(|n| n.saturating_sub(completed));
            let r = raw.read(dec, out, left)?;
            fb.completed = r.completed;
            fb.lost = r.lost;
            done = left.is_some_and(|n| r.completed >= n);
            r.pages
        } else if let Some(pipe) = reader.pipe.as_mut() {
            let lines = &mut reader.lines;
            pipe.read_available(lines)?;
            if log && !lines.is_empty() {
                debug(format_args!("{} lines, first: {}", lines.len(), lines[0]));
            }
            for l in lines.iter() {
                self.filter.feed(l, dec, &mut fb)?;
                if count.is_some_and(|n| completed + fb.completed >= n) {
                    done = true;
                    break;
                }
            }
            lines.len()
        } else {
            0
        };
        let done = done || shown_count.is_some_and(|n| dec.trees_shown() >= n);
        Ok((got, fb, done))
    }

    /// Cleanup: the instance and the probes, then the graph functions.
    fn close(&mut self, summary: &mut Summary) -> Result<()> {
        debug(format_args!("closing the session"));
        summary.cleanup_failures = self.sess.close();
        debug(format_args!("session closed"));
        if let Some(mut r) = self.registration.take() {
            r.unregister().map_err(KtraceError::Unregister)?;
        }
        Ok(())
    }
}
