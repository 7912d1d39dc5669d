//! `dcg report`: read the input (saved calls or ftrace text), build the call graph, write
//! the report (atomically when it goes to a file).

use std::io::{BufRead, BufReader, Write};

use anyhow::Context;
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
    // Read as a stream: only the first line decides what the input is.
    let mut input: Box<dyn BufRead> = match args.input.as_deref() {
        Some(p) if p.as_os_str() != "-" => Box::new(BufReader::with_capacity(
            1 << 18,
            dcg_calls::decode::open_text(p)?,
        )),
        _ => Box::new(BufReader::with_capacity(1 << 18, std::io::stdin())),
    };
    let filters = parse_filters(&args.filter)?;
    let first = first_line(&mut input)?;
    let saved = looks_like_saved_calls(&first) || looks_like_records(&first);
    if saved {
        // Saved calls carry their values decoded: a db given for them is refused, not
        // ignored (a missing one named first).
        if let Some(db) = args.db.first() {
            std::fs::metadata(db).with_context(|| format!("--db {}", db.display()))?;
            anyhow::bail!(
                "--db {}: {name} holds saved calls, decoded already; --db is for ftrace text",
                db.display()
            );
        }
    }
    // The dbs ftrace text is decoded with type the filters too.
    let mut dbs = None;
    let loaded = if looks_like_saved_calls(&first) {
        load_saved(input, &name)?
    } else if looks_like_records(&first) {
        load_records(input, &name)?
    } else {
        let set = if args.db.is_empty() {
            dcg_dbresolve::resolve(&[], &crate::db_sources(true)).unwrap_or_else(|e| {
                eprintln!(
                    "dcg report: no signature db, values stay raw (no errnos): {e}\n\
                     dcg report: give one with --db FILE"
                );
                DbSet::new(Vec::new())
            })
        } else {
            dcg_dbresolve::resolve(&args.db, &crate::db_sources(true))?
        };
        let loaded = load_ftrace(input, &name, &set)?;
        dbs = Some(set);
        loaded
    };
    if let Some(note) = &loaded.note {
        eprintln!("dcg report: {note}");
    }
    let records = if filters.is_empty() && args.min_duration.is_none() {
        loaded.records
    } else {
        dcg_filter::saved::select(loaded.records, &filters, args.min_duration, dbs.as_ref())
            .map_err(|e| {
                anyhow::anyhow!(e.error.caret_message("--filter", &args.filter[e.filter]))
            })?
    };
    let mut graph = CallGraph::new(records)?;
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
            let file = dcg_outfile::Output::create(path)?;
            let mut w = std::io::BufWriter::new(file.writer()?);
            write_report(&opts, &input, &graph, &mut w)?;
            w.flush()?;
            drop(w);
            file.commit()?;
        }
        None => write_report(&opts, &input, &graph, out)?,
    }
    Ok(())
}

/// The `--filter` expressions parsed, or the first refused one with a caret under the
/// offending token.
pub(crate) fn parse_filters(texts: &[String]) -> anyhow::Result<Vec<dcg_filter::Filter>> {
    texts
        .iter()
        .map(|t| dcg_filter::parse(t).map_err(|e| anyhow::anyhow!(e.caret_message("--filter", t))))
        .collect()
}

/// The first line of `input` (without consuming it): as much of it as the buffer holds.
fn first_line(input: &mut dyn BufRead) -> std::io::Result<Vec<u8>> {
    let buf = input.fill_buf()?;
    let end = memchr_newline(buf).unwrap_or(buf.len());
    Ok(buf[..end].to_vec())
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}
