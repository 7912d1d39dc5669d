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
    // SAFETY: as above, a read-only mapping.
    let raw = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    decompress(path, comp, &raw).map(|c| FileData::Owned(c.into_owned()))
}

/// The most a compressed input may decompress to (a kernel module with all its DWARF is
/// a few hundred MB): more is refused as not a module rather than filling memory.
pub const MAX_DECOMPRESSED: u64 = 2 << 30;

/// A writer that refuses to grow `.0` past `.1` bytes.
struct Capped<'v>(&'v mut Vec<u8>, u64);

impl std::io::Write for Capped<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() as u64 + buf.len() as u64 > self.1 {
            return Err(std::io::Error::other(too_big(self.1)));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn too_big(cap: u64) -> String {
    format!(
        "decompresses to more than {} MiB, not a kernel module",
        cap >> 20
    )
}

/// Read `r` to its end into `out`, at most `cap` bytes.
fn read_capped(r: impl Read, out: &mut Vec<u8>, cap: u64) -> Result<(), String> {
    r.take(cap + 1)
        .read_to_end(out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 > cap {
        return Err(too_big(cap));
    }
    Ok(())
}

/// Decompress `raw` according to `comp`, refusing more than [`MAX_DECOMPRESSED`] bytes.
pub fn decompress<'a>(
    path: &Path,
    comp: Compression,
    raw: &'a [u8],
) -> Result<Cow<'a, [u8]>, ScanError> {
    decompress_capped(path, comp, raw, MAX_DECOMPRESSED)
}

fn decompress_capped<'a>(
    path: &Path,
    comp: Compression,
    raw: &'a [u8],
    cap: u64,
) -> Result<Cow<'a, [u8]>, ScanError> {
    let err = |reason: String| ScanError::Decompress {
        path: path.to_path_buf(),
        reason,
    };
    let mut out = Vec::new();
    match comp {
        Compression::None => return Ok(Cow::Borrowed(raw)),
        Compression::Xz => {
            lzma_rs::xz_decompress(
                &mut std::io::BufReader::new(raw),
                &mut Capped(&mut out, cap),
            )
            .map_err(|e| err(format!("xz: {e}")))?;
        }
        Compression::Zstd => {
            let dec = ruzstd::decoding::StreamingDecoder::new(raw)
                .map_err(|e| err(format!("zstd: {e}")))?;
            read_capped(dec, &mut out, cap).map_err(|e| err(format!("zstd: {e}")))?;
        }
        Compression::Gzip => {
            read_capped(flate2::read::MultiGzDecoder::new(raw), &mut out, cap)
                .map_err(|e| err(format!("gzip: {e}")))?;
        }
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decompression_bomb_is_refused() {
        // 4 MiB of zeros against a 2 MiB cap (the real cap, 2 GiB, works the same way).
        let zeros = vec![0u8; 4 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &zeros).unwrap();
        let gz = gz.finish().unwrap();
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut &zeros[..], &mut xz).unwrap();
        for (comp, raw) in [(Compression::Gzip, gz), (Compression::Xz, xz)] {
            let e =
                decompress_capped(Path::new("bomb.ko"), comp, &raw, 2 << 20).expect_err("refused");
            assert!(e.to_string().contains("more than 2 MiB"), "{e}");
            let ok = decompress_capped(Path::new("ok.ko"), comp, &raw, 4 << 20).unwrap();
            assert_eq!(ok.len(), 4 << 20);
        }
    }

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
