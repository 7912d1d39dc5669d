//! The per-session view of an instance's function_graph records read in binary
//! (`trace_pipe_raw`): as [`crate::stream_filter::TreeFilter`] does for text, only the trees rooted at
//! this session's functions (the shared `set_graph_function` brings other sessions' roots
//! too), cut at `--depth`, their depth shifted so roots are at the top level. Used when the
//! session needs no probe events (the kernel prints the values itself, or none are asked).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use dcg_calls::decode::Decoder;
use dcg_dbset::kallsyms::Kallsyms;
use dcg_live::tracefs::{RawPipes, Session};
use dcg_ringbuf::format::Format;
use dcg_ringbuf::graph::{GraphFormats, GraphRecord};
use dcg_ringbuf::page::parse_page;

/// The binary stream filter of one session.
#[derive(Debug)]
pub struct RawTreeFilter {
    roots: HashSet<String>,
    /// Whether the function at an address is a root (records name functions by address).
    is_root: HashMap<u64, bool>,
    depth: u32,
    /// Per task: the depth of its kept tree's root.
    tasks: HashMap<u32, u32>,
    /// Where to look up the name of a task gone before its records were read.
    tracefs: Option<std::path::PathBuf>,
    /// Tasks whose name was looked up (found or not): once per task.
    named: HashSet<u32>,
    /// `--stack`: per task, the stack a root's `stacktrace` probe took, until the task's
    /// next record (the root's entry, which takes it).
    stacks: HashMap<u32, Vec<u64>>,
    /// Roots entered, and trees given up (a new root began before the old one's exit).
    pub started: u64,
    pub abandoned: u64,
}

impl RawTreeFilter {
    /// Keep trees rooted at `roots`, at most `depth` levels (0: all).
    pub fn new(roots: impl IntoIterator<Item = String>, depth: u32) -> RawTreeFilter {
        RawTreeFilter {
            roots: roots.into_iter().collect(),
            is_root: HashMap::new(),
            depth,
            tracefs: None,
            named: HashSet::new(),
            stacks: HashMap::new(),
            tasks: HashMap::new(),
            started: 0,
            abandoned: 0,
        }
    }

    fn root_at(&mut self, func: u64, syms: &Kallsyms) -> bool {
        let roots = &self.roots;
        *self
            .is_root
            .entry(func)
            .or_insert_with(|| syms.at(func).is_some_and(|(n, _)| roots.contains(n)))
    }

    /// Feed one record of CPU `cpu`; returns whether it completed a root call.
    pub fn feed(
        &mut self,
        rec: &GraphRecord<'_>,
        cpu: u32,
        syms: &Kallsyms,
        dec: &mut Decoder<'_>,
        out: &mut dyn Write,
    ) -> std::io::Result<bool> {
        let limit = self.depth;
        match rec {
            GraphRecord::Entry {
                pid, depth, func, ..
            } => {
                let stack = self.stacks.remove(pid);
                let open = self.tasks.get(pid).copied();
                // A tree that ended without its exit (lost records) is given up.
                let kept = open.filter(|r| depth > r);
                if open.is_some() && kept.is_none() {
                    self.abandoned += 1;
                }
                let root = match kept {
                    Some(r) => Some(r),
                    None => {
                        let starts = self.root_at(*func, syms);
                        self.started += u64::from(starts);
                        if let Some(ips) = stack.filter(|_| starts) {
                            let frames = crate::kstack::frames(*func, &ips, syms, dec.dbs());
                            dec.stack_of_next_root(*pid, frames.into_boxed_slice());
                        }
                        starts.then_some(*depth)
                    }
                };
                let Some(root) = root else {
                    self.tasks.remove(pid);
                    return Ok(false);
                };
                // Records carry the thread id alone: the task's name, once, from /proc
                // while it runs, else from what the kernel saved at its context switches.
                if self.named.insert(*pid) {
                    let comm = dcg_live::process::comm(*pid as i32).or_else(|| {
                        let t = self.tracefs.as_deref()?;
                        dcg_live::tracefs::saved_cmdline(t, *pid)
                    });
                    if let Some(c) = comm {
                        dec.name_task(*pid, &c);
                    }
                }
                self.tasks.insert(*pid, root);
                if limit > 0 && *depth >= root + limit {
                    return Ok(false);
                }
                dec.feed_record(rec, cpu, root, syms, out)?;
                Ok(false)
            }
            GraphRecord::Exit { pid, depth, .. } => {
                self.stacks.remove(pid);
                let Some(&root) = self.tasks.get(pid) else {
                    return Ok(false);
                };
                if limit > 0 && *depth >= root + limit {
                    return Ok(false);
                }
                let done = *depth <= root;
                if done {
                    self.tasks.remove(pid);
                }
                dec.feed_record(rec, cpu, root, syms, out)?;
                Ok(done)
            }
            GraphRecord::Print { pid, .. } => {
                if let Some(&root) = self.tasks.get(pid) {
                    dec.feed_record(rec, cpu, root, syms, out)?;
                }
                Ok(false)
            }
            // The probe runs before function_graph's entry hook (it is registered after
            // function_graph started, and ftrace calls the newest first): the task's next
            // record is the root's entry. In an open tree it is a nested call of a root.
            GraphRecord::Stack { pid, ips, .. } => {
                if !self.tasks.contains_key(pid) {
                    self.stacks.insert(*pid, ips.clone());
                }
                Ok(false)
            }
            GraphRecord::Other { .. } => Ok(false),
        }
    }
}

/// The binary source of a live session: the instance's per-CPU `trace_pipe_raw` files,
/// the event layouts, the symbols that name the functions, and the session's filter.
pub struct RawSource {
    pipes: RawPipes,
    formats: GraphFormats,
    syms: Kallsyms,
    filter: RawTreeFilter,
    pages: Vec<(u32, Vec<u8>)>,
    /// Pages drained past the memory bound, each batch one entry (its pages one after
    /// the other: CPU and length as `u32` LE, then the page), oldest first.
    kept: dcg_spool::Kept,
    /// Bytes of pages kept in memory before they go to the spool file.
    bound: usize,
    /// The spool file could not take them: they stay in memory.
    spool_failed: bool,
}

/// Bytes of the spool file read back at a time.
const SPOOL_CHUNK: usize = 4 << 20;

/// The pages of a spooled batch.
fn batch_pages(batch: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    let mut rest = batch;
    std::iter::from_fn(move || {
        let (cpu, tail) = rest.split_first_chunk::<4>()?;
        let (len, tail) = tail.split_first_chunk::<4>()?;
        let (page, next) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
        rest = next;
        Some((u32::from_le_bytes(*cpu), page))
    })
}

/// What one read gave.
#[derive(Debug, Default)]
pub struct RawRead {
    /// Pages read.
    pub pages: usize,
    /// Root calls completed.
    pub completed: u64,
    /// Events lost before some pages (`None`: an unknown number).
    pub lost: Vec<Option<u64>>,
}

/// Most pages read per CPU in one round (the rest waits for the next).
pub const PAGES_PER_ROUND: usize = 1024;

impl RawSource {
    /// Open the session's pipes; formats from `tracefs`'s `events/ftrace/*/format`,
    /// function names from `kallsyms` (`/proc/kallsyms` parsed).
    pub fn open(
        sess: &Session,
        tracefs: &Path,
        kallsyms: &Kallsyms,
        mut filter: RawTreeFilter,
    ) -> Result<RawSource, String> {
        filter.tracefs = Some(tracefs.to_path_buf());
        let mut formats = Vec::new();
        for ev in [
            "funcgraph_entry",
            "funcgraph_exit",
            "fgraph_retaddr_entry",
            "print",
            "kernel_stack",
        ] {
            let path = tracefs.join("events/ftrace").join(ev).join("format");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue; // fgraph_retaddr_entry, print and kernel_stack are optional
            };
            formats.push(Format::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?);
        }
        let formats = GraphFormats::new(&formats).map_err(|e| e.to_string())?;
        let syms = kallsyms.clone();
        if syms.is_empty() {
            return Err("/proc/kallsyms has no addresses".into());
        }
        let pipes = sess.open_raw_pipes().map_err(|e| e.to_string())?;
        Ok(RawSource {
            pipes,
            formats,
            syms,
            filter,
            pages: Vec::new(),
            kept: dcg_spool::Kept::default(),
            bound: dcg_spool::IN_MEMORY,
            spool_failed: false,
        })
    }

    /// Pages drained beyond `bytes` go to a file in the temporary directory.
    pub fn keep_in_memory(&mut self, bytes: usize) {
        self.bound = bytes;
    }

    /// Bytes of pages ever moved to the spool file.
    pub fn spooled(&self) -> u64 {
        self.kept.spooled_in_all()
    }

    /// Copy every page there is now out of the kernel's buffers without decoding it (the
    /// next [`RawSource::read`] decodes it); returns how many pages.
    /// Past the memory bound, the pages drained so far go to the spool file as one batch
    /// (where it cannot take them, they stay in memory and [`RawSource::pending`] grows).
    pub fn drain(&mut self) -> std::io::Result<usize> {
        let before = self.pages.len();
        self.pipes
            .read_available(PAGES_PER_ROUND, &mut self.pages)
            .map_err(std::io::Error::other)?;
        let read = self.pages.len() - before;
        if !self.spool_failed && self.pending() > self.bound {
            let mut batch = Vec::with_capacity(self.pending() + 8 * self.pages.len());
            for (cpu, page) in self.pages.drain(..) {
                batch.extend_from_slice(&cpu.to_le_bytes());
                batch.extend_from_slice(&(page.len() as u32).to_le_bytes());
                batch.extend_from_slice(&page);
            }
            self.kept.push(&batch);
            if let Err(e) = self.kept.spool() {
                crate::debug(format_args!("spooling pages: {e}; kept in memory"));
                self.spool_failed = true;
            }
        }
        Ok(read)
    }

    /// Whether stack records (`kernel_stack`) can be read.
    pub fn reads_stacks(&self) -> bool {
        self.formats.has_stacks()
    }

    /// Bytes of pages drained and not decoded yet, in memory.
    pub fn pending(&self) -> usize {
        self.pages.len() * self.pipes.page_size() + self.kept.in_memory()
    }

    /// Read every page there is now (after those drained, the spooled ones first), merge
    /// each batch's records across CPUs by time, and feed this session's trees to `dec`;
    /// stop feeding once `limit` roots completed.
    pub fn read(
        &mut self,
        dec: &mut Decoder<'_>,
        out: &mut dyn Write,
        limit: Option<u64>,
    ) -> std::io::Result<RawRead> {
        let mut got = RawRead {
            pages: self.drain()?,
            ..RawRead::default()
        };
        let mut kept = std::mem::take(&mut self.kept);
        let mut failed = None;
        let mut feed = |this: &mut Self, batch: &[u8]| {
            if failed.is_none() {
                failed = this
                    .feed(batch_pages(batch), dec, out, limit, &mut got)
                    .err();
            }
        };
        let spooled = kept.take_spooled(SPOOL_CHUNK, |b| feed(self, b));
        dcg_spool::entries(&kept.queue, |b| feed(self, b));
        kept.queue.clear();
        self.kept = kept;
        spooled?;
        if let Some(e) = failed {
            return Err(e);
        }
        let pages = std::mem::take(&mut self.pages);
        self.feed(
            pages.iter().map(|(c, p)| (*c, &p[..])),
            dec,
            out,
            limit,
            &mut got,
        )?;
        crate::debug(format_args!(
            "raw read: {} pages, {} roots completed; in all {} roots started, {} given up; \
             lost {:?}",
            pages.len(),
            got.completed,
            self.filter.started,
            self.filter.abandoned,
            got.lost
        ));
        Ok(got)
    }

    /// Feed one batch of pages: their records merged across CPUs by time.
    fn feed<'p>(
        &mut self,
        pages: impl Iterator<Item = (u32, &'p [u8])>,
        dec: &mut Decoder<'_>,
        out: &mut dyn Write,
        limit: Option<u64>,
        got: &mut RawRead,
    ) -> std::io::Result<()> {
        let mut recs = Vec::new();
        for (cpu, bytes) in pages {
            let page = parse_page(bytes, 0).map_err(|e| std::io::Error::other(e.to_string()))?;
            if let Some(n) = page.missed {
                got.lost.push(n);
            }
            for r in &page.records {
                if let Some(g) = self.formats.decode(r) {
                    recs.push((r.ts, cpu, g));
                }
            }
        }
        // One task's records can sit on several CPUs (it migrated): time orders them.
        recs.sort_by_key(|(ts, _, _)| *ts);
        for (_, cpu, g) in &recs {
            if limit.is_some_and(|n| got.completed >= n) {
                break;
            }
            if self.filter.feed(g, *cpu, &self.syms, dec, out)? {
                got.completed += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::batch_pages;

    /// A spooled batch gives back its pages with their CPUs, in order; a cut one only
    /// its whole pages.
    #[test]
    fn batches_hold_their_pages() {
        let mut batch = Vec::new();
        for (cpu, page) in [(1u32, vec![7u8; 16]), (0, vec![9u8; 4])] {
            batch.extend_from_slice(&cpu.to_le_bytes());
            batch.extend_from_slice(&(page.len() as u32).to_le_bytes());
            batch.extend_from_slice(&page);
        }
        let got: Vec<(u32, Vec<u8>)> = batch_pages(&batch).map(|(c, p)| (c, p.to_vec())).collect();
        assert_eq!(got, vec![(1, vec![7; 16]), (0, vec![9; 4])]);
        assert_eq!(batch_pages(&batch[..batch.len() - 1]).count(), 1);
    }
}
