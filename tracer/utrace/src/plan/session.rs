//! The user-space trace plan, made once before anything is traced: the binaries and
//! their dbs, the functions each pattern selects and their probes, the inlined copies,
//! the engine chosen with its reason (and, in process, how the recorder hooks each
//! function), the outputs asked for and the engine-independent session plan. Both
//! engines take it whole; neither reads the options.

use std::path::PathBuf;
use std::rc::Rc;

use dcg_calls::outputs::OutputSpec;
use dcg_dbset::glob::glob_match;
use dcg_filter::saved::TreeFilter;
use dcg_filter::Signature;
use dcg_inproc::plan::PlanFunc;
use dcg_live::options::{split_user_func, Engine, TraceOptions};
use dcg_live::plan::SessionPlan;
use dcg_live::process;

use crate::plan::{self as probes, InlineSite, Probe, Target};
use crate::{hooks, inproc_engine, Notice, Result, UtraceError};

/// How user-space calls are captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserEngine {
    /// The in-process recorder, preloaded into the command dcg starts.
    InProcess,
    /// Uprobes.
    Uprobes,
}

/// Why a session cannot run in process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotInProcess {
    /// `-p` attaches to a running process: nothing can be preloaded into it.
    #[error("-p attaches to a running process")]
    AttachesToPid,
    /// No command is started (every process running the binary is traced).
    #[error("no command to start")]
    NoCommand,
    /// A traced binary is statically linked: nothing is preloaded into it.
    #[error("{} is statically linked (no preloading)", .0.display())]
    StaticallyLinked(PathBuf),
    /// The recorder library was not found.
    #[error(
        "{} was not found beside dcg (set DCG_RECORDER)",
        inproc_engine::RECORDER
    )]
    NoRecorder,
}

/// Why that user-space engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserEngineReason {
    /// `--engine inproc` or `--engine uprobe`.
    Asked,
    /// A command dcg starts, the recorder at hand: in process, the cheaper way.
    Default,
    /// The session cannot run in process (why): uprobes do.
    InProcessUnavailable(NotInProcess),
}

/// The user-space engine chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEngineChoice {
    /// In process or uprobes.
    pub engine: UserEngine,
    /// The rule that chose it.
    pub reason: UserEngineReason,
}

impl UserEngineChoice {
    /// The engine for `opts` and its `targets`: in process for a command dcg starts,
    /// else uprobes; an error when `--engine inproc` cannot be.
    pub fn of(opts: &TraceOptions, targets: &[Target]) -> Result<UserEngineChoice> {
        let (engine, reason) = match (opts.engine, inproc_engine::unavailable(opts, targets)) {
            (Engine::Uprobe, _) => (UserEngine::Uprobes, UserEngineReason::Asked),
            (Engine::Inproc, Some(why)) => return Err(UtraceError::InProcessAsked(why)),
            (Engine::Inproc, None) => (UserEngine::InProcess, UserEngineReason::Asked),
            (_, Some(why)) => (
                UserEngine::Uprobes,
                UserEngineReason::InProcessUnavailable(why),
            ),
            (_, None) => (UserEngine::InProcess, UserEngineReason::Default),
        };
        Ok(UserEngineChoice { engine, reason })
    }

    /// What the user is told of the choice: why not in process, or what in process
    /// cannot see.
    fn note(&self, opts: &TraceOptions, targets: &[Target], notes: &mut Vec<Notice>) {
        if let UserEngineReason::InProcessUnavailable(why) = &self.reason {
            notes.push(Notice::EngineUprobes(why.clone()));
        }
        if self.engine == UserEngine::InProcess {
            notes.push(Notice::EngineInProcess {
                command: opts.target.command().first().cloned(),
            });
            notes.extend(inproc_engine::unseen_constructors(opts, targets));
        }
    }
}

/// A user-space session, planned.
pub struct UserPlan<'t> {
    /// The binaries traced, with their dbs.
    pub targets: &'t [Target],
    /// Each selected function's probe.
    pub probes: Vec<Probe<'t>>,
    /// The inlined copies' sites.
    pub inlines: Vec<InlineSite<'t>>,
    /// In process: how the recorder hooks each probe (`None`: left to uprobes).
    pub hooks: Vec<Option<Vec<PlanFunc>>>,
    /// The engine, and why.
    pub engine: UserEngineChoice,
    /// What every engine reads: target, stop, values, depth, inline frames.
    pub session: SessionPlan,
    /// The outputs asked for (opened by [`crate::run`] before the engine starts).
    pub outputs: OutputSpec,
    /// `--filter` and `--min-duration`, bound to the traced functions' signatures: the
    /// trees shown.
    pub select: Option<Rc<TreeFilter>>,
    /// Values are read by the kernel's -errno convention.
    pub errno: bool,
    /// In process: processes the command forks (and what they exec) are traced too.
    pub follow_children: bool,
    /// In process: the recorder library to preload.
    pub recorder: Option<PathBuf>,
}

/// Each `--func` pattern with the index of its target.
pub type Specs = Vec<(usize, String)>;

impl<'t> UserPlan<'t> {
    /// Plan a session of `opts` over `targets` (`prototypes`: dbs declaring library
    /// functions no DWARF describes): the plan, or the notices saying why nothing can be
    /// traced (patterns that select nothing, or no probe at all). Notices on the way go
    /// to `notes`.
    pub fn make(
        opts: &TraceOptions,
        targets: &'t [Target],
        prototypes: &[&'t sigdb::Db],
        specs: &Specs,
        notes: &mut Vec<Notice>,
    ) -> Result<std::result::Result<UserPlan<'t>, Vec<Notice>>> {
        let engine = UserEngineChoice::of(opts, targets)?;
        engine.note(opts, targets, notes);
        let mut session = SessionPlan::of(opts);
        // The parameters `--fields` reads members through are fetched (and shown).
        session.values.args |= !session.derefs.is_empty();
        let notrace = Notrace(&opts.notrace);
        let mut selected = select_functions(
            targets,
            prototypes,
            specs,
            (&session, &notrace),
            engine.engine,
            notes,
        )?;
        if !selected.failed.is_empty() {
            return Ok(Err(selected.failed));
        }
        if selected.probes.is_empty() {
            return Ok(Err(vec![Notice::NothingToProbe]));
        }
        let trees = select_trees(opts, &selected.probes)?;
        // What the filters read is captured (and shown), as --args, --show-retvals and
        // --fields: the probes planned again to fetch it.
        if let Some(s) = &trees {
            let values = session.values;
            session.read_for(s);
            if session.values != values {
                selected = select_functions(
                    targets,
                    prototypes,
                    specs,
                    (&session, &notrace),
                    engine.engine,
                    &mut Vec::new(),
                )?;
            }
        }
        super::plan_fields(&session.derefs, &mut selected.probes)?;
        let recorder = engine.engine == UserEngine::InProcess;
        super::plan_derefs(
            &session.derefs,
            &mut selected.probes,
            (session.stack, recorder),
        );
        super::plan_outputs(&session.derefs, &mut selected.probes, recorder);
        crate::hooks::refresh_entry_ops(targets, &selected.probes, &mut selected.hooks)?;
        // The recorder decides a top-level call's tests at its entry (on parameters and
        // on the member words it reads for --fields), unless uprobes trace some
        // functions: a call that is top-level for the recorder may then be inside an
        // uprobe-traced one.
        if let Some(t) = trees
            .as_deref()
            .filter(|_| selected.hooks.iter().all(Option::is_some))
        {
            for (p, hooks) in selected.probes.iter().zip(selected.hooks.iter_mut()) {
                if let Some([f]) = hooks.as_deref_mut() {
                    f.conds = crate::hooks::entry_conds(p, &t.entry_tests(&p.symbol, true));
                }
            }
        }
        let name = match engine.engine {
            UserEngine::InProcess => "in process",
            UserEngine::Uprobes => "uprobes",
        };
        Ok(Ok(UserPlan {
            targets,
            probes: selected.probes,
            inlines: selected.inlines,
            hooks: selected.hooks,
            engine,
            outputs: outputs(opts, source_name(opts, targets, name)),
            session,
            errno: opts.errno,
            follow_children: !opts.no_children,
            recorder: opts.recorder.clone(),
            select: trees,
        }))
    }
}

/// `--filter` and `--min-duration` bound to the signatures of the traced functions (any
/// of them can start a tree), or refused; `None` when neither is asked for.
fn select_trees(opts: &TraceOptions, probes: &[Probe<'_>]) -> Result<Option<Rc<TreeFilter>>> {
    if opts.filters.is_empty() && opts.min_duration.is_none() {
        return Ok(None);
    }
    let sigs: Vec<(String, Signature)> = probes
        .iter()
        .filter_map(|p| Some((p.symbol.clone(), Signature::of(&p.func?, &opts.filters))))
        .collect();
    let find = |name: &str| {
        probes.iter().find_map(|p| {
            let f = p.func?;
            (p.symbol == name || f.name() == name)
                .then(|| (p.symbol.clone(), Signature::of(&f, &opts.filters)))
        })
    };
    TreeFilter::bound(
        opts.filters.clone(),
        opts.min_duration,
        &sigs,
        &find,
        "not among the traced functions",
    )
    .map(|f| Some(Rc::new(f)))
    .map_err(UtraceError::Filter)
}

/// The session's outputs, as the command line asked for them.
fn outputs(opts: &TraceOptions, source: String) -> OutputSpec {
    OutputSpec {
        json: opts.output.json,
        errors_only: opts.output.errors_only,
        color: opts.output.color,
        cpu_width: cpu_width(),
        threads: true,
        report: opts.output.report,
        saved: opts.output.saved_calls.clone(),
        source,
        ..Default::default()
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

/// How the saved calls name the source: the engine, the traced files, the command or pid.
fn source_name(opts: &TraceOptions, targets: &[Target], engine: &str) -> String {
    let files: Vec<String> = targets
        .iter()
        .map(|t| t.path.display().to_string())
        .collect();
    match (opts.target.pid(), opts.target.command().is_empty()) {
        (Some(p), _) => format!("{engine} on {} in pid {p}", files.join(", ")),
        (None, false) => format!(
            "{engine} on {}: {}",
            files.join(", "),
            opts.target.command().join(" ")
        ),
        (None, true) => format!("{engine} on {}", files.join(", ")),
    }
}

/// The files `--func` names, one target per distinct file, and each pattern with the
/// index of its target.
pub fn load_targets(
    opts: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    notes: &mut Vec<Notice>,
) -> Result<(Vec<Target>, Specs)> {
    let mut targets: Vec<Target> = Vec::new();
    let mut specs: Specs = Vec::new();
    for f in &opts.func {
        let Some((path, pattern)) = split_user_func(f) else {
            return Err(UtraceError::Spec(f.clone()));
        };
        let resolved = probes::resolve_binary(path, opts.target.pid()).or_else(|e| {
            match opts.target.command().first() {
                // `dcg trace --func prog:main -- prog`: the command's own file.
                Some(cmd) if cmd == path => process::command_path(cmd).map_err(Into::into),
                // `--func libc.so.6:strlen -- prog`: a library the command loads.
                Some(cmd) => process::command_path(cmd)
                    .ok()
                    .and_then(|exe| probes::library_of_command(&exe, path))
                    .ok_or(e),
                None => Err(e),
            }
        })?;
        let resolved = resolved.canonicalize().unwrap_or(resolved);
        let idx = match targets.iter().position(|t| t.path == resolved) {
            Some(i) => i,
            None => {
                targets.push(probes::load_target(
                    path, &resolved, &opts.db, sources, notes,
                )?);
                targets.len() - 1
            }
        };
        specs.push((idx, pattern.to_string()));
    }
    Ok((targets, specs))
}

/// The command's own db, for the prototypes of the library functions it calls: when a
/// pattern names a function exactly and the command is not a target.
pub fn command_db(
    opts: &TraceOptions,
    sources: &dcg_dbresolve::DbSources,
    targets: &[Target],
    specs: &Specs,
) -> Option<sigdb::Db> {
    opts.target
        .command()
        .first()
        .filter(|_| specs.iter().any(|(_, p)| !p.contains(['*', '?'])))
        .and_then(|c| probes::resolve_binary(c, None).ok())
        .filter(|c| !targets.iter().any(|t| &t.path == c))
        .and_then(|c| {
            let given = c.display().to_string();
            // Never debuginfod for it: the prototypes are a bonus.
            let local = dcg_dbresolve::DbSources {
                net: None,
                ..sources.clone()
            };
            probes::load_target(&given, &c, &[], &local, &mut Vec::new()).ok()
        })
        .map(|t| t.db)
}

/// What selection gave: each selected function's probe, the inlined copies' sites, how
/// the recorder hooks each probe (in process; `None`: left to uprobes), and the patterns
/// that selected nothing (why).
struct Selected<'a> {
    probes: Vec<Probe<'a>>,
    inlines: Vec<InlineSite<'a>>,
    hooks: Vec<Option<Vec<PlanFunc>>>,
    failed: Vec<Notice>,
}

/// Select the functions of each pattern and plan their probes, the inlined copies and,
/// in process, the recorder's hooks.
fn select_functions<'a>(
    targets: &'a [Target],
    prototypes: &[&'a sigdb::Db],
    specs: &Specs,
    (session, notrace): (&SessionPlan, &Notrace<'_>),
    engine: UserEngine,
    notes: &mut Vec<Notice>,
) -> Result<Selected<'a>> {
    let in_process = engine == UserEngine::InProcess;
    let reads = if in_process {
        probes::Reads::IN_PROCESS
    } else {
        probes::Reads::UPROBES
    };
    let (args, retvals) = (session.values.args, session.values.retvals);
    // Inlined copies are shown as frames: calls made from their code under them.
    let frames = session.inline_frames;
    let mut selected = Vec::new();
    let mut copies = Vec::new();
    let mut failed = Vec::new();
    for (t, pattern) in specs {
        match probes::select(targets, prototypes, *t, pattern, frames, notes) {
            Ok(s) => {
                selected.extend(s.funcs);
                copies.extend(s.copies);
            }
            Err(msg) => failed.push(msg),
        }
    }
    // `--notrace`: never hooked or probed (their callees show under their caller).
    selected.retain(|s| !notrace.excludes(&targets[s.target], s));
    let mut planned = probes::plan_probes(targets, &selected, args, retvals, frames, reads, notes);
    let inlines = if frames {
        probes::plan_inlines(targets, &copies, &mut planned, args, !in_process, notes)
    } else {
        Vec::new()
    };
    // In process: how each function is hooked; those the recorder cannot hook are
    // traced with uprobes, planned for what uprobes read.
    let hooks = if in_process {
        let hooks = hooks::recorder_plan(targets, prototypes, &mut planned, notes)?;
        if hooks.iter().any(Option::is_none) {
            let by_uprobes = probes::plan_probes(
                targets,
                &selected,
                args,
                retvals,
                frames,
                probes::Reads::UPROBES,
                &mut Vec::new(),
            );
            for (i, h) in hooks.iter().enumerate() {
                if h.is_none() {
                    planned[i] = by_uprobes[i].clone();
                }
            }
        }
        hooks
    } else {
        Vec::new()
    };
    if let Some(why) = probes::unreadable_note(&planned) {
        notes.push(why);
    }
    Ok(Selected {
        probes: planned,
        inlines,
        hooks,
        failed,
    })
}

/// `--notrace` in user space: a glob over names (every target's), or `PATH:PATTERN` (the
/// functions of the file named so).
struct Notrace<'a>(&'a [String]);

impl Notrace<'_> {
    /// Whether `s`, a function of `target`, is left out.
    fn excludes(&self, target: &Target, s: &probes::Selected<'_>) -> bool {
        let name = s.func.map(|f| f.name());
        self.0.iter().any(|spec| {
            let pattern = match split_user_func(spec) {
                Some((path, pattern)) => {
                    let file = |p: &std::path::Path| p.file_name().map(|n| n.to_owned());
                    if file(std::path::Path::new(path)) != file(&target.path) {
                        return false;
                    }
                    pattern
                }
                None => spec.as_str(),
            };
            glob_match(pattern, &s.symbol) || name.is_some_and(|n| glob_match(pattern, n))
        })
    }
}
