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
/// (`--db` files) when given, else the store, else built from DWARF.
pub fn resolve_binary(
    path: &Path,
    bytes: &[u8],
    build_id: &[u8],
    dbs: &[PathBuf],
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
    built(path, bytes, build_id, store_note)
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
