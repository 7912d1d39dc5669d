//! `dcg report`: read the input (saved calls or ftrace text), build the call graph, write
//! the report (atomically when it goes to a file).

use std::io::{Read, Write};

use anyhow::Context;
use dcg_calls::output::OutputFile;
use dcg_dbset::DbSet;
use dcg_report::{
    load_ftrace, load_records, load_saved, looks_like_records, looks_like_saved_calls,
    write_report, CallGraph, ReportInput,
};

use crate::args::ReportArgs;

/// Run `dcg report`.
pub fn run(args: &ReportArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let name = match args.input.as_deref() {
        None => "stdin".to_string(),
        Some(p) if p.as_os_str() == "-" => "stdin".to_string(),
        Some(p) => p.display().to_string(),
    };
    let bytes = match args.input.as_deref() {
        Some(p) if p.as_os_str() != "-" => {
            std::fs::read(p).with_context(|| format!("{}", p.display()))?
        }
        _ => {
            let mut v = Vec::new();
            std::io::stdin().lock().read_to_end(&mut v)?;
            v
        }
    };
    let loaded = if looks_like_saved_calls(&bytes) {
        load_saved(&bytes[..], &name)?
    } else if looks_like_records(&bytes) {
        load_records(&bytes, &name)?
    } else {
        let set = if args.db.is_empty() {
            DbSet::resolve(&[]).unwrap_or_else(|e| {
                eprintln!(
                    "dcg report: no signature db, values stay raw (no errnos): {e}\n\
                     dcg report: give one with --db FILE"
                );
                DbSet::new(Vec::new())
            })
        } else {
            DbSet::resolve(&args.db)?
        };
        load_ftrace(&bytes, &name, &set)?
    };
    if let Some(note) = &loaded.note {
        eprintln!("dcg report: {note}");
    }
    let mut graph = CallGraph::new(loaded.records)?;
    if let Some(f) = &args.root {
        graph = graph.restrict_to(f);
        if graph.is_empty() {
            eprintln!("dcg report: no calls of {f} in the input");
        }
    }
    let input = ReportInput {
        source: loaded.source,
        kind: loaded.kind,
        root: args.root.clone(),
    };
    let opts = args.options();
    match &args.output {
        Some(path) => {
            let file = OutputFile::create(path)?;
            let mut w = std::io::BufWriter::new(file.file()?);
            write_report(&opts, &input, &graph, &mut w)?;
            w.flush()?;
            drop(w);
            file.commit()?;
        }
        None => write_report(&opts, &input, &graph, out)?,
    }
    Ok(())
}
