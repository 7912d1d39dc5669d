//! The store: a directory of installed dbs keyed by build-id.
//!
//! Layout (directories 0755, files 0644, nothing else is followed or trusted):
//!
//! ```text
//! $DCG_STORE/                         default /var/lib/dcg
//!   .lock                             flock(2)ed exclusively by every mutation
//!   <build-id hex>/                   the kernel (or binary) this entry is for
//!     base.sigdb                      the kernel's (or binary's) db
//!     base.json                       metadata: source, load time, checksum, ...
//!     modules/<set>.sigdb             module-only dbs of that kernel; <set> is the
//!     modules/<set>.json              module's name, or set-<hash> for several modules
//! ```
//!
//! Installs write a temporary file in the target directory and rename it into place, so
//! a reader sees the old db or the new one, never a mix. Unloads rename the entry away
//! and then delete it.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use nix::sys::stat::Mode;
use sigdb::{hex, Db};

use crate::blob::db_error;
use crate::error::{Error, Result};
use crate::{binary, kernel};

mod files;
mod types;

pub use files::format_utc;
use files::*;
pub use types::*;

const LOCK: &str = ".lock";
const BASE: &str = "base";
const MODULES: &str = "modules";
const DB_EXT: &str = "sigdb";
const META_EXT: &str = "json";
const TMP_PREFIX: &str = ".tmp-";
const TRASH_PREFIX: &str = ".trash-";

/// A store directory.
#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    notes: PathBuf,
}

impl Store {
    /// A store at `root`. An existing `root` must be a real directory (not a symlink)
    /// owned by the current user or root and not writable by group or others; a missing
    /// one is created (0755) by the first [`Store::load`].
    pub fn open(root: impl Into<PathBuf>) -> Result<Store> {
        let store = Store {
            root: root.into(),
            notes: PathBuf::from(kernel::DEFAULT_NOTES),
        };
        store.check_root()?;
        Ok(store)
    }

    /// Read the running kernel's build-id from `notes` instead of `/sys/kernel/notes`.
    pub fn with_kernel_notes(mut self, notes: impl Into<PathBuf>) -> Store {
        self.notes = notes.into();
        self
    }

    /// The store directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The running kernel's build-id (from the notes file this store uses).
    pub fn running_kernel_build_id(&self) -> Result<Vec<u8>> {
        kernel::build_id_from_notes(&self.notes)
    }

    /// Validate `file` completely (a sigdb, or an ELF file with a `.dcg_sigdb` section),
    /// check its build-id, and install it atomically. See [`LoadOptions`] for the
    /// build-id rules. A module-only db goes beside its kernel's base db. Loading an
    /// identical db again changes nothing ([`LoadStatus::AlreadyLoaded`]); a different db
    /// for the same key replaces the old one ([`LoadStatus::Replaced`]). Safe to run
    /// concurrently; on any error the store is unchanged.
    pub fn load(&self, file: &Path, opts: &LoadOptions) -> Result<LoadOutcome> {
        self.load_db(read_input(file)?, file, opts)
    }

    /// [`Store::load`] of a db already in memory (a sigdb's bytes) that was made from
    /// `file`: errors name `file`, and the entry records it as its source.
    pub fn load_bytes(
        &self,
        bytes: Vec<u8>,
        file: &Path,
        opts: &LoadOptions,
    ) -> Result<LoadOutcome> {
        let db = Db::from_bytes(bytes).map_err(|e| db_error(file, e))?;
        self.load_db(db, file, opts)
    }

    /// [`Store::load`] of a validated db made from `file`: every compressed frame and
    /// block is checked once here ([`Db::verify`]), so an installed db is whole.
    fn load_db(&self, db: Db, file: &Path, opts: &LoadOptions) -> Result<LoadOutcome> {
        db.verify().map_err(|e| db_error(file, e))?;
        let kind = DbKind::of(db.flags());
        let key = self.key_for(file, &db, kind, opts)?;
        let modules: Vec<String> = if kind == DbKind::KernelModules {
            db.modules().map(|m| m.name().to_string()).collect()
        } else {
            Vec::new()
        };
        let stem = if kind == DbKind::KernelModules {
            module_set_stem(&modules)
        } else {
            BASE.to_string()
        };
        let bytes = db.bytes();
        let source = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let meta = Meta {
            source: source.to_string_lossy().into_owned(),
            loaded_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            checksum: db.checksum(),
            function_count: db.function_count() as u64,
            size: bytes.len() as u64,
            kind,
            db_build_id: hex(db.build_id()),
            modules: modules.clone(),
        };

        self.check_root()?;
        self.create_root()?;
        self.check_root()?;
        let _lock = self.lock()?;
        self.check_root()?;
        let mut dir = self.subdir(&self.root, &hex(&key), true)?;
        if kind == DbKind::KernelModules {
            dir = self.subdir(&dir, MODULES, true)?;
        }
        remove_stale_temps(&dir);
        let db_path = dir.join(format!("{stem}.{DB_EXT}"));
        let meta_path = dir.join(format!("{stem}.{META_EXT}"));
        let previous = read_nofollow(&db_path)?;
        let status = match &previous {
            Some(old) if old.as_slice() == bytes => LoadStatus::AlreadyLoaded,
            Some(old) => LoadStatus::Replaced {
                previous_checksum: header_checksum(old).unwrap_or(0),
            },
            None => LoadStatus::Installed,
        };
        if status != LoadStatus::AlreadyLoaded {
            install_file(&dir, &db_path, bytes)?;
        }
        let meta_ok = read_meta(&meta_path).is_some_and(|m| m.checksum == meta.checksum);
        if status != LoadStatus::AlreadyLoaded || !meta_ok {
            let json = serde_json::to_vec_pretty(&meta).expect("metadata serializes");
            install_file(&dir, &meta_path, &json)?;
        }
        Ok(LoadOutcome {
            status,
            build_id: hex(&key),
            db_build_id: meta.db_build_id,
            kind,
            path: db_path,
            function_count: meta.function_count,
            size: meta.size,
            modules,
        })
    }

    /// The build-id to install `db` under.
    fn key_for(&self, file: &Path, db: &Db, kind: DbKind, opts: &LoadOptions) -> Result<Vec<u8>> {
        let own = db.build_id();
        if !kind.is_kernel() {
            if own.is_empty() {
                return Err(Error::NoBuildId {
                    path: file.to_path_buf(),
                    hint: "rebuild the binary with a GNU build-id (ld --build-id) and rescan it",
                });
            }
            return Ok(own.to_vec());
        }
        let (target, against) = match &opts.kernel_build_id {
            Some(id) => (id.clone(), "--kernel-build-id"),
            None => match self.running_kernel_build_id() {
                Ok(id) => (id, "the running kernel"),
                Err(_) if opts.force && !own.is_empty() => return Ok(own.to_vec()),
                Err(e) => return Err(e),
            },
        };
        // A db without a build-id takes the kernel named explicitly.
        let named = own.is_empty() && opts.kernel_build_id.is_some();
        if own == target.as_slice() || opts.force || named {
            return Ok(target);
        }
        if own.is_empty() {
            return Err(Error::NoBuildId {
                path: file.to_path_buf(),
                hint: "pass --kernel-build-id ID to name its kernel \
                       (or --force to install it for the running kernel)",
            });
        }
        Err(Error::WrongBuildId {
            path: file.to_path_buf(),
            db: hex(own),
            expected: hex(&target),
            against,
        })
    }

    /// Every installed db, sorted by build-id, base before modules. Entries that are
    /// symlinks or otherwise not what the store creates are skipped, never followed.
    pub fn list(&self) -> Result<Vec<Entry>> {
        self.check_root()?;
        let running = self.running_kernel_build_id().ok().map(|id| hex(&id));
        let mut out = Vec::new();
        for name in self.entry_names()? {
            let dir = self.root.join(&name);
            if !is_real_dir(&dir) {
                continue;
            }
            let mut files = vec![dir.join(format!("{BASE}.{DB_EXT}"))];
            let mdir = dir.join(MODULES);
            if is_real_dir(&mdir) {
                files.extend(db_files(&mdir)?);
            }
            for path in files {
                if let Some(e) = describe(&name, &path, running.as_deref()) {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }

    /// The dbs installed for `build_id`, or `None` when there are none. Refuses (rather
    /// than follows) a symlink inside the store.
    pub fn lookup(&self, build_id: &[u8]) -> Result<Option<Installed>> {
        self.check_root()?;
        let dir = self.root.join(hex(build_id));
        match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&dir)(e)),
            Ok(m) if !m.file_type().is_dir() => {
                return Err(Error::unsafe_store(&dir, refusal(&m)));
            }
            Ok(_) => {}
        }
        let base_path = dir.join(format!("{BASE}.{DB_EXT}"));
        let base = match std::fs::symlink_metadata(&base_path) {
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(&base_path)(e)),
            Ok(m) if !m.file_type().is_file() => {
                return Err(Error::unsafe_store(&base_path, refusal(&m)));
            }
            Ok(_) => Some(base_path),
        };
        let mdir = dir.join(MODULES);
        let modules = match std::fs::symlink_metadata(&mdir) {
            Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&mdir)(e)),
            Ok(m) if !m.file_type().is_dir() => {
                return Err(Error::unsafe_store(&mdir, refusal(&m)));
            }
            Ok(_) => {
                let files = db_files(&mdir)?;
                for f in &files {
                    let m = std::fs::symlink_metadata(f).map_err(Error::io(f))?;
                    if !m.file_type().is_file() {
                        return Err(Error::unsafe_store(f, refusal(&m)));
                    }
                }
                files
            }
        };
        if base.is_none() && modules.is_empty() {
            return Ok(None);
        }
        Ok(Some(Installed {
            build_id: build_id.to_vec(),
            base,
            modules,
        }))
    }

    /// The dbs for the running kernel: its base db and any module dbs. Fails with
    /// [`Error::NoKernelDb`], whose message gives the commands to create one, when no
    /// base db is loaded.
    pub fn find_for_kernel(&self) -> Result<Installed> {
        let id = self.running_kernel_build_id()?;
        match self.lookup(&id)? {
            Some(found) if found.base.is_some() => Ok(found),
            _ => Err(Error::NoKernelDb {
                build_id: hex(&id),
                store: self.root.clone(),
                steps: kernel::next_steps(),
            }),
        }
    }

    /// The db for a user-space ELF file, matched by its GNU build-id. Fails with
    /// [`Error::NoBinaryDb`], whose message gives the commands to create one.
    pub fn find_for_binary(&self, binary_path: &Path) -> Result<Installed> {
        let id = binary::build_id_of(binary_path)?;
        match self.lookup(&id)? {
            Some(found) if found.base.is_some() => Ok(found),
            _ => Err(Error::NoBinaryDb {
                binary: binary_path.to_path_buf(),
                build_id: hex(&id),
                store: self.root.clone(),
                steps: binary::next_steps(binary_path, &id),
            }),
        }
    }

    /// Remove the entry of a build-id (base and module dbs) or every entry; returns the
    /// build-ids removed. A symlink in the store is removed itself, never followed.
    pub fn unload(&self, which: &Unload) -> Result<Vec<String>> {
        self.check_root()?;
        if !self.root.exists() {
            return match which {
                Unload::All => Ok(Vec::new()),
                Unload::BuildId(id) => Err(Error::NotLoaded {
                    store: self.root.clone(),
                    id: id.clone(),
                }),
            };
        }
        let _lock = self.lock()?;
        self.check_root()?;
        remove_stale_trash(&self.root);
        let names = self.entry_names()?;
        let chosen: Vec<String> = match which {
            Unload::All => names,
            Unload::BuildId(id) => {
                let id = id.to_ascii_lowercase();
                let matches: Vec<String> = if names.contains(&id) {
                    vec![id.clone()]
                } else {
                    names.into_iter().filter(|n| n.starts_with(&id)).collect()
                };
                match matches.len() {
                    0 => {
                        return Err(Error::NotLoaded {
                            store: self.root.clone(),
                            id,
                        })
                    }
                    1 => matches,
                    _ => {
                        return Err(Error::Ambiguous {
                            store: self.root.clone(),
                            id,
                            matches,
                        })
                    }
                }
            }
        };
        for name in &chosen {
            let path = self.root.join(name);
            let meta = std::fs::symlink_metadata(&path).map_err(Error::io(&path))?;
            if !meta.file_type().is_dir() {
                std::fs::remove_file(&path).map_err(Error::io(&path))?;
                continue;
            }
            // Rename first so readers see the whole entry vanish at once.
            let trash = self
                .root
                .join(format!("{TRASH_PREFIX}{name}-{}", std::process::id()));
            std::fs::rename(&path, &trash).map_err(Error::io(&path))?;
            std::fs::remove_dir_all(&trash).map_err(Error::io(&trash))?;
        }
        sync_dir(&self.root)?;
        Ok(chosen)
    }

    /// Names of the build-id entries (lower-case hex names; anything else is ignored).
    fn entry_names(&self) -> Result<Vec<String>> {
        let rd = match std::fs::read_dir(&self.root) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            r => r.map_err(Error::io(&self.root))?,
        };
        let mut names = Vec::new();
        for ent in rd {
            let ent = ent.map_err(Error::io(&self.root))?;
            if let Some(name) = ent.file_name().to_str() {
                if is_hex_name(name) {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    /// Check the store directory itself, if it exists.
    fn check_root(&self) -> Result<()> {
        let m = match std::fs::symlink_metadata(&self.root) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            r => r.map_err(Error::io(&self.root))?,
        };
        if m.file_type().is_symlink() {
            return Err(Error::unsafe_store(
                &self.root,
                "is a symbolic link; refusing to use it (point DCG_STORE at the real directory)",
            ));
        }
        if !m.is_dir() {
            return Err(Error::unsafe_store(&self.root, "is not a directory"));
        }
        let mode = m.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(Error::unsafe_store(
                &self.root,
                format!("is writable by group or others (mode {mode:04o}); run chmod go-w on it"),
            ));
        }
        let euid = nix::unistd::geteuid().as_raw();
        if m.uid() != euid && m.uid() != 0 {
            return Err(Error::unsafe_store(
                &self.root,
                format!(
                    "is owned by uid {}, neither you (uid {euid}) nor root",
                    m.uid()
                ),
            ));
        }
        Ok(())
    }

    /// Create the store directory (0755) and its parents if missing.
    fn create_root(&self) -> Result<()> {
        if std::fs::symlink_metadata(&self.root).is_ok() {
            return Ok(());
        }
        if let Some(parent) = self.root.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
        }
        make_dir(&self.root)
    }

    /// Take the store's exclusive lock (blocking).
    fn lock(&self) -> Result<Flock<File>> {
        let path = self.root.join(LOCK);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(nofollow())
            .open(&path)
            .map_err(|e| nofollow_error(&path, e))?;
        let m = file.metadata().map_err(Error::io(&path))?;
        if !m.is_file() {
            return Err(Error::unsafe_store(&path, "lock is not a regular file"));
        }
        if m.mode() & 0o7777 != 0o644 {
            // Created under a restrictive umask; best effort, the lock works either way.
            let _ = nix::sys::stat::fchmod(&file, Mode::from_bits_truncate(0o644));
        }
        Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| Error::nix(&path)(e))
    }

    /// `parent/name`, which must be a real directory; created (0755) when `create`.
    fn subdir(&self, parent: &Path, name: &str, create: bool) -> Result<PathBuf> {
        let path = parent.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_dir() => Ok(path),
            Ok(m) => Err(Error::unsafe_store(&path, refusal(&m))),
            Err(e) if e.kind() == ErrorKind::NotFound && create => {
                make_dir(&path)?;
                Ok(path)
            }
            Err(e) => Err(Error::io(&path)(e)),
        }
    }
}

/// Describe an installed db for `list`; `None` if it is missing or not a regular file.
fn describe(build_id: &str, path: &Path, running: Option<&str>) -> Option<Entry> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if !m.file_type().is_file() {
        return None;
    }
    let mut head = vec![0u8; sigdb::layout::HEADER_SIZE];
    let n = read_prefix(path, &mut head).ok()?;
    head.truncate(n);
    let checksum = header_checksum(&head)?;
    let meta = read_meta(&path.with_extension(META_EXT)).filter(|meta| meta.checksum == checksum);
    let (kind, function_count, db_build_id, modules, source, loaded_at) = match meta {
        Some(meta) => (
            meta.kind,
            meta.function_count,
            meta.db_build_id,
            meta.modules,
            Some(meta.source),
            Some(UNIX_EPOCH + Duration::from_secs(meta.loaded_at)),
        ),
        None => {
            // Metadata missing or stale (an interrupted load): read the db itself.
            let db = Db::open(path).ok()?;
            let kind = DbKind::of(db.flags());
            let modules = if kind == DbKind::KernelModules {
                db.modules().map(|m| m.name().to_string()).collect()
            } else {
                Vec::new()
            };
            (
                kind,
                db.function_count() as u64,
                hex(db.build_id()),
                modules,
                None,
                m.modified().ok(),
            )
        }
    };
    Some(Entry {
        build_id: build_id.to_string(),
        kind,
        path: path.to_path_buf(),
        source,
        function_count,
        size: m.len(),
        loaded_at,
        checksum,
        db_build_id,
        modules,
        matches_running_kernel: kind.is_kernel() && running == Some(build_id),
    })
}

/// File name stem for a module-only db: the module's name, or `set-<hash>` of the sorted
/// names when it holds several.
fn module_set_stem(modules: &[String]) -> String {
    if let [one] = modules {
        let clean: String = one
            .chars()
            .take(100)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if !clean.is_empty() && clean != BASE {
            return clean;
        }
    }
    let mut names = modules.to_vec();
    names.sort();
    // FNV-1a: stable across Rust versions, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in names.join("\0").bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    format!("set-{h:016x}")
}
