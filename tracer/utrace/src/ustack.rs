//! A root call's user-space stack (`--stack`), unwound in dcg: the recorder copies the
//! top of the stack and the stack and frame pointers at the root's entry
//! ([`dcg_inproc::layout::REC_STACK`]); here framehop unwinds that copy with the `.eh_frame` of the
//! objects the process has loaded (where the recorder said they are), and each return
//! address is named by the file's symbols, with the code the traced binary's db says
//! was inlined there expanded. Nothing is unwound in the traced program.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dcg_calls::saved_format::StackFrame;
use dcg_dbset::symbols::SymbolMap;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};

use crate::plan::Target;

/// Most frames a stack is unwound to.
const MAX_FRAMES: usize = 256;

/// Bytes of a mapped file: a section's data for the unwinder.
#[derive(Clone)]
struct Bytes(Arc<memmap2::Mmap>, Range<usize>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0[self.1.clone()]
    }
}

/// What a loaded file gives: its unwind sections, its code's address range and its
/// symbols (ELF addresses).
struct File {
    name: String,
    map: Arc<memmap2::Mmap>,
    /// `[lowest, highest)` address of its `PT_LOAD` segments.
    span: Range<u64>,
    sections: HashMap<&'static str, Range<u64>>,
    offsets: HashMap<&'static str, Range<usize>>,
    symbols: SymbolMap,
    /// Index of the traced binary it is, whose db expands inline frames.
    target: Option<usize>,
}

impl File {
    fn open(path: &Path, targets: &[Target]) -> Option<File> {
        if dcg_inproc::rings::is_session_file(path) || !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let f = std::fs::File::open(path).ok()?;
        // SAFETY: read-only mapping of a file only parsed; a file truncated meanwhile
        // could fault, as with every mmap reader.
        let map = Arc::new(unsafe { memmap2::Mmap::map(&f) }.ok()?);
        let obj = object::File::parse(&map[..]).ok()?;
        let loads = obj
            .segments()
            .map(|s| (s.address(), s.address() + s.size()));
        let (lo, hi) = loads.fold((u64::MAX, 0), |(lo, hi), (s, e)| (lo.min(s), hi.max(e)));
        let span = lo..hi;
        let (mut sections, mut offsets) = (HashMap::new(), HashMap::new());
        for name in [
            ".text",
            ".eh_frame",
            ".eh_frame_hdr",
            ".got",
            ".debug_frame",
        ] {
            let Some(s) = obj.section_by_name(name) else {
                continue;
            };
            sections.insert(name, s.address()..s.address() + s.size());
            if let Some((off, len)) = s.file_range() {
                offsets.insert(name, off as usize..(off + len) as usize);
            }
        }
        let target = targets.iter().position(|t| t.path == path);
        let symbols = match target {
            Some(t) => targets[t].symbols.clone(),
            None => {
                let id = obj.build_id().ok().flatten().unwrap_or_default();
                crate::plan::symbols_of(path, &map, id).ok()?
            }
        };
        let name = path.file_name()?.to_string_lossy().into_owned();
        (span.start < span.end).then_some(File {
            name,
            map: map.clone(),
            span,
            sections,
            offsets,
            symbols,
            target,
        })
    }

    /// The unwinder's module for this file loaded at `bias`.
    fn module(&self, bias: u64) -> Module<Bytes> {
        let data = |n: &str| {
            self.offsets
                .get(n)
                .filter(|r| r.end <= self.map.len())
                .map(|r| Bytes(self.map.clone(), r.clone()))
        };
        let svma = |n: &str| self.sections.get(n).cloned();
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: svma(".text"),
            text: data(".text"),
            got_svma: svma(".got"),
            eh_frame_svma: svma(".eh_frame"),
            eh_frame: data(".eh_frame"),
            eh_frame_hdr_svma: svma(".eh_frame_hdr"),
            eh_frame_hdr: data(".eh_frame_hdr"),
            debug_frame: data(".debug_frame"),
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        };
        let span = self.span.start.wrapping_add(bias)..self.span.end.wrapping_add(bias);
        Module::new(self.name.clone(), span, bias, info)
    }
}

/// A process: its loaded files (and where), its unwinder once made.
#[derive(Default)]
struct Process {
    loaded: Vec<(Arc<File>, u64)>,
    unwinder: Option<UnwinderX86_64<Bytes>>,
}

/// Unwinds and names the stacks of the traced processes.
pub(crate) struct UserStacks<'a> {
    targets: &'a [Target],
    files: HashMap<PathBuf, Option<Arc<File>>>,
    procs: HashMap<u32, Process>,
    /// Processes whose `/proc/PID/maps` was read.
    maps_read: std::collections::HashSet<u32>,
    /// The process whose files were published last: a forked child's stand-in (it
    /// publishes none; it has its parent's).
    latest: Option<u32>,
    cache: CacheX86_64,
}

impl<'a> UserStacks<'a> {
    pub(crate) fn new(targets: &'a [Target]) -> UserStacks<'a> {
        UserStacks {
            targets,
            files: HashMap::new(),
            procs: HashMap::new(),
            maps_read: Default::default(),
            latest: None,
            cache: CacheX86_64::new(),
        }
    }

    /// The file at `path`, opened once (`None`: not an ELF file dcg can read).
    fn file(&mut self, path: PathBuf) -> Option<Arc<File>> {
        let targets = self.targets;
        self.files
            .entry(path)
            .or_insert_with_key(|p| File::open(p, targets).map(Arc::new))
            .clone()
    }

    /// Process `pid` has the file at `path` loaded at `bias`.
    pub(crate) fn learn(&mut self, pid: u32, path: &str, bias: u64) {
        let file = self.file(PathBuf::from(path));
        let p = self.procs.entry(pid).or_default();
        if let Some(f) = file {
            p.loaded.push((f, bias));
            p.unwinder = None;
        }
        self.latest = Some(pid);
    }

    /// Where process (or thread) `pid`'s files are, for a stack taken where its traced
    /// binary `target` is loaded at `bias` (where a probe hit): its maps, read once per
    /// program image (a process whose binary moved has `exec`'d: read again); for a
    /// thread or process gone before they were read, those of the latest process with the
    /// binary at the same place (a thread of it, or a child it forked, has the same
    /// objects), else the binary alone.
    pub(crate) fn place(&mut self, pid: u32, target: usize, bias: u64) {
        let Some(path) = self.targets.get(target).map(|t| t.path.clone()) else {
            return;
        };
        let Some(file) = self.file(path) else {
            return;
        };
        let holds = |p: &Process| {
            p.loaded
                .iter()
                .any(|(f, b)| Arc::ptr_eq(f, &file) && *b == bias)
        };
        match self.procs.get(&pid) {
            Some(p) if holds(p) => return,
            Some(_) => {
                self.procs.remove(&pid);
                self.maps_read.remove(&pid);
            }
            None => {}
        }
        self.learn_process(pid);
        if self.procs.get(&pid).is_some_and(holds) {
            return;
        }
        let same = self
            .latest
            .and_then(|l| self.procs.get(&l))
            .filter(|p| holds(p))
            .map(|p| p.loaded.clone());
        let p = self.procs.entry(pid).or_default();
        p.loaded = same.unwrap_or_else(|| vec![(file, bias)]);
        p.unwinder = None;
    }

    /// The files process `pid` has mapped, from `/proc/PID/maps` (read once): each file
    /// mapped from its start, loaded where that mapping puts its first segment's page.
    pub(crate) fn learn_process(&mut self, pid: u32) {
        if !self.maps_read.insert(pid) {
            return;
        }
        for (path, start) in crate::symbolize::mapped_files(pid) {
            let Some(f) = self.file(path) else {
                continue;
            };
            let bias = start.wrapping_sub(f.span.start & !0xfff);
            let p = self.procs.entry(pid).or_default();
            if !p.loaded.iter().any(|(g, _)| Arc::ptr_eq(g, &f)) {
                p.loaded.push((f, bias));
                p.unwinder = None;
            }
            self.latest = Some(pid);
        }
    }

    /// The frames above a root entered at `ip` by a thread of process `pid`, from a
    /// [`dcg_inproc::layout::REC_STACK`] record's `payload`: innermost first, its caller
    /// first. Unwinding that does not reach the stack's end (the copy ends first, or a
    /// return address no known object holds) marks its last frame cut.
    pub(crate) fn frames(&mut self, pid: u32, ip: u64, payload: &[u8]) -> Vec<StackFrame> {
        let word = |i: usize| {
            payload
                .get(i * 8..i * 8 + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default()))
        };
        let (Some(sp), Some(bp), Some(n)) = (word(0), word(1), word(2)) else {
            return Vec::new();
        };
        let copied = payload.get(24..).unwrap_or(&[]);
        let n = (n as usize).min(copied.len());
        let key = if self.procs.contains_key(&pid) {
            pid
        } else {
            match self.latest {
                Some(p) => p,
                None => return Vec::new(),
            }
        };
        let Some(p) = self.procs.get_mut(&key) else {
            return Vec::new();
        };
        let unwinder = p.unwinder.get_or_insert_with(|| {
            let mut u = UnwinderX86_64::new();
            for (f, bias) in &p.loaded {
                u.add_module(f.module(*bias));
            }
            u
        });
        let mut read = |addr: u64| -> Result<u64, ()> {
            let off = addr.wrapping_sub(sp) as usize;
            if addr < sp || off + 8 > n {
                return Err(());
            }
            let b: [u8; 8] = copied[off..off + 8].try_into().map_err(|_| ())?;
            Ok(u64::from_ne_bytes(b))
        };
        let regs = UnwindRegsX86_64::new(ip, sp, bp);
        let mut it = unwinder.iter_frames(ip, regs, &mut self.cache, &mut read);
        let mut ras = Vec::new();
        let ended = loop {
            match it.next() {
                Ok(Some(FrameAddress::ReturnAddress(ra))) if ras.len() < MAX_FRAMES => {
                    ras.push(ra.get())
                }
                Ok(Some(FrameAddress::InstructionPointer(_))) => {}
                Ok(None) => break true,
                Ok(Some(_)) | Err(_) => break false,
            }
        };
        let loaded = &p.loaded;
        let mut out = Vec::new();
        for &ra in &ras {
            name_frame(loaded, self.targets, ra, &mut out);
        }
        // Unwinding that stopped before the stack's end (where the copy ends, or at code
        // no known object holds): the stack goes on above.
        if !ended {
            if let Some(last) = out.last_mut() {
                last.cut = true;
            }
        }
        out
    }
}

/// Append the frame(s) of return address `ra`: the inlined copies that made the call
/// (from the traced binary's db), then the function holding it.
fn name_frame(loaded: &[(Arc<File>, u64)], targets: &[Target], ra: u64, out: &mut Vec<StackFrame>) {
    let hex = |a: u64, module: Option<String>| StackFrame {
        func: format!("{a:#x}"),
        offset: None,
        module,
        inline: false,
        cut: false,
    };
    let Some((file, bias)) = loaded.iter().find(|(f, b)| {
        let a = ra.wrapping_sub(1).wrapping_sub(*b);
        f.span.contains(&a)
    }) else {
        out.push(hex(ra, None));
        return;
    };
    let rel = ra.wrapping_sub(*bias);
    let module = Some(file.name.clone());
    let db_func = file
        .target
        .and_then(|t| targets[t].db.by_addr_any(rel.wrapping_sub(1)));
    if let Some(f) = db_func {
        for c in f.copies_at_return(rel).iter().filter_map(|i| i.callee()) {
            out.push(StackFrame {
                func: c.name().to_string(),
                offset: None,
                module: module.clone(),
                inline: true,
                cut: false,
            });
        }
    }
    let named = file
        .symbols
        .lookup(rel.wrapping_sub(1))
        .filter(|(s, _)| s.func)
        .map(|(s, off)| (s.name.clone(), off + 1))
        .or_else(|| db_func.map(|f| (f.name().to_string(), rel - f.addr())));
    match named {
        Some((func, offset)) => out.push(StackFrame {
            func,
            offset: Some(offset),
            module,
            inline: false,
            cut: false,
        }),
        None => out.push(hex(rel, module)),
    }
}
