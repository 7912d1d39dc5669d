//! Output files written atomically: a temporary file beside the target, renamed into
//! place only when the run completes, removed otherwise. No half-written outputs.

use std::fs::File;
use std::path::{Path, PathBuf};

/// A file being written; [`OutputFile::commit`] puts it in place.
#[derive(Debug)]
pub struct OutputFile {
    tmp: PathBuf,
    target: PathBuf,
    file: File,
    committed: bool,
}

impl OutputFile {
    /// Start writing `target` (through `.<name>.tmp<pid>` in the same directory).
    pub fn create(target: &Path) -> std::io::Result<OutputFile> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
        let file = File::create(&tmp).map_err(|e| annotate(&tmp, e))?;
        Ok(OutputFile {
            tmp,
            target: target.to_path_buf(),
            file,
            committed: false,
        })
    }

    /// A handle to write through.
    pub fn file(&self) -> std::io::Result<File> {
        self.file.try_clone()
    }

    /// Flush to disk and rename into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.file.sync_all().map_err(|e| annotate(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.target).map_err(|e| annotate(&self.target, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn annotate(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}
