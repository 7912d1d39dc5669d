//! What both kernel engines share about a session: the outputs the trace goes to.

use dcg_calls::outputs::OutputSpec;
use dcg_live::options::TraceOptions;

/// The session's outputs, as the command line asked for them (the saved-calls file named
/// after the `--func` patterns).
pub(crate) fn outputs(args: &TraceOptions) -> OutputSpec {
    OutputSpec {
        json: args.output.json,
        errors_only: args.output.errors_only,
        color: args.output.color,
        cpu_width: 1,
        report: args.output.report,
        saved: args.output.saved_calls.clone(),
        source: format!("dcg trace --func {}", args.func.join(" --func ")),
        hide_interrupts: args.hide_irqs,
        ..OutputSpec::default()
    }
}
