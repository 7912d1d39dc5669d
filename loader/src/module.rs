//! The db as a kernel module, "like config.gz": `dwarfscan --emit-module DIR` writes a
//! Kbuild directory ([`write_module_dir`]) whose `dcg_sigdb.ko` embeds the db in section
//! `.dcg_sigdb` and exposes it read-only as `/sys/kernel/dcg/vmlinux` (`modules` for a
//! db of kernel modules alone). [`insert`] validates the embedded db and inserts the
//! module (`finit_module`), [`remove`] removes it (`delete_module`), and
//! [`sysfs_dbs`] reads what loaded modules expose, for discovery.
//!
//! One `dcg_sigdb` module is loaded at a time (the kernel refuses a second module of the
//! same name); to carry the kernel and its modules, scan both into one db.

use std::ffi::CString;
use std::io::Write as _;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use object::{Object as _, ObjectSection as _};
use sigdb::{hex, Db, DbFlags};

use crate::error::{Error, Result};

/// The name of the module `--emit-module` builds.
pub const MODULE_NAME: &str = "dcg_sigdb";
/// Where loaded modules expose their dbs.
pub const SYSFS_DIR: &str = "/sys/kernel/dcg";
/// The sysfs file of a db with the kernel image.
pub const KERNEL_FILE: &str = "vmlinux";
/// The sysfs file of a db of kernel modules alone.
pub const MODULES_FILE: &str = "modules";
/// The db's file name inside the module directory (what `.incbin` embeds).
pub const BLOB_FILE: &str = "sigdb.bin";

const TEMPLATE_C: &str = include_str!("../module/dcg_sigdb_main.c");
const TEMPLATE_H: &str = include_str!("../module/dcg_sigdb.h");
const TEMPLATE_S: &str = include_str!("../module/dcg_sigdb_blob.S");
const TEMPLATE_KBUILD: &str = include_str!("../module/Kbuild");
const TEMPLATE_MAKEFILE: &str = include_str!("../module/Makefile");

/// Errors of inserting, removing or reading db modules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleError {
    /// `finit_module` failed.
    #[error("{}: the kernel refused module {name}: {errno}: {why}", path.display())]
    Refused {
        /// The `.ko` file.
        path: PathBuf,
        /// Its module name.
        name: String,
        /// The kernel's error.
        errno: Errno,
        /// What it means here.
        why: String,
    },
    /// `delete_module` failed.
    #[error("cannot remove module {name}: {errno}: {why}")]
    Remove {
        /// The module name.
        name: String,
        /// The kernel's error.
        errno: Errno,
        /// What it means here.
        why: String,
    },
    /// The file is not a kernel module.
    #[error("{}: not a kernel module (no .modinfo section with a name)", path.display())]
    NotAModule {
        /// The file.
        path: PathBuf,
    },
    /// A db exposed by a module is for another kernel.
    #[error(
        "{}: db is for kernel build-id {db}, but the running kernel is {running}; \
         unload it with `dcg unload`",
        path.display()
    )]
    WrongKernel {
        /// The sysfs file.
        path: PathBuf,
        /// Build-id in the db (hex).
        db: String,
        /// The running kernel's build-id (hex).
        running: String,
    },
}

/// The sysfs file name a module carrying `db` exposes it under.
pub fn sysfs_name(db: &Db) -> &'static str {
    if db.flags().contains(DbFlags::MODULES_ONLY) {
        MODULES_FILE
    } else {
        KERNEL_FILE
    }
}

/// Write the Kbuild directory of a module carrying `db` (validated first) into `dir`
/// (created if needed): `dcg_sigdb_main.c`, `dcg_sigdb.h`, `dcg_sigdb_blob.S`, `Kbuild`,
/// `Makefile` and the db as [`BLOB_FILE`], all or nothing ([`stage_module_dir`], then
/// [`StagedModule::commit`]). Returns the sysfs file name.
pub fn write_module_dir(dir: &Path, db: &[u8]) -> Result<&'static str> {
    stage_module_dir(dir, db)?.commit()
}

/// The files of a module directory, written and synced but not yet in place: dropped
/// uncommitted, they leave `dir` as it was (and remove it if it was made for them).
#[derive(Debug)]
pub struct StagedModule {
    outputs: Vec<dcg_outfile::Output>,
    /// The directories made for the module, deepest first.
    made: Vec<PathBuf>,
    name: &'static str,
}

/// Write the files of [`write_module_dir`] without putting any in place yet.
pub fn stage_module_dir(dir: &Path, db: &[u8]) -> Result<StagedModule> {
    let parsed =
        Db::from_bytes(db.to_vec()).map_err(|e| crate::blob::db_error(Path::new("<memory>"), e))?;
    let name = sysfs_name(&parsed);
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    std::fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let mut staged = StagedModule {
        outputs: Vec::new(),
        made: missing,
        name,
    };
    let kbuild = TEMPLATE_KBUILD.replace("@NAME@", name);
    let files: [(&str, &[u8]); 6] = [
        ("dcg_sigdb_main.c", TEMPLATE_C.as_bytes()),
        ("dcg_sigdb.h", TEMPLATE_H.as_bytes()),
        ("dcg_sigdb_blob.S", TEMPLATE_S.as_bytes()),
        ("Kbuild", kbuild.as_bytes()),
        ("Makefile", TEMPLATE_MAKEFILE.as_bytes()),
        (BLOB_FILE, db),
    ];
    for (file, bytes) in files {
        let path = dir.join(file);
        let mut out = dcg_outfile::Output::create(&path)?;
        out.write_all(bytes)
            .map_err(|e| dcg_outfile::into_error(&path, e))?;
        out.sync()?;
        staged.outputs.push(out);
    }
    Ok(staged)
}

impl StagedModule {
    /// Put every file in place (all were written and synced when staged).
    /// Returns the sysfs file name.
    pub fn commit(mut self) -> Result<&'static str> {
        for out in std::mem::take(&mut self.outputs) {
            out.commit()?;
        }
        self.made.clear();
        Ok(self.name)
    }
}

impl Drop for StagedModule {
    fn drop(&mut self) {
        // Their temporary files go first; then the directories, empty again.
        self.outputs.clear();
        for d in &self.made {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// A db exposed by a loaded module, read into memory (sysfs binary attributes cannot be
/// mapped). Not validated here.
#[derive(Debug)]
pub struct ModuleDb {
    /// The sysfs file.
    pub path: PathBuf,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// The dbs in `dir` (normally [`SYSFS_DIR`], or [`Places::sysfs`](crate::Places::sysfs)): [`KERNEL_FILE`] first, then the others by
/// name. Empty when the directory does not exist (no module loaded).
pub fn sysfs_dbs(dir: &Path) -> Result<Vec<ModuleDb>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir)(e)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::io(dir))?;
        if entry
            .file_type()
            .map_err(Error::io(entry.path()))?
            .is_file()
        {
            paths.push(entry.path());
        }
    }
    paths.sort_by_key(|p| (p.file_name() != Some(KERNEL_FILE.as_ref()), p.clone()));
    paths
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).map_err(Error::io(&path))?;
            Ok(ModuleDb { path, bytes })
        })
        .collect()
}

/// Open a db read from sysfs: validated like any file, and refused when its build-id is
/// not the running kernel's (`notes`: normally `/sys/kernel/notes`; not checked when it
/// cannot be read).
pub fn open_sysfs_db(m: ModuleDb, notes: &Path) -> Result<Db> {
    let db = Db::from_bytes(m.bytes).map_err(|e| crate::blob::db_error(&m.path, e))?;
    if let Ok(running) = crate::kernel::build_id_from_notes(notes) {
        if db.build_id() != running.as_slice() {
            return Err(ModuleError::WrongKernel {
                path: m.path,
                db: hex(db.build_id()),
                running: hex(&running),
            }
            .into());
        }
    }
    Ok(db)
}

/// What [`insert`] inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted {
    /// The module name.
    pub name: String,
    /// The sysfs file it exposes.
    pub sysfs_file: PathBuf,
    /// Functions in its db.
    pub function_count: usize,
    /// The db's build-id (hex).
    pub build_id: String,
}

/// The fields of a module's `.modinfo` section we use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModInfo {
    /// `name=`.
    pub name: String,
    /// `vermagic=` (starts with the kernel release it was built for).
    pub vermagic: String,
}

/// The `.modinfo` of ELF file `bytes` (read from `path`).
pub fn modinfo(path: &Path, bytes: &[u8]) -> Result<ModInfo> {
    let not_module = || Error::from(ModuleError::NotAModule { path: path.into() });
    let file = object::File::parse(bytes).map_err(|_| not_module())?;
    let data = file
        .section_by_name(".modinfo")
        .and_then(|s| s.data().ok())
        .ok_or_else(not_module)?;
    let mut info = ModInfo::default();
    for field in data.split(|&b| b == 0) {
        let field = String::from_utf8_lossy(field);
        if let Some(v) = field.strip_prefix("name=") {
            info.name = v.to_string();
        } else if let Some(v) = field.strip_prefix("vermagic=") {
            info.vermagic = v.trim().to_string();
        }
    }
    if info.name.is_empty() {
        return Err(not_module());
    }
    Ok(info)
}

/// A read-only mapping of the regular file `path` (a FIFO or a device is refused before
/// it is opened): a module is parsed where it lies, never read whole.
pub fn map_regular(path: &Path) -> Result<memmap2::Mmap> {
    sigdb::filekind::require_regular(path, "a signature db or an ELF file")
        .map_err(Error::io(path))?;
    let file = std::fs::File::open(path).map_err(Error::io(path))?;
    // SAFETY: read-only mapping of a file we only parse; a concurrent truncation could
    // fault, as with every mmap reader.
    unsafe { memmap2::Mmap::map(&file) }.map_err(Error::io(path))
}

/// Whether `bytes` are a kernel module (an ELF file with a `.modinfo` section).
pub fn is_module(bytes: &[u8]) -> bool {
    crate::blob::is_elf(bytes) && modinfo(Path::new(""), bytes).is_ok()
}

/// Validate the db a module at `path` carries, check its build-id against the running
/// kernel's (from the notes of `places`; skipped with `force`), and insert the module (it
/// exposes its db under the sysfs directory of `places`).
pub fn insert(path: &Path, places: &crate::Places, force: bool) -> Result<Inserted> {
    let bytes = map_regular(path)?;
    let info = modinfo(path, &bytes)?;
    let embedded = crate::blob::extract_from_elf(path, &bytes)?;
    let db = Db::from_bytes(embedded).map_err(|e| crate::blob::db_error(path, e))?;
    if !force {
        let running = crate::kernel::build_id_from_notes(&places.notes)?;
        if db.build_id() != running.as_slice() {
            return Err(Error::WrongBuildId {
                path: path.into(),
                db: if db.build_id().is_empty() {
                    "none".into()
                } else {
                    hex(db.build_id())
                },
                expected: hex(&running),
                against: "the running kernel",
            });
        }
    }
    let file = std::fs::File::open(path).map_err(Error::io(path))?;
    nix::kmod::finit_module(file.as_fd(), c"", nix::kmod::ModuleInitFlags::empty()).map_err(
        |errno| ModuleError::Refused {
            path: path.into(),
            name: info.name.clone(),
            errno,
            why: refusal(errno, &info),
        },
    )?;
    Ok(Inserted {
        sysfs_file: places.sysfs.join(sysfs_name(&db)),
        name: info.name,
        function_count: db.function_count(),
        build_id: hex(db.build_id()),
    })
}

/// What a `finit_module` error means for a db module.
fn refusal(errno: Errno, info: &ModInfo) -> String {
    let running = crate::kernel::release().unwrap_or_else(|| "?".into());
    let built_for = info.vermagic.split_whitespace().next().unwrap_or("?");
    match errno {
        Errno::ENOEXEC if built_for != running => format!(
            "it was built for kernel {built_for}, this is {running}; \
             rebuild it against this kernel's headers (dmesg has the kernel's detail)"
        ),
        Errno::ENOEXEC => "its symbol versions or format do not match this kernel \
                           (dmesg has the kernel's detail); rebuild it against this kernel's headers"
            .into(),
        Errno::EEXIST => format!("a module named {} is already loaded (dcg unload first)", info.name),
        Errno::EPERM => "inserting modules needs root (CAP_SYS_MODULE), and module loading may be \
                         disabled (kernel.modules_disabled) or locked down"
            .into(),
        Errno::EKEYREJECTED | Errno::ENOKEY | Errno::EKEYEXPIRED | Errno::EKEYREVOKED => {
            "this kernel accepts only signed modules; sign it with the kernel's module key \
             (scripts/sign-file)"
                .into()
        }
        Errno::ENOSYS => "this kernel has no module support (CONFIG_MODULES)".into(),
        _ => "see dmesg for the kernel's detail".into(),
    }
}

/// Remove module `name` (normally [`MODULE_NAME`]).
pub fn remove(name: &str) -> Result<()> {
    let cname = CString::new(name).map_err(|_| ModuleError::Remove {
        name: name.into(),
        errno: Errno::EINVAL,
        why: "invalid module name".into(),
    })?;
    nix::kmod::delete_module(&cname, nix::kmod::DeleteModuleFlags::O_NONBLOCK).map_err(
        |errno| {
            let why = match errno {
                Errno::ENOENT => "it is not loaded".to_string(),
                Errno::EPERM => "removing modules needs root (CAP_SYS_MODULE)".into(),
                Errno::EBUSY | Errno::EWOULDBLOCK => "it is in use".into(),
                _ => "see dmesg for the kernel's detail".into(),
            };
            ModuleError::Remove {
                name: name.into(),
                errno,
                why,
            }
        },
    )?;
    Ok(())
}

/// Whether module `name` is loaded (`/sys/module/NAME` exists).
pub fn is_loaded(name: &str) -> bool {
    Path::new("/sys/module").join(name).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_dbs_kernel_first_and_empty_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(sysfs_dbs(&dir.path().join("none")).unwrap().is_empty());
        std::fs::write(dir.path().join("modules"), b"m").unwrap();
        std::fs::write(dir.path().join("vmlinux"), b"k").unwrap();
        let got = sysfs_dbs(dir.path()).unwrap();
        let names: Vec<_> = got.iter().map(|m| m.path.file_name().unwrap()).collect();
        assert_eq!(names, ["vmlinux", "modules"]);
        assert_eq!(got[0].bytes, b"k");
    }

    #[test]
    fn refusal_names_both_kernels() {
        let info = ModInfo {
            name: "dcg_sigdb".into(),
            vermagic: "1.2.3-other SMP preempt mod_unload".into(),
        };
        let why = refusal(Errno::ENOEXEC, &info);
        assert!(why.contains("built for kernel 1.2.3-other"), "{why}");
        assert!(refusal(Errno::EEXIST, &info).contains("already loaded"));
    }
}
