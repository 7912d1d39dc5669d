//! What a kernel session tells the user as it goes (notices) and how it ended (the
//! summary); the command line words both.

/// What the session has to tell the user as it goes (the command line prints these).
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The running kernel's db came from debuginfod (where from, where kept).
    DbFetched(dcg_dbset::note::DbNote),
    /// A session killed earlier left this behind; it was removed.
    RemovedStale(String),
    /// A pattern matched no traceable function, and why.
    NoMatch(crate::funcs::NoMatch),
    /// A root got no exit probe, so its value will be missing.
    NoExitProbe {
        /// The function.
        func: String,
        /// Why.
        why: String,
    },
    /// `set_graph_function` refused these roots (they will not be traced).
    GraphRejected(Vec<String>),
    /// The automatic engine choice fell back to function_graph: BPF could not be used.
    BpfFallback(String),
    /// A pattern names inlined code: the functions holding the copies are traced, each
    /// copy shown as a frame of its own.
    Inlined {
        /// The inlined functions.
        funcs: Vec<String>,
        /// Copies probed.
        copies: usize,
        /// The functions holding them.
        containers: Vec<String>,
        /// Copies left out (over the limit).
        more: usize,
    },
    /// An inlined copy's probe could not be placed (its frame still opens at the first
    /// call made from it, without arguments).
    InlineProbeFailed {
        /// The inlined function.
        func: String,
        /// Where its copy is.
        container: String,
        /// The kernel's error.
        why: String,
    },
    /// Tracing has started.
    Tracing {
        /// Root functions.
        functions: usize,
        /// What is traced.
        target: dcg_live::plan::Traced,
        /// Probe events created.
        probes: usize,
    },
    /// How far a long step is, for a terminal to draw; nothing to print elsewhere.
    Progress(Progress),
}

/// A long step of a session, as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The kernel loads, verifies and attaches the BPF programs, in calls that say nothing
    /// until they return: to `functions` functions and `copies` inlined copies.
    Attaching {
        /// Functions the programs attach to.
        functions: usize,
        /// Inlined copies probed at their first instruction.
        copies: usize,
    },
    /// At the session's end, the records kept while the command ran are decoded: this
    /// many so far.
    Decoding {
        /// Records decoded.
        records: u64,
    },
    /// The step under way is over.
    Done,
}

/// How a session ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Why it stopped (`signal 2`, `command exited`, `3 calls`, `duration reached`).
    pub stop_reason: String,
    /// Top-level calls completed.
    pub completed: u64,
    /// Probe events created.
    pub probes: usize,
    /// Events the stream reported lost (and whether some counts were unknown).
    pub lost_in_stream: u64,
    /// Some lost-event notices gave no count.
    pub lost_unknown: bool,
    /// Events overwritten in the per-CPU buffers.
    pub overrun: u64,
    /// BPF engine: runs of the program the kernel skipped because one already ran on that
    /// CPU (a traced function hit inside an interrupt that arrived during a record); they
    /// may be any task's, so they are reported apart from lost records.
    pub bpf_missed: u64,
    /// BPF engine: calls of the traced tasks lost, by the function whose entry or return
    /// was being recorded when the kernel skipped the program on that CPU (what an
    /// interrupt arriving then ran), most first. Their trees say so (`/* N calls lost */`,
    /// `"lost"` in saved calls).
    pub lost_calls: Vec<(String, u64)>,
    /// BPF engine: trees (top-level calls) that lost calls.
    pub lossy_trees: u64,
    /// BPF engine: top-level calls a `--filter` rejected at their entry (nothing was
    /// recorded for them).
    pub rejected_at_entry: u64,
    /// BPF engine: the program could not find the kernel's count of its skipped runs,
    /// so losses are not attributed ([`Summary::bpf_missed`] is all there is).
    pub losses_unattributed: bool,
    /// Events dropped by the per-CPU buffers.
    pub dropped: u64,
    /// Non-void calls that closed without a value (no exit probe, or it came too late), by
    /// function, most first; empty when the kernel prints values itself.
    pub valueless: Vec<(String, u64)>,
    /// Functions that got no probe for the probe limit.
    pub probes_capped: u64,
    /// Probes that could not be created, with the error.
    pub probes_failed: Vec<(String, String)>,
    /// Calls of functions the db does not know (the decoder's summary line).
    pub undecoded: Option<String>,
    /// What could not be restored on cleanup.
    pub cleanup_failures: Vec<String>,
    /// The calls, when collected for a report (`--report`).
    pub calls: Option<Vec<dcg_calls::saved_format::CallRecord>>,
}

/// A session's result.
#[derive(Debug)]
pub enum Outcome {
    /// No pattern matched a traceable function (the notices said why).
    NothingToTrace,
    /// Traced; how it ended.
    Traced(Box<Summary>),
}
