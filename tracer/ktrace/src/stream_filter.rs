//! The per-session view of an instance's function_graph stream: only the call trees
//! rooted at this session's functions (the global `set_graph_function` also brings other
//! sessions' roots), cut at `--depth` below their root, re-indented so roots print at
//! the top level, without kprobe helper frames. Each line is parsed once here and handed,
//! parsed, to the [`Decoder`], whose call tree joins this session's probe events to their
//! calls and prints a call whose only content was its own probe events as a leaf.

use std::collections::{HashMap, HashSet};

use dcg_calls::decode::Decoder;
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

/// What the filter learned from the lines fed, for the trace loop.
#[derive(Debug, Default)]
pub struct Feedback {
    /// Functions called inside kept trees, with their depth below the root (callee
    /// discovery for lazy probes).
    pub seen: Vec<(String, u32)>,
    /// Top-level (root) calls completed.
    pub completed: u64,
    /// Lost events reported by the stream (`None` count: unknown number).
    pub lost: Vec<Option<u64>>,
}

#[derive(Debug, Default)]
struct TaskState {
    /// Depth of the current kept tree's root.
    root: Option<u32>,
    /// Inside a helper subtree entered at this depth.
    skip: Option<u32>,
    /// An entry-probe event came outside a tree: its values wait for a root entry.
    pre_event: bool,
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

    /// Feed one stream line: parsed here, and when it belongs to a kept tree handed to
    /// `dec` (which collects the output until it is flushed).
    pub fn feed(
        &mut self,
        line: &str,
        dec: &mut Decoder<'_>,
        fb: &mut Feedback,
    ) -> std::io::Result<()> {
        let parsed = fgraph::parse_line(line);
        match &parsed {
            Line::Marker(Marker::LostEvents { count, .. }) => {
                fb.lost.push(*count);
                dec.feed_parsed(line, &parsed, 0)
            }
            Line::Marker(Marker::Overruns(n)) => {
                fb.lost.push(Some(*n));
                dec.feed_parsed(line, &parsed, 0)
            }
            Line::Entry(c) => self.call(line, &parsed, &c.prefix, c.func, false, dec, fb),
            Line::Leaf(c) => self.call(line, &parsed, &c.prefix, c.func, true, dec, fb),
            Line::Exit(e) => self.exit(line, &parsed, &e.prefix, dec, fb),
            Line::Comment(c) => {
                let key = Self::key(&c.prefix);
                let ours = c.event.is_some_and(|e| self.events.contains(e));
                let probe = c.probe.filter(|_| ours);
                let depth = self.depth;
                let t = self.tasks.entry(key).or_default();
                let Some(root) = t.root else {
                    // An entry event can come just before its function's `{`: its values
                    // wait in the call tree for that entry.
                    if probe.is_some_and(|p| !p.is_return) {
                        t.pre_event = true;
                        return dec.feed_parsed(line, &parsed, 0);
                    }
                    return Ok(());
                };
                if probe.is_some() {
                    // Ours: joined to its call by the call tree (an entry event printed
                    // after its call's `{`, as 6.12's fprobes and kprobes do, included).
                    return dec.feed_parsed(line, &parsed, root);
                }
                if t.skip.is_some() {
                    return Ok(());
                }
                if depth > 0 && c.prefix.depth >= root + depth {
                    return Ok(());
                }
                dec.feed_parsed(line, &parsed, root)
            }
            _ => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        line: &str,
        parsed: &Line<'_>,
        prefix: &Prefix<'_>,
        func: &str,
        leaf: bool,
        dec: &mut Decoder<'_>,
        fb: &mut Feedback,
    ) -> std::io::Result<()> {
        let key = Self::key(prefix);
        let is_root = self.roots.contains(func);
        let is_helper = self.helpers.contains(func);
        let limit = self.depth;
        let t = self.tasks.entry(key).or_default();
        let d = prefix.depth;
        if let Some(root) = t.root {
            if d <= root {
                // The tree ended without its `}` (lost events): start over.
                t.root = None;
                t.skip = None;
            }
        }
        let Some(root) = t.root.or_else(|| is_root.then_some(d)) else {
            if std::mem::take(&mut t.pre_event) {
                dec.forget_pending_args(key);
            }
            return Ok(());
        };
        if t.root.is_none() {
            t.root = Some(root);
            t.skip = None;
            t.pre_event = false;
        }
        if let Some(s) = t.skip {
            if d > s {
                return Ok(());
            }
            t.skip = None;
        }
        if is_helper {
            if !leaf {
                t.skip = Some(d);
            }
            return Ok(());
        }
        if limit > 0 && d >= root + limit {
            return Ok(());
        }
        fb.seen.push((func.to_string(), d - root));
        if leaf && d == root {
            fb.completed += 1;
            t.root = None;
        }
        dec.feed_parsed(line, parsed, root)
    }

    fn exit(
        &mut self,
        line: &str,
        parsed: &Line<'_>,
        prefix: &Prefix<'_>,
        dec: &mut Decoder<'_>,
        fb: &mut Feedback,
    ) -> std::io::Result<()> {
        let key = Self::key(prefix);
        let limit = self.depth;
        let Some(t) = self.tasks.get_mut(&key) else {
            return Ok(());
        };
        let Some(root) = t.root else {
            return Ok(());
        };
        let d = prefix.depth;
        if let Some(s) = t.skip {
            if d > s {
                return Ok(());
            }
            t.skip = None;
            if d == s {
                return Ok(());
            }
        }
        if limit > 0 && d >= root + limit {
            return Ok(());
        }
        if d <= root {
            fb.completed += 1;
            t.root = None;
        }
        dec.feed_parsed(line, parsed, root)
    }

    /// Whether any task is inside a kept tree.
    pub fn in_tree(&self) -> bool {
        self.tasks.values().any(|t| t.root.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcg_calls::decode::Options;
    use dcg_dbset::DbSet;

    /// The decoded text of the kept trees (values of functions the empty db does not know
    /// print raw, marked `(raw)`) and the feedback.
    fn run(roots: &[&str], depth: u32, events: &[&str], input: &str) -> (Vec<String>, Run) {
        let mut f = TreeFilter::new(roots.iter().map(|s| s.to_string()), depth);
        for e in events {
            f.add_event(e);
        }
        let set = DbSet::new(Vec::new());
        let mut dec = Decoder::new(
            &set,
            Options {
                collapse_empty: true,
                ..Options::default()
            },
        );
        let mut out = Vec::new();
        let mut fb = Feedback::default();
        for l in input.lines() {
            f.feed(l, &mut dec, &mut fb).unwrap();
        }
        dec.finish(&mut out).unwrap();
        // The test texts lose their leading space to the `\` line continuations.
        let out = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.trim_start().to_string())
            .collect();
        let valueless = dec.valueless().into_iter().map(|(f, _)| f).collect();
        (
            out,
            Run {
                completed: fb.completed,
                valueless,
            },
        )
    }

    struct Run {
        completed: u64,
        /// Calls closed without a value.
        valueless: Vec<String>,
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
 0)               |    /* r_getname_flags: (do_sys_openat2+0x5c/0xe0 <- getname_flags) ret=0xff1 (raw) */
 0)   2.000 us    |    getname_flags(); /* ret=0xff1 (raw) */
 0)               |    putname() {
 0)   2.991 us    |      kmem_cache_free();
 0)   9.433 us    |    }
 0)               |  /* r_do_sys_openat2: (__x64_sys_openat+0x61/0xa0 <- do_sys_openat2) ret=-2 (raw) */
 0) # 2927.522 us |  } /* do_sys_openat2 ret=0xfffffffffffffffe (raw) */";
        assert_eq!(out, expect.lines().map(str::trim_start).collect::<Vec<_>>());
        assert_eq!(fb.completed, 1);
        assert_eq!(fb.valueless, vec!["kmem_cache_free", "putname"]);
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
 1)  10.000 us    |    getname_flags(); /* ret=0xff11 (raw) */
 1)  20.000 us    |  } /* do_sys_openat2 ret=-2 (raw) */";
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
 0)               |  do_sys_openat2(dfd=0xffffff9c) {
 0)               |    /* a_getname: (getname+0x4/0x50) filename=0x7ffc97dcd640 */
 0)               |    /* r_getname: (return_to_handler+0x0/0x50 <- getname) ret=0xff25 (raw) */
 0)   5.000 us    |    getname(filename=0x7ffc97dcd640); /* ret=0xff25 (raw) */
 0)               |    /* a_putname: (putname+0x4/0x80) name=0xff25 */
 0)               |    putname(name=0xff25) {
 0)   2.000 us    |      kmem_cache_free();
 0)   6.000 us    |    }
 0)               |  /* r_do_sys_openat2: (return_to_handler+0x0/0x50 <- do_sys_openat2) ret=-2 (raw) */
 0)  20.000 us    |  } /* do_sys_openat2 ret=0xfffffffffffffffe (raw) */";
        assert_eq!(out, expect.lines().map(str::trim_start).collect::<Vec<_>>());
        assert_eq!(fb.completed, 1);
        assert_eq!(fb.valueless, vec!["kmem_cache_free", "putname"]);
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
        assert!(
            out[1].ends_with("do_sys_openat2(dfd=0xffffff9c) {"),
            "{out:#?}"
        );
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
        let mut expect: Vec<String> = input.lines().map(|l| l.trim_start().into()).collect();
        expect[1] = expect[1].replace("walk() {", "walk(n=0x2) {");
        expect[3] = expect[3].replace("walk() {", "walk(n=0x1) {");
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
        assert!(out[3].ends_with("|  } /* do_sys_openat2 ret=0xfffffffffffffffe (raw) */"));
    }
}
