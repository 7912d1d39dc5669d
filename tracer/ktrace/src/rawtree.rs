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
        })
    }

    /// Copy every page there is now out of the kernel's buffers without decoding it (the
    /// next [`RawSource::read`] decodes it); returns how many pages.
    pub fn drain(&mut self) -> std::io::Result<usize> {
        let before = self.pages.len();
        self.pipes
            .read_available(PAGES_PER_ROUND, &mut self.pages)
            .map_err(std::io::Error::other)?;
        Ok(self.pages.len() - before)
    }

    /// Whether stack records (`kernel_stack`) can be read.
    pub fn reads_stacks(&self) -> bool {
        self.formats.has_stacks()
    }

    /// Bytes of pages drained and not decoded yet.
    pub fn pending(&self) -> usize {
        self.pages.len() * self.pipes.page_size()
    }

    /// Read every page there is now (after those drained), merge the CPUs' records by
    /// time, and feed this session's trees to `dec`; stop feeding once `limit` roots
    /// completed.
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
        let mut recs = Vec::new();
        for (cpu, bytes) in &self.pages {
            let page = match parse_page(bytes, 0) {
                Ok(p) => p,
                Err(e) => return Err(std::io::Error::other(e.to_string())),
            };
            if let Some(n) = page.missed {
                got.lost.push(n);
            }
            for r in &page.records {
                if let Some(g) = self.formats.decode(r) {
                    recs.push((r.ts, *cpu, g));
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
        let recs_len = recs.len();
        drop(recs);
        crate::debug(format_args!(
            "raw read: {} pages, {} records, {} roots completed; in all {} roots started, \
             {} given up; lost {:?}",
            self.pages.len(),
            recs_len,
            got.completed,
            self.filter.started,
            self.filter.abandoned,
            got.lost
        ));
        self.pages.clear();
        Ok(got)
    }
}
