//! The probes' events (uprobes, or the in-process recorder's) fed to the call pipeline as
//! a flat source: each entry and return event of a probe becomes a call event for one
//! [`dcg_calls::pipeline::Pipeline`], whose outputs print the function_graph layout, JSON
//! lines, saved calls, or the `--errors-only` paths.

use std::collections::HashMap;
use std::io::Write;

use dcg_calls::funcs::{FuncId, FuncTable};
use dcg_calls::outputs::Outputs;
use dcg_calls::pipeline::{Pipeline, PipelineError};
use dcg_calls::sink::{ArgList, Note, Task};
use dcg_calls::tree::{ArgsIn, CallTree, CodeSite, Entry, Exit, RetIn, Shape};
use dcg_dbset::DbSet;
use dcg_render::Role;

use super::plan::{setjmp_returns, ArgPlan, InlineSite, Jump, Probe, Target, Value};
use super::symbolize::Symbolizer;

/// What the source reads and shows (the outputs are opened [`Outputs`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Print arguments.
    pub args: bool,
    /// Print return values.
    pub retvals: bool,
    /// Print calls only down to this depth (0: all).
    pub max_depth: u32,
    /// Read values by the kernel's error conventions (`-EINVAL`, `ERR_PTR`): off for user
    /// space unless asked (`--errno`).
    pub errno: bool,
    /// Inlined copies shown as frames: calls made from their code are placed under them
    /// by their return addresses.
    pub inline_frames: bool,
    /// `--stack`: entry events carry the stack's top ([`EventSink::user_stack`]).
    pub stacks: bool,
}

impl Options {
    fn role(&self, ret: bool) -> Role {
        match (self.errno, ret) {
            (false, _) => Role::Plain,
            (true, false) => Role::Arg,
            (true, true) => Role::Return,
        }
    }
}

/// Where and when an event happened.
#[derive(Debug, Clone, Copy)]
pub struct Meta<'e> {
    /// Thread command name.
    pub comm: &'e str,
    /// Thread id.
    pub tid: u32,
    /// Its process, when the event says (the recorder's ring, a uprobe event's
    /// `record-tgid`).
    pub pid: Option<u32>,
    /// CPU.
    pub cpu: u32,
    /// Timestamp in ns.
    pub ts: u64,
    /// Where the probe hit (run-time address), when the event says.
    pub ip: Option<u64>,
}

/// Counters of a run.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Completed calls.
    pub calls: u64,
    /// Completed top-level calls.
    pub top_level: u64,
    /// Return events whose entry was not seen.
    pub lone_returns: u64,
    /// Calls left open (no return seen: the task ended, crashed, or the trace stopped).
    pub unfinished: u64,
    /// Events lost (`[LOST N EVENTS]`).
    pub lost: u64,
}

/// What trace_pipe prints for a task whose name it no longer knows.
pub const UNKNOWN_COMM: &str = "<...>";

/// The uprobe source: probes' events into the call tree and its sinks.
pub struct Calls<'a> {
    probes: &'a [Probe<'a>],
    /// The first instructions of inlined copies.
    inlines: &'a [InlineSite<'a>],
    /// Per target, the probed functions' code `[start, end)` (ELF addresses) and their
    /// probes, by address: which traced function a return address is in.
    code: Vec<Vec<(u64, u64, usize)>>,
    /// Load bias of each target in each thread's process, by (thread, target): the
    /// run-time address of an entry probe's hit minus its ELF address.
    bias: HashMap<(u32, usize), u64>,
    /// Return addresses read at the entry of functions whose entry probe sits after the
    /// prologue, by thread: (probe, address), for the entry event that follows.
    entry_ra: HashMap<u32, (usize, u64)>,
    /// The `jmp_buf`s traced `setjmp`s filled, by (thread, address): the probe of the
    /// `setjmp` and the thread's open calls then (its caller's depth), where a `longjmp`
    /// on that buffer returns.
    jmp_bufs: HashMap<(u32, u64), (usize, usize)>,
    /// Threads inside a `longjmp`: the depth it returns to. At the thread's next event
    /// the calls above it are closed (an engine that sees frames go, the in-process one,
    /// has closed them by then).
    jumping: HashMap<u32, usize>,
    /// The comment of the entry being built (a `longjmp`'s).
    comment: String,
    /// The call tree, its sinks, the output buffer, the saved-calls file.
    pipe: Pipeline<'a>,
    /// Each probe's function in the tree.
    ids: Vec<FuncId>,
    opts: Options,
    comms: HashMap<u32, String>,
    /// Each thread's process: as its events said, else from /proc while it lives.
    processes: HashMap<u32, Option<u32>>,
    default_comm: Option<String>,
    lost: u64,
    args: ArgList,
    /// A return's output parameters.
    outs: ArgList,
    symbolizer: Symbolizer<'a>,
    /// `--stack`: unwinds the stacks entry events carry.
    stacks: Option<crate::ustack::UserStacks<'a>>,
}

impl<'a> Calls<'a> {
    /// A source for events of `probes` and `inlines` (functions of `targets`, looked up
    /// in `set`) feeding the outputs of `spec`.
    pub fn new(
        set: &'a DbSet,
        probes: &'a [Probe<'a>],
        inlines: &'a [InlineSite<'a>],
        targets: &'a [Target],
        opts: Options,
        outputs: Outputs,
    ) -> Calls<'a> {
        let mut funcs = FuncTable::new(set);
        let ids = probes
            .iter()
            .map(|p| match p.func {
                Some(f) => funcs.intern_function(f, Some(&targets[p.target].name)),
                None => funcs.intern(&p.symbol, None),
            })
            .collect();
        // The functions inlined in the traced ones (the frames their copies can open),
        // named by their binary as every traced function is.
        if opts.inline_frames {
            for p in probes {
                for i in p.func.iter().flat_map(|f| f.inline_instances()) {
                    if let Some(c) = i.callee() {
                        funcs.intern_function(c, Some(&targets[p.target].name));
                    }
                }
            }
        }
        let mut code = vec![Vec::new(); targets.len()];
        for (i, p) in probes.iter().enumerate() {
            if let Some(f) = p.func {
                code[p.target].push((p.addr, p.addr + u64::from(f.size()), i));
            }
        }
        for c in &mut code {
            c.sort_unstable();
        }
        let mut tree = CallTree::new(funcs, Shape::Flat, opts.max_depth);
        tree.show_inline_frames(opts.inline_frames);
        tree.set_inline_arg_role(opts.role(false));
        let pipe = Pipeline::new(tree, outputs);
        Calls {
            probes,
            inlines,
            code,
            bias: HashMap::new(),
            entry_ra: HashMap::new(),
            jmp_bufs: HashMap::new(),
            jumping: HashMap::new(),
            comment: String::new(),
            pipe,
            ids,
            opts,
            comms: HashMap::new(),
            processes: HashMap::new(),
            default_comm: None,
            lost: 0,
            args: ArgList::default(),
            outs: ArgList::default(),
            symbolizer: Symbolizer::new(targets),
            stacks: opts.stacks.then(|| crate::ustack::UserStacks::new(targets)),
        }
    }

    /// The calls collected for a report (`--report`), taken out.
    pub fn take_collected(&self) -> Option<Vec<dcg_calls::saved_format::CallRecord>> {
        self.pipe.take_collected()
    }

    /// The end of the outputs: the saved-calls file committed ([`Pipeline::close`]).
    pub fn close(self) -> Result<(), PipelineError> {
        self.pipe.close().map(drop)
    }

    /// Counters so far.
    pub fn counts(&self) -> Counts {
        let c = self.pipe.tree().counts();
        Counts {
            calls: c.calls,
            top_level: c.top_level,
            lone_returns: c.lone_returns,
            unfinished: c.unfinished,
            lost: self.lost,
        }
    }

    /// Number of distinct tasks seen.
    pub fn tasks_seen(&self) -> usize {
        self.pipe.tree().tasks_seen()
    }

    /// The name to show for tasks whose name the trace lost (`<...>`): the traced
    /// program's.
    pub fn set_default_comm(&mut self, comm: Option<String>) {
        self.default_comm = comm;
    }

    /// The task's name: as the event gives it, else (the kernel's pid→comm cache lost it)
    /// from /proc, else the traced program's.
    fn comm(&mut self, m: &Meta<'_>) -> &str {
        match (m.pid, self.processes.get(&m.tid)) {
            (Some(p), _) => {
                self.processes.insert(m.tid, Some(p));
            }
            (None, None) => {
                self.processes
                    .insert(m.tid, dcg_live::process::tgid_of(m.tid));
            }
            (None, Some(_)) => {}
        }
        let known = self.comms.entry(m.tid).or_default();
        if m.comm != UNKNOWN_COMM {
            if known != m.comm {
                known.clear();
                known.push_str(m.comm);
            }
        } else if known.is_empty() {
            *known = std::fs::read_to_string(format!("/proc/{}/comm", m.tid))
                .map(|c| c.trim_end().to_string())
                .ok()
                .or_else(|| self.default_comm.clone())
                .unwrap_or_else(|| UNKNOWN_COMM.to_string());
        }
        known
    }

    fn flush(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.pipe.flush_to(out)
    }

    /// The traced function a return address `ra` of thread `tid` is in, and where: the
    /// call site of a call made from it. Found in the targets whose load bias in the
    /// thread's process is known (from the entries of their functions).
    fn site(&self, tid: u32, ra: u64) -> Option<CodeSite> {
        for (t, code) in self.code.iter().enumerate() {
            let Some(&bias) = self.bias.get(&(tid, t)) else {
                continue;
            };
            let at = ra.wrapping_sub(bias);
            let i = code.partition_point(|&(start, _, _)| start <= at);
            let Some(&(start, end, probe)) = i.checked_sub(1).and_then(|i| code.get(i)) else {
                continue;
            };
            if at < end {
                return Some(CodeSite {
                    func: self.ids[probe],
                    offset: at - start,
                });
            }
        }
        None
    }

    /// Open the frames of the copies of inline site `si`, with their arguments from
    /// `values` (the event's fields) when shown and all read.
    fn open_copies(
        &mut self,
        m: &Meta<'_>,
        si: usize,
        values: Option<&[Value]>,
    ) -> std::io::Result<()> {
        let s = &self.inlines[si];
        let read = values
            .filter(|v| self.opts.args && s.complete(v))
            .map(|v| s.values(v));
        let comm = match self.comms.get(&m.tid) {
            Some(c) if !c.is_empty() => c.clone(),
            _ => self.comm(m).to_string(),
        };
        for &instance in &s.copies {
            self.pipe.enter_inline(
                task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
                instance,
                read.as_ref().map(|(regs, stack)| (&regs[..], &stack[..])),
                Some(m.ts),
            )?;
        }
        Ok(())
    }

    /// The word of argument `n` at an entry of `p`, when it was read.
    fn arg_word(p: &Probe<'_>, values: &[Value], n: usize) -> Option<u64> {
        match p.args.get(n).map(|(_, a)| a) {
            Some(ArgPlan::Fetched { words, .. }) => match values.get(*words.first()?) {
                Some(Value::Num(v)) => Some(*v),
                _ => None,
            },
            _ => None,
        }
    }

    /// A `setjmp` remembers its buffer and its caller's depth (`at_exit`: after its own
    /// leaf closed); a `longjmp` on that buffer says which `setjmp` returns again and
    /// what it returns (`/* _setjmp returns 1 */`), and the calls it leaves close at the
    /// thread's next event. Both need the arguments read (`--args`).
    fn jump(&mut self, m: &Meta<'_>, p: &Probe<'_>, probe: usize, values: &[Value], at_exit: bool) {
        use std::fmt::Write as _;
        let Some(env) = Self::arg_word(p, values, 0) else {
            return;
        };
        match p.jump {
            Jump::Setjmp if at_exit => {
                if self.jmp_bufs.len() >= 4096 {
                    self.jmp_bufs.clear();
                }
                let depth = self.pipe.tree().depth_of(u64::from(m.tid));
                self.jmp_bufs.insert((m.tid, env), (probe, depth));
            }
            Jump::Longjmp if !at_exit => {
                let Some(val) = Self::arg_word(p, values, 1) else {
                    return;
                };
                let by = match self.jmp_bufs.get(&(m.tid, env)) {
                    Some(&(q, depth)) => {
                        self.jumping.insert(m.tid, depth);
                        self.probes[q].symbol.as_str()
                    }
                    None => "setjmp",
                };
                let _ = write!(self.comment, "{by} returns {}", setjmp_returns(val));
            }
            _ => {}
        }
    }

    /// The thread left a `longjmp`: the calls above the depth it returned to close.
    fn landed(&mut self, m: &Meta<'_>) -> std::io::Result<()> {
        let Some(depth) = self.jumping.remove(&m.tid) else {
            return Ok(());
        };
        let comm = self.comm(m).to_string();
        self.pipe.unwind_to(
            task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
            depth,
            Some(m.ts),
        )
    }

    /// The frame of a call of probe `probe` was left without a return (`longjmp`, an
    /// exception unwinding through it): closed without a value.
    pub fn unwound(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let comm = self.comm(m).to_string();
        let exit = Exit {
            outs: None,
            task: task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
            depth: 0,
            func: Some(self.ids[probe]),
            ret: None,
            time_ns: Some(m.ts),
            duration_ns: None,
            layout: None,
        };
        self.pipe.exit(&exit)?;
        self.flush(out)
    }

    /// The stack of thread `tid`'s next top-level call (`--stack`), innermost first;
    /// dropped when the thread is inside a traced call (its next call is not top-level),
    /// or empty (nothing known of the process: no stack).
    pub fn stack(&mut self, tid: u32, frames: Vec<dcg_calls::saved_format::StackFrame>) {
        let key = u64::from(tid);
        if !frames.is_empty() && self.pipe.tree().depth_of(key) == 0 {
            self.pipe
                .tree_mut()
                .pending_stack(key, frames.into_boxed_slice());
        }
    }

    /// File `path` is loaded at `bias` in a traced process: pointers into it are named.
    /// Make this a session tracing both sides (issue 42): the kernel functions are
    /// looked up in `kernel`, and every call says its side.
    pub fn set_kernel_set(&mut self, kernel: &'a dcg_dbset::DbSet) {
        self.pipe.tree_mut().funcs.set_kernel_set(kernel);
    }

    /// Kernel calls thread `m.tid` made (a kernel session's saved calls, in entry order,
    /// every call after its parent), below its innermost open call.
    pub fn kernel_calls(
        &mut self,
        m: &Meta<'_>,
        records: &[dcg_calls::saved_format::CallRecord],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let comm = self.comm(m).to_string();
        let process = m
            .pid
            .or_else(|| self.processes.get(&m.tid).copied().flatten());
        self.pipe
            .replay_kernel(task_of(m, &comm, process), records)?;
        self.flush(out)
    }

    pub fn learn_file(&mut self, path: &str, bias: u64) {
        self.symbolizer
            .learn_file(path.into(), super::symbolize::Placed::Bias(bias));
    }

    /// Close every open call (end of trace): `f(...); /* no return */` or
    /// `} /* f (no return) */`, and flush buffered trees.
    pub fn finish(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.pipe.finish(out)
    }
}

/// Where a source's call events go: straight into the call pipeline ([`Calls`]), or
/// through a buffer that merges two sources by time (the in-process engine with uprobes
/// for the functions it cannot hook).
pub trait EventSink {
    /// An entry event of probe `probe`.
    fn entry(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        out: &mut dyn Write,
    ) -> std::io::Result<()>;
    /// A return event of probe `probe`.
    fn ret(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        out: &mut dyn Write,
    ) -> std::io::Result<()>;
    /// The first instruction of inline site `site`'s copies ran.
    fn inline(
        &mut self,
        m: &Meta<'_>,
        site: usize,
        values: Option<&[Value]>,
        out: &mut dyn Write,
    ) -> std::io::Result<()>;
    /// The return address of the next entry of `probe` in thread `tid`.
    fn call_site(&mut self, tid: u32, probe: usize, ra: u64);
    /// Events were lost on `cpu`.
    fn lost(&mut self, cpu: u32, n: u64, out: &mut dyn Write) -> std::io::Result<()>;
    /// Thread `m.tid` called `exec`: its open calls end, what it runs next is another
    /// program's.
    fn exec(&mut self, m: &Meta<'_>, out: &mut dyn Write) -> std::io::Result<()>;
    /// The stack's top at the entry event that follows (`--stack`): the stack and frame
    /// pointers at `m.ip`, then the words from the stack pointer up.
    fn user_stack(&mut self, _m: &Meta<'_>, _probe: usize, _words: &[u64]) {}
    /// Trees shown so far (what `--count` counts): completed top-level calls, or those a
    /// filter kept.
    fn top_level(&self) -> u64;
}

impl EventSink for Calls<'_> {
    fn user_stack(&mut self, m: &Meta<'_>, probe: usize, words: &[u64]) {
        let (Some(stacks), Some(ip), [sp, bp, rest @ ..]) = (self.stacks.as_mut(), m.ip, words)
        else {
            return;
        };
        let key = u64::from(m.tid);
        if self.pipe.tree().depth_of(key) != 0 {
            return;
        }
        // The thread's process's objects (a thread's id names its process's maps too).
        let p = &self.probes[probe];
        stacks.place(
            m.tid,
            p.target,
            ip.wrapping_sub(p.addr.wrapping_add(p.body)),
        );
        let mut payload = Vec::with_capacity(24 + rest.len() * 8);
        for w in [*sp, *bp, rest.len() as u64 * 8].iter().chain(rest) {
            payload.extend_from_slice(&w.to_ne_bytes());
        }
        let frames = stacks.frames(m.tid, ip, &payload);
        self.stack(m.tid, frames);
    }

    fn exec(&mut self, m: &Meta<'_>, out: &mut dyn Write) -> std::io::Result<()> {
        let comm = self.comm(m).to_string();
        self.pipe.exec(
            task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
            Some(m.ts),
        )?;
        self.flush(out)
    }

    /// An entry event of probe `probe` with its field values.
    fn entry(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let p = &self.probes[probe];
        if let Some(ip) = m.ip {
            // Where the probe hit tells where its binary is loaded in this process.
            self.bias.insert(
                (m.tid, p.target),
                ip.wrapping_sub(p.addr.wrapping_add(p.body)),
            );
        }
        let ra = match (p.ra.and_then(|i| values.get(i)), &p.ra_event) {
            (Some(&Value::Num(ra)), _) => Some(ra),
            (_, Some(_)) => match self.entry_ra.remove(&m.tid) {
                Some((q, ra)) if q == probe => Some(ra),
                _ => None,
            },
            _ => None,
        };
        let site = ra.and_then(|ra| self.site(m.tid, ra));
        self.args.clear();
        if self.opts.args {
            let role = self.opts.role(false);
            if let (Some(ip), Some(_)) = (m.ip, p.func) {
                // Where the probe hit tells where its binary is loaded.
                self.symbolizer
                    .learn_bias(p.target, ip.wrapping_sub(p.addr + p.body));
            }
            self.symbolizer.learn_process(m.tid);
            crate::entry_args::push(&mut self.args, p, values, role, &self.symbolizer);
        }
        self.landed(m)?;
        self.comment.clear();
        self.jump(m, p, probe, values, false);
        let comm = self.comm(m).to_string();
        let entry = Entry {
            task: task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
            depth: 0,
            func: self.ids[probe],
            name: &p.symbol,
            module: None,
            args: ArgsIn::Rendered(&self.args),
            ret: None,
            leaf: false,
            time_ns: Some(m.ts),
            duration_ns: None,
            callsite: None,
            site,
            comment: (!self.comment.is_empty()).then_some(self.comment.as_str()),
            layout: None,
            ctx: None,
        };
        self.pipe.enter(&entry)?;
        if p.jump.returns_twice() {
            // Never hooked: a leaf, with what a direct setjmp returns.
            let value = ret_value(p, values, self.opts.role(true), &|_| None);
            let exit = Exit {
                outs: None,
                task: task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
                depth: 0,
                func: Some(self.ids[probe]),
                ret: value.as_ref().map(|(text, error, raw)| RetIn::Rendered {
                    text,
                    raw: raw.as_deref(),
                    error: *error,
                }),
                time_ns: Some(m.ts),
                duration_ns: None,
                layout: None,
            };
            self.pipe.exit(&exit)?;
            self.jump(m, p, probe, values, true);
            return self.flush(out);
        }
        // Inlined copies starting at the function's first instruction: read by this
        // event, opened inside the call.
        for &si in &p.inlines {
            self.open_copies(m, si, Some(values))?;
        }
        self.flush(out)
    }

    /// A return event of probe `probe` with its field values.
    fn ret(
        &mut self,
        m: &Meta<'_>,
        probe: usize,
        values: &[Value],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.landed(m)?;
        let p = &self.probes[probe];
        let sym = |v: u64| self.symbolizer.pointer_text(v);
        // The return value's fields, then the output parameters'.
        let (own, _) = values.split_at(p.ret_fields.len().min(values.len()));
        let value = ret_value(p, own, self.opts.role(true), &sym);
        self.outs.clear();
        if !p.outs.is_empty() {
            let role = self.opts.role(false);
            crate::entry_args::push_outs(&mut self.outs, p, values, role, &self.symbolizer);
        }
        let comm = self.comm(m).to_string();
        let exit = Exit {
            outs: Some(&self.outs),
            task: task_of(m, &comm, self.processes.get(&m.tid).copied().flatten()),
            depth: 0,
            func: Some(self.ids[probe]),
            ret: value.as_ref().map(|(text, error, raw)| RetIn::Rendered {
                text,
                raw: raw.as_deref(),
                error: *error,
            }),
            time_ns: Some(m.ts),
            duration_ns: None,
            layout: None,
        };
        self.pipe.exit(&exit)?;
        self.flush(out)
    }

    /// The first instruction of the copies of inline site `site` ran (its own probe):
    /// their frames open inside the thread's innermost call, their container.
    fn inline(
        &mut self,
        m: &Meta<'_>,
        site: usize,
        values: Option<&[Value]>,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.landed(m)?;
        self.open_copies(m, site, values)?;
        self.flush(out)
    }

    /// The return address of a call of probe `probe`'s function in thread `tid`, read at
    /// its entry (its entry event follows).
    fn call_site(&mut self, tid: u32, probe: usize, ra: u64) {
        self.entry_ra.insert(tid, (probe, ra));
    }

    /// Events were lost on `cpu`: print the notice in the stream.
    fn lost(&mut self, cpu: u32, n: u64, out: &mut dyn Write) -> std::io::Result<()> {
        self.lost += n;
        let note = Note::Lost {
            cpu: Some(cpu),
            count: Some(n),
        };
        self.pipe.note(&note)?;
        self.flush(out)
    }

    fn top_level(&self) -> u64 {
        self.pipe.trees_shown()
    }
}

/// The task of an event.
fn task_of<'c>(m: &Meta<'_>, comm: &'c str, process: Option<u32>) -> Task<'c> {
    Task {
        key: m.tid as u64,
        pid: Some(m.tid),
        comm: Some(comm),
        cpu: Some(m.cpu),
        process,
    }
}

/// The rendered return value: (text, is_error, raw text); `None` for void or when return
/// values are not shown.
fn ret_value(
    p: &Probe<'_>,
    values: &[Value],
    role: Role,
    sym: &dyn Fn(u64) -> Option<String>,
) -> Option<(String, bool, Option<String>)> {
    if let Some(t) = &p.ret_text {
        return Some((t.clone(), false, None));
    }
    if p.ret_fields.is_empty() {
        return None;
    }
    let words: Vec<u64> = values
        .iter()
        .filter_map(|v| match v {
            Value::Num(n) => Some(*n),
            _ => None,
        })
        .collect();
    let text = match values.iter().find(|v| !matches!(v, Value::Num(_))) {
        // A `char *` return with the string it points to.
        Some(Value::Str(s)) if words.first().is_some_and(|&w| w != 0) => {
            super::plan::render_text(s)
        }
        _ => match p.func {
            Some(f) => super::plan::render_pointer_or(f.ret(), &words, role, sym),
            // No DWARF: the register as it is.
            None => format!("{:#x} (raw)", words.first().copied().unwrap_or(0)),
        },
    };
    let raw = words.first().map(|w| format!("{w:#x}"));
    let error = text.starts_with("-E") || text.starts_with("ERR_PTR(");
    Some((text, error, raw))
}
