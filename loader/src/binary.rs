//! User-space binaries: their GNU build-id, which keys their db in the store.

use std::path::{Path, PathBuf};

use object::Object as _;

use crate::error::{Error, Result};

/// The GNU build-id (`NT_GNU_BUILD_ID` note, normally `.note.gnu.build-id`) of the ELF
/// file at `path`.
pub fn build_id_of(path: &Path) -> Result<Vec<u8>> {
    sigdb::filekind::require_regular(path, "an ELF file").map_err(Error::io(path))?;
    let file = std::fs::File::open(path).map_err(Error::io(path))?;
    // SAFETY: read-only mapping of a file we only parse; a concurrent truncation could
    // fault, as with every mmap reader.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(Error::io(path))?;
    let elf = object::File::parse(&*map).map_err(|e| Error::Elf {
        path: path.to_path_buf(),
        what: format!("not a valid ELF file: {e}"),
    })?;
    match elf.build_id() {
        Ok(Some(id)) if !id.is_empty() => Ok(id.to_vec()),
        Ok(_) => Err(Error::NoBinaryBuildId {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(Error::Elf {
            path: path.to_path_buf(),
            what: format!("cannot read the build-id note: {e}"),
        }),
    }
}

/// The separate debug file of build-id `id` under `/usr/lib/debug/.build-id`, if present.
pub fn debug_file_for(id: &[u8]) -> Option<PathBuf> {
    if id.len() < 2 {
        return None;
    }
    let hex = sigdb::hex(id);
    let p = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &hex[..2],
        &hex[2..]
    ));
    p.is_file().then_some(p)
}

/// The separate debug file of the binary at `path` (contents `bytes`): by its build-id
/// under `/usr/lib/debug/.build-id`, else by its `.gnu_debuglink` name (with a matching
/// CRC) in `/usr/lib/debug/DIR`, `DIR/.debug` or `DIR`, as gdb looks.
pub fn debug_file(path: &Path, bytes: &[u8], id: &[u8]) -> Option<PathBuf> {
    if let Some(p) = debug_file_for(id) {
        return Some(p);
    }
    let file = object::File::parse(bytes).ok()?;
    let (name, crc) = file.gnu_debuglink().ok().flatten()?;
    let name = Path::new(std::str::from_utf8(name).ok()?);
    let dir = path.canonicalize().ok()?.parent()?.to_path_buf();
    let rel = dir.strip_prefix("/").unwrap_or(&dir);
    [
        Path::new("/usr/lib/debug").join(rel).join(name),
        dir.join(".debug").join(name),
        dir.join(name),
    ]
    .into_iter()
    .find(|c| c.as_path() != path && std::fs::read(c).is_ok_and(|b| crc32fast::hash(&b) == crc))
}

/// The commands that create and load a db for `binary` (build-id `id`), one per line,
/// indented by two spaces.
pub fn next_steps(binary: &Path, id: &[u8]) -> String {
    let input = debug_file_for(id).unwrap_or_else(|| binary.to_path_buf());
    let stem = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "binary".into());
    format!(
        "  dwarfscan {} -o {stem}.sigdb\n  dcg load {stem}.sigdb",
        input.display()
    )
}
