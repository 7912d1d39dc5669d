//! dwarfscan: extract every function signature of ELF files from their DWARF into a
//! [`sigdb`] database.
//!
//! Inputs are kernel images, kernel modules (also `.ko.xz`/`.ko.zst`/`.ko.gz`, or a
//! directory of them), executables, PIEs, shared libraries and relocatable objects. Each
//! compilation unit is walked in parallel; the results are merged in input and unit order,
//! so the output is byte-identical for any thread count.
//!
//! ```no_run
//! let inputs = [dwarfscan::Input::new("vmlinux")];
//! let mut result = dwarfscan::scan(&inputs, &dwarfscan::Options::default())?;
//! result.write(std::path::Path::new("vmlinux.sigdb"))?;
//! # Ok::<(), dwarfscan::ScanError>(())
//! ```

pub mod abi;
mod classify;
pub mod dwarf;
pub mod elf;
mod error;
pub mod inlines;
pub mod input;
pub mod location;
pub mod merge;
mod prologue;
pub mod render;
mod signature;
pub mod stats;
pub mod symbols;
pub mod types;
pub mod units;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use sigdb::{DbBuilder, DbFlags, ModuleDesc, ModuleId};

pub use error::ScanError;
pub use input::Input;
pub use stats::Stats;

use crate::dwarf::FileDwarf;
use crate::elf::{ElfInfo, ElfKind};
use crate::merge::Merger;
use crate::units::{CuResult, FileCtx, UnitError};

/// A progress report.
#[derive(Clone, Copy, Debug)]
pub enum Progress {
    /// This many more compilation units are known to be coming.
    UnitsQueued(u64),
    /// This many compilation units are done.
    UnitsDone(u64),
}

/// Options of a scan.
#[derive(Clone, Default)]
pub struct Options {
    /// Called with progress reports (from any thread).
    pub progress: Option<Arc<dyn Fn(Progress) + Send + Sync>>,
    /// Keep only inline edges whose callee has no out-of-line copy (smaller databases).
    pub inline_only_edges: bool,
    /// Which inlined copies (`DW_TAG_inlined_subroutine`) to record with their ranges,
    /// entry pc, parameter locations at entry and call site.
    pub inline_instances: InlineInstances,
}

/// Which inlined copies a scan records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InlineInstances {
    /// None.
    #[default]
    None,
    /// The copies of functions worth tracing: all but those of functions declared
    /// `inline` in a header file (`READ_ONCE`-like helpers, `test_bit`, `spin_lock`),
    /// which make up most copies of a kernel. The kernel itself marks every `inline`
    /// function `notrace` (`compiler_types.h`); `.c` ones are kept, being often real work.
    Traceable,
    /// Every copy.
    All,
}

impl InlineInstances {
    /// Whether any copy is recorded.
    pub fn any(self) -> bool {
        self != InlineInstances::None
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("progress", &self.progress.is_some())
            .field("inline_only_edges", &self.inline_only_edges)
            .field("inline_instances", &self.inline_instances)
            .finish()
    }
}

impl Options {
    fn report(&self, p: Progress) {
        if let Some(cb) = &self.progress {
            cb(p);
        }
    }
}

/// The outcome of a scan: a filled builder and counters.
#[derive(Debug)]
pub struct ScanResult {
    /// The database, ready to be written.
    pub builder: DbBuilder,
    /// Counters.
    pub stats: Stats,
}

impl ScanResult {
    /// Serialize the database.
    pub fn to_bytes(&mut self) -> Result<Vec<u8>, ScanError> {
        let t = Instant::now();
        let bytes = self.builder.finish()?;
        self.stats.t_write += t.elapsed();
        self.stats.db_bytes = bytes.len() as u64;
        Ok(bytes)
    }

    /// Write the database to `path` as every output is written ([`dcg_outfile`]).
    pub fn write(&mut self, path: &Path) -> Result<(), ScanError> {
        let bytes = self.to_bytes()?;
        let t = Instant::now();
        dcg_outfile::write(path, &bytes).map_err(sigdb::Error::from)?;
        self.stats.t_write += t.elapsed();
        Ok(())
    }
}

/// Files whose `.debug_info` is larger than this are scanned alone, unit chunk by unit
/// chunk, to bound memory; smaller files are scanned in parallel batches.
const BIG_FILE: usize = 8 << 20;

/// Small files are scanned in batches of at most this many bytes of input: a batch's
/// results are all held until it is merged, so this bounds memory, while a batch of
/// several files still keeps every core busy.
const BATCH_BYTES: usize = 8 << 20;

struct State {
    merger: Merger,
    stats: Stats,
    flags: DbFlags,
    all_modules: bool,
    first: bool,
}

impl State {
    fn new(opts: &Options) -> State {
        let mut merger = Merger::new(DbBuilder::new(u32::from(object::elf::EM_X86_64)));
        merger.all_edges = !opts.inline_only_edges;
        State {
            merger,
            stats: Stats::default(),
            flags: DbFlags::empty(),
            all_modules: true,
            first: true,
        }
    }

    fn add_module(&mut self, name: String, elf: &ElfInfo<'_>) -> ModuleId {
        if self.first {
            self.merger.builder.set_build_id(&elf.build_id);
            self.first = false;
        }
        if elf.kind.is_kernel() {
            self.flags |= DbFlags::KERNEL;
        }
        if elf.kind != ElfKind::KernelModule {
            self.all_modules = false;
        }
        self.merger.builder.add_module(ModuleDesc {
            name,
            kind: elf.kind.module_kind(),
            build_id: elf.build_id.clone(),
            base: elf.base,
        })
    }

    fn finish(mut self) -> ScanResult {
        let t = Instant::now();
        if self.all_modules && self.flags.contains(DbFlags::KERNEL) {
            self.flags |= DbFlags::MODULES_ONLY;
        }
        self.stats.member_conflicts = self.merger.member_conflicts;
        let mut builder = self.merger.finish();
        builder.set_flags(self.flags);
        self.stats.t_merge += t.elapsed();
        self.stats.db_functions = builder.function_count() as u64;
        ScanResult {
            builder,
            stats: self.stats,
        }
    }
}

/// The module name of a file: `vmlinux` for the kernel, the kernel's name for modules,
/// the file name otherwise.
fn module_name_for(path: &Path, kind: ElfKind) -> String {
    match kind {
        ElfKind::Kernel => "vmlinux".to_string(),
        ElfKind::KernelModule => input::module_name(path),
        _ => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// Scan `inputs` (files, or directories of kernel modules) into a database.
pub fn scan(inputs: &[Input], opts: &Options) -> Result<ScanResult, ScanError> {
    let files = input::expand(inputs)?;
    let mut state = State::new(opts);
    let mut i = 0;
    while i < files.len() {
        let size = std::fs::metadata(&files[i].path).map_or(0, |m| m.len()) as usize;
        if size > BIG_FILE {
            let t = Instant::now();
            let data = input::load(&files[i].path)?;
            state.stats.t_load += t.elapsed();
            let mapped = matches!(data, input::FileData::Mapped(_));
            scan_big(&mut state, &files[i].path, None, data.bytes(), mapped, opts)?;
            i += 1;
            continue;
        }
        // A batch of small files, scanned in parallel, merged in order.
        let mut j = i;
        let mut total = 0usize;
        while j < files.len() && j - i < 256 && total < BATCH_BYTES {
            let s = std::fs::metadata(&files[j].path).map_or(0, |m| m.len()) as usize;
            if s > BIG_FILE {
                break;
            }
            total += s;
            j += 1;
        }
        let t = Instant::now();
        // The structs of the files merged before this batch are not read again.
        let known = state.merger.known_structs();
        let results: Vec<Result<SmallFile, ScanError>> = files[i..j]
            .par_iter()
            .map(|f| {
                let data = input::load(&f.path)?;
                let mapped = matches!(data, input::FileData::Mapped(_));
                scan_small(&f.path, None, data.bytes(), mapped, opts, Some(&known))
            })
            .collect();
        state.stats.t_scan += t.elapsed();
        let t = Instant::now();
        for r in results {
            let f = r?;
            merge_small(&mut state, f);
        }
        state.stats.t_merge += t.elapsed();
        i = j;
    }
    Ok(state.finish())
}

/// Scan one ELF file held in memory. `name` is used in error messages and, for files
/// that are not kernel images or modules, as the module name.
pub fn scan_elf_bytes(name: &str, bytes: &[u8], opts: &Options) -> Result<ScanResult, ScanError> {
    let mut state = State::new(opts);
    let path = PathBuf::from(name);
    if bytes.len() > BIG_FILE {
        scan_big(&mut state, &path, Some(name), bytes, false, opts)?;
    } else {
        let t = Instant::now();
        let f = scan_small(&path, Some(name), bytes, false, opts, None)?;
        state.stats.t_scan += t.elapsed();
        let t = Instant::now();
        merge_small(&mut state, f);
        state.stats.t_merge += t.elapsed();
    }
    Ok(state.finish())
}

struct SmallFile {
    name: String,
    kind: ElfKind,
    build_id: Vec<u8>,
    base: u64,
    cus: Vec<CuResult>,
    stats: Stats,
}

fn merge_small(state: &mut State, f: SmallFile) {
    if state.first {
        state.merger.builder.set_build_id(&f.build_id);
        state.first = false;
    }
    if f.kind.is_kernel() {
        state.flags |= DbFlags::KERNEL;
    }
    if f.kind != ElfKind::KernelModule {
        state.all_modules = false;
    }
    let module = state.merger.builder.add_module(ModuleDesc {
        name: f.name,
        kind: f.kind.module_kind(),
        build_id: f.build_id,
        base: f.base,
    });
    for cu in f.cus {
        state.stats.add(&cu.stats);
        state.merger.merge_unit(module, cu);
    }
    state.stats.add(&f.stats);
}

fn file_stats(elf: &ElfInfo<'_>, bytes: &[u8]) -> Stats {
    Stats {
        files: 1,
        input_bytes: bytes.len() as u64,
        debug_info_bytes: elf.section(gimli::SectionId::DebugInfo).len() as u64,
        skipped_relocations: elf.skipped_relocations,
        ..Stats::default()
    }
}

/// Read an ELF file's kind, symbols and DWARF sections. When `bytes` is a file mapping,
/// the pages only read while relocating (a relocatable file's `.rela.debug_*` sections
/// and the `.debug_*` sections they were applied to a copy of) are returned to the
/// kernel afterwards: for a large debug module they are most of its resident pages.
fn prepare<'a>(path: &Path, bytes: &'a [u8], mapped: bool) -> Result<ElfInfo<'a>, ScanError> {
    let elf = elf::read_elf(path, bytes)?;
    if mapped && elf.kind.is_relocatable() {
        for (offset, len) in elf::relocation_inputs(bytes) {
            let (Ok(offset), Ok(len)) = (usize::try_from(offset), usize::try_from(len)) else {
                continue;
            };
            if let Some(part) = bytes.get(offset..offset.saturating_add(len)) {
                release_pages(part);
            }
        }
    }
    Ok(elf)
}

/// Return the whole pages inside `part`, a slice of a private read-only file mapping, to
/// the kernel (`MADV_DONTNEED`: they are read from the file again if touched).
pub(crate) fn release_pages(part: &[u8]) {
    let page = 4096;
    let from = (part.as_ptr() as usize).div_ceil(page) * page;
    let to = (part.as_ptr() as usize + part.len()) / page * page;
    if to > from {
        // SAFETY: the range lies inside a private read-only file mapping that outlives
        // this call (the slice borrows it); MADV_DONTNEED on such a mapping only discards
        // cached pages, which are faulted in again from the file if read.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED);
        }
    }
}

fn scan_units(
    path: &Path,
    ctx: &FileCtx<'_, '_>,
    range: std::ops::Range<usize>,
    parallel: bool,
    opts: &Options,
) -> Result<Vec<CuResult>, ScanError> {
    let one = |i: usize| {
        let r = units::scan_unit(ctx, i);
        opts.report(Progress::UnitsDone(1));
        r
    };
    let results: Vec<Result<CuResult, UnitError>> = if parallel {
        range.into_par_iter().map(one).collect()
    } else {
        range.map(one).collect()
    };
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(cu) => out.push(cu),
            Err(UnitError::SplitDwarf(why)) => {
                return Err(ScanError::unsupported(
                    path,
                    format!("split DWARF is not supported: a compilation unit {why}"),
                ))
            }
            Err(UnitError::Dwarf(_)) => {
                let mut cu = CuResult::default();
                cu.stats.units_skipped = 1;
                out.push(cu);
            }
        }
    }
    Ok(out)
}

fn check_units(path: &Path, fd: &FileDwarf<'_>, cus: &[CuResult]) -> Result<(), ScanError> {
    if fd.headers.is_empty() {
        return Err(ScanError::NoDwarf {
            path: path.to_path_buf(),
            hint: " (.debug_info has no units)".into(),
        });
    }
    if !cus.is_empty()
        && cus
            .iter()
            .all(|c| c.stats.units == 0 && c.stats.units_skipped > 0)
    {
        return Err(ScanError::dwarf(path, "no compilation unit could be read"));
    }
    Ok(())
}

fn scan_small(
    path: &Path,
    name: Option<&str>,
    bytes: &[u8],
    mapped: bool,
    opts: &Options,
    known_structs: Option<&crate::merge::KnownStructs>,
) -> Result<SmallFile, ScanError> {
    let elf = prepare(path, bytes, mapped)?;
    // A small file is read whole right away: nothing to gain from returning its pages.
    let fd = FileDwarf::new(&elf, false).map_err(|e| ScanError::dwarf(path, e))?;
    opts.report(Progress::UnitsQueued(fd.headers.len() as u64));
    let ctx = FileCtx {
        dwarf: &fd,
        symbols: &elf.symbols,
        mcount: elf.mcount.as_deref(),
        kind: elf.kind,
        instances: opts.inline_instances,
        elf: &elf,
        // Merged after the whole file is scanned.
        merged: None,
        known_structs,
        first_unit: None,
    };
    let cus = scan_units(path, &ctx, 0..fd.headers.len(), fd.headers.len() > 1, opts)?;
    check_units(path, &fd, &cus)?;
    let name = match (name, elf.kind) {
        (
            Some(n),
            ElfKind::Executable | ElfKind::Pie | ElfKind::SharedLibrary | ElfKind::Object,
        ) => n.to_string(),
        _ => module_name_for(path, elf.kind),
    };
    Ok(SmallFile {
        name,
        kind: elf.kind,
        build_id: elf.build_id.clone(),
        base: elf.base,
        stats: file_stats(&elf, bytes),
        cus,
    })
}

fn scan_big(
    state: &mut State,
    path: &Path,
    name: Option<&str>,
    bytes: &[u8],
    mapped: bool,
    opts: &Options,
) -> Result<(), ScanError> {
    let t = Instant::now();
    let elf = prepare(path, bytes, mapped)?;
    let fd = FileDwarf::new(&elf, mapped).map_err(|e| ScanError::dwarf(path, e))?;
    state.stats.t_load += t.elapsed();
    opts.report(Progress::UnitsQueued(fd.headers.len() as u64));
    let name = match (name, elf.kind) {
        (
            Some(n),
            ElfKind::Executable | ElfKind::Pie | ElfKind::SharedLibrary | ElfKind::Object,
        ) => n.to_string(),
        _ => module_name_for(path, elf.kind),
    };
    let module = state.add_module(name, &elf);
    state.stats.add(&file_stats(&elf, bytes));
    state.merger.start_module(module);
    let merged = state.merger.merged();
    let known = state.merger.known_structs();
    let ctx = FileCtx {
        dwarf: &fd,
        symbols: &elf.symbols,
        mcount: elf.mcount.as_deref(),
        kind: elf.kind,
        instances: opts.inline_instances,
        elf: &elf,
        merged: Some(&merged),
        known_structs: Some(&known),
        first_unit: Some(known.units_merged()),
    };
    let n = fd.headers.len();
    let mut any_ok = false;
    // Workers take units in ascending order; the merge (this thread) consumes them in
    // order as they complete, so memory stays bounded and pages of merged units can be
    // returned to the kernel.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<CuResult, UnitError>)>();
    let info = elf.section(gimli::SectionId::DebugInfo);
    // The other sections read in place from the mapping (not decompressed or relocated
    // copies).
    let followers: Vec<&[u8]> = elf
        .sections
        .iter()
        .filter(|(id, data)| {
            **id != gimli::SectionId::DebugInfo && matches!(data, std::borrow::Cow::Borrowed(_))
        })
        .map(|(_, data)| &data[..])
        .collect();
    let mut dropper = PageDropper::new(info, followers, mapped);
    let t = Instant::now();
    let mut merge_time = std::time::Duration::ZERO;
    let mut err = None;
    std::thread::scope(|s| {
        let workers = rayon::current_num_threads().max(1);
        for _ in 0..workers {
            let tx = tx.clone();
            let next = &next;
            let ctx = &ctx;
            s.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = units::scan_unit(ctx, i);
                opts.report(Progress::UnitsDone(1));
                if tx.send((i, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut pending: std::collections::BTreeMap<usize, Result<CuResult, UnitError>> =
            std::collections::BTreeMap::new();
        let mut want = 0usize;
        for (i, r) in rx.iter() {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&want) {
                let tm = Instant::now();
                match r {
                    Ok(cu) => {
                        any_ok |= cu.stats.units > 0;
                        state.stats.add(&cu.stats);
                        state.merger.merge_unit(module, cu);
                    }
                    Err(UnitError::SplitDwarf(why)) => {
                        if err.is_none() {
                            err = Some(ScanError::unsupported(
                                path,
                                format!("split DWARF is not supported: a compilation unit {why}"),
                            ));
                        }
                        next.store(n, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(UnitError::Dwarf(_)) => state.stats.units_skipped += 1,
                }
                known.unit_merged();
                want += 1;
                let upto = if want < n {
                    fd.starts[want]
                } else {
                    info.len() as u64
                };
                dropper.drop_below(upto as usize);
                merge_time += tm.elapsed();
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    state.stats.t_merge += merge_time;
    state.stats.t_scan += t.elapsed().saturating_sub(merge_time);
    if n == 0 {
        return Err(ScanError::NoDwarf {
            path: path.to_path_buf(),
            hint: " (.debug_info has no units)".into(),
        });
    }
    if !any_ok {
        return Err(ScanError::dwarf(path, "no compilation unit could be read"));
    }
    Ok(())
}

/// Returns the pages of an already merged prefix of a mapped `.debug_info` to the kernel
/// (`MADV_DONTNEED`: they are re-read from the file if a later unit refers back), so the
/// resident set stays small while scanning a large file. The sections units read beside
/// it (line programs, location and range lists, strings, abbreviations) are laid out in
/// unit order too: the same fraction of each of them, less a margin, is returned with it.
/// A unit that reads below that point only faults the pages in again.
struct PageDropper<'a> {
    section: &'a [u8],
    followers: Vec<&'a [u8]>,
    dropped: usize,
    enabled: bool,
}

impl<'a> PageDropper<'a> {
    const STEP: usize = 4 << 20;
    /// How far, as a fraction of `.debug_info` merged (in 1/64ths), the followers' drop
    /// point stays behind.
    const FOLLOWER_MARGIN_64THS: usize = 4;

    fn new(section: &'a [u8], followers: Vec<&'a [u8]>, mapped: bool) -> PageDropper<'a> {
        PageDropper {
            section,
            followers,
            dropped: 0,
            enabled: mapped,
        }
    }

    /// Drop the pages entirely below section offset `upto` (and the followers' share).
    fn drop_below(&mut self, upto: usize) {
        if !self.enabled || upto < self.dropped + Self::STEP {
            return;
        }
        let len = self.section.len().max(1);
        let upto = upto.min(len);
        if let Some(part) = self.section.get(self.dropped..upto) {
            release_pages(part);
        }
        // In 1/64ths of the section, as u128 so the product cannot overflow.
        let done = (upto as u128 * 64 / len as u128) as usize;
        let share = done.saturating_sub(Self::FOLLOWER_MARGIN_64THS);
        for f in &self.followers {
            let end = (f.len() as u128 * share as u128 / 64) as usize;
            if let Some(part) = f.get(..end) {
                release_pages(part);
            }
        }
        self.dropped = upto;
    }
}
