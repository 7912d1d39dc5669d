//! The per-session view of an instance's function_graph stream: only the call trees
//! rooted at this session's functions (the global `set_graph_function` also brings other
//! sessions' roots), cut at `--depth` below their root, re-indented so roots print at
//! the top level, without kprobe helper frames, with entry-probe events moved before
//! the entry line of their call, and with probed calls that only enclose their exit event
//! printed as leaves again.

use std::collections::{HashMap, HashSet};

use dcg_fgraph::{self as fgraph, Line, Marker, Prefix};

/// Functions that kprobes add to the graph (`kprobe_ftrace_handler() { ... }`,
/// `kretprobe_rethook_handler() { /* event */ }`): dropped with their subtree, the probe
/// events inside kept.
const HELPERS: &[&str] = &[
    "kprobe_ftrace_handler",
    "kretprobe_rethook_handler",
    "kretprobe_trampoline_handler",
    "rethook_trampoline_handler",
    "arch_rethook_trampoline_callback",
    "fprobe_handler",
    "fprobe_return",
];

/// What the filter learned from one line, for the trace loop.
#[derive(Debug, Default)]
pub struct Feedback {
    /// Functions called inside kept trees, with their depth below the root (callee
    /// discovery for lazy probes).
    pub seen: Vec<(String, u32)>,
    /// Functions whose return in a kept tree came without an exit-probe value.
    pub unjoined: Vec<String>,
    /// Top-level (root) calls completed.
    pub completed: u64,
    /// Lost events reported by the stream (`None` count: unknown number).
    pub lost: Vec<Option<u64>>,
}

#[derive(Debug)]
struct Pending {
    line: String,
    depth: u32,
    func: String,
    comment: Option<String>,
    /// Whether this call already has its entry-probe event (printed before its `{`, or
    /// moved there).
    entry_event: bool,
}

#[derive(Debug, Default)]
struct TaskState {
    /// Depth of the current kept tree's root.
    root: Option<u32>,
    /// Open calls in the kept tree: (depth, function).
    stack: Vec<(u32, String)>,
    /// An entry line held back: a `}` right after it makes it a leaf again.
    pending: Option<Pending>,
    /// Inside a helper subtree entered at this depth.
    skip: Option<u32>,
    /// Entry-probe comments seen just before a possible root entry.
    pre: Vec<String>,
    /// Whether the last emitted line was our exit event for this function.
    last_exit_event: Option<String>,
    /// The function whose entry event (ours) was the last line: the next entry of it is
    /// the call that event belongs to.
    last_entry_event: Option<String>,
}

/// The stream filter of one session.
#[derive(Debug)]
pub struct TreeFilter {
    roots: HashSet<String>,
    depth: u32,
    events: HashSet<String>,
    tasks: HashMap<u64, TaskState>,
    helpers: HashSet<&'static str>,
}

impl TreeFilter {
    /// Keep trees rooted at `roots`, at most `depth` levels (0: all).
    pub fn new(roots: impl IntoIterator<Item = String>, depth: u32) -> TreeFilter {
        TreeFilter {
            roots: roots.into_iter().collect(),
            depth,
            events: HashSet::new(),
            tasks: HashMap::new(),
            helpers: HELPERS.iter().copied().collect(),
        }
    }

    /// Names of this session's probe events (comments of other events pass as notes).
    pub fn add_event(&mut self, event: &str) {
        self.events.insert(event.to_string());
    }

    fn key(p: &Prefix<'_>) -> u64 {
        match (p.pid, p.cpu) {
            (Some(pid), _) => pid as u64,
            (None, Some(cpu)) => (1u64 << 32) | cpu as u64,
            (None, None) => 0,
        }
    }

    /// Feed one stream line; kept (rewritten) lines are appended to `out`.
    pub fn feed(&mut self, line: &str, out: &mut Vec<String>, fb: &mut Feedback) {
        let parsed = fgraph::parse_line(line);
        match parsed {
            Line::Marker(Marker::LostEvents { count, .. }) => {
                fb.lost.push(count);
                out.push(line.to_string());
            }
            Line::Marker(Marker::Overruns(n)) => {
                fb.lost.push(Some(n));
                out.push(line.to_string());
            }
            Line::Entry(c) => self.call(line, &c.prefix, c.func, false, out, fb),
            Line::Leaf(c) => self.call(line, &c.prefix, c.func, true, out, fb),
            Line::Exit(e) => self.exit(line, &e.prefix, out, fb),
            Line::Comment(c) => {
                let key = Self::key(&c.prefix);
                let ours = c.event.is_some_and(|e| self.events.contains(e));
                let probe = c.probe.filter(|_| ours);
                let depth = self.depth;
                let t = self.tasks.entry(key).or_default();
                let Some(root) = t.root else {
                    // An entry event can come just before its function's `{`.
                    if let Some(p) = probe.filter(|p| !p.is_return) {
                        t.pre.push(line.to_string());
                        if t.pre.len() > 4 {
                            t.pre.remove(0);
                        }
                        t.last_entry_event = p.func.map(str::to_string);
                    }
                    return;
                };
                if let Some(p) = probe.filter(|p| p.is_return) {
                    let func = p.func.unwrap_or("").to_string();
                    if let Some(pend) = t.pending.as_mut() {
                        if pend.func == func && pend.comment.is_none() {
                            pend.comment = Some(reindent(line, &c.prefix, root));
                            return;
                        }
                    }
                    flush(t, out);
                    t.last_exit_event = Some(func);
                    out.push(reindent(line, &c.prefix, root));
                    return;
                }
                if let Some(p) = probe {
                    // An entry event: before its call's `{` (fprobes on fgraph, 7.x), or
                    // after it (6.12's fprobes on ftrace run after the graph entry;
                    // kprobes print inside `kprobe_ftrace_handler() { }`). The Decoder
                    // joins it to the next entry of its function, so one printed after
                    // the `{` goes before the held-back entry line, unless that call
                    // already had its event (then it is the next call's, e.g. recursion).
                    let func = p.func.unwrap_or("");
                    let text = reindent(line, &c.prefix, root);
                    if let Some(pend) = t.pending.as_mut() {
                        if pend.func == func && !pend.entry_event {
                            pend.entry_event = true;
                            out.push(text);
                            return;
                        }
                    }
                    flush(t, out);
                    t.last_entry_event = Some(func.to_string());
                    out.push(text);
                    return;
                }
                if t.skip.is_some() {
                    return;
                }
                if depth > 0 && c.prefix.depth >= root + depth && probe.is_none() {
                    return;
                }
                flush(t, out);
                out.push(reindent(line, &c.prefix, root));
            }
            _ => {}
        }
    }

    fn call(
        &mut self,
        line: &str,
        prefix: &Prefix<'_>,
        func: &str,
        leaf: bool,
        out: &mut Vec<String>,
        fb: &mut Feedback,
    ) {
        let key = Self::key(prefix);
        let is_root = self.roots.contains(func);
        let is_helper = self.helpers.contains(func);
        let limit = self.depth;
        let t = self.tasks.entry(key).or_default();
        let d = prefix.depth;
        if let Some(root) = t.root {
            if d <= root {
                // The tree ended without its `}` (lost events): start over.
                flush(t, out);
                t.root = None;
                t.stack.clear();
                t.skip = None;
            }
        }
        let Some(root) = t.root.or_else(|| is_root.then_some(d)) else {
            t.pre.clear();
            t.last_entry_event = None;
            return;
        };
        if t.root.is_none() {
            t.root = Some(root);
            t.stack.clear();
            t.skip = None;
            for p in std::mem::take(&mut t.pre) {
                let pp = fgraph::parse_line(&p);
                if let Some(pre) = pp.prefix() {
                    out.push(reindent(&p, pre, root));
                }
            }
        }
        if let Some(s) = t.skip {
            if d > s {
                return;
            }
            t.skip = None;
        }
        if is_helper {
            if !leaf {
                t.skip = Some(d);
            }
            return;
        }
        if limit > 0 && d >= root + limit {
            return;
        }
        fb.seen.push((func.to_string(), d - root));
        flush(t, out);
        let had_entry_event = t.last_entry_event.take().is_some_and(|f| f == func);
        let text = reindent(line, prefix, root);
        if leaf {
            if t.last_exit_event.as_deref() != Some(func) {
                fb.unjoined.push(func.to_string());
            }
            t.last_exit_event = None;
            out.push(text);
            if d == root {
                fb.completed += 1;
                t.root = None;
            }
        } else {
            t.last_exit_event = None;
            t.stack.push((d, func.to_string()));
            t.pending = Some(Pending {
                line: text,
                depth: d,
                func: func.to_string(),
                comment: None,
                entry_event: had_entry_event,
            });
        }
    }

    fn exit(&mut self, line: &str, prefix: &Prefix<'_>, out: &mut Vec<String>, fb: &mut Feedback) {
        let key = Self::key(prefix);
        let limit = self.depth;
        let Some(t) = self.tasks.get_mut(&key) else {
            return;
        };
        let Some(root) = t.root else {
            return;
        };
        let d = prefix.depth;
        if let Some(s) = t.skip {
            if d > s {
                return;
            }
            if d == s {
                t.skip = None;
                return;
            }
            t.skip = None;
        }
        if limit > 0 && d >= root + limit {
            return;
        }
        // Pop the call this `}` closes.
        let mut func = None;
        while let Some((fd, f)) = t.stack.pop() {
            if fd <= d {
                func = Some(f);
                break;
            }
        }
        let text = reindent(line, prefix, root);
        let joined = match t.pending.take() {
            Some(p) if p.depth == d => {
                // `func() {` `/* exit event */` `}`: print as the leaf it is.
                let had = p.comment.is_some();
                if let Some(c) = p.comment {
                    out.push(c);
                }
                out.push(make_leaf(&p.line, &text));
                had
            }
            other => {
                t.pending = other;
                flush(t, out);
                let had = t.last_exit_event.is_some() && t.last_exit_event == func;
                out.push(text);
                had
            }
        };
        t.last_exit_event = None;
        t.last_entry_event = None;
        if let Some(f) = func {
            if !joined {
                fb.unjoined.push(f);
            }
        }
        if d <= root {
            fb.completed += 1;
            t.root = None;
            t.stack.clear();
        }
    }

    /// Lines still held back (end of stream).
    pub fn finish(&mut self, out: &mut Vec<String>) {
        let mut keys: Vec<u64> = self.tasks.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            if let Some(t) = self.tasks.get_mut(&k) {
                flush(t, out);
            }
        }
    }

    /// Whether any task is inside a kept tree.
    pub fn in_tree(&self) -> bool {
        self.tasks.values().any(|t| t.root.is_some())
    }
}

fn flush(t: &mut TaskState, out: &mut Vec<String>) {
    if let Some(p) = t.pending.take() {
        out.push(p.line);
        if let Some(c) = p.comment {
            out.push(c);
        }
    }
}

/// `line` with its indentation set so that depth `root` prints at the top level (depth 0).
fn reindent(line: &str, p: &Prefix<'_>, root: u32) -> String {
    let spaces = p.prefix_end.saturating_sub(p.indent_start);
    let shift = 2 * root as usize;
    if shift == 0 || spaces < shift {
        return line.to_string();
    }
    let mut s = String::with_capacity(line.len());
    s.push_str(&line[..p.indent_start]);
    s.push_str(&" ".repeat(spaces - shift));
    s.push_str(&line[p.prefix_end..]);
    s
}

/// A leaf line from an entry line (`func(args) { /* <-ra */`) and the `}` line closing
/// it (`} /* func ret=X */`): the close's columns, the entry's call, both comments.
fn make_leaf(entry: &str, close: &str) -> String {
    let pe = fgraph::parse_line(entry);
    let pc = fgraph::parse_line(close);
    let (Some(ep), Some(cp)) = (pe.prefix(), pc.prefix()) else {
        return close.to_string();
    };
    let body = &entry[ep.prefix_end..];
    let (call, entry_comment) = match body.find(" {") {
        Some(i) => (&body[..i], comment_inner(&body[i + 2..])),
        None => (body.trim_end(), None),
    };
    let close_body = &close[cp.prefix_end..];
    let close_comment = comment_inner(close_body.trim_start_matches('}'));
    // `} /* func ret=X */` → `ret=X`; `} /* func */` → nothing.
    let ret = close_comment.and_then(|c| {
        let c = c.trim();
        c.split_once(' ').map(|(_, rest)| rest.trim().to_string())
    });
    let mut s = String::with_capacity(close.len() + call.len());
    s.push_str(&close[..cp.prefix_end]);
    s.push_str(call);
    s.push(';');
    let parts: Vec<String> = entry_comment
        .map(|c| c.trim().to_string())
        .into_iter()
        .chain(ret)
        .filter(|c| !c.is_empty())
        .collect();
    if !parts.is_empty() {
        s.push_str(" /* ");
        s.push_str(&parts.join(" "));
        s.push_str(" */");
    }
    s
}

fn comment_inner(s: &str) -> Option<&str> {
    let s = s.trim();
    s.strip_prefix("/*")?.strip_suffix("*/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(roots: &[&str], depth: u32, events: &[&str], input: &str) -> (Vec<String>, Feedback) {
        let mut f = TreeFilter::new(roots.iter().map(|s| s.to_string()), depth);
        for e in events {
            f.add_event(e);
        }
        let mut out = Vec::new();
        let mut fb = Feedback::default();
        for l in input.lines() {
            f.feed(l, &mut out, &mut fb);
        }
        f.finish(&mut out);
        // The test texts lose their leading space to the `\` line continuations.
        let out = out.iter().map(|l| l.trim_start().to_string()).collect();
        (out, fb)
    }

    #[test]
    fn keeps_own_trees_and_collapses_probed_leaves() {
        let input = "\
 0)               |  other_root() {
 0)   1.000 us    |    x();
 0)               |    do_sys_openat2() {
 0)               |      getname_flags() {
 0)               |      /* r_getname_flags: (do_sys_openat2+0x5c/0xe0 <- getname_flags) ret=0xff1 */
 0)   2.000 us    |      }
 0)               |      putname() {
 0)   2.991 us    |        kmem_cache_free();
 0)   9.433 us    |      }
 0)               |    /* r_do_sys_openat2: (__x64_sys_openat+0x61/0xa0 <- do_sys_openat2) ret=-2 */
 0) # 2927.522 us |    }
 0) # 3000.000 us |  }
";
        let (out, fb) = run(
            &["do_sys_openat2"],
            0,
            &["r_getname_flags", "r_do_sys_openat2"],
            input,
        );
        let expect = "\
 0)               |  do_sys_openat2() {
 0)               |    /* r_getname_flags: (do_sys_openat2+0x5c/0xe0 <- getname_flags) ret=0xff1 */
 0)   2.000 us    |    getname_flags();
 0)               |    putname() {
 0)   2.991 us    |      kmem_cache_free();
 0)   9.433 us    |    }
 0)               |  /* r_do_sys_openat2: (__x64_sys_openat+0x61/0xa0 <- do_sys_openat2) ret=-2 */
 0) # 2927.522 us |  }";
        assert_eq!(out, expect.lines().map(str::trim_start).collect::<Vec<_>>());
        assert_eq!(fb.completed, 1);
        assert_eq!(fb.unjoined, vec!["kmem_cache_free", "putname"]);
    }

    #[test]
    fn depth_limit_and_retval_leaf() {
        let input = "\
 1)               |  do_sys_openat2() {
 1)               |    getname_flags() {
 1)   8.597 us    |      x(); /* ret=0x0 */
 1)  10.000 us    |    } /* getname_flags ret=0xff11 */
 1)  20.000 us    |  } /* do_sys_openat2 ret=-2 */
";
        let (out, fb) = run(&["do_sys_openat2"], 2, &[], input);
        let expect = "\
 1)               |  do_sys_openat2() {
 1)  10.000 us    |    getname_flags(); /* ret=0xff11 */
 1)  20.000 us    |  } /* do_sys_openat2 ret=-2 */";
        assert_eq!(out, expect.lines().map(str::trim_start).collect::<Vec<_>>());
        assert_eq!(fb.completed, 1);
    }

    /// Debian 6.12: fprobe entry events print after the `{` of their call (at its depth);
    /// they must come before the entry line, where the Decoder joins them.
    #[test]
    fn entry_events_after_the_brace_move_before_it() {
        let input = "\
 0)               |  do_sys_openat2() {
 0)               |  /* a_do_sys_openat2: (do_sys_openat2+0x0/0xe0) dfd=0xffffff9c */
 0)               |    getname() {
 0)               |    /* a_getname: (getname+0x4/0x50) filename=0x7ffc97dcd640 */
 0)               |    /* r_getname: (return_to_handler+0x0/0x50 <- getname) ret=0xff25 */
 0)   5.000 us    |    }
 0)               |    putname() {
 0)               |    /* a_putname: (putname+0x4/0x80) name=0xff25 */
 0)   2.000 us    |      kmem_cache_free();
 0)   6.000 us    |    }
 0)               |  /* r_do_sys_openat2: (return_to_handler+0x0/0x50 <- do_sys_openat2) ret=-2 */
 0)  20.000 us    |  }
";
        let events = [
            "a_do_sys_openat2",
            "r_do_sys_openat2",
            "a_getname",
            "r_getname",
            "a_putname",
        ];
        let (out, fb) = run(&["do_sys_openat2"], 0, &events, input);
        let expect = "\
 0)               |  /* a_do_sys_openat2: (do_sys_openat2+0x0/0xe0) dfd=0xffffff9c */
 0)               |  do_sys_openat2() {
 0)               |    /* a_getname: (getname+0x4/0x50) filename=0x7ffc97dcd640 */
 0)               |    /* r_getname: (return_to_handler+0x0/0x50 <- getname) ret=0xff25 */
 0)   5.000 us    |    getname();
 0)               |    /* a_putname: (putname+0x4/0x80) name=0xff25 */
 0)               |    putname() {
 0)   2.000 us    |      kmem_cache_free();
 0)   6.000 us    |    }
 0)               |  /* r_do_sys_openat2: (return_to_handler+0x0/0x50 <- do_sys_openat2) ret=-2 */
 0)  20.000 us    |  }";
        assert_eq!(out, expect.lines().map(str::trim_start).collect::<Vec<_>>());
        assert_eq!(fb.completed, 1);
        assert_eq!(fb.unjoined, vec!["kmem_cache_free", "putname"]);
    }

    /// kprobe entry events print inside `kprobe_ftrace_handler() { }`, which is dropped:
    /// the event stays and goes before its call.
    #[test]
    fn kprobe_entry_event_inside_the_helper_kept() {
        let input = "\
 0)               |  do_sys_openat2() {
 0)               |    kprobe_ftrace_handler() {
 0)   1.000 us    |      get_kprobe();
 0)               |      /* a_do_sys_openat2: (do_sys_openat2+0x0/0xe0) dfd=0xffffff9c */
 0)   5.000 us    |    }
 0)   1.000 us    |    putname();
 0)   9.000 us    |  }
";
        let (out, _) = run(&["do_sys_openat2"], 0, &["a_do_sys_openat2"], input);
        assert_eq!(out.len(), 4, "{out:#?}");
        assert!(out[0].contains("/* a_do_sys_openat2:"), "{out:#?}");
        assert!(out[1].ends_with("do_sys_openat2() {"), "{out:#?}");
        assert!(out[2].ends_with("putname();"), "{out:#?}");
    }

    /// Events printed before their `{` (7.x) stay where they are, also for a recursive
    /// call right at the start of its caller: the inner call's event is not the outer's.
    #[test]
    fn entry_events_before_the_brace_stay() {
        let input = "\
 0)               |  /* a_walk: (walk+0x0/0x40) n=0x2 */
 0)               |  walk() {
 0)               |  /* a_walk: (walk+0x0/0x40) n=0x1 */
 0)               |    walk() {
 0)   1.000 us    |      x();
 0)   3.000 us    |    }
 0)   5.000 us    |  }
";
        let (out, fb) = run(&["walk"], 0, &["a_walk"], input);
        let expect: Vec<&str> = input.lines().map(str::trim_start).collect();
        assert_eq!(out, expect);
        assert_eq!(fb.completed, 1);
    }

    #[test]
    fn kretprobe_helpers_dropped() {
        let input = "\
 0)               |  do_sys_openat2() {
 0)               |    kprobe_ftrace_handler() {
 0)   1.000 us    |      get_kprobe();
 0)   1.000 us    |    }
 0)   1.000 us    |    putname();
 0)               |    kretprobe_rethook_handler() {
 0)               |      /* r_do_sys_openat2: (return_to_handler+0x0/0x50 <- do_sys_openat2) ret=-2 */
 0)   3.000 us    |    }
 0)   9.000 us    |  }
";
        let (out, _) = run(&["do_sys_openat2"], 0, &["r_do_sys_openat2"], input);
        assert_eq!(out.len(), 4, "{out:#?}");
        assert!(out[2].contains("r_do_sys_openat2"));
        assert!(out[3].ends_with("|  }"));
    }
}
