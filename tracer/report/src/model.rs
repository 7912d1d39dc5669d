//! The dynamic call graph of a set of saved calls: the call tree (parent links), per
//! function statistics, caller → callee edges and calls per caller call.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};

use dcg_calls::origin::{error_value, Origins};
use dcg_calls::saved_format::{CallRecord, Space, StackFrame};

/// Calls arranged as trees, with every call's function interned.
#[derive(Debug, Default)]
pub struct CallGraph {
    /// The calls, in id (entry) order.
    pub calls: Vec<CallRecord>,
    /// Function index (into [`CallGraph::names`]) of each call.
    pub func: Vec<u32>,
    /// Function display names: `func`, or `func [module]` for module functions (`func
    /// [kernel]` for kernel image functions in calls that say their side).
    pub names: Vec<String>,
    /// Whether each function of [`CallGraph::names`] is a kernel one, in calls that say
    /// their side (a session that traced user and kernel functions together).
    pub kernel: Vec<bool>,
    /// Index of each call's parent call, when it is in the input.
    pub parent: Vec<Option<usize>>,
    /// Indexes of each call's children, in entry order.
    pub children: Vec<Vec<usize>>,
    /// Top-level calls (no parent in the input), in entry order.
    pub roots: Vec<usize>,
}

/// Statistics of one function.
#[derive(Debug, Clone, Default)]
pub struct FuncStats {
    /// Display name (`func` or `func [module]`).
    pub name: String,
    /// Module, for module functions.
    pub module: Option<String>,
    /// Number of calls.
    pub calls: u64,
    /// Calls with a known duration.
    pub timed: u64,
    /// Inclusive time in ns; a call inside another call of the same function (recursion)
    /// is not counted again.
    pub total_ns: u64,
    /// Summed duration of every timed call, recursive ones included (for the mean).
    pub sum_ns: u64,
    /// Exclusive time in ns: each call's duration minus its children's.
    pub self_ns: u64,
    /// Shortest call, ns.
    pub min_ns: Option<u64>,
    /// Longest call, ns.
    pub max_ns: Option<u64>,
    /// Error returns by value (`-ENOENT`; `ERR_PTR(-ENOENT)` counts as `-ENOENT`).
    pub errors: BTreeMap<String, u64>,
}

impl FuncStats {
    /// Number of error returns.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Mean duration, ns.
    pub fn avg_ns(&self) -> Option<u64> {
        (self.timed > 0).then(|| self.sum_ns / self.timed)
    }
}

/// Calls of one function made directly by calls of another.
#[derive(Debug, Clone, Default)]
pub struct EdgeStats {
    /// Calling function (index into the function list).
    pub caller: u32,
    /// Called function.
    pub callee: u32,
    /// Number of calls along the edge.
    pub count: u64,
    /// Summed duration of those calls, ns.
    pub total_ns: u64,
    /// Number of calls of the caller (with or without this callee).
    pub caller_calls: u64,
    /// Most calls of the callee made by one single call of the caller.
    pub max_per_call: u64,
}

impl EdgeStats {
    /// Mean number of callee calls per caller call.
    pub fn per_call(&self) -> f64 {
        if self.caller_calls == 0 {
            0.0
        } else {
            self.count as f64 / self.caller_calls as f64
        }
    }
}

/// Failing top-level calls of one error value, by where the error first appeared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrnoOrigins {
    /// The error value (`-ENOENT`; `ERR_PTR(-ENOENT)` counts as `-ENOENT`).
    pub error: String,
    /// Top-level calls that returned it.
    pub calls: u64,
    /// Where it first appeared, most calls first, then by name.
    pub origins: Vec<OriginStats>,
}

/// One function where an error of failing top-level calls first appeared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginStats {
    /// Display name of the origin function (the top-level function itself when none of
    /// its callees returned the error).
    pub function: String,
    /// Failing top-level calls whose error appeared there.
    pub calls: u64,
    /// Those top-level calls by function: (display name, calls), most first, then by name.
    pub roots: Vec<(String, u64)>,
}

/// The distinct stacks (`dcg trace --stack`) that led to the top-level calls of one
/// function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RootStacks {
    /// Display name of the top-level function.
    pub function: String,
    /// Its top-level calls that carry a stack.
    pub calls: u64,
    /// Each distinct stack (frames innermost first, as [`StackFrame::label`] shows them)
    /// and the calls it led to: most first, then by frames.
    pub stacks: Vec<(Vec<String>, u64)>,
}

/// Everything a report shows, computed once.
#[derive(Debug, Default)]
pub struct Summary {
    /// Per function, indexed like [`CallGraph::names`].
    pub functions: Vec<FuncStats>,
    /// Edges, ordered by (caller name, callee name).
    pub edges: Vec<EdgeStats>,
    /// Number of top-level calls per function, by name.
    pub roots: BTreeMap<String, u64>,
    /// Number of calls.
    pub calls: u64,
    /// Calls with a known duration.
    pub timed: u64,
    /// Calls with a known entry time.
    pub timestamped: u64,
    /// Error returns.
    pub errors: u64,
    /// Error origins of failing top-level calls, by error value: most calls first, then
    /// by value.
    pub origins: Vec<ErrnoOrigins>,
    /// The stacks that led to top-level calls, by function: most calls first, then by
    /// name (only calls saved with `--stack`).
    pub stacks: Vec<RootStacks>,
}

/// Errors building a call graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// Two records carry the same id.
    #[error("call id {0} appears twice")]
    DuplicateId(u64),
}

/// `func` or `func [module]`, a C++ or Rust `func` demangled in full
/// (`int ns::get<int>(ns::Box<int>)`: overloads stay apart).
pub fn display_name(r: &CallRecord) -> String {
    let func = dcg_render::names::display(&r.func);
    match (&r.module, r.space) {
        (Some(m), _) => format!("{func} [{m}]"),
        (None, Some(Space::Kernel)) => format!("{func} {KERNEL_MARK}"),
        (None, _) => func.into_owned(),
    }
}

/// What follows the name of a kernel image function in a session that traced both sides
/// (a module function names its module).
pub const KERNEL_MARK: &str = "[kernel]";

/// What tells a record's function apart: `func` or `func [module]` as saved, `func
/// [kernel]` for a kernel function where the calls say their side.
fn function_key(r: &CallRecord) -> String {
    match (&r.module, r.space) {
        (Some(m), _) => format!("{} [{m}]", r.func),
        (None, Some(Space::Kernel)) => format!("{} {KERNEL_MARK}", r.func),
        (None, _) => r.func.clone(),
    }
}

/// The error value of a call's return, `-ENOENT` (also for `ERR_PTR(-ENOENT)`), when the
/// call returned an error ([`dcg_calls::origin::error_value`]).
pub fn error_of(r: &CallRecord) -> Option<String> {
    error_value(r.ret.as_deref(), r.error).map(str::to_string)
}

impl CallGraph {
    /// Arrange `records` (any order) by id and link parents. A parent link to a call not
    /// in the input (or to a later call) makes a top-level call.
    pub fn new(mut records: Vec<CallRecord>) -> Result<CallGraph, GraphError> {
        records.sort_by_key(|r| r.id);
        if let Some(w) = records.windows(2).find(|w| w[0].id == w[1].id) {
            return Err(GraphError::DuplicateId(w[0].id));
        }
        let index: HashMap<u64, usize> =
            records.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut names = Vec::new();
        let mut kernel = Vec::new();
        let mut func = Vec::with_capacity(records.len());
        let mut parent = Vec::with_capacity(records.len());
        let mut children = vec![Vec::new(); records.len()];
        let mut roots = Vec::new();
        for (i, r) in records.iter().enumerate() {
            // Demangled once per function, not per call.
            let key = function_key(r);
            let f = match ids.get(&key) {
                Some(&f) => f,
                None => {
                    let f = names.len() as u32;
                    ids.insert(key, f);
                    names.push(display_name(r));
                    kernel.push(r.space == Some(Space::Kernel));
                    f
                }
            };
            func.push(f);
            // Ids are given in entry order: a parent always has a smaller id (which also
            // rules out cycles in a damaged file).
            let p = r
                .parent
                .and_then(|p| index.get(&p).copied())
                .filter(|&p| p < i);
            parent.push(p);
            match p {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        Ok(CallGraph {
            calls: records,
            func,
            names,
            kernel,
            parent,
            children,
            roots,
        })
    }

    /// Keep only the calls of function `name` (display name, bare function name, or a
    /// C++/Rust name demangled with or without its parameters) that are not inside
    /// another call of it, and everything they call; those calls become the top-level
    /// calls.
    pub fn restrict_to(self, name: &str) -> CallGraph {
        let matches = |r: &CallRecord| {
            r.func == name
                || function_key(r) == name
                || display_name(r) == name
                || dcg_render::names::demangle(&r.func).is_some_and(|d| d.any(|n| n == name))
        };
        let mut keep = vec![false; self.calls.len()];
        let mut top = vec![false; self.calls.len()];
        for i in 0..self.calls.len() {
            match self.parent[i] {
                Some(p) if keep[p] => keep[i] = true,
                _ => {
                    if matches(&self.calls[i]) {
                        keep[i] = true;
                        top[i] = true;
                    }
                }
            }
        }
        let records = self
            .calls
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep[*i])
            .map(|(i, mut r)| {
                if top[i] {
                    r.parent = None;
                }
                r
            })
            .collect();
        CallGraph::new(records).expect("ids stay unique")
    }

    /// Number of calls.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// No calls at all.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The function names from the top-level call down to call `i`.
    pub fn stack(&self, mut i: usize) -> Vec<u32> {
        let mut v = vec![self.func[i]];
        while let Some(p) = self.parent[i] {
            v.push(self.func[p]);
            i = p;
        }
        v.reverse();
        v
    }

    /// For each call that returned an error: the index of the call where that error first
    /// appeared ([`dcg_calls::origin`]: down through the first child returning the same
    /// error, as deep as it goes; the call itself when no child returned it).
    pub fn origins(&self) -> Vec<Option<usize>> {
        let mut origin = vec![None; self.calls.len()];
        // Children have larger indexes than their parent: each call's children are
        // settled before it.
        for i in (0..self.calls.len()).rev() {
            let Some(e) = error_value(self.calls[i].ret.as_deref(), self.calls[i].error) else {
                continue;
            };
            let mut below = Origins::new();
            for &c in &self.children[i] {
                let call = &self.calls[c];
                if let (Some(o), Some(ce)) =
                    (origin[c], error_value(call.ret.as_deref(), call.error))
                {
                    below.child(ce, o);
                }
            }
            origin[i] = Some(below.origin(e, i));
        }
        origin
    }

    /// The error-origins table: every top-level call that returned an error, grouped by
    /// error value, then by the function where the error first appeared.
    pub fn error_origins(&self) -> Vec<ErrnoOrigins> {
        let origin = self.origins();
        let name = |i: usize| &self.names[self.func[i] as usize];
        let mut by_error: BTreeMap<&str, BTreeMap<&str, BTreeMap<&str, u64>>> = BTreeMap::new();
        for &r in &self.roots {
            let call = &self.calls[r];
            let (Some(e), Some(o)) = (error_value(call.ret.as_deref(), call.error), origin[r])
            else {
                continue;
            };
            *by_error
                .entry(e)
                .or_default()
                .entry(name(o))
                .or_default()
                .entry(name(r))
                .or_default() += 1;
        }
        let by_count = |v: BTreeMap<&str, u64>| {
            let mut v: Vec<(String, u64)> =
                v.into_iter().map(|(n, c)| (n.to_string(), c)).collect();
            v.sort_by(|a, b| (Reverse(a.1), &a.0).cmp(&(Reverse(b.1), &b.0)));
            v
        };
        let mut table: Vec<ErrnoOrigins> = by_error
            .into_iter()
            .map(|(error, origins)| {
                let mut origins: Vec<OriginStats> = origins
                    .into_iter()
                    .map(|(function, roots)| OriginStats {
                        function: function.to_string(),
                        calls: roots.values().sum(),
                        roots: by_count(roots),
                    })
                    .collect();
                origins.sort_by(|a, b| {
                    (Reverse(a.calls), &a.function).cmp(&(Reverse(b.calls), &b.function))
                });
                ErrnoOrigins {
                    error: error.to_string(),
                    calls: origins.iter().map(|o| o.calls).sum(),
                    origins,
                }
            })
            .collect();
        table.sort_by(|a, b| (Reverse(a.calls), &a.error).cmp(&(Reverse(b.calls), &b.error)));
        table
    }

    /// Compute every statistic.
    pub fn summarize(&self) -> Summary {
        let n = self.calls.len();
        let mut functions: Vec<FuncStats> = self
            .names
            .iter()
            .map(|name| FuncStats {
                name: name.clone(),
                ..FuncStats::default()
            })
            .collect();
        let mut s = Summary {
            calls: n as u64,
            ..Summary::default()
        };
        // Calls of each function currently open on the path to call i (recursion check).
        let depth_of = self.recursion_flags();
        for (i, r) in self.calls.iter().enumerate() {
            let f = &mut functions[self.func[i] as usize];
            f.calls += 1;
            if f.module.is_none() {
                f.module.clone_from(&r.module);
            }
            if r.time_ns.is_some() {
                s.timestamped += 1;
            }
            if let Some(d) = r.duration_ns {
                s.timed += 1;
                f.timed += 1;
                f.sum_ns += d;
                if !depth_of[i] {
                    f.total_ns += d;
                }
                let kids: u64 = self.children[i]
                    .iter()
                    .filter_map(|&c| self.calls[c].duration_ns)
                    .sum();
                f.self_ns += d.saturating_sub(kids);
                f.min_ns = Some(f.min_ns.map_or(d, |m| m.min(d)));
                f.max_ns = Some(f.max_ns.map_or(d, |m| m.max(d)));
            }
            if let Some(e) = error_of(r) {
                s.errors += 1;
                *f.errors.entry(e).or_default() += 1;
            }
        }
        for &r in &self.roots {
            *s.roots
                .entry(self.names[self.func[r] as usize].clone())
                .or_default() += 1;
        }
        // Edges, with the most calls of a callee in one caller call.
        let mut edges: HashMap<(u32, u32), EdgeStats> = HashMap::new();
        let mut per_call: HashMap<u32, u64> = HashMap::new();
        for i in 0..n {
            if self.children[i].is_empty() {
                continue;
            }
            per_call.clear();
            let caller = self.func[i];
            for &c in &self.children[i] {
                let callee = self.func[c];
                *per_call.entry(callee).or_default() += 1;
                let e = edges.entry((caller, callee)).or_insert_with(|| EdgeStats {
                    caller,
                    callee,
                    ..EdgeStats::default()
                });
                e.count += 1;
                e.total_ns += self.calls[c].duration_ns.unwrap_or(0);
            }
            for (&callee, &k) in &per_call {
                let e = edges.get_mut(&(caller, callee)).expect("edge just counted");
                e.max_per_call = e.max_per_call.max(k);
            }
        }
        let mut edges: Vec<EdgeStats> = edges
            .into_values()
            .map(|mut e| {
                e.caller_calls = functions[e.caller as usize].calls;
                e
            })
            .collect();
        edges.sort_by(|a, b| {
            (
                &self.names[a.caller as usize],
                &self.names[a.callee as usize],
            )
                .cmp(&(
                    &self.names[b.caller as usize],
                    &self.names[b.callee as usize],
                ))
        });
        s.functions = functions;
        s.edges = edges;
        s.origins = self.error_origins();
        s.stacks = self.root_stacks();
        s
    }

    /// The distinct stacks of the top-level calls that carry one, by function.
    pub fn root_stacks(&self) -> Vec<RootStacks> {
        let mut by_func: BTreeMap<u32, BTreeMap<Vec<String>, u64>> = BTreeMap::new();
        for &r in &self.roots {
            if let Some(stack) = &self.calls[r].stack {
                let frames = stack.iter().map(StackFrame::label).collect();
                *by_func
                    .entry(self.func[r])
                    .or_default()
                    .entry(frames)
                    .or_default() += 1;
            }
        }
        let mut out: Vec<RootStacks> = by_func
            .into_iter()
            .map(|(f, stacks)| {
                let mut stacks: Vec<(Vec<String>, u64)> = stacks.into_iter().collect();
                stacks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                RootStacks {
                    function: self.names[f as usize].clone(),
                    calls: stacks.iter().map(|s| s.1).sum(),
                    stacks,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.calls
                .cmp(&a.calls)
                .then_with(|| a.function.cmp(&b.function))
        });
        out
    }

    /// For each call: whether a call of the same function encloses it.
    fn recursion_flags(&self) -> Vec<bool> {
        let mut flags = vec![false; self.calls.len()];
        // Open calls per function along the current path, walked depth-first.
        let mut open = vec![0u32; self.names.len()];
        let mut stack: Vec<(usize, bool)> = self.roots.iter().rev().map(|&r| (r, false)).collect();
        while let Some((i, done)) = stack.pop() {
            let f = self.func[i] as usize;
            if done {
                open[f] -= 1;
                continue;
            }
            flags[i] = open[f] > 0;
            open[f] += 1;
            stack.push((i, true));
            stack.extend(self.children[i].iter().rev().map(|&c| (c, false)));
        }
        flags
    }
}
