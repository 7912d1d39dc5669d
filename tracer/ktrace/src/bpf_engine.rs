//! The BPF engine: every traceable kernel function gets one `kprobe.session` program
//! ([`dcg_bpf::Capture`]); a task is recorded while it is inside a root, each call with its
//! argument registers (and the C strings its parameters point to) at entry and its return
//! registers. The records feed the call pipeline as a flat source: same tree, rendering,
//! sinks and options as the function_graph engine, with every value, on kernels without
//! `funcgraph-retval`.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rustc_hash::FxHashMap;

use dcg_bpf::{Capture, Loaded, Target};
use dcg_calls::funcs::FuncTable;
use dcg_calls::outputs::Outputs;
use dcg_calls::pipeline::Pipeline;
use dcg_calls::tree::{CallTree, Shape};
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::symbols::SymbolMap;
use dcg_live::process::Child;
use dcg_live::tracefs;

use crate::bpf_feed::{site_index, Feed};
use crate::bpf_targets::{root_conds, site_derefs, site_fields, targets};
use crate::error::{KtraceError, Result};
use crate::funcs::Site;
use crate::plan::KernelPlan;
use crate::{debug, Notice, Progress, Summary};

/// What the kernel runs around every run of the BPF program: the kprobe_multi link's
/// handlers and the fprobe, rethook and function-graph dispatch that calls them, in the
/// kernels dcg runs on (6.12: fprobe on ftrace with rethook; 6.14 and later: fprobe on
/// the function graph), and the kprobe path of the probes on inlined copies. What the
/// program itself calls is read from the loaded program ([`dcg_bpf::Loaded::footprint`]).
/// A traced function reached from any of these is hit again while the program runs: the
/// kernel skips that run (a recursion miss), but only after the whole entry path, on
/// every call. These functions, the program's callees and their callees (three levels,
/// from the running kernel's text) are not attached.
const DISPATCH: &[&str] = &[
    "kprobe_multi_link_handler",
    "kprobe_multi_link_exit_handler",
    "fprobe_handler",
    "fprobe_exit_handler",
    "fprobe_entry",
    "fprobe_fgraph_entry",
    "fprobe_ftrace_entry",
    "fprobe_return",
    "rethook_trampoline_handler",
    "arch_rethook_trampoline_callback",
    "function_graph_enter_regs",
    "ftrace_return_to_handler",
    "optimized_callback",
    "opt_pre_handler",
    "aggr_pre_handler",
    "kprobe_dispatcher",
    "kprobe_int3_handler",
    "kprobe_post_process",
    "kprobe_ftrace_handler",
    "trace_call_bpf",
];
/// How deep below the program's own path callees are left out, and at most how many.
const OWN_PATH_DEPTH: u32 = 3;
const OWN_PATH_CAP: usize = 600;
/// With `--stack`: how deep below the stack helper, whose unwinder runs deep
/// (`bpf_get_stack` → `__bpf_get_stack` → `get_perf_callchain` → `perf_callchain_kernel`
/// → `unwind_next_frame` → `__kernel_text_address` → `__module_address`), and how many.
const STACK_PATH_DEPTH: u32 = 8;
const STACK_PATH_CAP: usize = 300;
/// How often the ring buffer is read.
const POLL: Duration = Duration::from_millis(50);
/// Records kept undecoded beyond this many bytes at the end are decoded with a count.
const DECODE_SHOWN: u64 = 1 << 20;
/// The count of records decoded at the end goes up by this many at a time.
const DECODE_STEP: u64 = 1 << 14;

/// The program's own path in the running kernel: [`DISPATCH`], the functions the loaded
/// programs call (`fp`), the interpreter where they are not JIT-compiled, the functions
/// of the map operation tables the generic map helpers call through, and their callees
/// (the names of the seeds alone when the kernel's text cannot be read). With `stacks`,
/// the stack helper's unwinder, deeper: a traced function it runs would be a run of the
/// program the kernel skips (counted as the task's lost calls) at every tree's start.
fn own_path(
    kt: Option<&crate::callees::KernelText>,
    fp: &dcg_bpf::Footprint,
    stacks: bool,
) -> HashSet<String> {
    let mut seeds: Vec<String> = DISPATCH.iter().map(|s| s.to_string()).collect();
    let Some(kt) = kt else {
        return seeds.into_iter().collect();
    };
    if let Some(base) = kt.address_of("__bpf_call_base") {
        for a in fp.call_addrs(base) {
            if let Some(n) = kt.name_at(a) {
                seeds.push(n.to_string());
            }
        }
    }
    if fp.interpreted {
        // `___bpf_prog_run` and its entry points by stack size (`__bpf_prog_run32`...).
        seeds.extend(kt.names_matching(&|n| {
            n == "___bpf_prog_run"
                || n.strip_prefix("__bpf_prog_run")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        }));
        // The generic map helpers call the map's own operation: the table's function
        // for that operation (`bpf_map_lookup_elem` -> `htab_map_lookup_elem`).
        let ops: Vec<&str> = ["lookup_elem", "update_elem", "delete_elem"]
            .into_iter()
            .filter(|op| seeds.iter().any(|s| *s == format!("bpf_map_{op}")))
            .collect();
        for table in &fp.map_ops {
            seeds.extend(
                kt.functions_in_table(table)
                    .into_iter()
                    .filter(|f| ops.iter().any(|op| f.ends_with(op))),
            );
        }
    }
    seeds.sort_unstable();
    seeds.dedup();
    debug(format_args!(
        "the program's own path: {} functions before callees (its code calls {}, {})",
        seeds.len(),
        fp.calls.len(),
        if fp.interpreted {
            "interpreted"
        } else {
            "JIT-compiled"
        }
    ));
    let mut own: HashSet<String> = seeds.iter().cloned().collect();
    own.extend(kt.closure(&seeds, OWN_PATH_DEPTH, OWN_PATH_CAP, &|_| true));
    if stacks {
        let helper: Vec<String> = seeds
            .iter()
            .filter(|s| s.starts_with("bpf_get_stack"))
            .cloned()
            .collect();
        own.extend(kt.closure(&helper, STACK_PATH_DEPTH, STACK_PATH_CAP, &|_| true));
    }
    own
}

/// Log dcg's CPU time so far after `what` (debug).
fn cpu_time(what: &str) {
    use nix::sys::resource::{getrusage, UsageWho};
    if let Ok(u) = getrusage(UsageWho::RUSAGE_SELF) {
        let ms = |t: nix::sys::time::TimeVal| t.tv_sec() * 1000 + t.tv_usec() / 1000;
        debug(format_args!(
            "{what}; dcg's CPU time so far: user {} ms, system {} ms, page faults {}",
            ms(u.user_time()),
            ms(u.system_time()),
            u.minor_page_faults() + u.major_page_faults()
        ));
    }
}

/// Debug: the programs' runs and time so far (counted while `kernel.bpf_stats_enabled` is
/// set), and the records kept.
fn program_time(capture: &Capture, what: &str) {
    if !log::log_enabled!(log::Level::Debug) {
        return;
    }
    let (runs, ns) = capture.run_stats();
    if runs > 0 {
        debug(format_args!(
            "{what}; the programs ran {runs} times, {} us so far; {} bytes of records kept",
            ns / 1000,
            capture.queued()
        ));
    }
}

/// The programs loaded and attached for a plan, the command started stopped: what
/// [`run`] records with.
pub(crate) struct Attached<'p> {
    capture: Capture,
    child: Option<Child>,
    kallsyms: Kallsyms,
    pointer_names: SymbolMap,
    site_at: FxHashMap<u64, u32>,
    /// The inlined copies probed.
    probed: Vec<sigdb::Instance<'p>>,
    /// The kernel's flag tables, read meanwhile.
    flags: crate::plan::FlagTablesRead,
}

/// Load the programs and attach them for `plan` (its command started stopped), or say
/// why the BPF engine cannot run here ([`KtraceError::BpfUnavailable`]).
pub(crate) fn attach<'p>(
    plan: &'p KernelPlan<'_>,
    notify: &mut dyn FnMut(Notice),
) -> Result<Attached<'p>> {
    let flags = plan.flag_tables();
    let sites = plan.avail.sites().ok_or_else(|| {
        KtraceError::Available(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "available_filter_functions_addrs",
        ))
    })?;
    debug(format_args!(
        "BPF session: {} sites; reading kallsyms",
        sites.len()
    ));
    let kallsyms_text = std::fs::read_to_string("/proc/kallsyms")?;
    debug(format_args!("kallsyms read"));
    let mut targets = targets(
        sites,
        &plan.roots,
        (plan.dbs, &plan.fields, &plan.derefs),
        plan.session.values.args,
        &plan.notrace,
    );
    debug(format_args!(
        "{} sites and kallsyms read; loading the programs",
        sites.len()
    ));
    let target = &plan.session.target;
    let mut child = if target.command().is_empty() {
        None
    } else {
        Some(Child::spawn_stopped(target.command())?)
    };
    let procs: Option<Vec<u32>> = child
        .as_ref()
        .map(|c| c.pid())
        .or(target.pid())
        .map(|p| vec![p as u32]);
    // What only decoding needs (the symbol tables, the sites by address) is made in
    // threads while the kernel loads and attaches the programs.
    notify(Notice::Progress(Progress::Attaching {
        functions: targets.len(),
        copies: plan.inlines.len(),
    }));
    let (attached, kallsyms, pointer_names, site_at, probed) = load_and_attach(
        &kallsyms_text,
        sites,
        &mut targets,
        plan,
        procs.as_deref(),
        notify,
    );
    notify(Notice::Progress(Progress::Done));
    drop(kallsyms_text);
    let kallsyms = Arc::try_unwrap(kallsyms).unwrap_or_else(|k| (*k).clone());
    let capture = match attached {
        Ok(c) => c,
        Err(e) => {
            if let Some(c) = child.as_mut() {
                c.terminate(Signal::SIGKILL);
            }
            return Err(KtraceError::BpfUnavailable(e));
        }
    };
    debug(format_args!("attached"));
    for (i, e) in capture.inline_failures() {
        let inst = probed[*i];
        notify(Notice::InlineProbeFailed {
            func: inst
                .callee()
                .map_or_else(String::new, |f| f.name().to_string()),
            container: inst
                .caller()
                .map_or_else(String::new, |f| f.symbol().to_string()),
            why: e.to_string(),
        });
    }
    Ok(Attached {
        capture,
        child,
        kallsyms,
        pointer_names,
        site_at,
        probed,
        flags,
    })
}

/// Bytes of records kept in memory while the command runs, the rest in a file.
fn records_in_memory(plan: &KernelPlan<'_>) -> usize {
    plan.tuning
        .records_in_memory
        .unwrap_or(dcg_spool::IN_MEMORY)
}

/// Run the attached session of `plan` into `outputs`: let the command run, record until
/// a stop condition, detach.
pub(crate) fn run(
    plan: &KernelPlan<'_>,
    attached: Attached<'_>,
    outputs: Outputs,
    out: &mut dyn Write,
    notify: &mut dyn FnMut(Notice),
) -> Result<Summary> {
    let Attached {
        mut capture,
        mut child,
        kallsyms,
        pointer_names,
        site_at,
        probed,
        flags,
    } = attached;
    let sites = plan.avail.sites().unwrap_or_default();
    let set = plan.dbs;
    let mut funcs = FuncTable::new(set);
    funcs.set_pointer_names(&pointer_names);
    // Values of the typedefs the kernel's events print by name (`gfp_t`), so named.
    if let Some(t) = flags.join() {
        funcs.set_flag_tables(t);
    }
    let session = &plan.session;
    let mut tree = CallTree::new(funcs, Shape::Flat, session.depth);
    tree.show_inline_frames(session.inline_frames && set.has_inline_instances());
    let pipe = Pipeline::new(tree, outputs);
    let mut feed = Feed::new(
        pipe,
        probed,
        (sites, site_at),
        kallsyms,
        (session.values, &plan.fields, &plan.derefs),
    );
    notify(Notice::Tracing {
        functions: plan.roots.len(),
        target: session.traced(child.as_ref().map(|c| c.pid())),
        probes: 0,
    });
    if let Some(c) = child.as_mut() {
        c.resume()?;
    }
    cpu_time("command resumed");
    program_time(&capture, "command resumed");
    let stop_reason = record(plan, &mut capture, &mut feed, child.as_mut(), out, notify)?;
    cpu_time(&format!("loop ended: {stop_reason}"));
    let summary = finish(capture, feed, child.as_mut(), stop_reason, out)?;
    debug(format_args!("output committed"));
    Ok(summary)
}

/// What loading and attaching gave: the capture (or why not), the kernel's symbols, the
/// pointer names, the sites by address and the inlined copies probed.
type Loading<'i> = (
    std::result::Result<Capture, dcg_bpf::BpfError>,
    Arc<Kallsyms>,
    SymbolMap,
    FxHashMap<u64, u32>,
    Vec<sigdb::Instance<'i>>,
);

/// Load the programs and attach them to `targets` (less the program's own path) and to
/// the inlined copies' first instructions; what only decoding needs (the symbol tables,
/// the sites by address) is made in a thread meanwhile. `procs`: the processes traced
/// (`None`: all); `mode`: how to attach (`None`: as the kernel allows).
fn load_and_attach<'i>(
    kallsyms_text: &str,
    sites: &[Site],
    targets: &mut Vec<Target>,
    plan: &'i KernelPlan<'_>,
    procs: Option<&[u32]>,
    notify: &mut dyn FnMut(Notice),
) -> Loading<'i> {
    let (roots, inlines) = (&plan.roots, &plan.inlines);
    std::thread::scope(|sc| {
        let (ktx, krx) = std::sync::mpsc::channel();
        let (text, sites) = (kallsyms_text, sites);
        let symbols = sc.spawn(move || {
            let kallsyms = Arc::new(Kallsyms::parse(text));
            // The receiver is alive until this thread is joined.
            let _ = ktx.send(Arc::clone(&kallsyms));
            // Pointers that land on a kernel symbol are named (`idmap=&nop_mnt_idmap`).
            let pointer_names = kallsyms.symbol_map();
            (pointer_names, site_index(sites))
        });
        let loaded = Loaded::load(
            targets,
            &dcg_bpf::LoadOptions {
                inlines: !inlines.is_empty(),
                per_cpu_offset: dcg_dbset::kallsyms::vmlinux_symbol(
                    kallsyms_text,
                    "__per_cpu_offset",
                ),
                mode: plan.tuning.bpf_mode,
            },
        );
        let kallsyms: Arc<Kallsyms> = match krx.recv() {
            Ok(k) => k,
            // The thread panicked before it parsed: its panic, here.
            Err(_) => match symbols.join() {
                Err(p) => std::panic::resume_unwind(p),
                Ok(_) => unreachable!("the symbols thread sends before it returns"),
            },
        };
        // Loaded first: what the programs call decides what they are not attached to.
        let attached = loaded.inspect(|loaded| {
            debug(format_args!("loaded"));
            let kt = crate::callees::KernelText::new(&kallsyms);
            let own = own_path(kt.as_ref(), &loaded.footprint(), plan.session.stack);
            drop(kt);
            let mut listed: Vec<&str> = own.iter().map(String::as_str).collect();
            listed.sort_unstable();
            debug(format_args!(
                "not attached (the program's own path, {}): {}",
                own.len(),
                listed.join(" ")
            ));
            let skip: HashSet<u64> = sites
                .iter()
                .filter(|s| own.contains(&s.name) && !roots.contains(&s.name))
                .map(|s| s.addr)
                .collect();
            targets.retain(|t| !skip.contains(&t.addr));
        });
        // Each inlined copy's first instruction, where the running kernel has its
        // container.
        let mut probed: Vec<sigdb::Instance<'_>> = Vec::new();
        let mut probe_addrs = Vec::new();
        for i in inlines {
            let Some(c) = i.caller() else { continue };
            let module = c
                .module()
                .filter(|m| m.kind() == sigdb::ModuleKind::KernelModule)
                .map(|m| m.name());
            match kallsyms.addr_of(c.symbol(), module) {
                Some(start) if i.entry_pc() >= c.addr() => {
                    probed.push(*i);
                    probe_addrs.push(start + (i.entry_pc() - c.addr()));
                }
                _ => notify(Notice::InlineProbeFailed {
                    func: i
                        .callee()
                        .map_or_else(String::new, |f| f.name().to_string()),
                    container: c.symbol().to_string(),
                    why: "its container is not in /proc/kallsyms".into(),
                }),
            }
        }
        let attached = attached.and_then(|mut loaded| {
            if plan.session.shown_at_end {
                // Records are kept while the command runs: their memory is made ready
                // before, while no program runs on its page faults.
                loaded.prepare_keep(records_in_memory(plan));
                debug(format_args!("room for the records made"));
            }
            debug(format_args!(
                "attaching to {} functions, {} inlined copies",
                targets.len(),
                probe_addrs.len()
            ));
            let conds = root_conds(plan, sites);
            let fields = site_fields(sites, &plan.fields);
            let derefs = site_derefs(sites, &plan.derefs);
            let tasks = dcg_bpf::Tasks {
                procs,
                comm: plan.tasks.comm.as_deref(),
                cgroup: plan.tasks.cgroup,
                conds: &conds,
                stacks: plan.session.stack,
                fields: &fields,
                derefs: &derefs,
            };
            loaded.attach(targets, &probe_addrs, &tasks)
        });
        debug(format_args!("attach returned"));
        let (pointer_names, site_at) = symbols
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (attached, kallsyms, pointer_names, site_at, probed)
    })
}

/// Copy and decode the records until a stop condition; the reason it stopped.
fn record(
    plan: &KernelPlan<'_>,
    capture: &mut Capture,
    feed: &mut Feed<'_>,
    mut child: Option<&mut Child>,
    out: &mut dyn Write,
    notify: &mut dyn FnMut(Notice),
) -> Result<String> {
    let session = &plan.session;
    let start = Instant::now();
    let deadline = session.stop.deadline(start);
    Ok(loop {
        // The command ended, or the process given with -p is gone.
        let exited = match (child.as_deref_mut(), session.target.pid()) {
            (Some(c), _) => c.poll().is_some(),
            (None, Some(p)) => !dcg_live::process::is_alive(p),
            (None, None) => false,
        };
        // `--count`: the program counts the trees it recorded whole; trees a filter
        // selects are counted by decoding them.
        let selecting = feed.pipe.selects();
        let counted = session.stop.count.is_some_and(|n| {
            if selecting {
                feed.pipe.trees_shown() >= n
            } else {
                capture.trees() >= n
            }
        });
        // Nothing watched before the end: while the command runs, the records are only
        // copied out of the ring (decoding them competes with the traced load for the
        // CPU), past a bound into a file; they are decoded once it ends or the count is
        // reached (or as they come where that file cannot take them).
        let in_memory = records_in_memory(plan);
        // Trees a filter selects under a count are counted as they are decoded.
        let count_by_decoding = selecting && session.stop.count.is_some();
        if session.shown_at_end
            && !count_by_decoding
            && !counted
            && !exited
            && tracefs::stop_requested().is_none()
            && deadline.is_none_or(|d| Instant::now() < d)
            && capture.keep(in_memory)?
        {
            std::thread::sleep(POLL);
            continue;
        }
        // The session ends after this read: the programs are detached first (the records
        // stay in the ring until it is freed), then decoded without the programs firing
        // on every function the decoding reaches in the kernel.
        let ending = exited
            || counted
            || tracefs::stop_requested().is_some()
            || deadline.is_some_and(|d| Instant::now() >= d);
        if ending {
            cpu_time("ending");
            program_time(capture, "ending");
            debug(format_args!("detaching"));
            capture.detach();
            cpu_time("detached");
        }
        // At the end, the records kept while the command ran may take seconds: counted.
        let show = ending && capture.queued() >= DECODE_SHOWN;
        let (mut err, mut decoded) = (None, 0u64);
        capture.consume(|r| {
            // Records after the count's last tree (other tasks', the next tree's) are
            // left out: exactly that many trees are shown.
            let enough = || {
                session
                    .stop
                    .count
                    .is_some_and(|n| feed.pipe.trees_shown() >= n)
            };
            if err.is_none() && !enough() {
                if let Err(e) = feed.record(r) {
                    err = Some(e);
                }
            }
            decoded += 1;
            if show && decoded % DECODE_STEP == 0 {
                notify(Notice::Progress(Progress::Decoding { records: decoded }));
            }
        })?;
        if show {
            notify(Notice::Progress(Progress::Done));
        }
        if let Some(e) = err {
            return Err(e.into());
        }
        feed.write_out(out)?;
        out.flush()?;
        let done = feed.pipe.trees_shown();
        if let Some(sig) = tracefs::stop_requested() {
            break format!("signal {sig}");
        }
        if session.stop.count.is_some_and(|n| done >= n) {
            break format!("{done} calls");
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break "duration reached".into();
        }
        if exited {
            break if child.is_some() {
                "command exited".into()
            } else {
                "process exited".into()
            };
        }
        std::thread::sleep(POLL);
    })
}

/// Detach, decode what is left, close the ring and the command: how the session ended.
fn finish(
    capture: Capture,
    mut feed: Feed<'_>,
    child: Option<&mut Child>,
    stop_reason: String,
    out: &mut dyn Write,
) -> Result<Summary> {
    let mut summary = Summary::default();
    let mut capture = capture;
    // Ended on a count: detached now.
    capture.detach();
    debug(format_args!(
        "records kept in the temporary directory while the command ran: {} bytes",
        capture.spooled()
    ));
    feed.flush_all()?;
    feed.pipe.finish(out)?;
    out.flush()?;
    debug(format_args!("records decoded and written"));
    summary.lost_in_stream = capture.lost();
    summary.bpf_missed = capture.missed();
    summary.rejected_at_entry = capture.rejected();
    // Recorded tasks' runs find the counter; a session that recorded nothing has no
    // losses to attribute.
    summary.losses_unattributed = feed.pipe.tree().counts().calls > 0 && !capture.counts_losses();
    debug(format_args!(
        "the kernel skipped the programs {} times in all (any task, any CPU)",
        summary.bpf_missed
    ));
    drop(capture);
    debug(format_args!("ring and programs closed"));
    if let Some(c) = child {
        c.terminate(Signal::SIGTERM);
    }
    summary.completed = feed.pipe.tree().counts().top_level;
    summary.lossy_trees = feed.pipe.tree().counts().lossy_trees;
    let mut lost: Vec<(String, u64)> = feed
        .lost_at
        .iter()
        .map(|(f, n)| (f.to_string(), *n))
        .collect();
    lost.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    summary.lost_calls = lost;
    summary.stop_reason = stop_reason;
    summary.calls = feed.pipe.close()?;
    Ok(summary)
}

/// Decoding speed: `bpf_engine/decode_speed.rs`.
#[cfg(test)]
mod decode_speed;
