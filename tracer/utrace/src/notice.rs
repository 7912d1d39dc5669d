//! What a user-space session has to tell the user as it goes: typed, in the order it
//! happens; the command line words each one.

use std::path::PathBuf;

use dcg_live::process::Ended;

/// A notice of a user-space trace session.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A note of the db resolver on a binary's db (where the db came from, how to keep
    /// it).
    Db(dcg_dbset::note::DbNote),
    /// The engine chosen is uprobes: the in-process engine cannot run, and why.
    EngineUprobes(crate::plan::NotInProcess),
    /// The engine chosen is the in-process one: the recorder preloaded into the command.
    EngineInProcess {
        /// The command's first word, if any.
        command: Option<String>,
    },
    /// In process, the calls the constructors of these libraries make are not seen (the
    /// loader runs them before the recorder's).
    UnseenConstructors(Vec<String>),
    /// A function named exactly has no DWARF of its own.
    NoDwarf {
        /// Its name.
        name: String,
        /// The module whose DWARF declares it (it is typed by that), if any.
        declared_in: Option<String>,
    },
    /// Functions a wildcard matched have no DWARF: not traced.
    NoDwarfSkipped {
        /// The binary as given.
        given: String,
        /// The pattern.
        pattern: String,
        /// How many.
        count: usize,
    },
    /// Inlined copies of what a pattern matched are traced through their containers.
    InlinedCopies {
        /// The inlined functions.
        inlined: Vec<String>,
        /// The copies.
        copies: usize,
        /// The functions holding them.
        containers: Vec<String>,
        /// The copies are shown as frames (`--no-inline-frames`: not).
        frames: bool,
        /// Copies left out over the limit.
        more: usize,
    },
    /// The `.cold` part of a function matched: not an entry point.
    ColdPart {
        /// Its symbol.
        symbol: String,
        /// The function it belongs to.
        parent: String,
    },
    /// A function named exactly is only inlined and has no copies to trace.
    InlineOnly {
        /// Its name.
        name: String,
        /// The functions it is inlined into.
        into: Vec<String>,
        /// The db has no inline instances (a db with them would trace the copies).
        no_instances: bool,
    },
    /// Functions a wildcard matched are only inlined: not traced.
    InlineOnlySkipped {
        /// The binary as given.
        given: String,
        /// The pattern.
        pattern: String,
        /// How many.
        count: usize,
    },
    /// A function's address is in no loadable segment: not probed.
    NotLoaded {
        /// Its symbol.
        symbol: String,
        /// Its address.
        addr: u64,
        /// The binary.
        path: PathBuf,
    },
    /// An inlined copy's address is in no loadable segment: not probed.
    InlineNotLoaded {
        /// The inlined function.
        callee: String,
        /// The function holding the copy.
        caller: String,
        /// The copy's first instruction.
        pc: u64,
        /// The binary.
        path: PathBuf,
    },
    /// An IFUNC: the implementation its resolver chooses is traced.
    IfuncTraced {
        /// The IFUNC's name.
        name: String,
        /// The binary.
        path: PathBuf,
        /// The implementations it may choose.
        impls: usize,
        /// The module whose DWARF declares it (typed by it), else raw values.
        declared_in: Option<String>,
    },
    /// An IFUNC whose implementations dcg cannot name: not traced.
    IfuncUntraced {
        /// The IFUNC's name.
        name: String,
        /// The binary.
        path: PathBuf,
    },
    /// In process, a function the recorder cannot hook is traced with uprobes.
    ByUprobes {
        /// Its symbol.
        symbol: String,
        /// The binary.
        path: PathBuf,
        /// Why it cannot be hooked.
        why: crate::hooks::Unhookable,
    },
    /// Values in xmm or x87 registers of these functions cannot be read by uprobes.
    Unreadable(Vec<String>),
    /// A pattern selected nothing traceable.
    NoMatch {
        /// The pattern.
        pattern: String,
        /// The binary.
        path: PathBuf,
        /// Something matched, but nothing that can be probed.
        unprobeable: bool,
    },
    /// The plan has no probe at all.
    NothingToProbe,
    /// In process: nothing the recorder hooks and no uprobes either.
    NothingToTrace,
    /// A session killed earlier left this behind; it was removed.
    RemovedStale(String),
    /// What could not be removed on cleanup.
    Cleanup(String),
    /// An inlined copy's probe could not be placed (its frame opens at its first call).
    InlineProbeFailed {
        /// The inlined function.
        callee: String,
        /// The function holding the copy.
        caller: String,
        /// tracefs's refusal.
        why: String,
    },
    /// Events lost in the ring buffer (uprobe engine).
    LostEvents(u64),
    /// Event lines that could not be parsed.
    Unparsed(u64),
    /// The traced command ended other than with status 0.
    CommandEnded {
        /// The command's first word.
        command: String,
        /// Its pid.
        pid: i32,
        /// How it ended.
        ended: Ended,
    },
    /// The process given with `-p` exited.
    ProcessExited(i32),
    /// dcg detached from the process given with `-p`.
    Detached {
        /// The process.
        pid: i32,
        /// Its name.
        comm: String,
    },
    /// The command still ran when tracing stopped, and was ended.
    CommandStopped {
        /// The command's first word.
        command: String,
        /// Its pid.
        pid: i32,
        /// How it ended.
        ended: Ended,
    },
    /// In process, no uprobes for the functions without entry hooks (the error).
    NoUprobesForUnhooked(String),
    /// A session tracing both sides: the kernel side could not start (why); the user
    /// side is traced alone.
    NoKernelSide(String),
    /// In process, uprobe events lost in the ring buffer.
    LostUprobeEvents(u64),
    /// The recorder hooked nothing.
    RecorderHookedNothing {
        /// The command's first word, if any.
        command: Option<String>,
    },
    /// Function entries the recorder could not patch.
    Unpatched {
        /// How many.
        count: u32,
        /// Their names.
        names: Vec<String>,
    },
    /// Records lost in full rings.
    LostRecords(u64),
    /// Threads that found no free ring.
    NoFreeRing {
        /// How many.
        threads: u32,
        /// The rings there are.
        rings: u32,
    },
    /// Threads whose ring memory could not be had.
    NoRingMemory {
        /// How many.
        threads: u32,
        /// Where the rings are.
        dir: PathBuf,
    },
    /// Top-level calls the recorder rejected at their entry (`--filter` on their
    /// arguments): neither they nor anything they called was recorded.
    RejectedAtEntry(u64),
}
