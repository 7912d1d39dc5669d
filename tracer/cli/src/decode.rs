//! `dcg decode`: saved function_graph text, or binary ring-buffer pages, rewritten with
//! every value decoded by its type (`dcg_calls::decode` does it; here the files are read
//! and the notes printed).

use std::io::{IsTerminal, Write};

use anyhow::Context;
use dcg_calls::decode::pages::{self, PagesJob};
use dcg_calls::decode::Options;
use dcg_dbset::symbols::SymbolMap;
use dcg_dbset::DbSet;

use crate::args::DecodeArgs;

/// Run `dcg decode` (`offline`: never ask debuginfod for the db).
pub fn run(args: &DecodeArgs, offline: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let set = crate::resolve_db(&args.db, offline)?;
    let filters = crate::report::parse_filters(&args.filter)?;
    dcg_filter::saved::check_functions(&filters, &set)
        .map_err(|e| anyhow::anyhow!(e.error.caret_message("--filter", &args.filter[e.filter])))?;
    let select: Option<std::rc::Rc<dyn dcg_calls::selected::TreeSelect>> =
        if filters.is_empty() && args.min_duration.is_none() {
            None
        } else {
            Some(std::rc::Rc::new(dcg_filter::saved::TreeFilter::new(
                filters,
                args.min_duration,
            )))
        };
    let job = args.job(std::io::stdout().is_terminal(), select);
    let summary = if args.raw {
        raw(args, &set, job.opts, out)?
    } else {
        let names = match &args.kallsyms {
            Some(p) => Some(SymbolMap::from_kallsyms(&read_text(p, MAX_KALLSYMS)?)),
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

/// Binary pages: formats and symbols from the given files, decoded by
/// `dcg_calls::decode::pages`.
fn raw(
    args: &DecodeArgs,
    set: &DbSet,
    opts: Options,
    out: &mut dyn Write,
) -> anyhow::Result<Option<String>> {
    let (Some(input), Some(formats), Some(kallsyms)) = (&args.input, &args.formats, &args.kallsyms)
    else {
        anyhow::bail!("--raw needs an input file, --formats and --kallsyms");
    };
    let formats_text = read_text(formats, MAX_FORMATS)?;
    let formats = pages::graph_formats(formats, &formats_text)?;
    let kallsyms_text = read_text(kallsyms, MAX_KALLSYMS)?;
    let job = PagesJob {
        input,
        kallsyms: &kallsyms_text,
        page_size: args.page_size,
        cpu: args.cpu,
        output: args.output.clone(),
        opts,
    };
    let summary = pages::run(set, &formats, &job, out)?;
    if summary.lost > 0 {
        eprintln!(
            "dcg decode: the buffer lost events before {} of its pages",
            summary.lost
        );
    }
    if summary.corrupt > 0 {
        eprintln!(
            "dcg decode: {}: {} records skipped: too short for their event, or \
             deeper than function_graph goes (corrupt pages)",
            input.display(),
            summary.corrupt
        );
    }
    Ok(summary.undecoded)
}

/// The largest `--kallsyms` file read (a distribution kernel's with every module: ~20 MB).
const MAX_KALLSYMS: u64 = 256 << 20;
/// The largest `--formats` file read (the function_graph events': a few KB).
const MAX_FORMATS: u64 = 16 << 20;
/// The text of `path`, refused when it is a device or bigger than `max` bytes (read
/// through a limit, so a file that grows is bounded too).
fn read_text(path: &std::path::Path, max: u64) -> anyhow::Result<String> {
    use std::io::Read;
    let f = dcg_calls::decode::open_text(path)?;
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}", path.display()))?;
    if bytes.len() as u64 > max {
        anyhow::bail!("{}: bigger than {} MiB", path.display(), max >> 20);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
