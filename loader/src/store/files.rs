//! The store's file handling: nothing followed that is not a real directory or file,
//! installs through a temporary file and a rename, stale temporaries and trash removed.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::types::Meta;
use super::{DB_EXT, TMP_PREFIX, TRASH_PREFIX};
use crate::blob::{db_error, extract_from_elf, is_elf};
use crate::error::{Error, Result};
use sigdb::Db;

/// Open and validate a sigdb, or an ELF file carrying one. Only what is needed is read:
/// the file is mapped, its magic decides, a sigdb is validated in place (its header's
/// size against the file's first), an ELF file gives only its section.
pub(super) fn read_input(path: &Path) -> Result<Db> {
    sigdb::filekind::require_regular(path, "a signature db or an ELF file")
        .map_err(Error::io(path))?;
    let file = File::open(path).map_err(Error::io(path))?;
    let meta = file.metadata().map_err(Error::io(path))?;
    if meta.len() == 0 {
        return Err(Error::NotADb {
            path: path.to_path_buf(),
        });
    }
    // SAFETY: read-only mapping of a file we only parse; a concurrent truncation could
    // fault, as with every mmap reader.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(Error::io(path))?;
    if map.starts_with(&sigdb::layout::MAGIC) {
        drop(map);
        Db::from_file(&file, path).map_err(|e| db_error(path, e))
    } else if is_elf(&map) {
        Db::from_bytes(extract_from_elf(path, &map)?).map_err(|e| db_error(path, e))
    } else {
        // A cut-off magic is a truncated db; anything else is not a db at all.
        if map.len() < 8 && sigdb::layout::MAGIC.starts_with(&map) {
            return Err(Error::InvalidDb {
                path: path.to_path_buf(),
                error: sigdb::FormatError {
                    offset: 0,
                    kind: sigdb::FormatErrorKind::Truncated {
                        needed: sigdb::layout::HEADER_SIZE as u64,
                        len: map.len() as u64,
                    },
                },
            });
        }
        Err(Error::NotADb {
            path: path.to_path_buf(),
        })
    }
}

/// `*.sigdb` files of a directory, sorted, without following anything.
pub(super) fn db_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for ent in std::fs::read_dir(dir).map_err(Error::io(dir))? {
        let ent = ent.map_err(Error::io(dir))?;
        let name = ent.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with('.') && name.ends_with(&format!(".{DB_EXT}")) {
            out.push(dir.join(name));
        }
    }
    out.sort();
    Ok(out)
}

pub(super) fn is_hex_name(name: &str) -> bool {
    name.len() >= 2
        && name.len() <= 80
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub(super) fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

pub(super) fn refusal(m: &std::fs::Metadata) -> &'static str {
    if m.file_type().is_symlink() {
        "is a symbolic link inside the store; refusing to follow it (remove it)"
    } else {
        "has an unexpected file type inside the store (remove it)"
    }
}

pub(super) fn nofollow() -> i32 {
    (OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits()
}

pub(super) fn nofollow_error(path: &Path, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) {
        Error::unsafe_store(
            path,
            "is a symbolic link inside the store; refusing to follow it (remove it)",
        )
    } else {
        Error::io(path)(e)
    }
}

/// Create directory `path` with mode 0755 regardless of the umask.
pub(super) fn make_dir(path: &Path) -> Result<()> {
    match std::fs::DirBuilder::new().mode(0o755).create(path) {
        Ok(()) => {
            let dir = open_dir(path)?;
            nix::sys::stat::fchmod(&dir, Mode::from_bits_truncate(0o755))
                .map_err(Error::nix(path))?;
            if let Some(parent) = path.parent() {
                let _ = sync_dir(parent);
            }
            Ok(())
        }
        // A concurrent load created it; the caller checks what it is.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(path)(e)),
    }
}

pub(super) fn open_dir(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
        .open(path)
        .map_err(|e| nofollow_error(path, e))
}

pub(super) fn sync_dir(path: &Path) -> Result<()> {
    open_dir(path)?.sync_all().map_err(Error::io(path))
}

/// Contents of a regular file, without following a symlink; `None` when absent.
pub(super) fn read_nofollow(path: &Path) -> Result<Option<Vec<u8>>> {
    let mut f = match OpenOptions::new()
        .read(true)
        .custom_flags(nofollow())
        .open(path)
    {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        // A symlink or other odd file where a db belongs: it is replaced by the rename.
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) => return Ok(None),
        r => r.map_err(Error::io(path))?,
    };
    if !f.metadata().map_err(Error::io(path))?.is_file() {
        return Ok(None);
    }
    let mut v = Vec::new();
    f.read_to_end(&mut v).map_err(Error::io(path))?;
    Ok(Some(v))
}

pub(super) fn read_prefix(path: &Path, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(nofollow())
        .open(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

pub(super) fn read_meta(path: &Path) -> Option<Meta> {
    let bytes = read_nofollow(path).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// The body checksum recorded in a sigdb header.
pub(super) fn header_checksum(bytes: &[u8]) -> Option<u32> {
    if !bytes.starts_with(&sigdb::layout::MAGIC) {
        return None;
    }
    let b = bytes.get(32..36)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Remove temporary files a crashed load left in `dir` (called under the lock).
pub(super) fn remove_stale_temps(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for ent in rd.flatten() {
            if ent.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                let _ = std::fs::remove_file(ent.path());
            }
        }
    }
}

/// Remove entries an interrupted unload left renamed in `root` (called under the lock).
pub(super) fn remove_stale_trash(root: &Path) {
    if let Ok(rd) = std::fs::read_dir(root) {
        for ent in rd.flatten() {
            if ent.file_name().to_string_lossy().starts_with(TRASH_PREFIX) {
                // Neither call follows a symlink.
                let _ = std::fs::remove_dir_all(ent.path())
                    .or_else(|_| std::fs::remove_file(ent.path()));
            }
        }
    }
}

/// Replace `dest` in `dir` by a file (mode 0644) holding `bytes`, atomically, whatever
/// is at `dest` ([`dcg_outfile::Output::replace`]: nothing is followed).
pub(super) fn install_file(dir: &Path, dest: &Path, bytes: &[u8]) -> Result<()> {
    let mut out = dcg_outfile::Output::replace(dest)?;
    out.set_mode(0o644)?;
    out.write_all(bytes)
        .map_err(|e| dcg_outfile::into_error(dest, e))?;
    out.commit()?;
    sync_dir(dir)
}

/// `t` as UTC `YYYY-MM-DD HH:MM:SS` (for `dcg list`).
pub fn format_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
