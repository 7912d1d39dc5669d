//! Filters over saved calls (`dcg report`, `dcg decode` of saved records): a record's
//! values read back from their text, and the trees kept — those whose top-level call
//! passes every filter (for `FUNC: EXPR`, where some call of FUNC inside passes) — cut to
//! the calls at least `--min-duration` long and the calls leading to them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use dcg_calls::saved_format::CallRecord;
use dcg_dbset::DbSet;

use crate::bind::{bind, Program};
use crate::error::FilterError;
use crate::eval::{CallValues, Value};
use crate::parse::Filter;
use crate::sig::Signature;

/// A saved call's values, as [`CallValues`]: its arguments and return value as text (a
/// return value of a function missing from the db, marked `(raw)`, read from `ret_raw`).
/// Saved calls carry the task id (ftrace's pid column) as `pid`: `tid` reads it, and
/// the process id is unknown.
pub struct RecordValues<'a>(pub &'a CallRecord);

impl CallValues for RecordValues<'_> {
    fn arg(&self, index: usize) -> Value<'_> {
        self.0
            .args
            .get(index)
            .map_or(Value::Missing, |a| Value::Text(&a.value))
    }

    /// By position when the name there agrees (or the trace gave none), else by name.
    fn arg_named(&self, index: usize, name: &str) -> Value<'_> {
        let args = &self.0.args;
        args.get(index)
            .filter(|a| a.name == name || a.name.is_empty())
            .or_else(|| args.iter().find(|a| a.name == name))
            .map_or(Value::Missing, |a| Value::Text(&a.value))
    }

    /// The argument named by the path (`--fields` shows a member so).
    fn member(&self, path: &str) -> Value<'_> {
        self.0
            .args
            .iter()
            .find(|a| a.name == path)
            .map_or(Value::Missing, |a| Value::Text(&a.value))
    }

    fn ret(&self) -> Value<'_> {
        match (&self.0.ret, &self.0.ret_raw) {
            (Some(r), Some(raw)) if r.ends_with(" (raw)") => Value::Text(raw),
            (Some(r), _) => Value::Text(r),
            (None, _) => Value::Missing,
        }
    }

    fn duration_ns(&self) -> Option<u64> {
        self.0.duration_ns
    }

    fn comm(&self) -> Option<&str> {
        self.0.comm.as_deref()
    }

    fn pid(&self) -> Option<u64> {
        self.0.tgid.map(u64::from)
    }

    fn tid(&self) -> Option<u64> {
        self.0.pid.map(u64::from)
    }

    fn cpu(&self) -> Option<u64> {
        self.0.cpu.map(u64::from)
    }
}

/// A filter that binds to none of the functions it applies to in the records.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct SelectError {
    /// Which filter (index in the list given).
    pub filter: usize,
    /// Why (for the first function it was bound to).
    pub error: FilterError,
}

/// The records of the trees `filters` and `min_duration_ns` keep, in their order
/// ([`keep`]).
pub fn select(
    records: Vec<CallRecord>,
    filters: &[Filter],
    min_duration_ns: Option<u64>,
    dbs: Option<&DbSet>,
) -> Result<Vec<CallRecord>, SelectError> {
    let keep = keep(&records, filters, min_duration_ns, dbs)?;
    Ok(records
        .into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect())
}

/// Programs by filter index and function (`None`: the filter does not bind to it).
type ProgramCache = HashMap<(usize, String), Option<Rc<Program>>>;

/// The program of filter `i` for a record's function.
type Bound<'b> = dyn FnMut(usize, &Filter, &CallRecord) -> Option<Rc<Program>> + 'b;

/// Filters and a minimum duration applied to each tree of a stream as it completes
/// (`dcg decode`). Each filter is bound once per function, on its first call (to the
/// db's signature, else to the parameter names of that call), and kept for the stream;
/// a function a filter does not bind to has no call that passes it.
#[derive(Debug)]
pub struct TreeFilter {
    filters: Vec<Filter>,
    min_duration_ns: Option<u64>,
    /// By filter index and function: the bound program, `None` when refused.
    programs: RefCell<ProgramCache>,
}

impl TreeFilter {
    /// `filters`, all of which must hold, and `--min-duration` in ns.
    pub fn new(filters: Vec<Filter>, min_duration_ns: Option<u64>) -> TreeFilter {
        TreeFilter {
            filters,
            min_duration_ns,
            programs: RefCell::default(),
        }
    }

    /// Bind the filters now, before anything is traced, to the signatures of the
    /// functions they apply to: each filter without `FUNC:` to every root in `roots`
    /// (by name), a `FUNC: EXPR` filter to the signature `find` gives for FUNC. A filter
    /// that binds to no root, or whose FUNC `find` does not know (`unknown`: where it was
    /// looked for), is refused. The programs are kept for the stream; functions met later
    /// bind as [`TreeFilter::new`]'s do.
    pub fn bound(
        filters: Vec<Filter>,
        min_duration_ns: Option<u64>,
        roots: &[(String, Signature)],
        find: &dyn Fn(&str) -> Option<(String, Signature)>,
        unknown: &str,
    ) -> Result<TreeFilter, SelectError> {
        let mut cache = ProgramCache::new();
        for (i, f) in filters.iter().enumerate() {
            let refuse = |error| SelectError { filter: i, error };
            if let Some((name, span)) = &f.func {
                let Some((key, sig)) = find(name) else {
                    return Err(refuse(FilterError {
                        kind: crate::error::ErrorKind::UnknownFunction {
                            name: name.clone(),
                            where_: unknown.to_string(),
                        },
                        span: span.clone(),
                    }));
                };
                let p = bind(f, &sig).map_err(refuse)?;
                cache.insert((i, key), Some(Rc::new(p)));
                continue;
            }
            let mut first_error = None;
            for (name, sig) in roots {
                match bind(f, sig) {
                    Ok(p) => {
                        cache.insert((i, name.clone()), Some(Rc::new(p)));
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                        cache.insert((i, name.clone()), None);
                    }
                }
            }
            if let Some(e) =
                first_error.filter(|_| !cache.iter().any(|((j, _), p)| *j == i && p.is_some()))
            {
                return Err(refuse(e));
            }
        }
        Ok(TreeFilter {
            filters,
            min_duration_ns,
            programs: RefCell::new(cache),
        })
    }

    /// The tests a top-level call of `root` must pass at its entry for some filter
    /// combination to keep its tree ([`Program::entry_tests`] of every filter without
    /// `FUNC:`, as bound to `root`; tests on members only when the engine reads
    /// `members` at the entry); empty when a filter is not bound to it.
    pub fn entry_tests(&self, root: &str, members: bool) -> Vec<crate::EntryTest> {
        let programs = self.programs.borrow();
        let mut out = Vec::new();
        for (i, f) in self.filters.iter().enumerate() {
            if f.func.is_some() {
                continue;
            }
            match programs.get(&(i, root.to_string())) {
                Some(Some(p)) => out.extend(p.entry_tests(members)),
                _ => return Vec::new(),
            }
        }
        out
    }

    /// Whether the programs bound so far read parameters (or members through them), and
    /// the return value: what an engine must capture for them (`--args`,
    /// `--show-retvals`).
    pub fn reads(&self) -> (bool, bool) {
        let (mut args, mut ret) = (false, false);
        for p in self.programs.borrow().values().flatten() {
            for f in p.fields() {
                args |= matches!(
                    f,
                    crate::bind::Field::Arg(_) | crate::bind::Field::Member(_)
                );
                ret |= f == crate::bind::Field::Ret;
            }
        }
        (args, ret)
    }

    /// The member paths the programs bound so far read, as `--fields FUNC:PATH` would
    /// ask for them: (the function as the programs were bound to it, the path), each
    /// once, by function, then in the order the filters name them. An engine reads them
    /// as it reads `--fields` and shows them so.
    pub fn members(&self) -> Vec<(String, String)> {
        let programs = self.programs.borrow();
        let mut found: Vec<(&str, usize, usize, &str)> = Vec::new();
        for ((i, func), p) in programs.iter() {
            for (j, path) in p.iter().flat_map(|p| p.members()).enumerate() {
                found.push((func, *i, j, path));
            }
        }
        found.sort_unstable();
        let mut out: Vec<(String, String)> = Vec::new();
        for (func, _, _, path) in found {
            if !out.iter().any(|(f, p)| f == func && p == path) {
                out.push((func.to_string(), path.to_string()));
            }
        }
        out
    }
}

impl dcg_calls::selected::TreeSelect for TreeFilter {
    fn select(&self, calls: &[CallRecord], dbs: &DbSet) -> Vec<bool> {
        let mut cache = self.programs.borrow_mut();
        let mut bound = |i: usize, f: &Filter, r: &CallRecord| {
            cache
                .entry((i, r.func.clone()))
                .or_insert_with(|| {
                    bind(f, &signature(r, Some(dbs), &self.filters))
                        .ok()
                        .map(Rc::new)
                })
                .clone()
        };
        keep_with(
            calls,
            &roots(calls),
            &self.filters,
            self.min_duration_ns,
            &mut bound,
        )
    }
}

/// Bind now the `FUNC: EXPR` filters whose FUNC `dbs` know, so that a stream decoded
/// later refuses none of them tree by tree: the first refused, with its index.
pub fn check_functions(filters: &[Filter], dbs: &DbSet) -> Result<(), SelectError> {
    for (i, f) in filters.iter().enumerate() {
        let Some((name, _)) = &f.func else { continue };
        if let Some(func) = dbs.find(name, None) {
            bind(f, &Signature::of(&func, filters))
                .map_err(|error| SelectError { filter: i, error })?;
        }
    }
    Ok(())
}

/// One flag per record: whether it is kept. The trees kept are those whose top-level
/// call passes every filter (a `FUNC: EXPR` filter: where some call of FUNC passes),
/// cut, with a minimum duration, to the calls at least that long and their callers.
/// Each filter is bound once per function: to its signature in `dbs` when they have it
/// (the records' values read back by their types), else to its parameter names as the
/// records give them (values read back as what their text is); a function it does not
/// bind to has no call that passes it, and a filter that binds to none of its functions
/// is refused.
pub fn keep(
    records: &[CallRecord],
    filters: &[Filter],
    min_duration_ns: Option<u64>,
    dbs: Option<&DbSet>,
) -> Result<Vec<bool>, SelectError> {
    let roots = roots(records);
    let sigs = signatures(records, dbs, filters);
    let mut programs = Vec::with_capacity(filters.len());
    for (i, f) in filters.iter().enumerate() {
        programs.push(
            bind_each(f, &sigs, records, &roots)
                .map_err(|error| SelectError { filter: i, error })?,
        );
    }
    let mut bound =
        |i: usize, _: &Filter, r: &CallRecord| programs[i].get(r.func.as_str()).cloned();
    Ok(keep_with(
        records,
        &roots,
        filters,
        min_duration_ns,
        &mut bound,
    ))
}

/// [`keep`] with the program of filter `i` for a record's function from `bound`.
fn keep_with(
    records: &[CallRecord],
    roots: &[usize],
    filters: &[Filter],
    min_duration_ns: Option<u64>,
    bound: &mut Bound<'_>,
) -> Vec<bool> {
    let mut keep_tree: HashMap<usize, bool> = roots.iter().map(|&r| (r, true)).collect();
    for (i, f) in filters.iter().enumerate() {
        let mut passed: HashMap<usize, bool> = HashMap::new();
        for (j, r) in records.iter().enumerate() {
            let applies = match &f.func {
                Some((name, _)) => is_named(r, name),
                None => roots[j] == j,
            };
            if !applies || passed.get(&roots[j]) == Some(&true) {
                continue;
            }
            let ok = bound(i, f, r).is_some_and(|p| p.matches(&RecordValues(r)));
            *passed.entry(roots[j]).or_default() |= ok;
        }
        for (root, keep) in keep_tree.iter_mut() {
            *keep &= passed.get(root) == Some(&true);
        }
    }
    let keep: Vec<bool> = roots.iter().map(|r| keep_tree[r]).collect();
    match min_duration_ns {
        Some(min) => at_least(records, &keep, min),
        None => keep,
    }
}

fn is_named(r: &CallRecord, name: &str) -> bool {
    r.func == name || r.demangled.as_deref() == Some(name)
}

/// `filter` bound to each function it applies to; the first error when it binds to none.
fn bind_each<'r>(
    filter: &Filter,
    sigs: &HashMap<&'r str, Signature>,
    records: &'r [CallRecord],
    roots: &[usize],
) -> Result<HashMap<&'r str, Rc<Program>>, FilterError> {
    let mut programs = HashMap::new();
    let mut first_error = None;
    for (j, r) in records.iter().enumerate() {
        let applies = match &filter.func {
            Some((name, _)) => is_named(r, name),
            None => roots[j] == j,
        };
        if !applies || programs.contains_key(r.func.as_str()) {
            continue;
        }
        match bind(filter, &sigs[r.func.as_str()]) {
            Ok(p) => {
                programs.insert(r.func.as_str(), Rc::new(p));
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if programs.is_empty() => Err(e),
        _ => Ok(programs),
    }
}

/// Each function's signature ([`signature`]), from its record with the most arguments.
fn signatures<'r>(
    records: &'r [CallRecord],
    dbs: Option<&DbSet>,
    filters: &[Filter],
) -> HashMap<&'r str, Signature> {
    let mut best: HashMap<&str, &CallRecord> = HashMap::new();
    for r in records {
        let e = best.entry(r.func.as_str()).or_insert(r);
        if r.args.len() > e.args.len() {
            *e = r;
        }
    }
    best.into_iter()
        .map(|(f, r)| (f, signature(r, dbs, filters)))
        .collect()
}

/// The signature of `r`'s function: the db's (with the paths `filters` name), else the
/// parameter names `r` gives.
fn signature(r: &CallRecord, dbs: Option<&DbSet>, filters: &[Filter]) -> Signature {
    dbs.and_then(|s| s.find(&r.func, r.module.as_deref()))
        .map(|func| Signature::of(&func, filters))
        .unwrap_or_else(|| Signature::untyped(r.args.iter().map(|a| a.name.clone())))
}

/// The index of each record's top-level call (a parent absent from the records makes a
/// call top-level, as `dcg report` reads them).
fn roots(records: &[CallRecord]) -> Vec<usize> {
    let by_id: HashMap<u64, usize> = records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut order: Vec<usize> = (0..records.len()).collect();
    // Parents have smaller ids: in id order, a parent's root is known before its children's.
    order.sort_by_key(|&i| records[i].id);
    let mut root: Vec<usize> = (0..records.len()).collect();
    for i in order {
        if let Some(&p) = records[i].parent.and_then(|p| by_id.get(&p)) {
            if records[p].id < records[i].id {
                root[i] = root[p];
            }
        }
    }
    root
}

/// Of the records `keep` says, those at least `min` ns long and their callers.
fn at_least(records: &[CallRecord], keep: &[bool], min: u64) -> Vec<bool> {
    let by_id: HashMap<u64, usize> = records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut out = vec![false; records.len()];
    for (i, r) in records.iter().enumerate() {
        if !keep[i] || r.duration_ns.is_none_or(|d| d < min) {
            continue;
        }
        let mut at = i;
        while !out[at] {
            out[at] = true;
            match records[at].parent.and_then(|p| by_id.get(&p)) {
                Some(&p) if records[p].id < records[at].id => at = p,
                _ => break,
            }
        }
    }
    out
}
