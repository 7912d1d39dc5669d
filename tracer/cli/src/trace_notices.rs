//! How `dcg trace` words what the tracers report: the kernel and the user-space
//! sessions' notices (each printed after `dcg: `) and the kernel session's closing lines.
//! The libraries hand them over typed; only this file turns them into text.

use dcg_ktrace::{Notice, Progress, Summary, PROBE_CAP};
use dcg_utrace::Notice as UserNotice;

/// A kernel session's notice, as printed after `dcg: `.
pub fn kernel(n: &Notice) -> String {
    match n {
        Notice::RemovedStale(what) => format!("removed stale {what}"),
        Notice::DbFetched(note) => db_note(note),
        Notice::BpfFallback(why) => {
            format!("{why}; tracing with function_graph instead (--engine bpf to insist)")
        }
        Notice::NoMatch(m) => no_match(m),
        Notice::Inlined {
            funcs,
            copies,
            containers,
            more,
        } => format!(
            "{} inlined: tracing the function{} holding {} ({}), {copies} cop{} shown as \
             frames with the arguments at their first instruction and no return value \
             (DWARF does not say where an inlined copy leaves it){}",
            funcs.join(", "),
            if containers.len() == 1 { "" } else { "s" },
            if *copies == 1 { "it" } else { "them" },
            containers.join(", "),
            if *copies == 1 { "y" } else { "ies" },
            if *more > 0 {
                format!("; {more} more copies left out (limit {})", dcg_ktrace::funcs::INLINE_MAX)
            } else {
                String::new()
            }
        ),
        Notice::InlineProbeFailed {
            func,
            container,
            why,
        } => format!(
            "no probe on {func} inlined in {container} ({why}): its frame opens at its first              call, without arguments"
        ),
        Notice::NoExitProbe { func, why } => format!("no exit probe for {func}: {why}"),
        Notice::GraphRejected(names) => {
            format!("set_graph_function rejected: {}", names.join(", "))
        }
        Notice::Tracing {
            functions,
            target,
            probes,
        } => format!(
            "tracing {functions} function{} ({}){}; Ctrl-C to stop",
            if *functions == 1 { "" } else { "s" },
            traced(target),
            if *probes == 0 {
                String::new()
            } else {
                format!(", {probes} probes")
            }
        ),
        Notice::Progress(p) => progress(p),
    }
}

/// A long step, as its spinner on a terminal says it (`dcg trace` prints no line for it).
pub fn progress(p: &Progress) -> String {
    match p {
        Progress::Attaching { functions, copies } => format!(
            "loading the BPF programs, attaching to {functions} function{}{}",
            if *functions == 1 { "" } else { "s" },
            match copies {
                0 => String::new(),
                1 => " and 1 inlined copy".to_string(),
                n => format!(" and {n} inlined copies"),
            }
        ),
        Progress::Decoding { records } => {
            format!("decoding the records kept while the command ran: {records}")
        }
        Progress::Done => "done".to_string(),
    }
}

/// The closing lines of a kernel session.
pub fn summary(s: &Summary) -> Vec<String> {
    let mut v = Vec::new();
    if s.lost_in_stream > 0 || s.lost_unknown || s.overrun > 0 || s.dropped > 0 {
        v.push(format!(
            "dcg: warning: events were lost: {}{} reported in the stream, {} overrun, {} \
             dropped (the output misses calls; trace fewer functions or use --depth)",
            s.lost_in_stream,
            if s.lost_unknown { "+" } else { "" },
            s.overrun,
            s.dropped
        ));
    }
    let lost: u64 = s.lost_calls.iter().map(|(_, n)| n).sum();
    if lost > 0 {
        let at: Vec<String> = s
            .lost_calls
            .iter()
            .take(5)
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        let trees = match s.lossy_trees {
            0 => String::new(),
            1 => " in 1 tree (marked \"calls lost\")".to_string(),
            n => format!(" in {n} trees (marked \"calls lost\")"),
        };
        v.push(format!(
            "dcg: note: {lost} call{} of the traced tasks {} missing{trees}: the kernel skipped \
             the BPF program on their CPU while it recorded {}{}; what ran then (an \
             interrupt) was not recorded",
            if lost == 1 { "" } else { "s" },
            if lost == 1 { "is" } else { "are" },
            at.join(", "),
            if s.lost_calls.len() > at.len() {
                ", ..."
            } else {
                ""
            },
        ));
    } else if s.losses_unattributed && s.bpf_missed > 0 {
        v.push(format!(
            "dcg: note: the kernel skipped the BPF program {} times (a traced function hit \
             on a CPU where it already ran, any task); calls made in interrupts during a \
             record may be missing from the trees",
            s.bpf_missed
        ));
    }
    let missing: u64 = s.valueless.iter().map(|(_, n)| n).sum();
    if missing > 0 {
        let list: Vec<String> = s
            .valueless
            .iter()
            .take(8)
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        v.push(format!(
            "dcg: {missing} calls returned before their exit probe existed or without one, \
             value unknown: {}{}",
            list.join(", "),
            if s.valueless.len() > 8 { ", ..." } else { "" }
        ));
    }
    if s.probes_capped > 0 {
        v.push(format!(
            "dcg: probe limit {PROBE_CAP} reached: {} more functions got no probe",
            s.probes_capped
        ));
    }
    if let Some((_, first)) = s.probes_failed.first() {
        let names: Vec<&str> = s
            .probes_failed
            .iter()
            .take(8)
            .map(|(f, _)| f.as_str())
            .collect();
        v.push(format!(
            "dcg: {} probes could not be created ({}{}); first error: {first}",
            s.probes_failed.len(),
            names.join(", "),
            if s.probes_failed.len() > 8 {
                ", ..."
            } else {
                ""
            },
        ));
    }
    if let Some(u) = &s.undecoded {
        v.push(u.clone());
    }
    for f in &s.cleanup_failures {
        v.push(format!("dcg: cleanup: {f}"));
    }
    v.push(format!(
        "dcg: stopped ({}), {} calls{}{}",
        s.stop_reason,
        s.completed,
        if s.probes == 0 {
            String::new()
        } else {
            format!(", {} probes", s.probes)
        },
        if s.rejected_at_entry == 0 {
            String::new()
        } else {
            format!(
                ", {} rejected at entry by --filter (not recorded)",
                s.rejected_at_entry
            )
        }
    ));
    v
}

/// At most `max` names of a list, then how many more.
fn shorten_list<S: AsRef<str>>(v: &[S], max: usize) -> String {
    let names = |v: &[S]| {
        v.iter()
            .map(AsRef::as_ref)
            .collect::<Vec<&str>>()
            .join(", ")
    };
    if v.len() <= max {
        names(v)
    } else {
        format!("{} and {} more", names(&v[..max]), v.len() - max)
    }
}

/// A user-space session's notice, as printed after `dcg: `.
pub fn user(n: &UserNotice) -> String {
    match n {
        UserNotice::Db(note) => db_note(note),
        UserNotice::EngineUprobes(why) => format!("engine: uprobes ({why})"),
        UserNotice::EngineInProcess { command } => format!(
            "engine: in process ({} preloaded into {})",
            dcg_utrace::inproc_engine::RECORDER,
            command.as_deref().unwrap_or("the command")
        ),
        UserNotice::UnseenConstructors(libs) => format!(
            "in process, calls made by the constructors of {} are not traced: the loader \
             runs them before the recorder's (--engine uprobe traces them)",
            libs.join(", ")
        ),
        UserNotice::NoDwarf { .. }
        | UserNotice::NoDwarfSkipped { .. }
        | UserNotice::InlinedCopies { .. }
        | UserNotice::ColdPart { .. }
        | UserNotice::InlineOnly { .. }
        | UserNotice::InlineOnlySkipped { .. }
        | UserNotice::NotLoaded { .. }
        | UserNotice::InlineNotLoaded { .. }
        | UserNotice::IfuncTraced { .. }
        | UserNotice::IfuncUntraced { .. }
        | UserNotice::ByUprobes { .. }
        | UserNotice::Unreadable(_)
        | UserNotice::NoMatch { .. } => selection(n),
        UserNotice::NothingToProbe => "nothing to probe".to_string(),
        UserNotice::NothingToTrace => "nothing to trace".to_string(),
        UserNotice::RemovedStale(what) => format!("removed stale {what}"),
        UserNotice::Cleanup(what) => format!("cleanup: {what}"),
        UserNotice::InlineProbeFailed {
            callee,
            caller,
            why,
        } => format!(
            "no probe on {callee} inlined in {caller} ({why}): its frame opens at its first \
             call, without arguments"
        ),
        UserNotice::LostEvents(n) => {
            format!("LOST {n} events (ring buffer overrun): some calls are missing or incomplete")
        }
        UserNotice::Unparsed(n) => format!("{n} event lines could not be parsed"),
        UserNotice::CommandEnded {
            command,
            pid,
            ended,
        } => format!("{command} (pid {pid}) {}", ended.describe()),
        UserNotice::ProcessExited(pid) => format!("process {pid} exited"),
        UserNotice::Detached { pid, comm } => {
            format!("detached from process {pid} ({comm}); its probes are removed")
        }
        UserNotice::CommandStopped {
            command,
            pid,
            ended,
        } => format!(
            "stopped tracing; {command} (pid {pid}) was still running: {}",
            ended.describe()
        ),
        UserNotice::NoUprobesForUnhooked(e) => {
            format!("{e}; the functions without entry hooks are not traced")
        }
        UserNotice::NoKernelSide(why) => {
            format!("no kernel calls in this session: {why}; the user functions are traced alone")
        }
        UserNotice::LostUprobeEvents(n) => {
            format!("LOST {n} uprobe events (ring buffer overrun): some calls are missing")
        }
        UserNotice::RecorderHookedNothing { command } => format!(
            "the recorder hooked nothing: {} did not load it, or loaded none of the traced \
             binaries (--engine uprobe traces without it)",
            command.as_deref().unwrap_or("the command")
        ),
        UserNotice::Unpatched { count, names } => format!(
            "{count} function entries could not be patched in process when the command \
             started (no room for a trampoline near them, or their code could not be made \
             writable) and were not traced: {}",
            names.join(", ")
        ),
        UserNotice::LostRecords(n) => format!(
            "LOST {n} records (a thread's ring was full): some calls are missing or incomplete"
        ),
        UserNotice::NoFreeRing { threads, rings } => {
            format!("{threads} threads found no free ring (of {rings}) and were not traced")
        }
        UserNotice::NoRingMemory { threads, dir } => format!(
            "{threads} threads were not traced: the memory for their rings could not be had \
             (is {} full?)",
            dir.display()
        ),
        UserNotice::RejectedAtEntry(n) => format!(
            "{n} top-level call{} rejected at entry by --filter (not recorded)",
            if *n == 1 { "" } else { "s" }
        ),
    }
}

/// A user-space notice about what the patterns selected and how each function is traced.
fn selection(n: &UserNotice) -> String {
    match n {
        UserNotice::NoDwarf {
            name,
            declared_in: Some(m),
        } => format!(
            "{name}: no DWARF of its own (written in assembly, or built without -g): \
             typed by the declaration in {m}'s DWARF, its arguments read where the ABI \
             passes them"
        ),
        UserNotice::NoDwarf {
            name,
            declared_in: None,
        } => format!(
            "{name}: no DWARF gives its types (written in assembly, or built without \
             -g): traced without arguments, its return value raw"
        ),
        UserNotice::NoDwarfSkipped {
            given,
            pattern,
            count,
        } => format!(
            "{given}:{pattern}: {count} matching functions have no DWARF and are not traced \
             (name one to trace it without arguments)"
        ),
        UserNotice::InlinedCopies {
            inlined,
            copies,
            containers,
            frames,
            more,
        } => {
            let how = match (frames, copies) {
                (false, _) => "not shown (--no-inline-frames)",
                (true, 1) => {
                    "shown as a frame with the arguments at its first instruction and no \
                     return value (DWARF does not say where an inlined copy leaves it)"
                }
                (true, _) => {
                    "each shown as a frame with the arguments at its first instruction and \
                     no return value (DWARF does not say where an inlined copy leaves it)"
                }
            };
            format!(
                "{}: {} inlined in {} (traced), {how}{}",
                shorten_list(inlined, 8),
                if *copies == 1 {
                    "a copy".to_string()
                } else {
                    format!("{copies} copies")
                },
                shorten_list(containers, 8),
                if *more > 0 {
                    format!(
                        "; {more} more copies left out (at most {})",
                        dcg_utrace::plan::INLINE_MAX
                    )
                } else {
                    String::new()
                }
            )
        }
        UserNotice::ColdPart { symbol, parent } => format!(
            "{symbol}: the cold part of {parent}, not an entry point: not probed (its calls \
             show as {parent})"
        ),
        UserNotice::InlineOnly {
            name,
            into,
            no_instances,
        } => {
            let mut msg = if into.is_empty() {
                format!("{name}: only inlined, no code of its own: not traced")
            } else {
                format!(
                    "{name}: inlined into {}, no code of its own: not traced",
                    shorten_list(into, 8)
                )
            };
            if *no_instances {
                msg.push_str(
                    " (a db with its inlined copies, what dwarfscan writes by default, would \
                     trace them)",
                );
            }
            msg
        }
        UserNotice::InlineOnlySkipped {
            given,
            pattern,
            count,
        } => {
            format!("{given}:{pattern}: {count} matching functions are only inlined and not traced")
        }
        UserNotice::NotLoaded { symbol, addr, path } => format!(
            "{symbol}: address {addr:#x} is in no loadable segment of {}: not probed",
            path.display()
        ),
        UserNotice::InlineNotLoaded {
            callee,
            caller,
            pc,
            path,
        } => format!(
            "{callee} inlined in {caller}: address {pc:#x} is in no loadable segment of {}: \
             not probed",
            path.display()
        ),
        UserNotice::IfuncTraced {
            name,
            path,
            impls,
            declared_in,
        } => format!(
            "{name} in {} is an IFUNC: the implementation its resolver chooses at start-up \
             is traced (of {impls}), {}",
            path.display(),
            match declared_in {
                Some(m) => format!("typed by the declaration in {m}'s DWARF"),
                None => "with raw values (no DWARF)".to_string(),
            }
        ),
        UserNotice::IfuncUntraced { name, path } => format!(
            "{name} in {} is an IFUNC whose implementations dcg cannot name (no \
             __{name}_* symbols it can hook): not traced",
            path.display()
        ),
        UserNotice::ByUprobes { .. } | UserNotice::Unreadable(_) | UserNotice::NoMatch { .. } => {
            probing(n)
        }
        // The other notices are worded by `user`.
        other => format!("{other:?}"),
    }
}

/// Notices on how the selected functions are probed, and patterns that select nothing.
fn probing(n: &UserNotice) -> String {
    match n {
        UserNotice::ByUprobes { symbol, path, why } => {
            format!(
                "{symbol} in {}: traced with uprobes: {}",
                path.display(),
                unhookable(why)
            )
        }
        UserNotice::Unreadable(funcs) => format!(
            "values in xmm and x87 registers cannot be read by uprobes (they fetch \
             general-purpose registers and memory only), shown as ?xmm0, ?st0, ?rdi:xmm0 \
             (where the value is); arguments unoptimized code spills to a frame (-O0 with a \
             frame pointer) are read from there: {}",
            shorten_list(funcs, 8)
        ),
        UserNotice::NoMatch {
            pattern,
            path,
            unprobeable,
        } => format!(
            "no function{} matches '{pattern}' in {}",
            if *unprobeable {
                " that can be probed"
            } else {
                ""
            },
            path.display()
        ),
        // The other notices are worded by `selection`.
        other => format!("{other:?}"),
    }
}

/// What a running session traces, as the tracing line names it.
fn traced(t: &dcg_live::plan::Traced) -> String {
    use dcg_live::plan::Traced;
    match t {
        Traced::Command(pid) => format!("command pid {pid}"),
        Traced::Pid(pid) => format!("pid {pid}"),
        Traced::AllTasks => "all tasks".to_string(),
    }
}

/// Why a function is not hooked in process, as the notice says it.
fn unhookable(why: &dcg_utrace::hooks::Unhookable) -> String {
    use dcg_utrace::hooks::Unhookable;
    match *why {
        Unhookable::NoCode => "its code is in no loadable segment".into(),
        Unhookable::McountTooFar => "its mcount call is too far in".into(),
        Unhookable::Undecodable => "its first instructions do not decode".into(),
        Unhookable::TooShort(size) => format!("it is {size} bytes: too short for a 5-byte jump"),
        Unhookable::CallInMoved { at, bytes } => {
            format!("a call at {at:#x} is among its first {bytes} bytes")
        }
        Unhookable::JumpIntoMoved { at, bytes } => {
            format!("code at {at:#x} jumps into its first {bytes} bytes")
        }
    }
}

/// How a db fetched from debuginfod was made.
pub fn fetched_as(how: dcg_dbset::note::FetchedAs) -> &'static str {
    use dcg_dbset::note::FetchedAs;
    match how {
        FetchedAs::Section => "its .dcg_sigdb section",
        FetchedAs::BuiltFromDebugFile => "a db built from its debug file",
    }
}

/// What the db resolver has to say about where a db came from.
pub fn db_note(note: &dcg_dbset::note::DbNote) -> String {
    use dcg_dbset::note::{DbNote, Whose};
    match note {
        DbNote::Fetched {
            whose,
            how,
            functions,
            stored,
        } => {
            let how = fetched_as(*how);
            match whose {
                Whose::Kernel => format!(
                    "the running kernel's db came from debuginfod ({how}, {functions} \
                     functions) and is kept in {}",
                    stored.display()
                ),
                Whose::Binary(path) => format!(
                    "{}: no DWARF here; its db came from debuginfod ({how}, {functions} \
                     functions) and is kept in the store: {}",
                    path.display(),
                    stored.display()
                ),
            }
        }
        DbNote::BuildIdMismatch { binary, db } => format!(
            "{}: the build-id of {} does not match the binary's; values may be wrong",
            binary.display(),
            db.display()
        ),
        DbNote::Built {
            binary,
            store_unreadable,
            from,
            functions,
            seconds,
            to_keep,
        } => {
            let mut s = format!(
                "{}: {}no db in the store; built one from the DWARF of {} ({functions} \
                 functions, {seconds:.2} s)",
                binary.display(),
                store_unreadable
                    .as_ref()
                    .map(|e| format!("the store could not be read ({e}); "))
                    .unwrap_or_default(),
                from.display()
            );
            if let Some(steps) = to_keep {
                s.push_str("; to keep it:\n");
                s.push_str(steps);
            }
            s
        }
    }
}

/// Why a kernel pattern selects no traceable function.
fn no_match(m: &dcg_ktrace::funcs::NoMatch) -> String {
    use dcg_ktrace::funcs::{Rebuild, Unmatched};
    let pattern = &m.pattern;
    let mut s = match &m.why {
        Unmatched::Nothing => {
            format!("{pattern}: no traceable function matches, and no function of the db does")
        }
        Unmatched::OnlyUntraceable { names, more } => format!(
            "{pattern}: no traceable function matches (the db has {}{}: inlined or notrace; \
             ask for one by name to see why)",
            names.join(", "),
            if *more { ", ..." } else { "" }
        ),
        Unmatched::Unknown => format!(
            "{pattern}: unknown function (not in the db of this kernel, and not in \
             available_filter_functions)"
        ),
        Unmatched::Notrace => format!("{pattern} is not traceable: it is marked notrace"),
        Unmatched::InlinedNowhere => {
            format!("{pattern} is not traceable: it is only inlined (the db names no caller)")
        }
        Unmatched::Inlined {
            callers,
            more,
            try_caller,
            rebuild,
        } => {
            let more = if *more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            let hint = try_caller
                .as_ref()
                .map(|c| format!(" (try --func {c})"))
                .unwrap_or_default();
            let rebuild = match rebuild {
                Rebuild::Nothing => "",
                Rebuild::WithInlineInstances => {
                    "; a db with inline instances (dwarfscan without --no-inline-instances) \
                     traces its inlined copies"
                }
                Rebuild::WithAllInlineInstances => {
                    "; the db holds none of its inlined copies (dwarfscan records those of \
                     header `inline` functions with --all-inline-instances)"
                }
            };
            format!(
                "{pattern} is not traceable: it is inlined into {}{more}{hint}{rebuild}",
                callers.join(", ")
            )
        }
        Unmatched::NotPatchable => format!(
            "{pattern} is not traceable: it is in the db but not in available_filter_functions \
             (notrace, or not patchable)"
        ),
    };
    if m.bpf_traces_copies {
        s.push_str("; the BPF engine traces its inlined copies (--engine bpf)");
    }
    s
}
