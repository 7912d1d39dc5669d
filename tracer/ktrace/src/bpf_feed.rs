//! The BPF engine's records fed to the call tree: each entry joined with the string
//! and stack records that follow it, functions and call sites named by address, tasks
//! by their `comm`, and the calls lost while the kernel skipped the program counted.

use std::io::Write;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use dcg_bpf::Record;
use dcg_calls::funcs::FuncId;
use dcg_calls::pipeline::Pipeline;
use dcg_calls::sink::Task;
use dcg_calls::tree::{ArgsIn, CodeSite, Entry, Exit, RetIn};
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::DbSet;
use dcg_live::plan::Values;

use crate::derefs::KernelDerefs;
use crate::fields::KernelFields;
use crate::funcs::Site;

/// The sites by the addresses the program reports functions at (indices in `sites`).
pub(crate) fn site_index(sites: &[Site]) -> FxHashMap<u64, u32> {
    let mut at = FxHashMap::with_capacity_and_hasher(2 * sites.len(), Default::default());
    for (i, s) in sites.iter().enumerate() {
        // The program names a function by its start where IBT left its endbr64 live,
        // by the site after it where IBT sealed it.
        at.entry(s.addr - dcg_bpf::ENDBR_LEN).or_insert(i as u32);
        at.insert(s.addr, i as u32);
    }
    at
}

/// The name a site is shown by. The file names an address by one of its symbols, which
/// can be a section label (`__lock_text_start` for `_raw_spin_trylock`, as `%ps` and
/// function_graph print it): the symbol there that the db knows wins.
fn site_name(site: &Site, set: &DbSet, kallsyms: &Kallsyms) -> String {
    if set.by_name(&site.name).next().is_some() {
        return site.name.clone();
    }
    set.known_symbol_at(kallsyms, site.addr)
        .unwrap_or(&site.name)
        .to_string()
}

/// A task's entry waiting for its string records (they follow it in the ring buffer).
/// The slot stays once the entry has gone to the tree, its buffers kept for the task's
/// next entry: most records are a task's entry or return, which look it up.
#[derive(Default)]
struct Pending {
    /// An entry is waiting.
    open: bool,
    tid: u32,
    cpu: u32,
    ts: u64,
    ip: u64,
    callsite: u64,
    args: [u64; 6],
    strings: Vec<(usize, Option<String>)>,
    stack: Option<[u64; dcg_bpf::STACK_WORDS]>,
    /// The members `--fields` read, rendered: (path, text).
    members: Vec<(String, String)>,
    /// The reads `--deref` made: (item, address, range in `deref_bytes`).
    deref_reads: Vec<(u32, u64, std::ops::Range<usize>)>,
    deref_bytes: Vec<u8>,
    ctx: u8,
}

/// A record's context code as the call tree's context.
fn context(code: u8) -> dcg_calls::saved_format::Context {
    use dcg_bpf::ctx;
    use dcg_calls::saved_format::Context;
    match code {
        ctx::SOFTIRQ => Context::Softirq,
        ctx::IRQ => Context::Irq,
        ctx::NMI => Context::Nmi,
        _ => Context::Task,
    }
}

/// A call site: `func+0xoff/0xsize`, and the function's start and the offset.
type Callsite = (Option<Rc<str>>, Option<(u64, u64)>);

/// A function's id in the tree, name and module.
type Named = (FuncId, Rc<str>, Option<Rc<str>>);

/// BPF records into the call tree.
pub(crate) struct Feed<'a> {
    /// The call tree, its sinks, the output buffer, the saved-calls file.
    pub(crate) pipe: Pipeline<'a>,
    /// The probed inlined copies, by cookie.
    inlines: Vec<sigdb::Instance<'a>>,
    /// Calls are placed under inline frames by their call sites.
    inline_frames: bool,
    // The maps are looked up on every record, with keys the kernel gives: Fx hashing
    // (SipHash's resistance to chosen keys buys nothing here).
    /// Function by address: its id, name and module (shared, cloned per record), for the
    /// functions seen so far.
    names: FxHashMap<u64, Named>,
    /// The traceable sites, and by address ([`site_index`]): named when first seen.
    sites: &'a [Site],
    site_at: FxHashMap<u64, u32>,
    kallsyms: Kallsyms,
    pending: FxHashMap<u32, Pending>,
    comms: FxHashMap<u32, Rc<str>>,
    /// Each task's process, from its entry records.
    tgids: FxHashMap<u32, u32>,
    /// Call sites as `func+0xoff/0xsize`, and where they are (the function's start and
    /// the offset), by address: a loop calls from the same few sites.
    callsites: FxHashMap<u64, Callsite>,
    args: bool,
    retvals: bool,
    /// `--fields`: what each function's fields records hold.
    fields: &'a KernelFields<'a>,
    /// `--deref`: what each function's deref records hold.
    derefs: &'a KernelDerefs<'a>,
    /// `--deref`: the parameters rendered with their data, for the entry being flushed.
    derefs_shown: Vec<(String, String)>,
    /// Each task's output parameter record, waiting for its return record: the pointer
    /// and the value read through it.
    out_read: FxHashMap<u32, (u64, Option<u64>)>,
    /// The output parameters of the return being passed on.
    outs: dcg_calls::sink::ArgList,
    /// Calls lost (runs the kernel skipped while a traced task's call was recorded), by
    /// the function being recorded.
    pub(crate) lost_at: FxHashMap<Rc<str>, u64>,
}

impl<'a> Feed<'a> {
    /// A feed into `pipe` (its tree's depth and inline frames set), for a session with
    /// `args`' values and `--irqs`.
    pub(crate) fn new(
        pipe: Pipeline<'a>,
        inlines: Vec<sigdb::Instance<'a>>,
        (sites, site_at): (&'a [Site], FxHashMap<u64, u32>),
        kallsyms: Kallsyms,
        (values, fields, derefs): (Values, &'a KernelFields<'a>, &'a KernelDerefs<'a>),
    ) -> Self {
        Feed {
            inline_frames: pipe.tree().inline_frames(),
            pipe,
            inlines,
            names: FxHashMap::default(),
            sites,
            site_at,
            kallsyms,
            pending: FxHashMap::default(),
            comms: FxHashMap::default(),
            tgids: FxHashMap::default(),
            callsites: FxHashMap::default(),
            fields,
            derefs,
            derefs_shown: Vec::new(),
            out_read: FxHashMap::default(),
            outs: Default::default(),
            args: values.args,
            retvals: values.retvals,
            lost_at: FxHashMap::default(),
        }
    }

    fn func(&mut self, ip: u64) -> Named {
        if let Some(v) = self.names.get(&ip) {
            return v.clone();
        }
        if let Some(s) = self.site_at.get(&ip).map(|&i| &self.sites[i as usize]) {
            let name = site_name(s, self.pipe.tree().funcs.set(), &self.kallsyms);
            let id = self
                .pipe
                .tree_mut()
                .funcs
                .intern(&name, s.module.as_deref());
            let v = (id, Rc::from(name), s.module.as_deref().map(Rc::from));
            self.names.insert(ip, v.clone());
            return v;
        }
        // Not a site of the file: the symbol at the address the db knows, else the one
        // kallsyms resolves to (see `run` for why they can differ).
        let set = self.pipe.tree().funcs.set();
        let (name, module) = match self.kallsyms.at(ip) {
            Some((n, m)) => {
                let n = set.known_symbol_at(&self.kallsyms, ip).unwrap_or(n);
                (n.to_string(), m.map(str::to_string))
            }
            None => (format!("{ip:#x}"), None),
        };
        let id = self.pipe.tree_mut().funcs.intern(&name, module.as_deref());
        let v = (id, Rc::from(name), module.map(Rc::from));
        self.names.insert(ip, v.clone());
        v
    }

    /// The call site at `addr`, described and located (cached).
    fn callsite(&mut self, addr: u64) -> Callsite {
        let kallsyms = &self.kallsyms;
        self.callsites
            .entry(addr)
            .or_insert_with(|| {
                (
                    kallsyms.describe(addr).map(Rc::from),
                    kallsyms
                        .locate(addr)
                        .map(|(start, _, _)| (start, addr - start)),
                )
            })
            .clone()
    }

    fn comm(&mut self, tid: u32) -> Rc<str> {
        Rc::clone(
            self.comms
                .entry(tid)
                .or_insert_with(|| dcg_live::process::comm_of(tid as i32).into()),
        )
    }

    pub(crate) fn record(&mut self, r: Record<'_>) -> std::io::Result<()> {
        match r {
            Record::Str { tid, arg, bytes } => {
                if let Some(p) = self.pending.get_mut(&tid).filter(|p| p.open) {
                    let text = bytes.map(|b| String::from_utf8_lossy(b).into_owned());
                    p.strings.push((arg as usize, text));
                }
            }
            Record::Loss { tid, ip, n, .. } => {
                // After the entry (and its strings) or the return it was measured over.
                self.flush_pending(tid)?;
                self.pipe.tree_mut().lost(u64::from(tid), n);
                let name = self.func(ip).1;
                *self.lost_at.entry(name).or_default() += n;
            }
            Record::Comm { tid, comm } => {
                self.comms
                    .insert(tid, Rc::from(String::from_utf8_lossy(comm).as_ref()));
            }
            Record::Inline {
                tid,
                cpu,
                ts,
                cookie,
                regs,
                stack,
            } => {
                self.flush_pending(tid)?;
                let Some(&instance) = self.inlines.get(cookie as usize) else {
                    return Ok(());
                };
                let comm = self.comm(tid);
                let values = (self.args || self.retvals).then_some((&regs[..], &stack[..]));
                let task = task(tid, cpu, &comm, self.tgids.get(&tid).copied());
                self.pipe.enter_inline(task, instance, values, Some(ts))?;
            }
            Record::Callers {
                tid, ip, ips, n, ..
            } => {
                // Before the root's entry: the entry waiting is another call's.
                self.flush_pending(tid)?;
                let frames = crate::kstack::frames(
                    ip,
                    &ips[..n],
                    &self.kallsyms,
                    self.pipe.tree().funcs.set(),
                );
                self.pipe
                    .tree_mut()
                    .pending_stack(u64::from(tid), frames.into_boxed_slice());
            }
            Record::Stack { tid, words } => {
                if let Some(p) = self.pending.get_mut(&tid).filter(|p| p.open) {
                    p.stack = Some(words);
                }
            }
            Record::Fields { tid, n, ok, values } => self.members(tid, &values[..n], ok),
            Record::Deref {
                tid,
                item,
                addr,
                bytes,
            } => {
                if let (Some(p), Some(b)) = (self.pending.get_mut(&tid).filter(|p| p.open), bytes) {
                    let at = p.deref_bytes.len();
                    p.deref_bytes.extend_from_slice(b);
                    p.deref_reads.push((item, addr, at..p.deref_bytes.len()));
                }
            }
            Record::Entry {
                tid,
                tgid,
                cpu,
                ts,
                ip,
                callsite,
                args,
                ctx,
            } => {
                self.flush_pending(tid)?;
                self.tgids.insert(tid, tgid);
                let p = self.pending.entry(tid).or_default();
                p.strings.clear();
                p.members.clear();
                p.deref_reads.clear();
                p.deref_bytes.clear();
                *p = Pending {
                    open: true,
                    tid,
                    cpu,
                    ts,
                    ip,
                    callsite,
                    args,
                    strings: std::mem::take(&mut p.strings),
                    stack: None,
                    members: std::mem::take(&mut p.members),
                    deref_reads: std::mem::take(&mut p.deref_reads),
                    deref_bytes: std::mem::take(&mut p.deref_bytes),
                    ctx,
                };
            }
            Record::Out { tid, ptr, value } => {
                self.out_read.insert(tid, (ptr, value));
            }
            Record::Exit {
                tid,
                cpu,
                ts,
                ip,
                rax,
                rdx,
                ..
            } => {
                self.flush_pending(tid)?;
                let (id, name, _) = self.func(ip);
                let read = self.out_read.remove(&tid);
                self.render_outs(&name, read);
                let comm = self.comm(tid);
                let exit = Exit {
                    outs: Some(&self.outs),
                    task: task(tid, cpu, &comm, self.tgids.get(&tid).copied()),
                    depth: 0,
                    func: Some(id),
                    ret: self.retvals.then_some(RetIn::Regs { rax, rdx }),
                    time_ns: Some(ts),
                    duration_ns: None,
                    layout: None,
                };
                self.pipe.exit(&exit)?;
            }
        }
        Ok(())
    }

    /// The members read at `tid`'s entry waiting (its fields record's `values`, bit i of
    /// `ok` set when value i was read), rendered by their types.
    fn members(&mut self, tid: u32, values: &[u64], ok: u32) {
        let Some(ip) = self.pending.get(&tid).filter(|p| p.open).map(|p| p.ip) else {
            return;
        };
        let name = self.func(ip).1;
        let Some(reads) = self.fields.by_func.get(&*name) else {
            return;
        };
        let symbols = self.pipe.tree().funcs.symbols();
        let mut members = Vec::with_capacity(reads.len());
        for (i, (r, v)) in reads.iter().zip(values).enumerate() {
            let mut text = String::new();
            if ok & (1 << i) != 0 {
                let role = dcg_render::Role::Arg;
                dcg_deref::render_word(&mut text, r.ty, *v, r.size, r.bits, &symbols, role);
            } else {
                // A read on the way failed (a NULL pointer): not captured.
                text.push('?');
            }
            members.push((r.name.clone(), text));
        }
        if let Some(p) = self.pending.get_mut(&tid) {
            p.members = members;
        }
    }

    /// The output parameters of function `name` returning, into `outs`: the one the
    /// program read (`read`: its pointer and value; none for a `NULL` pointer), `?` for
    /// the others and where no read came (no session link).
    fn render_outs(&mut self, name: &str, read: Option<(u64, Option<u64>)>) {
        self.outs.clear();
        let Some(params) = self.derefs.outs.get(name).filter(|_| self.args) else {
            return;
        };
        let symbols = self.pipe.tree().funcs.symbols();
        let read_here = crate::derefs::read_output(params);
        let read = |i| read.filter(|_| read_here == Some(i));
        crate::derefs::render_outs(params, read, &symbols, &mut self.outs);
    }

    /// The parameters of `tid`'s entry waiting that `--deref` read behind, rendered with
    /// their data into `derefs_shown`.
    fn render_derefs(&mut self, tid: u32, name: &str) {
        self.derefs_shown.clear();
        let (Some(p), Some(fd)) = (self.pending.get(&tid), self.derefs.by_func.get(name)) else {
            return;
        };
        let symbols = self.pipe.tree().funcs.symbols();
        let reads = p
            .deref_reads
            .iter()
            .map(|(item, addr, range)| (*item, *addr, &p.deref_bytes[range.clone()]));
        fd.render(&p.args, reads, &symbols, &mut self.derefs_shown);
    }

    fn flush_pending(&mut self, tid: u32) -> std::io::Result<()> {
        let Some(p) = self.pending.get_mut(&tid).filter(|p| p.open) else {
            return Ok(());
        };
        p.open = false;
        let (ip, callsite) = (p.ip, p.callsite);
        let (id, name, module) = self.func(ip);
        if self.args && !self.derefs.is_empty() {
            self.render_derefs(tid, &name);
        }
        let comm = self.comm(tid);
        let (described, located) = self.callsite(callsite);
        let callsite = if self.retvals { described } else { None };
        // Where in its caller the call was made: places it under inline frames.
        let site = if self.inline_frames { located } else { None };
        let site = site.map(|(start, offset)| CodeSite {
            func: self.func(start).0,
            offset,
        });
        // The values are read where they are (the slot is still there: nothing above
        // removes one).
        let Some(p) = self.pending.get(&tid) else {
            return Ok(());
        };
        let args = if self.args {
            ArgsIn::Fetched {
                words: &p.args,
                strings: &p.strings,
                stack: p.stack.as_ref().map_or(&[], |w| &w[..]),
                members: &p.members,
                derefs: &self.derefs_shown,
            }
        } else {
            ArgsIn::None
        };
        let entry = Entry {
            task: task(p.tid, p.cpu, &comm, self.tgids.get(&tid).copied()),
            depth: 0,
            func: id,
            name: &name,
            module: module.as_deref(),
            args,
            ret: None,
            leaf: false,
            time_ns: Some(p.ts),
            duration_ns: None,
            callsite: callsite.as_deref(),
            site,
            comment: None,
            layout: None,
            ctx: Some(context(p.ctx)),
        };
        self.pipe.enter(&entry)
    }

    pub(crate) fn flush_all(&mut self) -> std::io::Result<()> {
        let tids: Vec<u32> = self.pending.keys().copied().collect();
        for t in tids {
            self.flush_pending(t)?;
        }
        Ok(())
    }

    pub(crate) fn write_out(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        self.pipe.flush_to(out)
    }
}

fn task(tid: u32, cpu: u32, comm: &str, process: Option<u32>) -> Task<'_> {
    Task {
        key: u64::from(tid),
        pid: Some(tid),
        comm: Some(comm),
        cpu: Some(cpu),
        process,
    }
}
