//! Pointers of a traced process named by the symbol they land on (`&static_var`,
//! `&_IO_2_1_stdout_`): the ELF symbols of each binary, placed where the process has it
//! loaded. A traced binary's load address comes from its own probe hits (the event's
//! address less the function's); the other files mapped by the process (libraries) from
//! `/proc/PID/maps`, read once per process while it runs. Unplaced, a pointer stays hex.
//! Files are mapped, and only their ELF headers and symbol tables read.

use std::collections::HashSet;
use std::path::PathBuf;

use dcg_dbset::symbols::SymbolMap;

use crate::plan::{load_segments, Target};

/// Where a file is loaded.
#[derive(Debug, Clone, Copy)]
pub enum Placed {
    /// Its load bias.
    Bias(u64),
    /// Its first page is mapped at this address.
    MappedAt(u64),
}

/// Names pointers of the traced processes.
pub struct Symbolizer<'a> {
    targets: &'a [Target],
    /// Load bias of each target, once known.
    bias: Vec<Option<u64>>,
    /// Other mapped files: their symbols and load bias.
    others: Vec<(u64, SymbolMap)>,
    files_seen: HashSet<PathBuf>,
    pids_seen: HashSet<u32>,
}

impl<'a> Symbolizer<'a> {
    /// A symbolizer over the traced binaries.
    pub fn new(targets: &'a [Target]) -> Symbolizer<'a> {
        Symbolizer {
            targets,
            bias: vec![None; targets.len()],
            others: Vec::new(),
            files_seen: HashSet::new(),
            pids_seen: HashSet::new(),
        }
    }

    /// Target `target` is loaded at `bias` (run-time address − ELF address).
    pub fn learn_bias(&mut self, target: usize, bias: u64) {
        if let Some(b) = self.bias.get_mut(target) {
            b.get_or_insert(bias);
        }
    }

    /// Read the mappings of process `pid` (once): where its other files are.
    pub fn learn_process(&mut self, pid: u32) {
        if !self.pids_seen.insert(pid) {
            return;
        }
        for (path, start) in mapped_files(pid) {
            self.learn_file(path, Placed::MappedAt(start));
        }
    }

    /// File `path` is loaded as `placed` says (the in-process recorder tells the bias of
    /// every object of a process it starts in).
    pub fn learn_file(&mut self, path: PathBuf, placed: Placed) {
        let bias_of = |segs: &[crate::plan::Segment]| match placed {
            Placed::Bias(b) => Some(b),
            Placed::MappedAt(start) => segs
                .iter()
                .map(|s| s.vaddr)
                .min()
                .map(|v| start.wrapping_sub(v & !0xfff)),
        };
        if let Some(t) = self.targets.iter().position(|t| t.path == path) {
            if let Some(b) = bias_of(&self.targets[t].segments) {
                self.learn_bias(t, b);
            }
            return;
        }
        if !self.files_seen.insert(path.clone()) {
            return;
        }
        let Some(map) = map_elf(&path) else {
            return;
        };
        let (Ok(segs), Ok(syms)) = (load_segments(&map), SymbolMap::from_elf(&map)) else {
            return;
        };
        if let Some(bias) = bias_of(&segs) {
            self.others.push((bias, syms));
        }
    }

    /// The symbol run-time address `addr` lands on, as C writes a pointer to it.
    pub fn pointer_text(&self, addr: u64) -> Option<String> {
        let placed = self
            .targets
            .iter()
            .zip(&self.bias)
            .filter_map(|(t, b)| Some((b.as_ref()?, &t.symbols)))
            .chain(self.others.iter().map(|(b, s)| (b, s)));
        for (bias, syms) in placed {
            if let Some(text) = syms.pointer_text(addr.wrapping_sub(*bias)) {
                return Some(text);
            }
        }
        None
    }
}

impl dcg_deref::Symbols for Symbolizer<'_> {
    fn pointer_text(&self, addr: u64, _to_func: bool) -> Option<String> {
        Symbolizer::pointer_text(self, addr)
    }
}

/// The files process `pid` maps from their first byte (`/proc/PID/maps`), and where that
/// mapping starts; none when the process is gone.
pub(crate) fn mapped_files(pid: u32) -> Vec<(PathBuf, u64)> {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(_perms), Some(offset)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Some(path) = it.nth(2).filter(|p| p.starts_with('/')) else {
            continue;
        };
        if !offset.trim_start_matches('0').is_empty() {
            continue;
        }
        if let Some(start) = range
            .split('-')
            .next()
            .and_then(|s| u64::from_str_radix(s, 16).ok())
        {
            out.push((PathBuf::from(path), start));
        }
    }
    out
}

/// A mapped file of a traced process, mapped read-only when it is a regular ELF file
/// and not one of dcg's own session files (the rings): only its headers and symbol
/// tables are then read, never the whole file (a process may map gigabytes of data).
fn map_elf(path: &std::path::Path) -> Option<memmap2::Mmap> {
    if dcg_inproc::rings::is_session_file(path) {
        return None;
    }
    // Looked at before it is opened: opening a device can have effects.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: read-only mapping of a file we only parse; a file truncated meanwhile could
    // fault, as with every mmap reader.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    map.starts_with(b"\x7fELF").then_some(map)
}
