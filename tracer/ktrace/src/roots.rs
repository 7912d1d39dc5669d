//! What `--func` selects in the running kernel: the traceable functions and the db's
//! inlined copies, each pattern expanded against them.

use dcg_dbset::DbSet;

use crate::funcs::{self, Available};

/// What `--func` asks for: the traceable functions, and inlined copies of functions
/// (their containers are among the roots).
pub(crate) struct Resolved<'a> {
    pub(crate) roots: Vec<String>,
    pub(crate) inlines: Vec<sigdb::Instance<'a>>,
    /// Inlined functions asked for, and copies over the limit.
    pub(crate) inline_funcs: Vec<String>,
    pub(crate) inline_more: usize,
}

/// Expand `--func` patterns against the traceable functions and the db's inlined copies
/// (`with_inlines`); explain every pattern that matches nothing.
pub(crate) fn resolve_roots<'a>(
    patterns: &[String],
    avail: &Available,
    set: &'a DbSet,
    with_inlines: bool,
) -> std::result::Result<Resolved<'a>, Vec<funcs::NoMatch>> {
    let mut r = Resolved {
        roots: Vec::new(),
        inlines: Vec::new(),
        inline_funcs: Vec::new(),
        inline_more: 0,
    };
    let mut errors = Vec::new();
    for p in patterns {
        // One match per pattern: the copies and the explanation are read off it.
        let m = funcs::match_pattern(p, set, avail);
        let (copies, more) = if with_inlines {
            funcs::inline_copies(&m, set, avail)
        } else {
            (Vec::new(), 0)
        };
        if m.traceable.is_empty() && copies.is_empty() {
            errors.push(funcs::NoMatch {
                pattern: p.clone(),
                why: funcs::explain(&m, set, avail),
                bpf_traces_copies: !with_inlines
                    && !funcs::inline_copies(&m, set, avail).0.is_empty(),
            });
        }
        for f in m.traceable {
            if !r.roots.contains(&f) {
                r.roots.push(f);
            }
        }
        r.inline_more += more;
        for i in copies {
            let (Some(callee), Some(caller)) = (i.callee(), i.caller()) else {
                continue;
            };
            let c = caller.symbol().to_string();
            if !r.roots.contains(&c) {
                r.roots.push(c);
            }
            let f = callee.name().to_string();
            if !r.inline_funcs.contains(&f) {
                r.inline_funcs.push(f);
            }
            if !r.inlines.contains(&i) {
                r.inlines.push(i);
            }
        }
    }
    if errors.is_empty() {
        Ok(r)
    } else {
        Err(errors)
    }
}
