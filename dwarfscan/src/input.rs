//! Inputs: files and directories, compressed kernel modules, module names.

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::ScanError;

/// One input file to scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// Path of the file.
    pub path: PathBuf,
}

impl Input {
    /// An input for `path`.
    pub fn new(path: impl Into<PathBuf>) -> Input {
        Input { path: path.into() }
    }
}

/// How a file is compressed, judged from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain ELF.
    None,
    /// `.xz`.
    Xz,
    /// `.zst`.
    Zstd,
    /// `.gz`.
    Gzip,
}

/// The compression of a file, from its extension.
pub fn compression_of(path: &Path) -> Compression {
    match path.extension().and_then(|e| e.to_str()) {
        Some("xz") => Compression::Xz,
        Some("zst") => Compression::Zstd,
        Some("gz") => Compression::Gzip,
        _ => Compression::None,
    }
}

/// Whether a file name looks like a kernel module (`.ko`, `.ko.xz`, `.ko.zst`, `.ko.gz`).
pub fn is_module_name(name: &str) -> bool {
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// The module name the kernel derives from a file name: the stem without `.ko[.xz|.zst|.gz]`,
/// `-` replaced by `_`.
pub fn module_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut stem = name.as_str();
    for s in [".xz", ".zst", ".gz"] {
        if let Some(x) = stem.strip_suffix(s) {
            stem = x;
            break;
        }
    }
    let stem = stem.strip_suffix(".ko").unwrap_or(stem);
    stem.replace('-', "_")
}

/// Expand directories into the kernel modules below them (sorted, for a stable order);
/// plain files are kept as given.
pub fn expand(inputs: &[Input]) -> Result<Vec<Input>, ScanError> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(&input.path).map_err(|source| ScanError::Io {
            path: input.path.clone(),
            source,
        })?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk_modules(&input.path, &mut found)?;
            if found.is_empty() {
                return Err(ScanError::EmptyDirectory {
                    path: input.path.clone(),
                });
            }
            found.sort();
            out.extend(found.into_iter().map(Input::new));
        } else {
            out.push(input.clone());
        }
    }
    if out.is_empty() {
        return Err(ScanError::NoInputs);
    }
    Ok(out)
}

fn walk_modules(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ScanError> {
    let io = |source| ScanError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let ft = entry.file_type().map_err(io)?;
        let path = entry.path();
        if ft.is_dir() {
            walk_modules(&path, out)?;
        } else if is_module_name(&entry.file_name().to_string_lossy()) {
            // Symlinks to files count; dangling ones are reported when read.
            out.push(path);
        }
    }
    Ok(())
}

/// The bytes of a file: mapped when plain, decompressed into memory otherwise.
pub enum FileData {
    /// A read-only mapping of the file.
    Mapped(memmap2::Mmap),
    /// Decompressed contents.
    Owned(Vec<u8>),
}

impl FileData {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            FileData::Mapped(m) => m,
            FileData::Owned(v) => v,
        }
    }
}

/// Read (map or decompress) a file.
pub fn load(path: &Path) -> Result<FileData, ScanError> {
    let io = |source| ScanError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A FIFO or a device is refused before it is opened (a FIFO with no writer would
    // block the open; a device never ends).
    sigdb::filekind::require_regular(path, "an ELF file").map_err(io)?;
    let file = std::fs::File::open(path).map_err(io)?;
    let comp = compression_of(path);
    if comp == Compression::None {
        let len = file.metadata().map_err(io)?.len();
        if len == 0 {
            return Err(ScanError::unsupported(path, "empty file"));
        }
        // SAFETY: the mapping is read-only; a file truncated while being read is the
        // caller's problem, as with every mmap-based tool.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        return Ok(FileData::Mapped(map));
    }
    let mut raw = Vec::new();
    std::io::BufReader::new(file)
        .read_to_end(&mut raw)
        .map_err(io)?;
    decompress(path, comp, &raw).map(|c| FileData::Owned(c.into_owned()))
}

/// Decompress `raw` according to `comp`.
pub fn decompress<'a>(
    path: &Path,
    comp: Compression,
    raw: &'a [u8],
) -> Result<Cow<'a, [u8]>, ScanError> {
    let err = |reason: String| ScanError::Decompress {
        path: path.to_path_buf(),
        reason,
    };
    let mut out = Vec::new();
    match comp {
        Compression::None => return Ok(Cow::Borrowed(raw)),
        Compression::Xz => {
            lzma_rs::xz_decompress(&mut std::io::BufReader::new(raw), &mut out)
                .map_err(|e| err(format!("xz: {e}")))?;
        }
        Compression::Zstd => {
            let mut dec = ruzstd::decoding::StreamingDecoder::new(raw)
                .map_err(|e| err(format!("zstd: {e}")))?;
            dec.read_to_end(&mut out)
                .map_err(|e| err(format!("zstd: {e}")))?;
        }
        Compression::Gzip => {
            flate2::read::MultiGzDecoder::new(raw)
                .read_to_end(&mut out)
                .map_err(|e| err(format!("gzip: {e}")))?;
        }
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names() {
        assert_eq!(module_name(Path::new("/x/binfmt_misc.ko")), "binfmt_misc");
        assert_eq!(
            module_name(Path::new("a/snd-hda-intel.ko.zst")),
            "snd_hda_intel"
        );
        assert_eq!(module_name(Path::new("x-y.ko.xz")), "x_y");
        assert_eq!(module_name(Path::new("x-y.ko.gz")), "x_y");
        assert!(is_module_name("a.ko.gz"));
        assert!(!is_module_name("a.o"));
    }
}
