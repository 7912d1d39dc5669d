//! The one pipeline every source drives: the per-task call tree, the sinks the outputs are
//! ([`crate::outputs`]), the output buffer handed to the writer in chunks, and the
//! saved-calls file. A source turns what it reads into events ([`Pipeline::enter`],
//! [`Pipeline::exit`], [`Pipeline::note`], ...), hands the buffer on
//! ([`Pipeline::flush_to`]), ends the stream ([`Pipeline::finish`]) and closes the
//! pipeline ([`Pipeline::close`]): the saved-calls file is committed and what a report
//! collected is returned.

use std::io::{self, Write};

use sigdb::Instance;

use crate::funcs::FuncId;
use crate::outputs::{self, OutputSpec, Outputs};
use crate::record_sinks::Collected;
use crate::saved_format::CallRecord;
use crate::sink::{ArgList, Note, Sink, Sinks, Task};
use crate::tree::{CallTree, Entry, Exit};

/// Why a pipeline's outputs could not be set up or closed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// Writing the saved-calls header failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Creating or committing the saved-calls file failed (the message names it).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
}

/// A call tree, its sinks, the output buffer and the saved-calls file.
pub struct Pipeline<'a> {
    tree: CallTree<'a>,
    sinks: Sinks<'a>,
    /// Output not yet handed to the writer.
    obuf: Vec<u8>,
    collected: Option<Collected>,
    saved: Option<dcg_outfile::Output>,
    /// The trees a selection kept so far ([`Pipeline::select_trees`]).
    kept: Option<std::rc::Rc<std::cell::Cell<u64>>>,
}

impl<'a> Pipeline<'a> {
    /// Bytes of output buffered before the source is expected to hand them on.
    pub const CHUNK: usize = 1 << 16;

    /// `tree` (its shape, depth and functions set by the source) feeding `outputs`.
    pub fn new(tree: CallTree<'a>, outputs: Outputs) -> Pipeline<'a> {
        let select = outputs.selection();
        let (sinks, collected, saved) = outputs.into_sinks();
        let dbs = tree.funcs.set();
        let mut p = Pipeline::with_sinks(tree, sinks);
        p.collected = collected;
        p.saved = saved;
        if let Some((select, limit)) = select {
            p.select_trees_up_to(select, dbs, limit);
        }
        p
    }

    /// [`Pipeline::new`] without the saved-calls file (`spec.saved` is not looked at).
    pub(crate) fn shown(tree: CallTree<'a>, spec: &OutputSpec) -> Pipeline<'a> {
        let (sinks, collected) = outputs::sinks(spec);
        let mut p = Pipeline::with_sinks(tree, sinks);
        p.collected = collected;
        p
    }

    /// `tree` feeding `sinks` a caller made (tests, measurements).
    pub fn with_sinks(tree: CallTree<'a>, sinks: Sinks<'a>) -> Pipeline<'a> {
        Pipeline {
            tree,
            sinks,
            obuf: Vec::with_capacity(Pipeline::CHUNK + 4096),
            collected: None,
            saved: None,
            kept: None,
        }
    }

    /// Show only what `select` keeps of each tree (the saved-calls file keeps every call).
    /// `dbs`: those the stream is decoded with, for the selection's signatures.
    pub fn select_trees(
        &mut self,
        select: std::rc::Rc<dyn crate::selected::TreeSelect>,
        dbs: &'a dcg_dbset::DbSet,
    ) {
        self.select_trees_up_to(select, dbs, None);
    }

    /// [`Pipeline::select_trees`], showing no tree beyond the first `limit` kept.
    fn select_trees_up_to(
        &mut self,
        select: std::rc::Rc<dyn crate::selected::TreeSelect>,
        dbs: &'a dcg_dbset::DbSet,
        limit: Option<u64>,
    ) {
        let mut kept = None;
        self.sinks.wrap_first(|inner| {
            let mut s = crate::selected::Selected::new(inner, select, dbs);
            s.limit(limit);
            kept = Some(s.kept());
            Box::new(s)
        });
        self.kept = kept;
    }

    /// The trees shown so far, as `--count` counts them: those a selection kept, else
    /// every completed top-level call.
    pub fn trees_shown(&self) -> u64 {
        match &self.kept {
            Some(k) => k.get(),
            None => self.tree.counts().top_level,
        }
    }

    /// Whether a selection decides which trees are shown (then only decoding can count
    /// them).
    pub fn selects(&self) -> bool {
        self.kept.is_some()
    }

    /// Also feed `sink`.
    pub fn add_sink(&mut self, sink: Box<dyn Sink + 'a>) {
        self.sinks.push(sink);
    }

    /// The call tree.
    pub fn tree(&self) -> &CallTree<'a> {
        &self.tree
    }

    /// The call tree, to set it up or to change what needs no output.
    pub fn tree_mut(&mut self) -> &mut CallTree<'a> {
        &mut self.tree
    }

    /// Whether some sink prints probe-event notes.
    pub fn wants_notes(&self) -> bool {
        self.sinks.wants_notes()
    }

    /// Bytes of output buffered.
    pub fn buffered(&self) -> usize {
        self.obuf.len()
    }

    /// A call entered ([`CallTree::enter`]).
    #[inline]
    pub fn enter(&mut self, e: &Entry<'_>) -> io::Result<()> {
        self.tree.enter(e, &mut self.sinks, &mut self.obuf)
    }

    /// A call returned ([`CallTree::exit`]): false when no open call matched.
    #[inline]
    pub fn exit(&mut self, x: &Exit<'_>) -> io::Result<bool> {
        self.tree.exit(x, &mut self.sinks, &mut self.obuf)
    }

    /// The first instruction of an inlined copy ran ([`CallTree::enter_inline`]).
    #[inline]
    pub fn enter_inline(
        &mut self,
        task: Task<'_>,
        instance: Instance<'a>,
        values: Option<(&[u64], &[u64])>,
        time_ns: Option<u64>,
    ) -> io::Result<()> {
        self.tree.enter_inline(
            task,
            instance,
            values,
            time_ns,
            &mut self.sinks,
            &mut self.obuf,
        )
    }

    /// The task's calls deeper than `depth` end without a value ([`CallTree::unwind_to`]).
    pub fn unwind_to(
        &mut self,
        task: Task<'_>,
        depth: usize,
        time_ns: Option<u64>,
    ) -> io::Result<()> {
        self.tree
            .unwind_to(task, depth, time_ns, &mut self.sinks, &mut self.obuf)
    }

    /// The task's program called `exec` ([`CallTree::exec`]).
    pub fn exec(&mut self, task: Task<'_>, time_ns: Option<u64>) -> io::Result<()> {
        self.tree
            .exec(task, time_ns, &mut self.sinks, &mut self.obuf)
    }

    /// A return value that arrived apart from its return ([`CallTree::pending_ret`]).
    pub fn pending_ret(&mut self, key: u64, func: FuncId, raw: u64) -> io::Result<()> {
        self.tree
            .pending_ret(key, func, raw, &mut self.sinks, &mut self.obuf)
    }

    /// Arguments that arrived apart from their entry ([`CallTree::pending_args`]).
    pub fn pending_args(&mut self, key: u64, func: FuncId, args: ArgList) -> io::Result<()> {
        self.tree
            .pending_args(key, func, args, &mut self.sinks, &mut self.obuf)
    }

    /// Members read apart from their entry ([`CallTree::pending_members`]).
    pub fn pending_members(&mut self, key: u64, func: FuncId, members: &ArgList) -> io::Result<()> {
        self.tree
            .pending_members(key, func, members, &mut self.sinks, &mut self.obuf)
    }

    /// Output parameters read apart from their return ([`CallTree::pending_outs`]).
    pub fn pending_outs(&mut self, key: u64, func: FuncId, outs: &ArgList) -> io::Result<()> {
        self.tree
            .pending_outs(key, func, outs, &mut self.sinks, &mut self.obuf)
    }

    /// A line that is not a call ([`CallTree::note`]).
    #[inline]
    pub fn note(&mut self, n: &Note<'_>) -> io::Result<()> {
        self.tree.note(n, &mut self.sinks, &mut self.obuf)
    }

    /// Hand the buffered output to `out`.
    pub fn flush_to(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if !self.obuf.is_empty() {
            out.write_all(&self.obuf)?;
            self.obuf.clear();
        }
        Ok(())
    }

    /// End of the stream: the tree releases what it holds, the sinks write what they
    /// buffered, and the output goes to `out`.
    pub fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        self.tree.finish(&mut self.sinks, &mut self.obuf)?;
        self.flush_to(out)
    }

    /// The records a report collected so far, taken out (`None` without
    /// [`OutputSpec::report`]).
    pub fn take_collected(&self) -> Option<Vec<CallRecord>> {
        self.collected.as_ref().map(Collected::take)
    }

    /// The end of the pipeline: the records a report collected are taken
    /// ([`Pipeline::take_collected`]), the sinks dropped (what they buffered written) and
    /// the saved-calls file committed.
    pub fn close(self) -> Result<Option<Vec<CallRecord>>, PipelineError> {
        let calls = self.take_collected();
        drop(self.sinks);
        drop(self.tree);
        if let Some(file) = self.saved {
            file.commit()?;
        }
        Ok(calls)
    }
}
