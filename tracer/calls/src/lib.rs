//! The call model and its outputs: decoding function_graph text into typed calls
//! ([`decode`]), the saved-calls format ([`record`]), the `--errors-only` tree filter
//! ([`errpaths`]) and atomically written output files ([`output`]).

pub mod decode;
pub mod errpaths;
pub mod output;
pub mod record;
