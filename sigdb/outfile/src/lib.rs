//! How dcg and dwarfscan write every file they make, in one place.
//!
//! [`Output::create`] opens an output the user named, as a shell's `>` would but without
//! ever destroying what was there:
//!
//! - a regular file, or a path where nothing is, is replaced atomically: the contents go
//!   to an unnamed temporary file in the same directory (`O_TMPFILE`; on a file system
//!   without it, a new file of a random name, created `O_EXCL|O_NOFOLLOW`), which
//!   [`Output::commit`] syncs, links under a random name and renames over the path. A
//!   run that fails or is killed before the commit leaves the path as it was and nothing
//!   beside it; the replacement keeps the mode and owner of the file it replaces.
//! - a symlink is followed to what it names, which is written as that path would be:
//!   the link stays.
//! - a character or block device, a FIFO or a socket is opened and written in place,
//!   never replaced (`/dev/null` stays a device). A FIFO that no process reads is an
//!   error at once ([`Error::NoReader`]), never a hang.
//! - `-` is standard output.
//!
//! [`Output::replace`] is for files dcg owns (its store, its caches): the directory
//! entry is always replaced atomically, whatever is there, and nothing is followed.
//!
//! Every error names the file: `writing /mnt/x/out.db: No space left on device`. Errors
//! met through a [`Writer`] are `std::io::Error`s of the same kind that carry an
//! [`Error`] and print the same way.

mod signals;

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use atomic_write_file::unix::OpenOptionsExt as _;
use atomic_write_file::AtomicWriteFile;
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// Why an output could not be written. Each names the file, as the user gave it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The output (or its temporary file) could not be opened.
    #[error("creating {}: {}", path.display(), describe(error))]
    Create {
        /// The output.
        path: PathBuf,
        /// The OS error.
        error: io::Error,
    },
    /// Writing, syncing or renaming into place failed (a full disk, an I/O error).
    #[error("writing {}: {}", path.display(), describe(error))]
    Write {
        /// The output.
        path: PathBuf,
        /// The OS error.
        error: io::Error,
    },
    /// A FIFO that no process has open for reading.
    #[error("writing {}: no process has this FIFO open for reading", path.display())]
    NoReader {
        /// The FIFO.
        path: PathBuf,
    },
}

impl Error {
    /// The kind of the underlying OS error.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Error::Create { error, .. } | Error::Write { error, .. } => error.kind(),
            Error::NoReader { .. } => io::ErrorKind::NotConnected,
        }
    }

    /// The OS error alone (for a caller whose message names the file already).
    pub fn into_os_error(self) -> io::Error {
        match self {
            Error::Create { error, .. } | Error::Write { error, .. } => error,
            Error::NoReader { .. } => io::Error::from(Errno::ENXIO),
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

/// An OS error as `strerror` says it, without Rust's `(os error N)`.
fn describe(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

/// What [`Output::commit`] has to do.
#[derive(Debug)]
enum Dest {
    /// An unnamed temporary file, linked and renamed over the path on commit (and
    /// discarded when dropped before).
    Replace(AtomicWriteFile),
    /// A device, FIFO, socket or standard output, written as it is.
    InPlace,
}

/// An output being written. Nothing is replaced before [`Output::commit`]; dropping it
/// uncommitted leaves the path as it was (an output written in place keeps what was
/// written).
#[derive(Debug)]
pub struct Output {
    dest: Dest,
    writer: Writer,
}

impl Output {
    /// Open `path` for writing (see the crate documentation for what each kind of file
    /// becomes); `-` is standard output.
    pub fn create(path: &Path) -> Result<Output, Error> {
        if path.as_os_str() == "-" {
            let fd = io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|error| create_error(path, error))?;
            return Ok(Output::in_place(path, File::from(fd)));
        }
        let target = resolve(path).map_err(|error| create_error(path, error))?;
        match std::fs::symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Output::atomic(path, &target, true),
            Err(error) => Err(create_error(path, error)),
            Ok(m) if m.is_file() => Output::atomic(path, &target, true),
            Ok(m) if m.is_dir() => Err(create_error(path, Errno::EISDIR.into())),
            Ok(_) => Output::open_in_place(path, &target),
        }
    }

    /// Open `path`, a file dcg owns, to be replaced atomically whatever is there now (a
    /// symlink or a FIFO is replaced, not followed). The new file has mode `0666` less
    /// the umask (see [`Output::set_mode`]).
    pub fn replace(path: &Path) -> Result<Output, Error> {
        Output::atomic(path, path, false)
    }

    /// The temporary file that will replace `target`, named `path` in messages.
    /// `like_old`: with the mode and owner of the file it replaces.
    fn atomic(path: &Path, target: &Path, like_old: bool) -> Result<Output, Error> {
        let file = AtomicWriteFile::options()
            .preserve_mode(like_old)
            .try_preserve_owner(like_old)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(target)
            .map_err(|error| create_error(path, error))?;
        let handle = file
            .as_file()
            .try_clone()
            .map_err(|error| create_error(path, error))?;
        Ok(Output {
            dest: Dest::Replace(file),
            writer: Writer::new(path, handle),
        })
    }

    fn in_place(path: &Path, file: File) -> Output {
        Output {
            dest: Dest::InPlace,
            writer: Writer::new(path, file),
        }
    }

    /// Open the device, FIFO or socket `target` (what `path` names) to write in place.
    /// A FIFO is opened without blocking, so that one nobody reads is an error, not a
    /// hang; writes then block as usual.
    fn open_in_place(path: &Path, target: &Path) -> Result<Output, Error> {
        let flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
        let file = match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(flags.bits())
            .open(target)
        {
            Err(e) if e.raw_os_error() == Some(Errno::ENXIO as i32) && is_fifo(target) => {
                return Err(Error::NoReader {
                    path: path.to_path_buf(),
                })
            }
            r => r.map_err(|error| create_error(path, error))?,
        };
        let meta = file.metadata().map_err(|error| create_error(path, error))?;
        if meta.is_file() {
            // A regular file appeared since the look: it is replaced, never written over.
            return Output::atomic(path, target, true);
        }
        let cleared = fcntl(&file, FcntlArg::F_GETFL).and_then(|fl| {
            let fl = OFlag::from_bits_truncate(fl) & !OFlag::O_NONBLOCK;
            fcntl(&file, FcntlArg::F_SETFL(fl))
        });
        cleared.map_err(|e| create_error(path, e.into()))?;
        Ok(Output::in_place(path, file))
    }

    /// The output's path, as given.
    pub fn path(&self) -> &Path {
        &self.writer.shared.path
    }

    /// Whether the output replaces its path on commit (nothing is visible before); false
    /// for one written in place (a device, a FIFO, standard output).
    pub fn replaces(&self) -> bool {
        matches!(self.dest, Dest::Replace(_))
    }

    /// Another handle writing to the output (a duplicate descriptor), for a writer that
    /// must own its sink. Its errors name the file too, and one that fails makes
    /// [`Output::commit`] fail, even if whoever wrote ignored the error.
    pub fn writer(&self) -> Result<Writer, Error> {
        let file = self
            .writer
            .file
            .try_clone()
            .map_err(|error| create_error(self.path(), error))?;
        Ok(Writer {
            file,
            shared: Arc::clone(&self.writer.shared),
        })
    }

    /// Set the mode of a file being replaced (its permission bits, exactly: the umask
    /// does not apply). An output written in place keeps its own.
    pub fn set_mode(&self, mode: u32) -> Result<(), Error> {
        if let Dest::Replace(f) = &self.dest {
            let mode = nix::sys::stat::Mode::from_bits_truncate(mode);
            nix::sys::stat::fchmod(f.as_file(), mode)
                .map_err(|e| create_error(self.path(), e.into()))?;
        }
        Ok(())
    }

    /// Sync a replacement to disk (what [`Output::commit`] does first; call it to have
    /// every file of a set written to disk before the first is put in place). Fails
    /// when any write to the output failed.
    pub fn sync(&self) -> Result<(), Error> {
        let write_error = |error| Error::Write {
            path: self.path().to_path_buf(),
            error,
        };
        if let Some(error) = self.writer.shared.failure() {
            return Err(write_error(error));
        }
        match &self.dest {
            Dest::Replace(file) => file.sync_all().map_err(write_error),
            Dest::InPlace => Ok(()),
        }
    }

    /// Finish: a replacement is synced to disk, then linked and renamed over the path
    /// (SIGINT, SIGTERM, SIGHUP and SIGQUIT wait for the two calls to end, so that no
    /// temporary name is left behind). Fails when any write to the output failed.
    pub fn commit(self) -> Result<(), Error> {
        self.sync()?;
        match self.dest {
            Dest::Replace(file) => {
                signals::deferred(|| file.commit()).map_err(|error| Error::Write {
                    path: self.writer.shared.path.clone(),
                    error,
                })
            }
            Dest::InPlace => Ok(()),
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// Write `bytes` to `path` ([`Output::create`], then [`Output::commit`]).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut out = Output::create(path)?;
    out.write_all(bytes).map_err(|e| into_error(path, e))?;
    out.commit()
}

/// The [`Error`] an I/O error of an [`Output`] or a [`Writer`] of `path` carries (one
/// naming `path` when it carries none).
pub fn into_error(path: &Path, e: io::Error) -> Error {
    if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        let inner = e.into_inner().expect("checked above");
        return *inner.downcast::<Error>().expect("checked above");
    }
    Error::Write {
        path: path.to_path_buf(),
        error: e,
    }
}

fn create_error(path: &Path, error: io::Error) -> Error {
    Error::Create {
        path: path.to_path_buf(),
        error,
    }
}

/// `path` with every symlink of its last component followed (a dangling link gives the
/// path it names: writing creates that file, as a shell would).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // The kernel's limit on links followed in one lookup.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => return Ok(p),
        }
    }
    Err(Errno::ELOOP.into())
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A handle writing to an [`Output`]: its errors are `std::io::Error`s of the OS error's
/// kind carrying an [`Error::Write`] that names the file.
#[derive(Debug)]
pub struct Writer {
    file: File,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    /// The first write that failed (kind, OS error, text), through any handle.
    failed: Mutex<Option<(io::ErrorKind, Option<i32>, String)>>,
}

impl Shared {
    fn failure(&self) -> Option<io::Error> {
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.as_ref().map(|(kind, os, text)| match os {
            Some(n) => io::Error::from_raw_os_error(*n),
            None => io::Error::new(*kind, text.clone()),
        })
    }
}

impl Writer {
    fn new(path: &Path, file: File) -> Writer {
        Writer {
            file,
            shared: Arc::new(Shared {
                path: path.to_path_buf(),
                failed: Mutex::new(None),
            }),
        }
    }

    /// Remember the failure and name the file in it.
    fn failed(&self, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::Interrupted {
            return e;
        }
        let mut failed = self.shared.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.get_or_insert_with(|| (e.kind(), e.raw_os_error(), e.to_string()));
        io::Error::from(Error::Write {
            path: self.shared.path.clone(),
            error: e,
        })
    }
}

impl Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf).map_err(|e| self.failed(e))
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.file.write_vectored(bufs).map_err(|e| self.failed(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush().map_err(|e| self.failed(e))
    }
}

#[cfg(test)]
mod tests;
