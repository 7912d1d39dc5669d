//! The traced binaries: where `--func PATH` points, their loadable segments, build-id,
//! symbols and signature db.

use super::*;

fn binary_error(path: impl std::fmt::Display, what: impl std::fmt::Display) -> UtraceError {
    UtraceError::Binary {
        path: path.to_string(),
        what: what.to_string(),
    }
}

pub use dcg_dbresolve::binary::DbSource;

/// A loadable segment: ELF address range and the file offset of its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_filesz`: only bytes backed by the file can be probed.
    pub filesz: u64,
    /// `p_offset`.
    pub offset: u64,
}

/// File offset of ELF address `vaddr`: `vaddr - p_vaddr + p_offset` of the `PT_LOAD`
/// segment containing it.
pub fn file_offset(segments: &[Segment], vaddr: u64) -> Option<u64> {
    segments
        .iter()
        .find(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz)
        .map(|s| vaddr - s.vaddr + s.offset)
}

/// The `PT_LOAD` segments of an ELF file.
pub fn load_segments(bytes: &[u8]) -> std::result::Result<Vec<Segment>, String> {
    let file = object::File::parse(bytes).map_err(|e| format!("not a valid ELF file: {e}"))?;
    Ok(file
        .segments()
        .map(|s| {
            let (offset, filesz) = s.file_range();
            Segment {
                vaddr: s.address(),
                filesz,
                offset,
            }
        })
        .collect())
}

/// A traced binary: its path, segments and db.
pub struct Target {
    /// The path as given in `--func`.
    pub given: String,
    /// Absolute path, as the kernel resolves it for the uprobe.
    pub path: PathBuf,
    /// File name, used as the module name of its calls.
    pub name: String,
    /// `PT_LOAD` segments.
    pub segments: Vec<Segment>,
    /// Its signature db.
    pub db: Db,
    /// Where the db came from.
    pub source: DbSource,
    /// GNU build-id (empty when none).
    pub build_id: Vec<u8>,
    /// Its ELF symbols (`.symtab`, `.dynsym`, and its debug file's): aliases of
    /// functions, functions without DWARF, what pointers land on.
    pub symbols: SymbolMap,
}

/// The ELF symbols of the file at `path` (its `bytes`, GNU build-id `build_id`) and of
/// its separate debug file where there is one (local functions a stripped file lacks).
pub(crate) fn symbols_of(
    path: &Path,
    bytes: &[u8],
    build_id: &[u8],
) -> std::result::Result<SymbolMap, dcg_dbset::symbols::SymbolError> {
    let mut symbols = SymbolMap::from_elf(bytes)?;
    if let Some(debug) = dcg_dbresolve::binary::debug_file(path, bytes, build_id) {
        if let Ok(dbytes) = std::fs::read(&debug) {
            if let Ok(more) = SymbolMap::from_elf(&dbytes) {
                symbols.merge(more);
            }
        }
    }
    Ok(symbols)
}

/// Find the file `given` names: an existing path, a file mapped by process `pid` with that
/// name (`libc.so.6`, or `libc` as a prefix), or a command in `$PATH`.
pub fn resolve_binary(given: &str, pid: Option<i32>) -> Result<PathBuf> {
    let p = Path::new(given);
    if p.is_file() {
        return p
            .canonicalize()
            .map_err(|e| binary_error(given, format!("resolving the path: {e}")));
    }
    if let Some(pid) = pid {
        if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            let want = p.file_name().map(|n| n.to_string_lossy().into_owned());
            for line in maps.lines() {
                let Some(path) = line.split_whitespace().nth(5) else {
                    continue;
                };
                if want.as_deref().is_some_and(|w| names(Path::new(path), w)) {
                    // The process's view: /proc/PID/root keeps it right across mount
                    // namespaces.
                    let root = PathBuf::from(format!("/proc/{pid}/root{path}"));
                    if root.is_file() {
                        return Ok(PathBuf::from(path));
                    }
                }
            }
        }
    }
    if !given.contains('/') {
        if let Some(found) = dcg_live::process::search_path(given) {
            return Ok(found);
        }
    }
    Err(binary_error(given, "no such file"))
}

/// Whether `path` is the file a short name `want` means: `libc.so.6` or `libc` (a prefix
/// up to a dot).
fn names(path: &Path, want: &str) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name == want || name.starts_with(&format!("{want}."))
}

/// The library a short name (`libc.so.6`, `libc`) means for the command `exe`: one the
/// dynamic loader would load for it ([`libraries_of_command`]).
pub fn library_of_command(exe: &Path, want: &str) -> Option<PathBuf> {
    if want.contains('/') {
        return None;
    }
    libraries_of_command(exe)
        .into_iter()
        .find(|p| names(p, want) && p.is_file())
}

/// The libraries the dynamic loader loads for the command `exe`, found as its own search
/// finds them (`LD_LIBRARY_PATH`, `RUNPATH`, `ld.so.cache`, ...), the loader itself
/// last: asked of the loader named in `exe`'s `PT_INTERP` with `--list`, which maps the
/// libraries and runs none of their code or the command's. Empty for a static binary.
pub fn libraries_of_command(exe: &Path) -> Vec<PathBuf> {
    let Some(interp) = std::fs::read(exe).ok().and_then(|b| interpreter(&b)) else {
        return Vec::new();
    };
    let Ok(out) = std::process::Command::new(&interp)
        .arg("--list")
        .arg(exe)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // `\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)`, or
            // `\t/lib64/ld-linux-x86-64.so.2 (0x...)`.
            let l = l.trim();
            let path = match l.split_once(" => ") {
                Some((_, rest)) => rest,
                None => l,
            };
            let path = path.rsplit_once(" (").map_or(path, |(p, _)| p);
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Whether the ELF file at `path` has constructors the loader runs (`.init`,
/// `.init_array`).
pub fn has_constructors(path: &Path) -> bool {
    use object::{Object, ObjectSection};
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let Ok(file) = object::File::parse(&*bytes) else {
        return false;
    };
    [".init", ".init_array"]
        .iter()
        .any(|n| file.section_by_name(n).is_some_and(|s| s.size() > 0))
}

/// The `PT_INTERP` of an ELF file: its dynamic loader.
fn interpreter(bytes: &[u8]) -> Option<PathBuf> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let elf = ElfFile64::<object::Endianness>::parse(bytes).ok()?;
    let endian = elf.endian();
    elf.elf_program_headers()
        .iter()
        .find(|ph| ph.p_type(endian) == object::elf::PT_INTERP)
        .and_then(|ph| ph.data(endian, bytes).ok())
        .map(|d| {
            let d = d.split(|&b| b == 0).next().unwrap_or(d);
            PathBuf::from(String::from_utf8_lossy(d).into_owned())
        })
}

/// Open the binary at `path` and find its db: `--db` files (the one with the binary's
/// build-id, or the only one), the store by build-id, else one built in memory with
/// dwarfscan (with a note on how to keep it), else debuginfod (`sources`). Notes go to
/// `notes`.
pub fn load_target(
    given: &str,
    path: &Path,
    dbs: &[PathBuf],
    sources: &dcg_dbresolve::DbSources,
    notes: &mut Vec<Notice>,
) -> Result<Target> {
    let bytes = std::fs::read(path).map_err(|e| binary_error(path.display(), e))?;
    let segments = load_segments(&bytes).map_err(|e| binary_error(path.display(), e))?;
    let build_id = object::File::parse(&*bytes)
        .ok()
        .and_then(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec))
        .unwrap_or_default();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| given.to_string());
    let found = dcg_dbresolve::binary::resolve_binary(path, &bytes, &build_id, dbs, sources)?;
    notes.extend(found.notes.into_iter().map(Notice::Db));
    let (db, source) = (found.db, found.source);
    let symbols =
        symbols_of(path, &bytes, &build_id).map_err(|e| binary_error(path.display(), e))?;
    Ok(Target {
        given: given.to_string(),
        path: path.to_path_buf(),
        name,
        segments,
        db,
        source,
        build_id,
        symbols,
    })
}
