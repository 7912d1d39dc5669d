//! The kernel's ftrace ring buffer in binary: event formats ([`format`]), ring-buffer
//! pages ([`page`]) and the function_graph records in them ([`graph`]).
#![warn(missing_docs)]

pub mod format;
pub mod graph;
pub mod page;

/// Errors reading formats or pages.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RingError {
    /// A format file does not say what dcg needs.
    #[error("event format {event}: {what}")]
    Format {
        /// The event.
        event: String,
        /// What is missing or wrong.
        what: String,
    },
    /// A page is shorter than its header says, or an event runs past its end.
    #[error("ring-buffer page at byte {offset}: {what}")]
    Page {
        /// Offset of the page in the input.
        offset: usize,
        /// What is wrong.
        what: String,
    },
}
