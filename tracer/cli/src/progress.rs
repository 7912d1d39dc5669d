//! Long steps of a trace session drawn on a terminal: a spinner with the elapsed time
//! while the kernel loads and attaches the BPF programs (one call that says nothing for
//! seconds), and a running count while the records kept during the command are decoded
//! at its end. Where stderr is not a terminal nothing is drawn and nothing printed.

use std::io::IsTerminal;
use std::time::Duration;

use dcg_ktrace::Progress;
use indicatif::{ProgressBar, ProgressStyle};

use crate::trace_notices;

/// The step being drawn, if any.
pub struct Steps {
    bar: Option<ProgressBar>,
    drawn: bool,
}

impl Steps {
    /// Steps drawn on stderr when it is a terminal.
    pub fn on_stderr() -> Steps {
        Steps {
            bar: None,
            drawn: std::io::stderr().is_terminal(),
        }
    }

    /// Show how far a step is.
    pub fn show(&mut self, p: &Progress) {
        if !self.drawn {
            return;
        }
        if *p == Progress::Done {
            if let Some(b) = self.bar.take() {
                b.finish_and_clear();
            }
            return;
        }
        let text = trace_notices::progress(p);
        match &self.bar {
            Some(b) => b.set_message(text),
            None => self.bar = Some(spinner(text)),
        }
    }

    /// Print a line on stderr without tearing the spinner.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

fn spinner(text: String) -> ProgressBar {
    let b = ProgressBar::new_spinner();
    b.set_style(
        ProgressStyle::with_template("dcg: {msg} {spinner} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    b.set_message(text);
    b.enable_steady_tick(Duration::from_millis(120));
    b
}
