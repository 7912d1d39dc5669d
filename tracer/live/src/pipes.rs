//! Reading an instance's ring buffer: `trace_pipe` as text lines ([`TracePipe`]), and
//! every CPU's `trace_pipe_raw` as binary pages ([`RawPipes`]); both without blocking.

use std::fs;
use std::io::ErrorKind;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::tracefs::{io_err, Result, TraceFsError};

trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(nix::libc::O_NONBLOCK)
    }
}

/// An instance's per-CPU `trace_pipe_raw` files: the ring buffer's pages as the kernel
/// keeps them (a page header, then records with time deltas), read without waiting and
/// without the kernel formatting any text.
pub struct RawPipes {
    cpus: Vec<(u32, fs::File, PathBuf)>,
    page_size: usize,
}

impl RawPipes {
    /// Open every CPU's `trace_pipe_raw` under `dir` (an instance's `per_cpu`).
    pub(crate) fn open(dir: &Path) -> Result<RawPipes> {
        let entries = fs::read_dir(dir).map_err(io_err(dir, "listing"))?;
        let mut cpus = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(cpu) = name
                .to_str()
                .and_then(|n| n.strip_prefix("cpu"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let path = e.path().join("trace_pipe_raw");
            let file = fs::OpenOptions::new()
                .read(true)
                .custom_flags_nonblock()
                .open(&path)
                .map_err(io_err(&path, "opening"))?;
            cpus.push((cpu, file, path));
        }
        cpus.sort_by_key(|c| c.0);
        let page_size = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .map_or(4096, |v| v as usize);
        Ok(RawPipes { cpus, page_size })
    }

    /// The ring buffer's page size.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Append every page readable now to `pages`, each as (CPU, the page's bytes: one
    /// page size, a partly filled page included). Never waits (see
    /// [`TracePipe::read_available`]); at most `max` pages per CPU per call.
    pub fn read_available(&mut self, max: usize, pages: &mut Vec<(u32, Vec<u8>)>) -> Result<()> {
        use std::io::Read;
        for (cpu, file, path) in &mut self.cpus {
            for _ in 0..max {
                let mut page = vec![0u8; self.page_size];
                match file.read(&mut page) {
                    Ok(0) => break,
                    Ok(n) if n < self.page_size => {
                        // Not a whole page: the kernel gives pages whole; keep what came.
                        page.truncate(n);
                        page.resize(self.page_size, 0);
                        pages.push((*cpu, page));
                    }
                    Ok(_) => pages.push((*cpu, page)),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => break,
                    Err(e) => {
                        return Err(TraceFsError::Io {
                            path: path.clone(),
                            what: "reading".into(),
                            source: e,
                        })
                    }
                }
            }
        }
        Ok(())
    }
}

/// An instance's `trace_pipe`, read line by line with a timeout so the caller can check
/// for stop requests.
pub struct TracePipe {
    file: fs::File,
    path: PathBuf,
    pending: Vec<u8>,
}

impl TracePipe {
    /// Open `path` (an instance's `trace_pipe`) for streaming, without blocking.
    pub(crate) fn open(path: PathBuf) -> Result<TracePipe> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags_nonblock()
            .open(&path)
            .map_err(io_err(&path, "opening"))?;
        Ok(TracePipe {
            file,
            path,
            pending: Vec::with_capacity(1 << 16),
        })
    }

    /// Wait up to `timeout` for data; append complete lines to `lines`. Returns false at
    /// end of file.
    pub fn read_lines(&mut self, timeout: Duration, lines: &mut Vec<String>) -> Result<bool> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        match poll(
            &mut fds,
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(0) => return Ok(true),
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(true),
            Err(e) => {
                return Err(TraceFsError::Io {
                    path: self.path.clone(),
                    what: "polling".into(),
                    source: e.into(),
                })
            }
        }
        self.read_available(lines)
    }

    /// Read what is in the buffer now, without waiting; append complete lines to
    /// `lines`. Unlike [`TracePipe::read_lines`] it never polls: a reader waiting on
    /// the ring buffer makes every traced event queue an irq_work wakeup, which the
    /// function_graph tracer then records inside the traced calls.
    pub fn read_available(&mut self, lines: &mut Vec<String>) -> Result<bool> {
        let mut buf = [0u8; 1 << 16];
        loop {
            use std::io::Read;
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => break,
                Err(e) => {
                    return Err(TraceFsError::Io {
                        path: self.path.clone(),
                        what: "reading".into(),
                        source: e,
                    })
                }
            }
            if self.pending.len() > 1 << 20 {
                break;
            }
        }
        // One drain at the end: draining line by line from the front is quadratic.
        let mut start = 0;
        while let Some(nl) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + nl;
            lines.push(String::from_utf8_lossy(&self.pending[start..end]).into_owned());
            start = end + 1;
        }
        self.pending.drain(..start);
        Ok(true)
    }
}
