//! BPF capture of kernel calls: one `kprobe.session` program (`src/bpf/capture.bpf.c`,
//! compiled by clang at build time, loaded through its libbpf skeleton) attached by
//! address to many functions. Tasks are recorded while they are inside a root function;
//! each call gives an entry record (function, call site, the six argument registers, the
//! strings asked for) and a return record (rax, rdx), gathered in a per-CPU batch that
//! goes into a BPF ring buffer a batch at a time, read by polling (no wakeups: a wakeup
//! per record slows the traced calls several times).
//!
//! Everything attached is a file descriptor of this process: dropping the [`Capture`] (or
//! the process ending, SIGKILL included) detaches it. [`Capture::detach`] detaches the
//! programs first: the records already in the ring stay readable until it is dropped.

mod footprint;
mod peek;
mod records;
mod settings;
// The libbpf skeletons `build.rs` generates: generated code, exempt from the lints.
#[allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    unused_imports,
    non_camel_case_types
)]
mod skel;

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::os::raw::c_ulong;
use std::ptr::NonNull;
use std::rc::Rc;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{AsRawLibbpf, Link, MapCore, MapFlags, RingBuffer, RingBufferBuilder};

pub use footprint::Footprint;
pub use peek::KernelPeek;
pub use records::{ctx, Record, CALLERS_MAX, FIELDS_MAX, INLINE_STACK, STACK_WORDS, STR_MAX};
pub use settings::{
    CondOp, CondTest, DerefRead, FieldFetch, FuncDerefs, FuncFields, RootCond, Target, Tasks,
    COND_TESTS, DEREF_BYTES, DEREF_HOPS, DEREF_ITEMS, FIELD_HOPS,
};

use skel::capture::{CaptureSkel, CaptureSkelBuilder};

/// The ring buffer's size (a power of two).
const RING_BYTES: u32 = 64 << 20;
/// Spooled records are read back this many bytes at a time.
const SPOOL_CHUNK: usize = 4 << 20;

/// Length of `endbr64`: a function's entry address as the program sees it is its start
/// where IBT left the instruction live, its ftrace site after it where IBT sealed it.
pub const ENDBR_LEN: u64 = 4;

/// Errors of the capture.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// Loading or setting up the BPF objects failed.
    #[error("BPF: {what}: {source}")]
    Libbpf {
        /// What was being done.
        what: &'static str,
        /// libbpf's error.
        source: libbpf_rs::Error,
    },
    /// Attaching to the functions failed.
    #[error("BPF: attaching to {count} functions: {source}")]
    Attach {
        /// How many functions.
        count: usize,
        /// The kernel's error.
        source: std::io::Error,
    },
    /// Reading back the records spooled to the temporary directory failed.
    #[error("reading back the records kept in the temporary directory: {source}")]
    Spool {
        /// The I/O error.
        source: std::io::Error,
    },
    /// Nothing to attach to.
    #[error("BPF: no function to attach to")]
    NoTargets,
}

fn libbpf(what: &'static str) -> impl FnOnce(libbpf_rs::Error) -> BpfError {
    move |source| BpfError::Libbpf { what, source }
}

/// An attached capture session.
pub struct Capture {
    // Field order is drop order: the ring buffer and the links go before the skeleton.
    ring: RingBuffer<'static>,
    /// The records copied out of the ring and not yet consumed.
    kept: Rc<RefCell<dcg_spool::Kept>>,
    /// The batch being handed out (kept to reuse its allocation).
    batch: Vec<u8>,
    /// The records left in the programs' per-CPU batches were read (after detaching).
    batches_taken: bool,
    /// In the order they were attached; empty once [`Capture::detach`]ed.
    links: Vec<Link>,
    skel: CaptureSkel<'static>,
    mode: Mode,
    inline_failed: Vec<(usize, std::io::Error)>,
}

impl Drop for Capture {
    /// The programs are detached in [`Capture::detach`]'s order, before the ring and the
    /// maps go.
    fn drop(&mut self) {
        self.detach();
    }
}

/// How the program is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One kprobe.session link: a return is only run for calls recorded at entry.
    Session,
    /// An entry link and a return link (kernels without the BPF JIT): every return of
    /// every attached function runs the return program.
    EntryReturn,
}

impl Mode {
    /// Session where the BPF JIT is on (`net.core.bpf_jit_enable`), else two links.
    pub fn detect() -> Mode {
        match std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable") {
            Ok(v) if v.trim() != "0" => Mode::Session,
            _ => Mode::EntryReturn,
        }
    }
}

/// How [`Loaded::load`] loads the programs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Load the inline probe program too (inlined copies are attached to).
    pub inlines: bool,
    /// The address of the kernel's `__per_cpu_offset` array (from /proc/kallsyms): with
    /// it the programs find this CPU's copy of their miss counter and say which recorded
    /// call lost calls; without it only the total is known.
    pub per_cpu_offset: Option<u64>,
    /// How the programs are attached: `None` (the default) as [`Mode::detect`] finds,
    /// else this mode (tests force [`Mode::EntryReturn`] on a kernel with the JIT).
    pub mode: Option<Mode>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    Entry,
    Return,
}

/// Words of the programs' `planned` bit array (capture.bpf.c's `PLAN_WORDS`).
const PLAN_WORDS: u64 = 32768;

/// The word of the `planned` bit array holding address `addr`'s bit, and that bit.
fn plan_slot(addr: u64) -> (u32, u32) {
    (((addr >> 7) % PLAN_WORDS) as u32, 1 << ((addr >> 2) & 31))
}

/// The kernel's largest thread id plus one (`kernel.pid_max`, at most 2^22).
fn pid_max() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(1 << 22)
        .clamp(1024, 1 << 22)
}

/// The slot in the `fields` and `derefs` maps of each function that reads members or
/// structs at its entry, by address: in target order, from 0. Its plan's high word.
fn read_slots(targets: &[Target]) -> std::collections::HashMap<u64, u32> {
    targets
        .iter()
        .filter(|t| t.fields || t.derefs)
        .enumerate()
        .map(|(i, t)| (t.addr, i as u32))
        .collect()
}

/// Open and load the skeleton with the programs of `mode`.
fn load(mode: Mode, targets: &[Target], inlines: bool) -> Result<CaptureSkel<'static>, BpfError> {
    // The skeleton borrows its object storage for its whole life; one per load.
    let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
        Box::leak(Box::new(MaybeUninit::uninit()));
    let mut open = CaptureSkelBuilder::default()
        .open(storage)
        .map_err(libbpf("opening the program"))?;
    // The ring holds ~700 k calls (96 + 56 bytes each with headers): the reader polls
    // every 50 ms but shares the CPU with the traced load, and may fall behind for a while.
    open.maps
        .events
        .set_max_entries(RING_BYTES)
        .map_err(libbpf("sizing the ring buffer"))?;
    // Plans for both entry addresses of each function that has one.
    let planned = targets.iter().filter(|t| t.plan() != 0).count() as u32;
    open.maps
        .plans
        .set_max_entries((2 * planned).max(16))
        .map_err(libbpf("sizing the plan map"))?;
    // A slot of members and of structs to read for each function that reads either.
    let slots = read_slots(targets).len().max(1) as u32;
    open.maps
        .fields
        .set_max_entries(slots)
        .map_err(libbpf("sizing the member map"))?;
    open.maps
        .derefs
        .set_max_entries(slots)
        .map_err(libbpf("sizing the deref map"))?;
    // Task state is an array indexed by thread id.
    open.maps
        .active
        .set_max_entries(pid_max())
        .map_err(libbpf("sizing the task map"))?;
    let session = mode == Mode::Session;
    open.progs.dcg_call.set_autoload(session);
    open.progs.dcg_entry.set_autoload(!session);
    open.progs.dcg_exit.set_autoload(!session);
    open.progs.dcg_inline.set_autoload(inlines);
    open.load().map_err(libbpf("loading the program"))
}

/// The programs loaded and not yet attached: what they run in the kernel can be read
/// ([`Loaded::footprint`]) before choosing what to attach them to.
pub struct Loaded {
    skel: CaptureSkel<'static>,
    mode: Mode,
    /// The records' queue, made ready before attaching ([`Loaded::prepare_keep`]).
    kept: dcg_spool::Kept,
}

impl Loaded {
    /// Load the programs for `targets` (the plan map is sized for them; attach to these
    /// or fewer), as `options` say.
    pub fn load(targets: &[Target], options: &LoadOptions) -> Result<Loaded, BpfError> {
        if targets.is_empty() {
            return Err(BpfError::NoTargets);
        }
        // libbpf's own messages go to the `log` facade (target `libbpf`, debug level:
        // `DCG_BPF_DEBUG=1` has the dcg binary show them); its errors come back as values.
        if log::log_enabled!(target: "libbpf", log::Level::Debug) {
            libbpf_rs::set_print(Some((
                libbpf_rs::PrintLevel::Debug,
                |_, m| log::debug!(target: "libbpf", "{}", m.trim_end()),
            )));
        } else {
            libbpf_rs::set_print(None);
        }
        // One session link where the kernel can run it (the program calls a kfunc, which
        // only the BPF JIT can); an entry link and a return link otherwise.
        let mode = options.mode.unwrap_or_else(Mode::detect);
        let skel = load(mode, targets, options.inlines)?;
        if let Some(addr) = options.per_cpu_offset {
            skel.maps
                .kaddrs
                .update(&0u32.to_ne_bytes(), &addr.to_ne_bytes(), MapFlags::ANY)
                .map_err(libbpf("setting the per-CPU offsets' address"))?;
        }
        Ok(Loaded {
            skel,
            mode,
            kept: Default::default(),
        })
    }

    /// Make room for [`Capture::keep`]'s `in_memory` bytes, backed by the kernel already
    /// ([`dcg_spool::Kept::prefault`]): before the programs are attached, which then
    /// would run on every traced function of each page fault's path, and before the
    /// traced command runs, whose CPU the clearing of those pages would take.
    pub fn prepare_keep(&mut self, in_memory: usize) {
        self.kept.prefault(in_memory);
    }

    /// Attach the loaded programs to `targets` and a probe to each address of `inlines`
    /// (the first instruction of an inlined copy; its records carry the index as cookie).
    /// Only the tasks `tasks` names are recorded (every task entering a root by default).
    pub fn attach(
        self,
        targets: &[Target],
        inlines: &[u64],
        tasks: &Tasks<'_>,
    ) -> Result<Capture, BpfError> {
        let procs = tasks.procs;
        if targets.is_empty() {
            return Err(BpfError::NoTargets);
        }
        let Loaded { skel, mode, kept } = self;
        let slots = read_slots(targets);
        let mut planned: std::collections::BTreeMap<u32, u32> = Default::default();
        let mut rooted: std::collections::BTreeMap<u32, u32> = Default::default();
        for t in targets.iter().filter(|t| t.plan() != 0) {
            let slot = slots.get(&t.addr).copied().unwrap_or(0);
            let value = u64::from(t.plan()) | u64::from(slot) << 32;
            for addr in [t.addr, t.addr - ENDBR_LEN] {
                skel.maps
                    .plans
                    .update(&addr.to_ne_bytes(), &value.to_ne_bytes(), MapFlags::ANY)
                    .map_err(libbpf("filling the plan map"))?;
                let (word, bit) = plan_slot(addr);
                *planned.entry(word).or_default() |= bit;
                if t.root {
                    *rooted.entry(word).or_default() |= bit;
                }
            }
        }
        for (map, bits) in [(&skel.maps.planned, planned), (&skel.maps.rooted, rooted)] {
            for (word, bits) in bits {
                map.update(&word.to_ne_bytes(), &bits.to_ne_bytes(), MapFlags::ANY)
                    .map_err(libbpf("filling the plan bits"))?;
            }
        }
        skel.maps
            .config
            .update(&0u32.to_ne_bytes(), &tasks.settings(), MapFlags::ANY)
            .map_err(libbpf("setting the task filters"))?;
        for c in tasks.conds.iter().filter(|c| !c.tests.is_empty()) {
            for addr in [c.addr, c.addr - ENDBR_LEN] {
                skel.maps
                    .conds
                    .update(&addr.to_ne_bytes(), &c.bytes(), MapFlags::ANY)
                    .map_err(libbpf("filling the root conditions"))?;
            }
        }
        // A function's reads go in its slot; one no target reads with has none.
        for f in tasks.fields {
            if let Some(slot) = slots.get(&f.addr) {
                skel.maps
                    .fields
                    .update(&slot.to_ne_bytes(), &f.bytes(), MapFlags::ANY)
                    .map_err(libbpf("filling the members to read"))?;
            }
        }
        for f in tasks.derefs {
            if let Some(slot) = slots.get(&f.addr) {
                skel.maps
                    .derefs
                    .update(&slot.to_ne_bytes(), &f.bytes(), MapFlags::ANY)
                    .map_err(libbpf("filling the structs to read"))?;
            }
        }
        if let Some(procs) = procs {
            for p in procs {
                add_proc(&skel, *p)?;
            }
        }
        let mut links = Vec::new();
        // Fork following: without it, only the processes given are recorded.
        if procs.is_some() {
            let fork = skel
                .progs
                .dcg_fork
                .attach()
                .map_err(libbpf("attaching to sched_process_fork"))?;
            links.push(fork);
        }
        // Before anything records: a CPU switching tasks puts its batch into the ring.
        links.push(
            skel.progs
                .dcg_switch
                .attach()
                .map_err(libbpf("attaching to sched_switch"))?,
        );
        match mode {
            Mode::Session => {
                links.push(attach_multi(&skel.progs.dcg_call, targets, Kind::Session)?)
            }
            Mode::EntryReturn => {
                // The return link first: attached after the entry link, it would have
                // replaced the return address the entry program reads as the call site.
                links.push(attach_multi(&skel.progs.dcg_exit, targets, Kind::Return)?);
                links.push(attach_multi(&skel.progs.dcg_entry, targets, Kind::Entry)?);
            }
        }
        let mut inline_failed = Vec::new();
        for (i, &addr) in inlines.iter().enumerate() {
            match attach_at(&skel.progs.dcg_inline, addr, i as u64) {
                Ok(l) => links.push(l),
                Err(e) => inline_failed.push((i, e)),
            }
        }
        // Records are copied into one growing buffer (each after its u32 length), taken
        // out in a batch by `consume`: no allocation per record.
        let kept = Rc::new(RefCell::new(kept));
        let q = Rc::clone(&kept);
        let mut rb = RingBufferBuilder::new();
        // SAFETY: the reference is used only until `build` below, before `skel` moves
        // (the builder keeps it to read the map's descriptor); the map itself lives in the
        // skeleton, which outlives the ring buffer (declared first, dropped first).
        let events: &'static libbpf_rs::MapMut<'static> =
            unsafe { &*(&skel.maps.events as *const libbpf_rs::MapMut<'static>) };
        rb.add(events, move |data: &[u8]| {
            let q = &mut q.borrow_mut().queue;
            q.extend_from_slice(&(data.len() as u32).to_ne_bytes());
            q.extend_from_slice(data);
            0
        })
        .map_err(libbpf("the ring buffer"))?;
        let ring = rb.build().map_err(libbpf("the ring buffer"))?;
        Ok(Capture {
            ring,
            kept,
            batch: Vec::new(),
            batches_taken: false,
            links,
            skel,
            mode,
            inline_failed,
        })
    }
}

impl Capture {
    /// The inline probes that could not be placed: (index in `inlines`, the kernel's
    /// error).
    pub fn inline_failures(&self) -> &[(usize, std::io::Error)] {
        &self.inline_failed
    }

    /// How the program is attached.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Detach every program now (the kernel restores the attached functions' text and
    /// waits until no CPU runs them: seconds for tens of thousands of functions on a slow
    /// machine). The records already in the ring stay readable as long as the [`Capture`]
    /// lives; nothing is recorded any more. Reading them after this costs the least: while
    /// attached, the program runs on every traced function the reader's own system calls
    /// and page faults reach (on Debian 7.2 in qemu, decoding a session's 230,000 records
    /// took 5.5 s of CPU detached and 11 s of CPU plus 12 s of system time attached).
    /// A second call does nothing.
    ///
    /// The links go in the reverse of the order they were made in: what starts records
    /// (inlined copies' probes, the entry link) before the return link, the fork link
    /// last. Without the JIT (two links) a return link detached first would leave every
    /// task inside a root recording each call it enters, with no return ever ending its
    /// root, for as long as the kernel takes to detach the entry link.
    pub fn detach(&mut self) {
        while let Some(link) = self.links.pop() {
            drop(link);
        }
    }

    /// Add a process to record (with the process filter on).
    pub fn add_process(&self, tgid: u32) -> Result<(), BpfError> {
        add_proc(&self.skel, tgid)
    }

    /// Copy every record in the ring buffer into this process's queue without decoding
    /// it (the next [`Capture::consume`] hands it out): frees the ring at the least cost.
    pub fn drain(&mut self) -> Result<(), BpfError> {
        self.ring
            .consume()
            .map_err(libbpf("reading the ring buffer"))
    }

    /// Bytes queued by [`Capture::drain`] and not yet consumed (in memory and spooled).
    pub fn queued(&self) -> u64 {
        self.kept.borrow().len()
    }

    /// [`Capture::drain`], keeping the records for a later [`Capture::consume`]: past
    /// `in_memory` bytes they are moved to an unnamed file in the temporary directory.
    /// Ok(false) when that file cannot take them (the caller decodes them now instead).
    pub fn keep(&mut self, in_memory: usize) -> Result<bool, BpfError> {
        self.kept.borrow_mut().reserve(in_memory);
        self.drain()?;
        let mut kept = self.kept.borrow_mut();
        if kept.in_memory() <= in_memory {
            return Ok(true);
        }
        match kept.spool() {
            Ok(()) => Ok(true),
            Err(e) => {
                log::debug!("spooling the records: {e}");
                Ok(false)
            }
        }
    }

    /// Bytes of records moved to the spool file so far (in all).
    pub fn spooled(&self) -> u64 {
        self.kept.borrow().spooled_in_all()
    }

    /// Take every record in the ring buffer (and the queue) now, in order, through `f`;
    /// once detached, the records still in the programs' per-CPU batches too (each CPU's
    /// are the newest of the tasks that ran there last).
    pub fn consume(&mut self, mut f: impl FnMut(Record<'_>)) -> Result<(), BpfError> {
        self.drain()?;
        if self.links.is_empty() && !self.batches_taken {
            self.batches_taken = true;
            self.take_batches()?;
        }
        // The spooled records are the oldest.
        self.kept
            .borrow_mut()
            .take_spooled(SPOOL_CHUNK, |raw| {
                records::batch(raw)
                    .filter_map(Record::parse)
                    .for_each(&mut f)
            })
            .map_err(|source| BpfError::Spool { source })?;
        self.batch.clear();
        std::mem::swap(&mut self.batch, &mut self.kept.borrow_mut().queue);
        dcg_spool::entries(&self.batch, |raw| {
            records::batch(raw)
                .filter_map(Record::parse)
                .for_each(&mut f)
        });
        Ok(())
    }

    /// Queue the records left in each CPU's batch (`struct batch`: length, count, flag,
    /// pad, then the records), as the ring would have given them.
    fn take_batches(&mut self) -> Result<(), BpfError> {
        let key = 0u32.to_ne_bytes();
        let per_cpu = self
            .skel
            .maps
            .batches
            .lookup_percpu(&key, MapFlags::ANY)
            .map_err(libbpf("reading the per-CPU batches"))?
            .unwrap_or_default();
        let q = &mut self.kept.borrow_mut().queue;
        for v in per_cpu {
            let len = v.get(..4).map_or(0, |b| {
                u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])) as usize
            });
            if let Some(data) = v.get(16..16 + len).filter(|d| !d.is_empty()) {
                q.extend_from_slice(&(data.len() as u32).to_ne_bytes());
                q.extend_from_slice(data);
            }
        }
        Ok(())
    }

    /// Records dropped because the ring buffer was full, so far.
    pub fn lost(&self) -> u64 {
        let key = 0u32.to_ne_bytes();
        match self.skel.maps.lost.lookup_percpu(&key, MapFlags::ANY) {
            Ok(Some(per_cpu)) => per_cpu
                .iter()
                .filter_map(|v| v.get(..8))
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
                .sum(),
            _ => 0,
        }
    }
}

impl Capture {
    /// Whether the program found its recursion-miss counter (it stores the counter's
    /// address on its first recorded run): loss records ([`Record::Loss`]) come only then.
    pub fn counts_losses(&self) -> bool {
        let key = 0u32.to_ne_bytes();
        matches!(
            self.skel.maps.stats.lookup(&key, MapFlags::ANY),
            Ok(Some(v)) if v.iter().any(|&b| b != 0)
        )
    }

    /// Calls of a root its condition rejected at entry (nothing recorded for them).
    pub fn rejected(&self) -> u64 {
        counter(&self.skel.maps.rejected)
    }

    /// Trees recorded whole so far: each time a recorded task's outermost root returned
    /// (its records are in the ring or a per-CPU batch by then).
    pub fn trees(&self) -> u64 {
        counter(&self.skel.maps.trees)
    }

    /// Runs of the programs the kernel skipped, so far: a hit while a BPF program already
    /// ran on that CPU (an interrupt arriving during a record) is not run, and that call
    /// (entry or return) is missing from the records.
    pub fn missed(&self) -> u64 {
        self.prog_infos().map(|i| i.recursion_misses).sum()
    }

    /// The programs' runs so far and the time spent in them (ns), as the kernel counts
    /// them while `kernel.bpf_stats_enabled` is set (both 0 otherwise).
    pub fn run_stats(&self) -> (u64, u64) {
        self.prog_infos()
            .fold((0, 0), |(n, t), i| (n + i.run_cnt, t + i.run_time_ns))
    }

    /// The kernel's information on each loaded program that records calls.
    fn prog_infos(&self) -> impl Iterator<Item = libbpf_sys::bpf_prog_info> + '_ {
        let progs = [
            &self.skel.progs.dcg_call,
            &self.skel.progs.dcg_entry,
            &self.skel.progs.dcg_exit,
        ];
        progs.into_iter().filter_map(|p| {
            // SAFETY: a program of the skeleton; negative when it was not loaded.
            let fd = unsafe { libbpf_sys::bpf_program__fd(p.as_libbpf_object().as_ptr()) };
            if fd < 0 {
                return None;
            }
            let mut info = libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of_val(&info) as u32;
            let ptr: *mut libbpf_sys::bpf_prog_info = &mut info;
            // SAFETY: info is a plain struct of len bytes the kernel fills.
            let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, ptr, &mut len) };
            (rc == 0).then_some(info)
        })
    }
}

/// The u64 in slot 0 of an array map (0 when it cannot be read).
fn counter(map: &impl MapCore) -> u64 {
    let key = 0u32.to_ne_bytes();
    match map.lookup(&key, MapFlags::ANY) {
        Ok(Some(v)) => v
            .get(..8)
            .map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]))),
        _ => 0,
    }
}

fn add_proc(skel: &CaptureSkel<'_>, tgid: u32) -> Result<(), BpfError> {
    skel.maps
        .procs
        .update(&tgid.to_ne_bytes(), &[1u8], MapFlags::ANY)
        .map_err(libbpf("adding a process"))
}

/// A kprobe of `prog` at the kernel address `addr` (any instruction, not only a
/// function's entry) with `cookie`: libbpf's call with no symbol name, so the offset is
/// the address.
fn attach_at(
    prog: &libbpf_rs::ProgramMut<'_>,
    addr: u64,
    cookie: u64,
) -> Result<Link, std::io::Error> {
    let opts = libbpf_sys::bpf_kprobe_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_kprobe_opts>() as libbpf_sys::size_t,
        bpf_cookie: cookie,
        offset: addr as libbpf_sys::size_t,
        ..Default::default()
    };
    let prog = prog.as_libbpf_object();
    // SAFETY: prog is a loaded program of the skeleton; opts outlives the call.
    let link = unsafe {
        libbpf_sys::bpf_program__attach_kprobe_opts(prog.as_ptr(), std::ptr::null(), &opts)
    };
    match NonNull::new(link) {
        // SAFETY: a link libbpf just created, owned from here on.
        Some(l) => Ok(unsafe { Link::from_ptr(l) }),
        None => Err(std::io::Error::last_os_error()),
    }
}

/// One kprobe.multi link of `prog` on every target, by address (libbpf-rs has no
/// session or address option: libbpf's own call, then the link is owned).
fn attach_multi(
    prog: &libbpf_rs::ProgramMut<'_>,
    targets: &[Target],
    kind: Kind,
) -> Result<Link, BpfError> {
    let addrs: Vec<c_ulong> = targets.iter().map(|t| t.addr as c_ulong).collect();
    let opts = libbpf_sys::bpf_kprobe_multi_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_kprobe_multi_opts>() as libbpf_sys::size_t,
        addrs: addrs.as_ptr(),
        cnt: addrs.len() as libbpf_sys::size_t,
        session: kind == Kind::Session,
        retprobe: kind == Kind::Return,
        ..Default::default()
    };
    let prog = prog.as_libbpf_object();
    // SAFETY: prog is a loaded program of the skeleton; opts and its arrays outlive the
    // call (libbpf copies them into the attach syscall).
    let link = unsafe {
        libbpf_sys::bpf_program__attach_kprobe_multi_opts(prog.as_ptr(), std::ptr::null(), &opts)
    };
    match NonNull::new(link) {
        // SAFETY: a link libbpf just created, owned from here on.
        Some(l) => Ok(unsafe { Link::from_ptr(l) }),
        None => Err(BpfError::Attach {
            count: targets.len(),
            source: std::io::Error::last_os_error(),
        }),
    }
}
