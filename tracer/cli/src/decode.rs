//! `dcg decode`: saved function_graph text, or binary ring-buffer pages, rewritten with
//! every value decoded by its type.

use std::io::{IsTerminal, Write};

use anyhow::Context;
use dcg_calls::decode::{Decoder, Options};
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::symbols::SymbolMap;
use dcg_dbset::DbSet;
use dcg_ringbuf::format::Format;
use dcg_ringbuf::graph::GraphFormats;

use crate::args::DecodeArgs;

/// Run `dcg decode` (`offline`: never ask debuginfod for the db).
pub fn run(args: &DecodeArgs, offline: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let set = crate::resolve_db(&args.db, offline)?;
    let job = args.job(std::io::stdout().is_terminal());
    let summary = if args.raw {
        raw(args, &set, job.opts, out)?
    } else {
        let names = match &args.kallsyms {
            Some(p) => Some(SymbolMap::from_kallsyms(&String::from_utf8_lossy(
                &std::fs::read(p).with_context(|| format!("{}", p.display()))?,
            ))),
            None => None,
        };
        dcg_calls::decode::run(&set, &job, names.as_ref(), out)?
    };
    out.flush()?;
    if let Some(summary) = summary {
        eprintln!("{summary}");
    }
    Ok(())
}

/// Binary pages: formats and symbols from the given files.
fn raw(
    args: &DecodeArgs,
    set: &DbSet,
    opts: Options,
    out: &mut dyn Write,
) -> anyhow::Result<Option<String>> {
    let read =
        |p: &std::path::PathBuf| std::fs::read(p).with_context(|| format!("{}", p.display()));
    let (Some(input), Some(formats), Some(kallsyms)) = (&args.input, &args.formats, &args.kallsyms)
    else {
        anyhow::bail!("--raw needs an input file, --formats and --kallsyms");
    };
    let formats_text = String::from_utf8_lossy(&read(formats)?).into_owned();
    let formats = GraphFormats::new(
        &Format::parse_all(&formats_text).with_context(|| format!("{}", formats.display()))?,
    )
    .with_context(|| format!("{}", formats.display()))?;
    let kallsyms_text = String::from_utf8_lossy(&read(kallsyms)?).into_owned();
    let syms = Kallsyms::parse(&kallsyms_text);
    let names = SymbolMap::from_kallsyms(&kallsyms_text);
    let bytes = read(input)?;
    let pages = dcg_ringbuf::page::pages(&bytes, args.page_size)
        .with_context(|| format!("{}", input.display()))?;
    let mut dec = Decoder::new(
        set,
        Options {
            // A call whose exit follows its entry is a leaf, as the kernel prints it.
            collapse_empty: true,
            ..opts
        },
    );
    dec.set_pointer_names(&names);
    let saved = match &args.output {
        Some(path) => {
            let file = dcg_outfile::Output::create(path)?;
            dec.save_records(
                Box::new(std::io::BufWriter::new(file.writer()?)),
                &input.display().to_string(),
            )?;
            Some(file)
        }
        None => None,
    };
    let mut lost = 0u64;
    for page in &pages {
        if let Some(n) = page.missed {
            lost += n.unwrap_or(1);
        }
        for rec in &page.records {
            if let Some(g) = formats.decode(rec) {
                dec.feed_record(&g, args.cpu, 0, &syms, out)?;
            }
        }
    }
    dec.finish(out)?;
    let summary = dec.summary();
    drop(dec);
    if let Some(f) = saved {
        f.commit()?;
    }
    if lost > 0 {
        eprintln!("dcg decode: the buffer lost events before {lost} of its pages");
    }
    Ok(summary)
}
