//! Which functions a pattern selects: DWARF names, symbols and ELF aliases, functions
//! without types when named exactly, and the inlined copies of inlined functions.

use super::*;

/// A function selected by a pattern, before its probe is planned.
#[derive(Debug, Clone)]
pub struct Selected<'a> {
    /// The function, when DWARF describes it (else an ELF function symbol, traced
    /// without arguments).
    pub func: Option<Function<'a>>,
    /// Its symbol.
    pub symbol: String,
    /// Its address.
    pub addr: u64,
    /// Index of its target.
    pub target: usize,
}

/// An inlined copy of a selected function, in a function of target `target`.
#[derive(Debug, Clone, Copy)]
pub struct SelectedCopy<'a> {
    /// The copy (the db's inline instance).
    pub instance: Instance<'a>,
    /// Index of its target.
    pub target: usize,
}

/// What a pattern selects: functions to probe (entry and return), and inlined copies of
/// functions (their containers are among the functions).
#[derive(Debug, Default)]
pub struct Selection<'a> {
    /// Functions to probe.
    pub funcs: Vec<Selected<'a>>,
    /// Inlined copies to probe at their first instruction.
    pub copies: Vec<SelectedCopy<'a>>,
}

pub use dcg_dbset::inlines::INLINE_MAX;

/// Whether `f` is an entry point a probe can trace with its types (a container of
/// inlined copies).
fn is_entry(f: Function<'_>) -> bool {
    f.addr() != 0
        && !f
            .flags()
            .intersects(FuncFlags::INLINE_ONLY | FuncFlags::COLD | FuncFlags::NO_TYPES)
}

/// The inlined copies of the functions `wanted` (indices in `db`) inside functions a
/// probe can trace.
fn copies_of<'a>(db: &'a Db, wanted: &HashSet<u32>) -> (Vec<Instance<'a>>, usize) {
    dcg_dbset::inlines::copies_of(db, wanted, is_entry)
}

/// The declaration (a prototype from a caller's DWARF) of the function at `addr` of
/// `target` that no DWARF describes: by `name` or another symbol at that address, in its
/// own db, the other targets' or `prototypes` (the traced command's).
pub fn prototype<'a>(
    targets: &'a [Target],
    prototypes: &[&'a Db],
    target: usize,
    name: &str,
    addr: u64,
) -> Option<Function<'a>> {
    let t = &targets[target];
    let names = std::iter::once(name).chain(
        t.symbols
            .at(addr)
            .iter()
            .filter(|s| s.func)
            .map(|s| s.name.as_str()),
    );
    let dbs: Vec<&'a Db> = std::iter::once(&t.db)
        .chain(targets.iter().map(|t| &t.db))
        .chain(prototypes.iter().copied())
        .collect();
    for n in names {
        for db in &dbs {
            if let Some(f) = db.by_name(n).find(|f| f.is_declaration()) {
                return Some(f);
            }
        }
    }
    None
}

/// Whether `pattern` matches `symbol` as it is, or a C++/Rust symbol demangled without
/// its parameters (`ns::get<int>`), with them (`ns::get<int>(ns::Box<int>)`) or in full
/// (`int ns::get<int>(ns::Box<int>)`).
pub(crate) fn symbol_matches(pattern: &str, symbol: &str) -> bool {
    glob_match(pattern, symbol)
        || dcg_render::names::demangle(symbol).is_some_and(|d| d.any(|n| glob_match(pattern, n)))
}

/// Select the functions `pattern` matches in `target`'s db, and the inlined copies of
/// the matching functions (the db's inline instances) with the functions holding them;
/// `frames`: the copies are shown as frames (else only their containers are traced).
/// Inline-only functions without copies in the db and `.cold` parts are skipped with a
/// note. Returns an error message when nothing traceable matches.
pub fn select<'a>(
    targets: &'a [Target],
    prototypes: &[&'a Db],
    target: usize,
    pattern: &str,
    frames: bool,
    notes: &mut Vec<Notice>,
) -> std::result::Result<Selection<'a>, Notice> {
    let t = &targets[target];
    let Matches {
        mut found,
        mut inline_only,
        cold,
        no_dwarf,
    } = matches(t, target, pattern);
    without_dwarf(
        targets, prototypes, target, pattern, no_dwarf, &mut found, notes,
    );
    // Inlined copies of what matched, and the functions holding them.
    let copies = inlined_copies(t, target, frames, &mut found, &mut inline_only, notes);
    // A function inlined somewhere but with an out-of-line copy too is traced: no note.
    inline_only.retain(|f| {
        !found
            .iter()
            .any(|s| s.func.is_some_and(|g| g.name() == f.name()))
    });
    not_probed(t, pattern, &inline_only, &cold, notes);
    if found.is_empty() {
        let unprobeable = !inline_only.is_empty() || !cold.is_empty();
        return Err(Notice::NoMatch {
            pattern: pattern.to_string(),
            path: t.path.clone(),
            unprobeable,
        });
    }
    Ok(Selection {
        funcs: found,
        copies,
    })
}

/// What a pattern matches in a target, before the inlined copies: the functions with
/// code, the inline-only ones, the `.cold` parts, and the functions without DWARF (name,
/// address).
struct Matches<'a> {
    found: Vec<Selected<'a>>,
    inline_only: Vec<sigdb::Function<'a>>,
    cold: Vec<sigdb::Function<'a>>,
    no_dwarf: Vec<(String, u64)>,
}

/// Match `pattern` against `t`'s db functions (by DWARF name, symbol, or any ELF alias at
/// the address) and against the function symbols no DWARF describes.
fn matches<'a>(t: &'a Target, target: usize, pattern: &str) -> Matches<'a> {
    let mut found = Vec::new();
    let mut inline_only = Vec::new();
    let mut cold = Vec::new();
    let mut with_dwarf = HashSet::new();
    let mut no_dwarf: Vec<(String, u64)> = Vec::new();
    for f in t.db.functions() {
        if f.is_declaration() {
            continue;
        }
        if f.addr() != 0 && !f.flags().contains(FuncFlags::NO_TYPES) {
            with_dwarf.insert(f.addr());
        }
        // By its DWARF name, its symbol, or any ELF symbol at its address (`free` is
        // `__libc_free` in libc's DWARF).
        let alias = || {
            f.addr() != 0
                && t.symbols
                    .at(f.addr())
                    .iter()
                    .any(|s| s.func && symbol_matches(pattern, &s.name))
        };
        if !glob_match(pattern, f.name()) && !symbol_matches(pattern, f.symbol()) && !alias() {
            continue;
        }
        let flags = f.flags();
        if flags.contains(FuncFlags::INLINE_ONLY) || f.addr() == 0 {
            inline_only.push(f);
        } else if flags.contains(FuncFlags::NO_TYPES) {
            // Named by an assembly unit: no types, as if it had no DWARF.
            with_dwarf.remove(&f.addr());
            let named = glob_match(pattern, f.name());
            match no_dwarf.iter_mut().find(|(_, a)| *a == f.addr()) {
                // Shown by the name asked for (`kill`, not `__GI___kill`).
                Some((n, _)) if named && !glob_match(pattern, n) => *n = f.name().to_string(),
                Some(_) => {}
                None => no_dwarf.push((f.name().to_string(), f.addr())),
            }
        } else if flags.contains(FuncFlags::COLD) {
            cold.push(f);
        } else {
            found.push(Selected {
                func: Some(f),
                symbol: f.symbol().to_string(),
                addr: f.addr(),
                target,
            });
        }
    }
    // Function symbols no DWARF describes (assembly: libc's syscall wrappers `kill`,
    // `chmod`), by name only: traced without arguments, the return value raw.
    for s in t.symbols.functions() {
        if !with_dwarf.contains(&s.addr)
            && symbol_matches(pattern, &s.name)
            && !no_dwarf.iter().any(|(_, a)| *a == s.addr)
        {
            no_dwarf.push((s.name.clone(), s.addr));
        }
    }
    no_dwarf.retain(|(_, a)| !with_dwarf.contains(a));
    Matches {
        found,
        inline_only,
        cold,
        no_dwarf,
    }
}

/// The functions without DWARF: named exactly, each is selected (typed by a caller's
/// declaration where one exists) with a note; a wildcard only says how many it leaves.
fn without_dwarf<'a>(
    targets: &'a [Target],
    prototypes: &[&'a Db],
    target: usize,
    pattern: &str,
    no_dwarf: Vec<(String, u64)>,
    found: &mut Vec<Selected<'a>>,
    notes: &mut Vec<Notice>,
) {
    let t = &targets[target];
    let wild = pattern.contains(['*', '?']);
    if !wild {
        for (name, addr) in no_dwarf {
            let decl = prototype(targets, prototypes, target, &name, addr);
            notes.push(Notice::NoDwarf {
                name: name.clone(),
                declared_in: decl.map(|d| d.module().map_or("?", |m| m.name()).to_string()),
            });
            found.push(Selected {
                func: decl,
                symbol: name,
                addr,
                target,
            });
        }
    } else if !no_dwarf.is_empty() {
        notes.push(Notice::NoDwarfSkipped {
            given: t.given.clone(),
            pattern: pattern.to_string(),
            count: no_dwarf.len(),
        });
    }
}

/// The inlined copies of the selected and inline-only functions, their containers added
/// to `found` and a note said; inline-only functions with copies leave `inline_only`.
fn inlined_copies<'a>(
    t: &'a Target,
    target: usize,
    frames: bool,
    found: &mut Vec<Selected<'a>>,
    inline_only: &mut Vec<sigdb::Function<'a>>,
    notes: &mut Vec<Notice>,
) -> Vec<SelectedCopy<'a>> {
    let mut copies = Vec::new();
    {
        let wanted: HashSet<u32> = found
            .iter()
            .filter_map(|s| s.func.filter(|f| !f.is_declaration()).map(|f| f.index()))
            .chain(inline_only.iter().map(|f| f.index()))
            .collect();
        let (instances, more) = copies_of(&t.db, &wanted);
        let mut inlined: Vec<&str> = Vec::new();
        let mut containers: Vec<&str> = Vec::new();
        for i in &instances {
            let (Some(callee), Some(caller)) = (i.callee(), i.caller()) else {
                continue;
            };
            if !inlined.contains(&callee.name()) {
                inlined.push(callee.name());
            }
            if !containers.contains(&caller.symbol()) {
                containers.push(caller.symbol());
            }
            if !found.iter().any(|s| s.addr == caller.addr()) {
                found.push(Selected {
                    func: Some(caller),
                    symbol: caller.symbol().to_string(),
                    addr: caller.addr(),
                    target,
                });
            }
            copies.push(SelectedCopy {
                instance: *i,
                target,
            });
        }
        // Inline-only functions with copies are traced through them.
        inline_only.retain(|f| !inlined.contains(&f.name()));
        if !copies.is_empty() {
            notes.push(Notice::InlinedCopies {
                inlined: inlined.iter().map(|s| s.to_string()).collect(),
                copies: copies.len(),
                containers: containers.iter().map(|s| s.to_string()).collect(),
                frames,
                more,
            });
        }
    }
    copies
}

/// Notes on what matched and is not probed: `.cold` parts, and functions only inlined.
fn not_probed(
    t: &Target,
    pattern: &str,
    inline_only: &[sigdb::Function<'_>],
    cold: &[sigdb::Function<'_>],
    notes: &mut Vec<Notice>,
) {
    let wild = pattern.contains(['*', '?']);
    for f in cold {
        let parent = f.symbol().strip_suffix(".cold").unwrap_or(f.name());
        notes.push(Notice::ColdPart {
            symbol: f.symbol().to_string(),
            parent: parent.to_string(),
        });
    }
    if !wild {
        for f in inline_only {
            notes.push(Notice::InlineOnly {
                name: f.name().to_string(),
                into: f.inlined_into().map(|c| c.symbol().to_string()).collect(),
                no_instances: t.db.instance_count() == 0,
            });
        }
    } else if !inline_only.is_empty() {
        notes.push(Notice::InlineOnlySkipped {
            given: t.given.clone(),
            pattern: pattern.to_string(),
            count: inline_only.len(),
        });
    }
}
