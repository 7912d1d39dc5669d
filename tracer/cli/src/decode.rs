//! `dcg decode`: saved function_graph text, or binary ring-buffer pages, rewritten with
//! every value decoded by its type.

use std::io::{IsTerminal, Write};

use anyhow::Context;
use dcg_calls::decode::{Decoder, Options};
use dcg_calls::outputs::OutputSpec;
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

/// Binary pages: formats and symbols from the given files.
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
    let formats = GraphFormats::new(
        &Format::parse_all(&formats_text).with_context(|| format!("{}", formats.display()))?,
    )
    .with_context(|| format!("{}", formats.display()))?;
    let kallsyms_text = read_text(kallsyms, MAX_KALLSYMS)?;
    let syms = Kallsyms::parse(&kallsyms_text);
    let names = SymbolMap::from_kallsyms(&kallsyms_text);
    // Page by page: one page is held at a time, whatever the input's size.
    let mut pages =
        std::io::BufReader::with_capacity(1 << 16, dcg_calls::decode::open_text(input)?);
    if args.page_size < 16 || args.page_size > MAX_PAGE {
        anyhow::bail!(
            "--page-size {}: not between 16 and {MAX_PAGE}",
            args.page_size
        );
    }
    let spec = OutputSpec {
        saved: args.output.clone(),
        source: input.display().to_string(),
        ..opts.output()
    };
    let mut dec = Decoder::with_outputs(
        set,
        Options {
            // A call whose exit follows its entry is a leaf, as the kernel prints it.
            collapse_empty: true,
            ..opts
        },
        &spec,
    )?;
    dec.set_pointer_names(&names);
    let (mut lost, mut corrupt) = (0u64, 0u64);
    let mut buf = vec![0u8; args.page_size];
    let mut offset = 0usize;
    while let Some(len) = read_page(&mut pages, &mut buf, input)? {
        if len < buf.len() {
            anyhow::bail!(
                "{}: {}",
                input.display(),
                dcg_ringbuf::RingError::Page {
                    offset,
                    what: format!("{len} bytes, not a whole page of {}", args.page_size),
                }
            );
        }
        let page = dcg_ringbuf::page::parse_page(&buf, offset)
            .with_context(|| format!("{}", input.display()))?;
        if let Some(n) = page.missed {
            lost += n.unwrap_or(1);
        }
        for rec in &page.records {
            match formats.decode(rec) {
                Some(g) => dec.feed_record(&g, args.cpu, 0, &syms, out)?,
                None => corrupt += 1,
            }
        }
        offset += len;
    }
    dec.finish(out)?;
    let summary = dec.summary();
    dec.close()?;
    if lost > 0 {
        eprintln!("dcg decode: the buffer lost events before {lost} of its pages");
    }
    if corrupt > 0 {
        eprintln!(
            "dcg decode: {}: {corrupt} records skipped: too short for their event, or \
             deeper than function_graph goes (corrupt pages)",
            input.display()
        );
    }
    Ok(summary)
}

/// The largest `--kallsyms` file read (a distribution kernel's with every module: ~20 MB).
const MAX_KALLSYMS: u64 = 256 << 20;
/// The largest `--formats` file read (the function_graph events': a few KB).
const MAX_FORMATS: u64 = 16 << 20;
/// The largest ring-buffer page (`--page-size`; the kernel's are 4 KiB to 1 MiB).
const MAX_PAGE: usize = 16 << 20;

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

/// Fill `buf` with the next page: its length (short at the end of the input), `None`
/// at the end.
fn read_page(
    input: &mut impl std::io::Read,
    buf: &mut [u8],
    path: &std::path::Path,
) -> anyhow::Result<Option<usize>> {
    let mut len = 0;
    while len < buf.len() {
        match input.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(anyhow::Error::new(e).context(path.display().to_string())),
        }
    }
    Ok((len > 0).then_some(len))
}
