//! tracer

pub mod fgraph;
