//! What kind of file a path is, for the readers of every tool (dwarfscan, dcg decode,
//! report, load): a device or a FIFO named as input gets a one-line refusal that says
//! what it is, before anything opens it (opening a FIFO with no writer blocks).

use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;

/// `a FIFO`, `a character device`, ... for a file that is not a regular file, or `None`
/// for a regular file.
pub fn special_kind(ft: FileType) -> Option<&'static str> {
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Refuse `path` unless it is a regular file (symbolic links followed), looking before
/// opening: the error says what it is and what was expected (`a FIFO, not an ELF file`),
/// for the caller to put after the path.
pub fn require_regular(path: &std::path::Path, expected: &str) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    match special_kind(meta.file_type()) {
        None => Ok(()),
        Some(kind) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{kind}, not {expected}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let kind = |p: &str| special_kind(std::fs::metadata(p).unwrap().file_type());
        assert_eq!(kind("/dev/zero"), Some("a character device"));
        assert_eq!(kind("/"), Some("a directory"));
        assert_eq!(kind("/proc/self/status"), None);
        let e = require_regular(std::path::Path::new("/dev/null"), "a db").unwrap_err();
        assert_eq!(e.to_string(), "a character device, not a db");
    }
}
