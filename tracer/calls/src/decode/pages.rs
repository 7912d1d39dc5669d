//! `dcg decode --raw`: a file of function_graph ring-buffer pages (a CPU's
//! `trace_pipe_raw`) decoded page by page — one page held at a time, whatever the input's
//! size — through the event formats and kallsyms the caller read, into the same
//! [`Decoder`] as the text.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::symbols::SymbolMap;
use dcg_dbset::DbSet;
use dcg_ringbuf::format::Format;
use dcg_ringbuf::graph::GraphFormats;
use dcg_ringbuf::RingError;

use super::{open_text, DecodeError, Decoder, Options};
use crate::outputs::{OutputSpec, Outputs};

/// The largest ring-buffer page (`--page-size`; the kernel's are 4 KiB to 1 MiB).
pub const MAX_PAGE: usize = 16 << 20;

/// What `dcg decode --raw` is asked to do.
#[derive(Debug, Clone)]
pub struct PagesJob<'j> {
    /// The file of pages.
    pub input: &'j Path,
    /// The text of `/proc/kallsyms` or a `System.map`: names functions and pointers.
    pub kallsyms: &'j str,
    /// The ring-buffer page size.
    pub page_size: usize,
    /// The CPU whose buffer the pages are (the CPU column).
    pub cpu: u32,
    /// Also save the decoded calls to this file.
    pub output: Option<PathBuf>,
    /// How to decode.
    pub opts: Options,
}

/// What a pages run found besides its output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PagesSummary {
    /// The summary of undecoded functions ([`Decoder::summary`]).
    pub undecoded: Option<String>,
    /// Events the buffer lost before some pages (as the pages count them).
    pub lost: u64,
    /// Records skipped: too short for their event, or deeper than function_graph goes.
    pub corrupt: u64,
}

/// The function_graph event formats in `text` (the `events/ftrace/*/format` files, one
/// after the other) read from `path`.
pub fn graph_formats(path: &Path, text: &str) -> Result<GraphFormats, DecodeError> {
    let ring = |error| DecodeError::Ring {
        path: path.to_path_buf(),
        error,
    };
    GraphFormats::new(&Format::parse_all(text).map_err(ring)?).map_err(ring)
}

/// Decode the pages of `job` with `formats` over `set` into `out` (and the saved-calls
/// file).
pub fn run(
    set: &DbSet,
    formats: &GraphFormats,
    job: &PagesJob<'_>,
    out: &mut dyn Write,
) -> Result<PagesSummary, DecodeError> {
    let input = job.input;
    let syms = Kallsyms::parse(job.kallsyms);
    let names = SymbolMap::from_kallsyms(job.kallsyms);
    let mut pages = std::io::BufReader::with_capacity(1 << 16, open_text(input)?);
    if job.page_size < 16 || job.page_size > MAX_PAGE {
        return Err(DecodeError::PageSize {
            size: job.page_size,
            max: MAX_PAGE,
        });
    }
    let spec = OutputSpec {
        saved: job.output.clone(),
        source: input.display().to_string(),
        ..job.opts.output()
    };
    let opts = Options {
        // A call whose exit follows its entry is a leaf, as the kernel prints it.
        collapse_empty: true,
        ..job.opts
    };
    let mut dec = Decoder::with_outputs(set, opts, Outputs::open(spec)?);
    dec.set_pointer_names(&names);
    let ring = |error| DecodeError::Ring {
        path: input.to_path_buf(),
        error,
    };
    let mut summary = PagesSummary::default();
    let mut buf = vec![0u8; job.page_size];
    let mut offset = 0usize;
    while let Some(len) = read_page(&mut pages, &mut buf, input)? {
        if len < buf.len() {
            return Err(ring(RingError::Page {
                offset,
                what: format!("{len} bytes, not a whole page of {}", job.page_size),
            }));
        }
        let page = dcg_ringbuf::page::parse_page(&buf, offset).map_err(ring)?;
        if let Some(n) = page.missed {
            summary.lost += n.unwrap_or(1);
        }
        for rec in &page.records {
            match formats.decode(rec) {
                Some(g) => dec.feed_record(&g, job.cpu, 0, &syms, out)?,
                None => summary.corrupt += 1,
            }
        }
        offset += len;
    }
    dec.finish(out)?;
    summary.undecoded = dec.summary();
    dec.close()?;
    Ok(summary)
}

/// Fill `buf` with the next page: its length (short at the end of the input), `None`
/// at the end.
fn read_page(
    input: &mut impl Read,
    buf: &mut [u8],
    path: &Path,
) -> Result<Option<usize>, DecodeError> {
    let mut len = 0;
    while len < buf.len() {
        match input.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(DecodeError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
    Ok((len > 0).then_some(len))
}
