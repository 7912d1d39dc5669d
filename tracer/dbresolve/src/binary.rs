//! The db of a user-space binary: a `--db` file (the one with the binary's build-id, or
//! the only one), the store's entry for its build-id, or one built in memory from its DWARF
//! (the binary's own or its separate debug file's).

use std::path::{Path, PathBuf};
use std::time::Instant;

use dcg_dbset::note::{DbNote, FetchedAs, Whose};
use sigdb::Db;

use crate::{open_one, DbError, DbSources};

/// The separate debug file of a binary (by build-id, else `.gnu_debuglink`), as gdb
/// looks: the lookup the user-space engines use for the symbols a stripped binary lacks.
pub use loader::binary::debug_file;

/// Where a binary's db came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbSource {
    /// `--db FILE`.
    Given(PathBuf),
    /// The store, by build-id.
    Store(PathBuf),
    /// Built in memory from this file's DWARF (the binary or its separate debug file).
    Built(PathBuf),
    /// Fetched from debuginfod (the `.dcg_sigdb` section, or a db built from the fetched
    /// debug file) and kept in the store: this store file.
    Debuginfod(PathBuf),
}

/// A binary's db, where it came from, and what the user should know about it.
#[derive(Debug)]
pub struct BinaryDb {
    /// The db.
    pub db: Db,
    /// Its source.
    pub source: DbSource,
    /// Notes for the user (a build-id mismatch, a db built from DWARF and how to keep it).
    pub notes: Vec<DbNote>,
}

/// Find the db of the binary at `path` (its contents `bytes`, its `build_id`): from `dbs`
/// (`--db` files) when given, else the store, else built from local DWARF, else from
/// debuginfod (the client of `sources`, none offline) and kept in the store.
pub fn resolve_binary(
    path: &Path,
    bytes: &[u8],
    build_id: &[u8],
    dbs: &[PathBuf],
    sources: &DbSources,
) -> Result<BinaryDb, DbError> {
    if !dbs.is_empty() {
        return given(path, build_id, dbs);
    }
    let places = &sources.places;
    let store_note = match places.store().and_then(|s| s.find_for_binary(path)) {
        Ok(found) => {
            if let Some(base) = found.base {
                return Ok(BinaryDb {
                    db: Db::open(&base)?,
                    source: DbSource::Store(base),
                    notes: Vec::new(),
                });
            }
            None
        }
        Err(loader::Error::NoBinaryDb { .. } | loader::Error::NoBinaryBuildId { .. }) => None,
        Err(e) => Some(e.to_string()),
    };
    match (built(path, bytes, build_id, store_note), &sources.net) {
        (Err(DbError::NoDwarf { .. }), Some(net)) if !build_id.is_empty() => {
            fetched(path, build_id, net, places)
        }
        (r, _) => r,
    }
}

/// The section dcg's dbs travel in.
pub const SECTION: &str = ".dcg_sigdb";

/// Why one way of getting a db from debuginfod gave none.
enum Miss {
    /// The fetch failed.
    Fetch(dcg_debuginfod::FetchError),
    /// The file is not a db for the build-id (removed from the client's cache).
    Bad(String),
}

impl Miss {
    fn reason(&self) -> String {
        match self {
            Miss::Fetch(e) => e.reason(),
            Miss::Bad(e) => e.clone(),
        }
    }
}

/// The db of build-id `build_id` from debuginfod: its `.dcg_sigdb` section if a server
/// has one, else (none has it, it is bad, or some server failed) one built from the
/// debug file a server has; validated, its build-id checked, and installed in the store
/// (so the next run needs no network). A file that fails the checks is removed from the
/// client's cache; the store is changed only by a valid db. The db built from a debug
/// file goes straight into the store: dcg writes nothing of its own into the client
/// cache, which it shares with gdb and perf.
pub fn fetch_db(
    build_id: &[u8],
    net: &dcg_debuginfod::Client,
    places: &loader::Places,
) -> Result<(Db, PathBuf, FetchedAs), DbError> {
    use dcg_debuginfod::{FetchError, What};
    let id = sigdb::hex(build_id);
    // A kernel's db goes under the build-id asked for, not the running kernel's.
    let opts = loader::LoadOptions {
        force: false,
        kernel_build_id: Some(build_id.to_vec()),
    };
    let section = What::Section(SECTION);
    let first = match section_db(build_id, net, section) {
        Ok(p) => {
            let o = places.store()?.load(&p, &opts)?;
            return Ok((Db::open(&o.path)?, o.path, FetchedAs::Section));
        }
        Err(Miss::Fetch(e @ FetchError::Cache { .. })) => return Err(e.into()),
        Err(m) => m,
    };
    if !net.any_server_left() {
        return Err(match first {
            Miss::Fetch(e) => e.into(),
            Miss::Bad(error) => DbError::Fetched {
                build_id: id,
                servers: net.servers().join(" "),
                error: format!("{}: {error}", section.describe()),
            },
        });
    }
    match debug_file_db(build_id, &id, net) {
        Ok((bytes, from)) => {
            let o = places.store()?.load_bytes(bytes, &from, &opts)?;
            Ok((Db::open(&o.path)?, o.path, FetchedAs::BuiltFromDebugFile))
        }
        Err(Miss::Fetch(e @ FetchError::Cache { .. })) => Err(e.into()),
        Err(second) => Err(match (&first, &second) {
            (
                Miss::Fetch(FetchError::NotFound { .. }),
                Miss::Fetch(FetchError::NotFound { why, .. }),
            ) => DbError::NotOnServers {
                build_id: id,
                why: why.clone(),
            },
            _ => DbError::Fetched {
                build_id: id,
                servers: net.servers().join(" "),
                error: format!(
                    "{}: {}; {}: {}",
                    section.describe(),
                    first.reason(),
                    What::Debuginfo.describe(),
                    second.reason()
                ),
            },
        }),
    }
}

/// Where a fetched file came from, for a message.
fn origin(f: &dcg_debuginfod::Fetched) -> String {
    match &f.server {
        Some(s) => format!("the one {s} sent"),
        None => format!("the cached {}", f.path.display()),
    }
}

/// Whether `db` is the db of `build_id`.
fn check_build_id(db: &Db, build_id: &[u8]) -> Result<(), String> {
    let own = db
        .modules()
        .find(|m| !m.build_id().is_empty())
        .map(|m| m.build_id());
    match own {
        Some(b) if b == build_id => Ok(()),
        Some(b) => Err(format!("its build-id is {}", sigdb::hex(b))),
        None => Err("it names no build-id".into()),
    }
}

/// The `.dcg_sigdb` section of `build_id` from debuginfod, checked: its cache file.
fn section_db(
    build_id: &[u8],
    net: &dcg_debuginfod::Client,
    section: dcg_debuginfod::What<'_>,
) -> Result<PathBuf, Miss> {
    let f = dcg_debuginfod::fetch_reporting(net, build_id, section).map_err(Miss::Fetch)?;
    let bad = |e: String| {
        net.forget(build_id, section);
        Miss::Bad(format!("{}: {e}", origin(&f)))
    };
    let bytes = std::fs::read(&f.path).map_err(|e| bad(e.to_string()))?;
    let db = Db::from_bytes(bytes).map_err(|e| bad(e.to_string()))?;
    check_build_id(&db, build_id).map_err(bad)?;
    Ok(f.path)
}

/// A db built from the debug file of `build_id` from debuginfod, checked: its bytes, and
/// the debug file's cache path.
fn debug_file_db(
    build_id: &[u8],
    id: &str,
    net: &dcg_debuginfod::Client,
) -> Result<(Vec<u8>, PathBuf), Miss> {
    use dcg_debuginfod::What;
    let f = dcg_debuginfod::fetch_reporting(net, build_id, What::Debuginfo).map_err(Miss::Fetch)?;
    let bad = |e: String| {
        net.forget(build_id, What::Debuginfo);
        Miss::Bad(format!("{}: {e}", origin(&f)))
    };
    let bytes = std::fs::read(&f.path).map_err(|e| bad(e.to_string()))?;
    // As `dwarfscan` writes a db by default (the kept file is a store db).
    let opts = dwarfscan::Options {
        inline_instances: dwarfscan::InlineInstances::Traceable,
        ..dwarfscan::Options::default()
    };
    let scanned = dwarfscan::scan_elf_bytes(id, &bytes, &opts)
        .and_then(|mut r| r.to_bytes())
        .map_err(|e| bad(e.to_string()))?;
    let db = Db::from_bytes(scanned).map_err(|e| bad(e.to_string()))?;
    check_build_id(&db, build_id).map_err(bad)?;
    Ok((db.bytes().to_vec(), f.path))
}

/// [`fetch_db`] for a binary, with the note that says where its db came from.
fn fetched(
    path: &Path,
    build_id: &[u8],
    net: &dcg_debuginfod::Client,
    places: &loader::Places,
) -> Result<BinaryDb, DbError> {
    let (db, stored, how) = fetch_db(build_id, net, places)?;
    Ok(BinaryDb {
        notes: vec![DbNote::Fetched {
            whose: Whose::Binary(path.to_path_buf()),
            how,
            functions: db.function_count(),
            stored: stored.clone(),
        }],
        db,
        source: DbSource::Debuginfod(stored),
    })
}

/// The `--db` file for the binary.
fn given(path: &Path, build_id: &[u8], dbs: &[PathBuf]) -> Result<BinaryDb, DbError> {
    let opened = dbs
        .iter()
        .map(|p| open_one(p))
        .collect::<Result<Vec<Db>, DbError>>()?;
    let matches = |d: &Db| !build_id.is_empty() && d.modules().any(|m| m.build_id() == build_id);
    let Some(i) = opened
        .iter()
        .position(matches)
        .or((dbs.len() == 1).then_some(0))
    else {
        return Err(DbError::NoneForBinary {
            path: path.to_path_buf(),
            build_id: sigdb::hex(build_id),
        });
    };
    let db = opened.into_iter().nth(i).expect("picked index");
    let mut notes = Vec::new();
    if !build_id.is_empty() && !matches(&db) {
        notes.push(DbNote::BuildIdMismatch {
            binary: path.to_path_buf(),
            db: dbs[i].clone(),
        });
    }
    Ok(BinaryDb {
        db,
        source: DbSource::Given(dbs[i].clone()),
        notes,
    })
}

/// A db built in memory from the binary's DWARF, or its separate debug file's, with the
/// inlined copies of functions (as dwarfscan writes by default).
fn built(
    path: &Path,
    bytes: &[u8],
    build_id: &[u8],
    store_note: Option<String>,
) -> Result<BinaryDb, DbError> {
    let t = Instant::now();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let scan = |src: &Path, bytes: &[u8]| -> Result<Db, DbError> {
        let build = |e: dwarfscan::ScanError| DbError::Build {
            path: src.to_path_buf(),
            error: e.to_string(),
        };
        // With every inlined copy: `--func` of an inlined function probes its copies, and
        // calls made from inlined code are shown under frames for it.
        let opts = dwarfscan::Options {
            inline_instances: dwarfscan::InlineInstances::All,
            ..dwarfscan::Options::default()
        };
        let mut r = dwarfscan::scan_elf_bytes(&name, bytes, &opts).map_err(build)?;
        Ok(Db::from_bytes(r.to_bytes().map_err(build)?)?)
    };
    let (db, src) = match scan(path, bytes) {
        Ok(db) => (db, path.to_path_buf()),
        Err(e) => match loader::binary::debug_file(path, bytes, build_id) {
            Some(d) => {
                let dbytes = std::fs::read(&d).map_err(|source| DbError::Io {
                    path: d.clone(),
                    source,
                })?;
                (scan(&d, &dbytes)?, d)
            }
            None => {
                return Err(DbError::NoDwarf {
                    path: path.to_path_buf(),
                    build_id: sigdb::hex(build_id),
                    error: e.to_string(),
                })
            }
        },
    };
    let note = DbNote::Built {
        binary: path.to_path_buf(),
        store_unreadable: store_note,
        from: src.clone(),
        functions: db.function_count(),
        seconds: t.elapsed().as_secs_f64(),
        to_keep: (!build_id.is_empty()).then(|| loader::binary::next_steps(path, build_id)),
    };
    Ok(BinaryDb {
        db,
        source: DbSource::Built(src),
        notes: vec![note],
    })
}
