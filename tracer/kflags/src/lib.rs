//! Kernel flags the way the kernel prints them: the `__print_flags` and
//! `__print_symbolic` tables of the trace-event format files
//! (`/sys/kernel/tracing/events/*/*/format`), their C constant expressions evaluated,
//! mapped to the integer typedef they describe (`gfp_t`), and values rendered as the
//! kernel renders them (`GFP_KERNEL|__GFP_ZERO`). No hand list: a type no event prints
//! stays a number.

mod expr;
mod format;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use expr::Consts;
pub use format::{parse_format, parse_format_with, EventFormat, Field, RawTable};

/// What can go wrong reading format files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A constant expression that is not one (an identifier left unexpanded, say).
    #[error("expression: {0}")]
    Expr(String),
    /// A table whose syntax is not `{VAL, "NAME"}, …`.
    #[error("table: {0}")]
    Table(String),
    /// The directory of events cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How a table prints a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableKind {
    /// `__print_flags`: the names of the masks set, joined by the delimiter.
    Flags {
        /// The delimiter (`|`).
        delim: String,
    },
    /// `__print_symbolic`: the name of the value.
    Symbolic,
}

/// A table of names, in the order the kernel walks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Flags or symbolic.
    pub kind: TableKind,
    /// (value, name), in order.
    pub entries: Vec<(u64, String)>,
    /// The event it was read from (`kmem/kmalloc`).
    pub event: String,
}

impl Table {
    /// The text of `v`, as the kernel's `trace_print_flags_seq` / `trace_print_symbols_seq`
    /// write it: flags walk the table in order, each mask wholly set is named and its bits
    /// cleared (composite names, listed first, win), the remainder in hex (`0x…`); a
    /// symbol is its name or the value in hex. A flags value of 0 names nothing in the
    /// kernel; here it is `0`.
    pub fn render(&self, v: u64) -> String {
        let mut out = String::new();
        match &self.kind {
            TableKind::Symbolic => match self.entries.iter().find(|(e, _)| *e == v) {
                Some((_, name)) => out.push_str(name),
                None => dcg_render::push_hex(&mut out, v),
            },
            TableKind::Flags { delim } => {
                let mut rest = v;
                for (mask, name) in &self.entries {
                    if rest == 0 {
                        break;
                    }
                    if rest & mask != *mask {
                        continue;
                    }
                    rest &= !mask;
                    if !out.is_empty() {
                        out.push_str(delim);
                    }
                    out.push_str(name);
                }
                if rest != 0 {
                    if !out.is_empty() {
                        out.push_str(delim);
                    }
                    dcg_render::push_hex(&mut out, rest);
                }
                if out.is_empty() {
                    out.push('0');
                }
            }
        }
        out
    }

    /// The value of a name of the table.
    pub fn value_of(&self, name: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|(_, n)| n == name)
            .map(|(v, _)| *v)
    }

    /// The value of a rendered text (`GFP_KERNEL|__GFP_ZERO|0x1000000`): the inverse of
    /// [`Table::render`] for flags; `None` for a name the table does not have.
    pub fn parse(&self, text: &str) -> Option<u64> {
        let one = |s: &str| {
            self.value_of(s).or_else(|| {
                s.strip_prefix("0x")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
            })
        };
        match &self.kind {
            TableKind::Symbolic => one(text),
            TableKind::Flags { .. } if text == "0" => Some(0),
            TableKind::Flags { delim } => text.split(delim.as_str()).map(one).sum::<Option<u64>>(),
        }
    }
}

/// A table left out, and why.
#[derive(Debug)]
pub struct Skipped {
    /// The event.
    pub event: String,
    /// The field printed.
    pub field: String,
    /// Why.
    pub error: Error,
}

/// The tables of a kernel's events, by the typedef they print.
#[derive(Debug, Default)]
pub struct FlagTables {
    by_type: HashMap<String, Table>,
    /// Tables not used: expressions that are not constants, printed values that are not
    /// a plain field, fields of no typedef.
    pub skipped: Vec<Skipped>,
}

impl FlagTables {
    /// The tables of the given format files: (event name, text) pairs. A typedef printed
    /// by several events keeps the table with the most entries (the first of those).
    pub fn from_formats<'a>(formats: impl IntoIterator<Item = (&'a str, &'a str)>) -> FlagTables {
        FlagTables::from_formats_with(formats, &|_| None)
    }

    /// [`FlagTables::from_formats`], identifiers the formats leave unexpanded (enum
    /// constants, `I_DIRTY_SYNC`) valued by `consts` (the kernel db's enumerators).
    pub fn from_formats_with<'a>(
        formats: impl IntoIterator<Item = (&'a str, &'a str)>,
        consts: Consts<'_>,
    ) -> FlagTables {
        let mut t = FlagTables::default();
        for (event, text) in formats {
            let f = parse_format_with(event, text, consts);
            t.skipped.extend(f.skipped);
            for raw in f.tables {
                let Some(key) = raw.typedef(&f.fields) else {
                    continue;
                };
                let table = raw.table;
                match t.by_type.get(&key) {
                    Some(old) if old.entries.len() >= table.entries.len() => {}
                    _ => {
                        t.by_type.insert(key, table);
                    }
                }
            }
        }
        t
    }

    /// The tables of a tracefs `events` directory (`/sys/kernel/tracing/events`), read in
    /// name order.
    pub fn read_events(dir: &Path) -> Result<FlagTables, Error> {
        FlagTables::read_events_with(dir, &|_| None)
    }

    /// [`FlagTables::read_events`] with [`FlagTables::from_formats_with`]'s `consts`.
    pub fn read_events_with(dir: &Path, consts: Consts<'_>) -> Result<FlagTables, Error> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let mut files = Vec::new();
        for sys in std::fs::read_dir(dir).map_err(io(dir))? {
            let sys = sys.map_err(io(dir))?.path();
            let Ok(events) = std::fs::read_dir(&sys) else {
                continue;
            };
            for ev in events.flatten() {
                let path = ev.path().join("format");
                if let Ok(text) = std::fs::read_to_string(&path) {
                    let name = format!(
                        "{}/{}",
                        sys.file_name().unwrap_or_default().to_string_lossy(),
                        ev.file_name().to_string_lossy()
                    );
                    files.push((name, text));
                }
            }
        }
        files.sort();
        Ok(FlagTables::from_formats_with(
            files.iter().map(|(n, t)| (n.as_str(), t.as_str())),
            consts,
        ))
    }

    /// The table of typedef `name` (`gfp_t`).
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.by_type.get(name)
    }

    /// The text of `value` of a type whose typedef chain is `names` (outermost first:
    /// `gfp_t`, then what it names): the first name with a table renders it; else a
    /// `umode_t` is written in octal as the kernel's events write modes (`0644`, ext4's
    /// `mode 0%o`; no event of this host declares a `umode_t` field it prints, so this one
    /// rule is not read from the formats); else `None`: the number, as without tables.
    pub fn render<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
        value: u64,
    ) -> Option<String> {
        let mut octal = false;
        for n in names {
            if let Some(t) = self.table(n) {
                return Some(t.render(value));
            }
            octal |= n == "umode_t";
        }
        octal.then(|| format!("0{value:o}"))
    }

    /// Whether [`FlagTables::render`] names values of a type whose typedef chain is
    /// `names` (a table, or the `umode_t` rule).
    pub fn knows(&self, names: &[&str]) -> bool {
        names
            .iter()
            .any(|n| *n == "umode_t" || self.by_type.contains_key(*n))
    }

    /// The typedefs that have a table, sorted.
    pub fn types(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.by_type.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}
