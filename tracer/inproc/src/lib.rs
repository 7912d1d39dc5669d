//! dcg's side of the in-process recorder (`tracer/recorder`, `libdcg_recorder.so`): the
//! plan that tells it what to trace and how to read each value ([`plan`]), and the rings
//! it records into, drained here into records ([`rings`]) by a thread of dcg that keeps
//! them empty ([`copier`]), their timestamps in one clock ([`clock`]). The byte layout
//! both sides share is [`layout`].

pub mod clock;
pub mod copier;
pub mod layout;
pub mod plan;
pub mod rings;

/// Errors of the in-process engine's files.
#[derive(Debug, thiserror::Error)]
pub enum InprocError {
    /// A file could not be created, sized or mapped.
    #[error("{path}: {error}")]
    File {
        /// The file.
        path: String,
        /// What failed.
        error: std::io::Error,
    },
    /// Writing the plan failed (the message names the file).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
    /// A fetch expression the recorder cannot evaluate.
    #[error("fetch {0:?}: not an expression the in-process recorder reads")]
    Fetch(String),
}
