//! The shared top-level `set_graph_function`, multiplexed between concurrent dcg sessions.
//!
//! Instances have no `set_graph_function` of their own: the top-level file limits the
//! function_graph tracer of every instance. So each live session registers its graph
//! roots in `/run/dcg/graph/<pid>` (under `flock` on `/run/dcg/graph/lock`), and the
//! top-level file always holds the union of the `baseline` (what it held before the first
//! session registered) and every live session's functions. Entries of dead processes are
//! dropped on every change; when the last session leaves, the baseline is restored exactly
//! and forgotten. Each session then keeps only the trees rooted at its own functions.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Default registry directory.
pub const REGISTRY_DIR: &str = "/run/dcg/graph";

/// Errors of the registry.
#[derive(Debug, thiserror::Error)]
pub enum GraphFilterError {
    /// A registry or tracefs file operation failed.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing a registry file failed (the message names it).
    #[error(transparent)]
    Output(#[from] dcg_outfile::Error),
}

type Result<T> = std::result::Result<T, GraphFilterError>;

fn io<'p>(path: &'p Path, what: &str) -> impl FnOnce(std::io::Error) -> GraphFilterError + 'p {
    let what = what.to_string();
    move |source| GraphFilterError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

/// The registry: where session files live and which `set_graph_function` it drives.
#[derive(Debug, Clone)]
pub struct Registry {
    dir: PathBuf,
    target: PathBuf,
}

/// A session's registration; unregisters on drop.
#[derive(Debug)]
pub struct Registration {
    registry: Registry,
    pid: u32,
    done: bool,
    /// Functions the kernel rejected when the file was rewritten.
    pub rejected: Vec<String>,
}

/// An exclusive `flock` on the registry, released on drop.
struct Lock {
    _file: fs::File,
}

impl Registry {
    /// The registry in `dir` driving `set_graph_function` of the tracefs root `tracefs`.
    pub fn new(dir: impl Into<PathBuf>, tracefs: &Path) -> Registry {
        Registry {
            dir: dir.into(),
            target: tracefs.join("set_graph_function"),
        }
    }

    /// The registry at [`REGISTRY_DIR`].
    pub fn system(tracefs: &Path) -> Registry {
        Registry::new(REGISTRY_DIR, tracefs)
    }

    fn lock(&self) -> Result<Lock> {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&self.dir)
            .map_err(io(&self.dir, "creating the registry directory"))?;
        let path = self.dir.join("lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io(&path, "opening"))?;
        loop {
            // SAFETY: flock on an fd we own.
            let rc = unsafe { nix::libc::flock(file.as_raw_fd(), nix::libc::LOCK_EX) };
            if rc == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(io(&path, "locking")(e));
            }
        }
        Ok(Lock { _file: file })
    }

    /// Register `funcs` as the graph roots of session `pid` and rewrite the top-level
    /// file. Returns a guard that unregisters when dropped.
    pub fn register(&self, pid: u32, funcs: &[String]) -> Result<Registration> {
        let _lock = self.lock()?;
        let baseline = self.dir.join("baseline");
        self.drop_dead()?;
        if !baseline.exists() {
            let current =
                read_graph_functions(&self.target).map_err(io(&self.target, "reading"))?;
            let mut text = String::new();
            for f in &current {
                text.push_str(f);
                text.push('\n');
            }
            write_file(&baseline, &text)?;
        }
        let mut text = String::new();
        for f in funcs {
            text.push_str(f);
            text.push('\n');
        }
        let own = self.dir.join(pid.to_string());
        write_file(&own, &text)?;
        match self.apply() {
            Ok(rejected) => Ok(Registration {
                registry: self.clone(),
                pid,
                done: false,
                rejected,
            }),
            Err(e) => {
                let _ = fs::remove_file(&own);
                let _ = self.apply();
                Err(e)
            }
        }
    }

    /// Remove files of sessions whose process is gone.
    fn drop_dead(&self) -> Result<()> {
        for (pid, path) in self.sessions()? {
            if !alive(pid) {
                let _ = fs::remove_file(path);
            }
        }
        Ok(())
    }

    fn sessions(&self) -> Result<Vec<(u32, PathBuf)>> {
        let mut v = Vec::new();
        let rd = fs::read_dir(&self.dir).map_err(io(&self.dir, "listing"))?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Ok(pid) = name.parse::<u32>() {
                v.push((pid, e.path()));
            }
        }
        v.sort();
        Ok(v)
    }

    /// Write baseline ∪ live sessions to the top-level file; with no session left, restore
    /// the baseline and forget it. Caller holds the lock. Returns the names the kernel
    /// rejected.
    fn apply(&self) -> Result<Vec<String>> {
        let baseline_path = self.dir.join("baseline");
        let baseline = fs::read_to_string(&baseline_path).unwrap_or_default();
        let sessions = self.sessions()?;
        let mut union: BTreeSet<String> = BTreeSet::new();
        for (_, path) in &sessions {
            let text = fs::read_to_string(path).unwrap_or_default();
            union.extend(text.lines().filter(|l| !l.is_empty()).map(str::to_string));
        }
        if sessions.is_empty() {
            let base: Vec<&str> = baseline.lines().filter(|l| !l.is_empty()).collect();
            let rejected = write_graph_functions(&self.target, base.iter().copied())?;
            let _ = fs::remove_file(&baseline_path);
            return Ok(rejected);
        }
        union.extend(
            baseline
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string),
        );
        write_graph_functions(&self.target, union.iter().map(String::as_str))
    }

    /// The pids of the live registered sessions (for diagnostics and tests).
    pub fn live_sessions(&self) -> Vec<u32> {
        self.sessions()
            .unwrap_or_default()
            .into_iter()
            .map(|(p, _)| p)
            .filter(|&p| alive(p))
            .collect()
    }
}

impl Registration {
    /// Unregister now (also done on drop); rewrites the top-level file.
    pub fn unregister(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let _lock = self.registry.lock()?;
        let own = self.registry.dir.join(self.pid.to_string());
        let _ = fs::remove_file(own);
        self.registry.drop_dead()?;
        self.registry.apply().map(drop)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Err(e) = self.unregister() {
            log::error!("cleanup: set_graph_function: {e}");
        }
    }
}

/// Whether `pid` is a live process (zombies count as dead).
fn alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // state is the field after the `(comm)`.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Replace the registry file `path` atomically ([`dcg_outfile::Output::replace`]).
fn write_file(path: &Path, text: &str) -> Result<()> {
    let mut out = dcg_outfile::Output::replace(path)?;
    out.write_all(text.as_bytes())
        .map_err(|e| dcg_outfile::into_error(path, e))?;
    Ok(out.commit()?)
}

/// The functions listed in a `set_graph_function`-style file (empty when it says all
/// functions are enabled).
pub fn read_graph_functions(path: &Path) -> std::io::Result<Vec<String>> {
    let text = fs::read_to_string(path)?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

/// Replace the content of a `set_graph_function`-style file: one open with truncation
/// (the kernel swaps in the new set when the file is closed), one function per write.
/// Names the kernel rejects are skipped and returned.
pub fn write_graph_functions<'a>(
    path: &Path,
    funcs: impl Iterator<Item = &'a str>,
) -> Result<Vec<String>> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(io(path, "opening for writing"))?;
    let mut rejected = Vec::new();
    for func in funcs {
        // Module functions are listed as `func [module]`; the file takes the bare name.
        let name = func.split_whitespace().next().unwrap_or("");
        if name.is_empty() {
            continue;
        }
        // The trailing newline ends the token within this write (the kernel's parser
        // continues a token across writes otherwise), so a rejected name fails alone.
        if f.write_all(format!("{name}\n").as_bytes()).is_err() {
            rejected.push(name.to_string());
        }
    }
    drop(f);
    Ok(rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(p: &Path) -> Vec<String> {
        read_graph_functions(p).unwrap()
    }

    /// The registry against a plain file standing in for set_graph_function.
    #[test]
    fn union_and_baseline() {
        let dir = tempfile::tempdir().unwrap();
        let tfs = dir.path().join("tracefs");
        fs::create_dir(&tfs).unwrap();
        let target = tfs.join("set_graph_function");
        fs::write(&target, "#### all functions enabled ####\n").unwrap();
        let reg = Registry::new(dir.path().join("reg"), &tfs);
        let me = std::process::id();
        let mut a = reg.register(me, &["a".to_string()]).unwrap();
        assert_eq!(
            content(&dir.path().join("reg/baseline")),
            Vec::<String>::new()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "a\n");
        // A dead session's file is dropped on the next change.
        fs::write(dir.path().join("reg/999999999"), "zombie_fn\n").unwrap();
        a.unregister().unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "");
        assert!(!dir.path().join("reg/baseline").exists());
        assert!(!dir.path().join("reg/999999999").exists());
        assert!(reg.live_sessions().is_empty());
    }
}
