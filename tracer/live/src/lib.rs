//! The live session layer shared by the kernel and the user-space tracers: private tracefs
//! instances and event groups ([`tracefs`]), stop signals, the multiplexing of the global
//! graph filter between concurrent sessions ([`graphfilter`]), and the session options.

pub mod graphfilter;
pub mod options;
mod pipes;
pub mod process;
pub mod tracefs;
