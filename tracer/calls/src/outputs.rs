//! The concrete outputs of a stream, built in one place from what the user asked
//! ([`OutputSpec`]): the function_graph text printer (through the `--errors-only` filter),
//! JSON lines, the report collection, and the saved-calls file (`--output`). This module
//! is the only caller of their constructors; every source gets its outputs through
//! [`crate::pipeline::Pipeline::new`].

use std::path::PathBuf;
use std::rc::Rc;

use crate::errors::ErrorsOnly;
use crate::pipeline::PipelineError;
use crate::record_sinks::{Collect, Collected, JsonLines, SavedCalls};
use crate::selected::TreeSelect;
use crate::sink::Sinks;
use crate::text::{TextOptions, TextPrinter};

/// What a stream's outputs are: plain data a trace plan carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputSpec {
    /// Saved-calls records as JSON lines instead of text.
    pub json: bool,
    /// Only call paths that contain an error return.
    pub errors_only: bool,
    /// ANSI color for error values.
    pub color: bool,
    /// Width of the CPU column of laid-out lines.
    pub cpu_width: usize,
    /// Print probe events joined to calls in place.
    pub probe_notes: bool,
    /// Collect the calls for a report instead of printing them.
    pub report: bool,
    /// The `comm-tid` column on every laid-out line from the first, with the whole name
    /// (user space, where threads come and go), instead of the kernel's way.
    pub threads: bool,
    /// Also save the completed calls to this file (`--output`).
    pub saved: Option<PathBuf>,
    /// What the saved-calls header names as the calls' source.
    pub source: String,
    /// `--irqs hide`: calls that ran in an interrupt context (as the tree decides it,
    /// see `tree::context`) reach no output.
    pub hide_interrupts: bool,
}

/// The sinks of `spec` in feeding order — the report collection, or JSON lines, or the
/// text printer (through `--errors-only`) — and the handle of the report collection.
/// Without the saved-calls file ([`crate::pipeline::Pipeline::new`] adds it).
pub fn sinks<'s>(spec: &OutputSpec) -> (Sinks<'s>, Option<Collected>) {
    let mut sinks = Sinks::new();
    sinks.hide_interrupts(spec.hide_interrupts);
    if spec.report {
        let collect = Collect::new();
        let handle = collect.handle();
        sinks.push(Box::new(collect));
        return (sinks, Some(handle));
    }
    if spec.json {
        sinks.push(Box::new(JsonLines));
        return (sinks, None);
    }
    let printer = TextPrinter::new(TextOptions {
        color: spec.color,
        cpu_width: spec.cpu_width.max(1),
        probe_notes: spec.probe_notes,
        threads: spec.threads,
    });
    if spec.errors_only {
        sinks.push(Box::new(ErrorsOnly::new(printer)));
    } else {
        sinks.push(Box::new(printer));
    }
    (sinks, None)
}

/// A stream's outputs, opened: the spec they are built from and the saved-calls file
/// (`--output`), created with its header written before anything is traced, so that a
/// file that cannot be written is refused before the session starts. The file is
/// committed when the pipeline that takes these outputs closes; dropped unused, it is
/// removed (nothing half-written is left).
pub struct Outputs {
    spec: OutputSpec,
    saved: Option<(dcg_outfile::Output, SavedCalls<'static>)>,
    /// The trees shown: those this keeps, no more than the limit.
    select: Option<(Rc<dyn TreeSelect>, Option<u64>)>,
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("spec", &self.spec)
            .field("saved", &self.saved.is_some())
            .field("select", &self.select.as_ref().map(|(s, l)| (s, l)))
            .finish()
    }
}

impl Outputs {
    /// Open the outputs of `spec`: the saved-calls file created and its header written,
    /// when asked.
    pub fn open(spec: OutputSpec) -> Result<Outputs, PipelineError> {
        let saved = match &spec.saved {
            Some(path) => {
                let file = dcg_outfile::Output::create(path)?;
                let writer = std::io::BufWriter::new(file.writer()?);
                let sink = SavedCalls::new(Box::new(writer), &spec.source)?;
                Some((file, sink))
            }
            None => None,
        };
        Ok(Outputs {
            spec,
            saved,
            select: None,
        })
    }

    /// Show only what `select` keeps of each tree, and no tree beyond the first `limit`
    /// kept (`--filter`, `--min-duration`, `--count`); the saved-calls file keeps every
    /// call.
    pub fn selecting(mut self, select: Option<Rc<dyn TreeSelect>>, limit: Option<u64>) -> Outputs {
        self.select = select.map(|s| (s, limit));
        self
    }

    /// The selection, if any, and its limit.
    pub(crate) fn selection(&self) -> Option<(Rc<dyn TreeSelect>, Option<u64>)> {
        self.select.clone()
    }

    /// What the outputs were opened from.
    pub fn spec(&self) -> &OutputSpec {
        &self.spec
    }

    /// The sinks in feeding order, the saved-calls sink last; the handle of the report
    /// collection and the saved-calls file to commit.
    pub(crate) fn into_sinks<'s>(
        self,
    ) -> (Sinks<'s>, Option<Collected>, Option<dcg_outfile::Output>) {
        let (mut sinks, collected) = sinks(&self.spec);
        let file = self.saved.map(|(file, sink)| {
            sinks.push(Box::new(sink));
            file
        });
        (sinks, collected, file)
    }
}
