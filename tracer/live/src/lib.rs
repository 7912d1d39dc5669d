//! The live session layer shared by the kernel and the user-space tracers: private tracefs
//! instances and event groups ([`tracefs`]), stop signals, the multiplexing of the global
//! graph filter between concurrent sessions ([`graphfilter`]), the session options and the
//! engine-independent part of a trace plan ([`plan`]).

pub mod graphfilter;
pub mod options;
mod pipes;
pub mod plan;
pub mod process;
pub mod tracefs;
