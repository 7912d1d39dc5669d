//! The call model and its outputs. Every source of calls — function_graph text
//! ([`decode`]), uprobes, BPF — turns what it reads into call events; one [`tree::CallTree`]
//! per stream turns them into calls (ids, parents, depth, durations, values that arrive
//! apart joined to their call) and hands each to the [`sink::Sink`]s: the function_graph
//! text printer ([`text`]), JSON lines and saved calls ([`record_sinks`]), the `--errors-only`
//! filter ([`errors`]), the report collector. Every top-level call that fails is given the
//! call where its error first appeared ([`origin`]). The tree, the sinks, the output
//! buffer and the saved-calls file are one [`pipeline::Pipeline`] that every source
//! drives; the sinks are built in one place from an [`outputs::OutputSpec`].

pub mod decode;
pub mod errors;
pub mod funcs;
pub mod joint;
pub mod lines;
pub mod members;
pub mod origin;
pub mod outputs;
pub mod pipeline;
pub mod record_sinks;
pub mod saved_format;
pub mod selected;
pub mod sink;
pub mod text;
pub mod tree;
