//! Which kernel functions can be traced (`available_filter_functions`), each `--func`
//! pattern matched once ([`match_pattern`]: the traceable functions and the db's
//! functions it names), the inlined copies of what it names, and the explanation when it
//! names nothing traceable.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use sigdb::{FuncFlags, TypeKind};

pub use dcg_dbset::glob::{glob_match, is_glob};
use dcg_dbset::DbSet;

/// The traceable functions of the running kernel.
#[derive(Debug, Default)]
pub struct Available {
    /// Names in file order, deduplicated (`func` or `func [module]` stripped to `func`).
    pub names: Vec<String>,
    set: HashSet<String>,
    /// Every site with its address, when read from `available_filter_functions_addrs`.
    sites: Option<Vec<Site>>,
}

impl Available {
    /// Read the tracefs root's `available_filter_functions_addrs` (6.5+: the BPF engine
    /// needs the addresses too, and the kernel writes either file at the same cost, a
    /// noticeable one under emulation), else `available_filter_functions`.
    pub fn read(root: &Path) -> std::io::Result<Available> {
        match std::fs::read_to_string(root.join("available_filter_functions_addrs")) {
            Ok(text) => Ok(Available::from_sites(parse_sites(&text))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = std::fs::read_to_string(root.join("available_filter_functions"))?;
                Ok(Available::parse(&text))
            }
            Err(e) => Err(e),
        }
    }

    /// Parse `available_filter_functions`' text.
    pub fn parse(text: &str) -> Available {
        let mut a = Available::default();
        for line in text.lines() {
            if let Some(name) = line.split_whitespace().next() {
                a.add(name);
            }
        }
        a
    }

    /// The functions of `available_filter_functions_addrs`' sites.
    pub fn from_sites(sites: Vec<Site>) -> Available {
        let mut a = Available::default();
        for s in &sites {
            a.add(&s.name);
        }
        a.sites = Some(sites);
        a
    }

    fn add(&mut self, name: &str) {
        if self.set.insert(name.to_string()) {
            self.names.push(name.to_string());
        }
    }

    /// The sites with their addresses, if they were read (taken: the BPF session keeps
    /// them).
    pub fn sites(&self) -> Option<&[Site]> {
        self.sites.as_deref()
    }

    /// Whether `name` is traceable.
    pub fn contains(&self, name: &str) -> bool {
        self.set.contains(name)
    }

    /// Names matching a glob, in file order.
    pub fn matching(&self, pattern: &str) -> Vec<String> {
        if !is_glob(pattern) {
            return if self.contains(pattern) {
                vec![pattern.to_string()]
            } else {
                Vec::new()
            };
        }
        self.names
            .iter()
            .filter(|n| glob_match(pattern, n))
            .cloned()
            .collect()
    }
}

/// One traceable site (`available_filter_functions_addrs`).
#[derive(Debug, Clone)]
pub struct Site {
    /// Address.
    pub addr: u64,
    /// Function name.
    pub name: String,
    /// Module, for module functions.
    pub module: Option<String>,
}

/// Parse `available_filter_functions_addrs` (`ffffffff81001234 name [module]`).
pub fn parse_sites(text: &str) -> Vec<Site> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let name = it.next()?.to_string();
            let module = it
                .next()
                .and_then(|m| m.strip_prefix('[')?.strip_suffix(']'))
                .map(str::to_string);
            Some(Site { addr, name, module })
        })
        .collect()
}

pub use dcg_dbset::inlines::INLINE_MAX;

/// What one `--func` pattern names: the traceable functions and the db's functions.
#[derive(Debug, Clone)]
pub struct PatternMatch<'a> {
    /// The pattern.
    pub pattern: String,
    /// The traceable functions it names, in file order.
    pub traceable: Vec<String>,
    /// The db's functions it names (a glob over their names, else by name), each with the
    /// index of its db, in db order.
    pub in_db: Vec<(usize, sigdb::Function<'a>)>,
}

/// Match `pattern` once against the traceable functions and the db's functions.
pub fn match_pattern<'a>(pattern: &str, set: &'a DbSet, avail: &Available) -> PatternMatch<'a> {
    let mut in_db = Vec::new();
    for (i, db) in set.dbs().iter().enumerate() {
        if is_glob(pattern) {
            in_db.extend(
                db.functions()
                    .filter(|f| glob_match(pattern, f.name()))
                    .map(|f| (i, f)),
            );
        } else {
            in_db.extend(db.by_name(pattern).map(|f| (i, f)));
        }
    }
    PatternMatch {
        pattern: pattern.to_string(),
        traceable: avail.matching(pattern),
        in_db,
    }
}

/// The inlined copies of the functions a pattern names, in traceable containers, by the
/// db's inline instances; at most [`INLINE_MAX`], and how many more there were.
pub fn inline_copies<'a>(
    m: &PatternMatch<'a>,
    set: &'a DbSet,
    avail: &Available,
) -> (Vec<sigdb::Instance<'a>>, usize) {
    let mut found = Vec::new();
    let mut more = 0;
    for (i, db) in set.dbs().iter().enumerate() {
        if db.instance_count() == 0 {
            continue;
        }
        let wanted: HashSet<u32> = m
            .in_db
            .iter()
            .filter(|(d, _)| *d == i)
            .map(|(_, f)| f.index())
            .collect();
        // Copies inside another inlined copy are found through their own entry.
        let (copies, over) =
            dcg_dbset::inlines::copies_of(db, &wanted, |c| avail.contains(c.symbol()));
        more += over;
        for i in copies {
            if found.len() < INLINE_MAX {
                found.push(i);
            } else {
                more += 1;
            }
        }
    }
    (found, more)
}

/// Why a pattern selects no traceable function (for the binary to word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmatched {
    /// A glob no function matches, traceable or in the db.
    Nothing,
    /// A glob that matches only functions of the db that are not traceable (inlined or
    /// notrace): up to five of them, `more` when there may be others.
    OnlyUntraceable {
        /// Some of them.
        names: Vec<String>,
        /// Others may match too.
        more: bool,
    },
    /// Neither the db nor `available_filter_functions` knows the name.
    Unknown,
    /// The function is marked notrace.
    Notrace,
    /// The function is only inlined, and the db names no caller.
    InlinedNowhere,
    /// The function is inlined into these callers.
    Inlined {
        /// The callers, traceable ones first (up to eight).
        callers: Vec<String>,
        /// How many more callers there are.
        more: usize,
        /// A traceable caller to try instead.
        try_caller: Option<String>,
        /// What a rebuilt db would trace.
        rebuild: Rebuild,
    },
    /// The function is in the db but not in `available_filter_functions`.
    NotPatchable,
}

/// What another db would do for an inlined function's copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rebuild {
    /// Nothing: the db has its copies.
    Nothing,
    /// The db has no inline instances: one that has them traces the copies.
    WithInlineInstances,
    /// The db holds none of its copies (header `inline` functions need
    /// `--all-inline-instances`).
    WithAllInlineInstances,
}

/// Why a pattern selected nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoMatch {
    /// The pattern.
    pub pattern: String,
    /// Why.
    pub why: Unmatched,
    /// The BPF engine would trace its inlined copies (`--engine bpf`).
    pub bpf_traces_copies: bool,
}

/// Why `m` selects no traceable function.
pub fn explain(m: &PatternMatch<'_>, set: &DbSet, avail: &Available) -> Unmatched {
    let pattern = m.pattern.as_str();
    if is_glob(pattern) {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for i in 0..set.dbs().len() {
            for (_, f) in m.in_db.iter().filter(|(d, _)| *d == i) {
                names.insert(f.name().to_string());
                if names.len() > 5 {
                    break;
                }
            }
        }
        if names.is_empty() {
            return Unmatched::Nothing;
        }
        let names: Vec<String> = names.into_iter().take(5).collect();
        let more = names.len() == 5;
        return Unmatched::OnlyUntraceable { names, more };
    }
    let found: Vec<_> = m.in_db.iter().map(|(_, f)| *f).collect();
    if found.is_empty() {
        return Unmatched::Unknown;
    }
    let mut callers: Vec<String> = Vec::new();
    let mut inline_only = true;
    let mut notrace = false;
    for f in &found {
        if f.flags().contains(FuncFlags::NOTRACE) {
            notrace = true;
        }
        if !f.flags().contains(FuncFlags::INLINE_ONLY) {
            inline_only = false;
        }
        for c in f.inlined_into() {
            let n = c.symbol().to_string();
            if !callers.contains(&n) {
                callers.push(n);
            }
        }
    }
    if notrace {
        return Unmatched::Notrace;
    }
    if inline_only || (!callers.is_empty() && !found.iter().any(|f| avail.contains(f.symbol()))) {
        if callers.is_empty() {
            return Unmatched::InlinedNowhere;
        }
        // Traceable callers first; suggest the first of them.
        callers.sort_by_key(|c| !avail.contains(c));
        let try_caller = callers.iter().find(|c| avail.contains(c)).cloned();
        let more = callers.len().saturating_sub(8);
        callers.truncate(8);
        let rebuild = if !set.has_inline_instances() {
            Rebuild::WithInlineInstances
        } else if found.iter().all(|f| f.inlined_copies().next().is_none()) {
            Rebuild::WithAllInlineInstances
        } else {
            Rebuild::Nothing
        };
        return Unmatched::Inlined {
            callers,
            more,
            try_caller,
            rebuild,
        };
    }
    Unmatched::NotPatchable
}

/// Whether the db says `name` returns void (unknown functions: false).
pub fn returns_void(set: &DbSet, name: &str) -> bool {
    set.find(name, None)
        .is_some_and(|f| f.ret().resolve().kind() == TypeKind::Void)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_when_the_kernel_lists_addresses() {
        let dir = std::env::temp_dir().join(format!("dcg-avail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("available_filter_functions"), "a\nb [m]\n").unwrap();
        // Without the addresses: names only.
        let a = Available::read(&dir).unwrap();
        assert_eq!(a.names, ["a", "b"]);
        assert!(a.sites().is_none());
        // With them: the same names, and the sites (a name twice: both sites, one name).
        std::fs::write(
            dir.join("available_filter_functions_addrs"),
            "ffffffff81000010 a\nffffffff81000020 a\nffffffffc0000010 b [m]\n",
        )
        .unwrap();
        let a = Available::read(&dir).unwrap();
        assert_eq!(a.names, ["a", "b"]);
        assert!(a.contains("b") && !a.contains("m"));
        let sites = a.sites().unwrap();
        assert_eq!(sites.len(), 3);
        assert_eq!(sites[2].addr, 0xffffffffc0000010);
        assert_eq!(sites[2].module.as_deref(), Some("m"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sites_with_modules() {
        let s = parse_sites(
            "ffffffff81001000 do_one_initcall\nffffffffc0001010 bm_status_write [binfmt_misc]\nbad\n",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].addr, s[0].name.as_str()),
            (0xffffffff81001000, "do_one_initcall")
        );
        assert_eq!(s[1].module.as_deref(), Some("binfmt_misc"));
    }
}
