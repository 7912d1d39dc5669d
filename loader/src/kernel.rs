//! The running kernel: its GNU build-id from `/sys/kernel/notes`, its release, and the
//! commands that make a db for it.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where the running kernel exposes its ELF notes.
pub const DEFAULT_NOTES: &str = "/sys/kernel/notes";

/// ELF note type of a GNU build-id.
pub const NT_GNU_BUILD_ID: u32 = 3;

/// The GNU build-id in a buffer of ELF notes (the format of `/sys/kernel/notes` and of
/// `SHT_NOTE` sections): each note is `namesz`, `descsz`, `type` (native-endian `u32`),
/// then the name and the descriptor, each padded to 4 bytes. Returns the descriptor of
/// the first note named `GNU` with type 3, or `None` when there is none or the buffer is
/// malformed before one is found.
pub fn parse_build_id_notes(notes: &[u8]) -> Option<Vec<u8>> {
    let word = |at: usize| -> Option<u32> {
        let b = notes.get(at..at.checked_add(4)?)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let pad4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    let mut off = 0usize;
    while off.checked_add(12)? <= notes.len() {
        let namesz = word(off)? as usize;
        let descsz = word(off + 4)? as usize;
        let ty = word(off + 8)?;
        let name_at = off + 12;
        let desc_at = name_at.checked_add(pad4(namesz)?)?;
        let next = desc_at.checked_add(pad4(descsz)?)?;
        let name = notes.get(name_at..name_at.checked_add(namesz)?)?;
        let desc = notes.get(desc_at..desc_at.checked_add(descsz)?)?;
        if ty == NT_GNU_BUILD_ID && name == b"GNU\0" && !desc.is_empty() {
            return Some(desc.to_vec());
        }
        off = next;
    }
    None
}

/// The GNU build-id of the kernel whose notes are at `notes` (normally
/// [`DEFAULT_NOTES`]).
pub fn build_id_from_notes(notes: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(notes).map_err(|e| Error::KernelBuildId {
        path: notes.to_path_buf(),
        what: e.to_string(),
    })?;
    parse_build_id_notes(&bytes).ok_or_else(|| Error::KernelBuildId {
        path: notes.to_path_buf(),
        what: "no GNU build-id note (type 3, name \"GNU\")".into(),
    })
}

/// The running kernel's GNU build-id, from `/sys/kernel/notes`.
pub fn running_build_id() -> Result<Vec<u8>> {
    build_id_from_notes(Path::new(DEFAULT_NOTES))
}

/// The running kernel's release (`uname -r`), from `/proc/sys/kernel/osrelease`.
pub fn release() -> Option<String> {
    let s = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Where distributions install the debug vmlinux of kernel `release`, most common first.
pub fn debug_vmlinux_candidates(release: &str) -> Vec<PathBuf> {
    [
        format!("/usr/lib/debug/boot/vmlinux-{release}"),
        format!("/usr/lib/debug/lib/modules/{release}/vmlinux"),
        format!("/lib/modules/{release}/build/vmlinux"),
        format!("/boot/vmlinux-{release}"),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The commands that create and load a db for the running kernel, one per line, each
/// indented by two spaces: scan the first debug vmlinux that exists, or first install
/// the distribution's debug package.
pub fn next_steps() -> String {
    let release = release();
    let found = release
        .as_deref()
        .map(debug_vmlinux_candidates)
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.is_file());
    match found {
        Some(vmlinux) => format!(
            "  dwarfscan {} -o vmlinux.sigdb\n  dcg load vmlinux.sigdb",
            vmlinux.display()
        ),
        None => {
            let r = release.as_deref().unwrap_or("$(uname -r)");
            format!(
                "  # no debug vmlinux found; install the kernel's debug symbols first:\n  \
                 #   Debian: apt install linux-image-{r}-dbg   (Ubuntu: linux-image-unsigned-{r}-dbgsym)\n  \
                 #   Fedora/RHEL: dnf debuginfo-install kernel-{r}\n  \
                 dwarfscan /usr/lib/debug/boot/vmlinux-{r} -o vmlinux.sigdb\n  \
                 dcg load vmlinux.sigdb"
            )
        }
    }
}
