//! tracer: the dcg tracing library — typed value rendering, ftrace text parsing and
//! decoding, live kernel and user-space tracing, and call-graph reports. The `dcg`
//! binary is a thin command line over it.

pub mod dbset;
pub mod decode;
pub mod describe;
mod errpaths;
pub mod fgraph;
pub mod graphfilter;
pub mod ktrace;
pub mod output;
pub mod record;
pub mod render;
pub mod report;
pub mod trace_args;
pub mod tracefs;
pub mod uprobe;
