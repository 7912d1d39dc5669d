//! The db of a user-space binary: a `--db` file (the one with the binary's build-id, or
//! the only one), the store's entry for its build-id, or one built in memory from its DWARF
//! (the binary's own or its separate debug file's).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use sigdb::Db;

use crate::{open_one, DbError};

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
    pub notes: Vec<String>,
}

/// Find the db of the binary at `path` (its contents `bytes`, its `build_id`): from `dbs`
/// (`--db` files) when given, else the store, else built from local DWARF, else from
/// debuginfod (`net`: the configured client, `None` offline) and kept in the store.
pub fn resolve_binary(
    path: &Path,
    bytes: &[u8],
    build_id: &[u8],
    dbs: &[PathBuf],
    net: Option<&dcg_debuginfod::Client>,
) -> Result<BinaryDb, DbError> {
    if !dbs.is_empty() {
        return given(path, build_id, dbs);
    }
    let store_note = match loader::Store::from_env().and_then(|s| s.find_for_binary(path)) {
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
        Err(e) => Some(format!("the store could not be read ({e})")),
    };
    match built(path, bytes, build_id, store_note) {
        Err(DbError::NoDwarf { .. }) if net.is_some() && !build_id.is_empty() => {
            fetched(path, build_id, net.expect("checked"))
        }
        r => r,
    }
}

/// The section dcg's dbs travel in.
pub const SECTION: &str = ".dcg_sigdb";

/// The db of build-id `build_id` from debuginfod: its `.dcg_sigdb` section if a server
/// has one, else one built from the debug file a server has; validated, its build-id
/// checked, and installed in the store (so the next run needs no network). A file that
/// fails the checks is removed from the client's cache; the store is changed only by a
/// valid db.
pub fn fetch_db(
    build_id: &[u8],
    net: &dcg_debuginfod::Client,
) -> Result<(Db, PathBuf, &'static str), DbError> {
    use dcg_debuginfod::What;
    let id = sigdb::hex(build_id);
    let bad = |what: What<'_>, error: String| {
        net.forget(build_id, what);
        DbError::Fetched {
            what: match what {
                What::Section(s) => format!("section {s}"),
                What::Debuginfo => "debuginfo".into(),
                What::Executable => "executable".into(),
            },
            build_id: id.clone(),
            servers: net.servers().join(" "),
            error,
        }
    };
    let check = |db: &Db| -> Result<(), String> {
        let own = db
            .modules()
            .find(|m| !m.build_id().is_empty())
            .map(|m| m.build_id());
        match own {
            Some(b) if b == build_id => Ok(()),
            Some(b) => Err(format!("its build-id is {}", sigdb::hex(b))),
            None => Err("it names no build-id".into()),
        }
    };
    let section = What::Section(SECTION);
    let (db_file, how) = match dcg_debuginfod::fetch_reporting(net, build_id, section) {
        Ok(p) => {
            let bytes = std::fs::read(&p).map_err(|source| DbError::Io {
                path: p.clone(),
                source,
            })?;
            let db = Db::from_bytes(bytes).map_err(|e| bad(section, e.to_string()))?;
            check(&db).map_err(|e| bad(section, e))?;
            (p, "its .dcg_sigdb section")
        }
        Err(dcg_debuginfod::FetchError::NotFound { .. }) => {
            let p = dcg_debuginfod::fetch_reporting(net, build_id, What::Debuginfo)?;
            let bytes = std::fs::read(&p).map_err(|source| DbError::Io {
                path: p.clone(),
                source,
            })?;
            // As `dwarfscan` writes a db by default (the kept file is a store db).
            let opts = dwarfscan::Options {
                inline_instances: dwarfscan::InlineInstances::Traceable,
                ..dwarfscan::Options::default()
            };
            let scanned = dwarfscan::scan_elf_bytes(&id, &bytes, &opts)
                .and_then(|mut r| r.to_bytes())
                .map_err(|e| bad(What::Debuginfo, e.to_string()))?;
            let db = Db::from_bytes(scanned).map_err(|e| bad(What::Debuginfo, e.to_string()))?;
            check(&db).map_err(|e| bad(What::Debuginfo, e))?;
            let out = p.with_file_name("dcg.sigdb");
            let tmp = p.with_file_name(".dcg.sigdb.part");
            std::fs::write(&tmp, db.bytes())
                .and_then(|()| std::fs::rename(&tmp, &out))
                .map_err(|source| DbError::Io {
                    path: out.clone(),
                    source,
                })?;
            (out, "a db built from its debug file")
        }
        Err(e) => return Err(e.into()),
    };
    let store = loader::Store::from_env().map_err(|e| DbError::Build {
        path: db_file.clone(),
        error: e.to_string(),
    })?;
    // A kernel's db goes under the build-id asked for, not the running kernel's.
    let opts = loader::LoadOptions {
        force: false,
        kernel_build_id: Some(build_id.to_vec()),
    };
    let outcome = store.load(&db_file, &opts).map_err(|e| DbError::Build {
        path: db_file.clone(),
        error: e.to_string(),
    })?;
    Ok((Db::open(&outcome.path)?, outcome.path, how))
}

/// [`fetch_db`] for a binary, with the note that says where its db came from.
fn fetched(
    path: &Path,
    build_id: &[u8],
    net: &dcg_debuginfod::Client,
) -> Result<BinaryDb, DbError> {
    let (db, stored, how) = fetch_db(build_id, net)?;
    Ok(BinaryDb {
        notes: vec![format!(
            "{}: no DWARF here; its db came from debuginfod ({how}, {} functions) and is kept \
             in the store: {}",
            path.display(),
            db.function_count(),
            stored.display()
        )],
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
        notes.push(format!(
            "{}: the build-id of {} does not match the binary's; values may be wrong",
            path.display(),
            dbs[i].display()
        ));
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
    let mut note = format!(
        "{}: {}no db in the store; built one from the DWARF of {} ({} functions, {:.2} s)",
        path.display(),
        store_note.map(|s| format!("{s}; ")).unwrap_or_default(),
        src.display(),
        db.function_count(),
        t.elapsed().as_secs_f64()
    );
    if !build_id.is_empty() {
        let _ = write!(
            note,
            "; to keep it:\n{}",
            loader::binary::next_steps(path, build_id)
        );
    }
    Ok(BinaryDb {
        db,
        source: DbSource::Built(src),
        notes: vec![note],
    })
}
