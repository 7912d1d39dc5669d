//! Each selected function's probe plan: which fields its entry and return events fetch
//! (fetch expressions both user-space engines read: uprobes, and the in-process recorder
//! with xmm and x87 registers too), and how each argument is made of them.

use super::*;

/// One probe argument of an event: its name in the event and the fetch expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`a0`, `a0_1`, `s0`, `ret`).
    pub name: String,
    /// Fetch expression (`%di:x64`, `+0(%si):ustring`, `$retval:x64`).
    pub fetch: String,
    /// A string field (printed quoted, or `(fault)`).
    pub string: bool,
}

/// How an argument's value is obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgPlan {
    /// From event fields: 64-bit words (indices into the entry fields), and for `char *`
    /// the string it points to.
    Fetched {
        /// Word fields, low first.
        words: Vec<usize>,
        /// The `ustring` field.
        string: Option<usize>,
    },
    /// Known without fetching: a constant, `?` (optimized out or unknown), or `?LOC` for
    /// a value in a register no uprobe can read (`?xmm0`, `?rdi:xmm0`, `?st0`).
    Text(String),
}

/// The marker of a value in `loc` that no uprobe can read (uprobes fetch general-purpose
/// registers and memory only): `?xmm0`.
pub fn unreadable(loc: sigdb::Location) -> String {
    format!("?{loc}")
}

/// What an engine can read, which shapes the plan of every value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// xmm0-xmm7 and the x87 `st0` (the in-process recorder; uprobes cannot).
    pub vector: bool,
    /// Arguments are read at the first instruction, always: unoptimized code's frame
    /// slots (filled by the prologue) are read from where the ABI passes them instead.
    pub at_entry: bool,
}

impl Reads {
    /// What uprobes read.
    pub const UPROBES: Reads = Reads {
        vector: false,
        at_entry: false,
    };
    /// What the in-process recorder reads.
    pub const IN_PROCESS: Reads = Reads {
        vector: true,
        at_entry: true,
    };
}

/// Why some values of `probes` will show as `?xmm0`, `?st0` (said once), if any will.
pub fn unreadable_note(probes: &[Probe<'_>]) -> Option<Notice> {
    let mut funcs: Vec<&str> = probes
        .iter()
        .filter(|p| {
            p.ret_text.as_deref().is_some_and(|t| t.starts_with('?'))
                || p.args.iter().any(
                    |(_, a)| matches!(a, ArgPlan::Text(t) if t.len() > 1 && t.starts_with('?')),
                )
        })
        .map(|p| p.symbol.as_str())
        .collect();
    if funcs.is_empty() {
        return None;
    }
    funcs.sort_unstable();
    funcs.dedup();
    Some(Notice::Unreadable(
        funcs.into_iter().map(str::to_string).collect(),
    ))
}

/// A function to probe and its two events.
#[derive(Debug, Clone)]
pub struct Probe<'a> {
    /// The function, when DWARF describes it.
    pub func: Option<Function<'a>>,
    /// Its symbol.
    pub symbol: String,
    /// Index of its [`Target`].
    pub target: usize,
    /// File offset of its entry.
    pub offset: u64,
    /// Where the entry probe sits, in bytes after the entry: 0, or the prologue's length
    /// when arguments are read from their frame slots (`-O0`).
    pub body: u64,
    /// Entry event name.
    pub entry_event: String,
    /// Return event name.
    pub return_event: String,
    /// Entry event fields.
    pub entry_fields: Vec<Field>,
    /// One plan per parameter (empty without `--args`).
    pub args: Vec<(String, ArgPlan)>,
    /// Return event fields (empty for void, or without `--show-retvals`).
    pub ret_fields: Vec<Field>,
    /// A return value no uprobe can read (`?xmm0`), shown instead of fields.
    pub ret_text: Option<String>,
    /// Its ELF address.
    pub addr: u64,
    /// The entry field holding the return address (where the call was made from), read
    /// when calls are placed under inline frames.
    pub ra: Option<usize>,
    /// When the entry probe sits after the prologue: the event of a probe at the entry
    /// reading the return address (field [`RA_FIELD`] alone), just before the entry
    /// event.
    pub ra_event: Option<String>,
    /// Inlined copies starting at the probe's address ([`InlineSite`]s whose values
    /// this probe's entry event reads).
    pub inlines: Vec<usize>,
    /// Its part in non-local jumps: a function that returns twice (`setjmp`, `vfork`)
    /// never has its return hooked (a hooked return would send the second one back to
    /// the first's caller); its call is a leaf, with the value a direct `setjmp` returns.
    pub jump: Jump,
    /// `--fields`: members read at the entry, shown after the arguments.
    pub fields: Vec<super::FieldRead<'a>>,
    /// `--deref`: pointer arguments shown with the data behind them.
    pub derefs: Vec<super::DerefArg<'a>>,
    /// Output parameters, read at the return ([`super::plan_outputs`]).
    pub outs: Vec<super::OutArg<'a>>,
    /// The return fields reading them, after [`Probe::ret_fields`] (the in-process
    /// recorder's `%savedK` fetches).
    pub out_fields: Vec<Field>,
    /// The entry fields whose values the call keeps for them: `%savedK` is entry field
    /// `saved[K]`.
    pub saved: Vec<u16>,
}

impl Probe<'_> {
    /// Add an entry field fetching `fetch` (`--fields`, `--deref`), before the task's
    /// name, the last field; its index.
    pub fn add_entry_field(&mut self, name: String, fetch: String) -> usize {
        let at = self
            .entry_fields
            .iter()
            .position(|f| f.name == super::COMM_FIELD)
            .unwrap_or(self.entry_fields.len());
        self.entry_fields.insert(
            at,
            Field {
                name,
                fetch,
                string: false,
            },
        );
        at
    }

    /// The fetch expression of entry field `word` without its type (`+8(%sp)`): the
    /// address a member path or a block is read from starts there.
    pub fn entry_expr(&self, word: usize) -> String {
        let fetch = &self.entry_fields[word].fetch;
        fetch
            .rsplit_once(':')
            .map_or(fetch.as_str(), |(e, _)| e)
            .to_string()
    }

    /// The `uprobe_events` line of the entry probe.
    pub fn entry_def(&self, group: &str, path: &Path) -> String {
        def(
            'p',
            group,
            &self.entry_event,
            path,
            self.offset + self.body,
            &self.entry_fields,
        )
    }

    /// The `uprobe_events` line of the probe reading the return address at the entry,
    /// when the entry probe sits after the prologue.
    pub fn ra_def(&self, group: &str, path: &Path) -> Option<String> {
        let event = self.ra_event.as_deref()?;
        Some(def('p', group, event, path, self.offset, &ra_fields()))
    }

    /// The `uprobe_events` line of the return probe.
    pub fn return_def(&self, group: &str, path: &Path) -> String {
        def(
            'r',
            group,
            &self.return_event,
            path,
            self.offset,
            &self.ret_fields,
        )
    }
}

pub(crate) fn def(
    kind: char,
    group: &str,
    event: &str,
    path: &Path,
    offset: u64,
    fields: &[Field],
) -> String {
    let mut s = format!("{kind}:{group}/{event} {}:{offset:#x}", path.display());
    for f in fields {
        let _ = write!(s, " {}={}", f.name, f.fetch);
    }
    s
}

/// Sanitize a symbol into a tracefs event name: `[A-Za-z0-9_]`, not starting with a
/// digit, short enough for a `_ret` suffix (the kernel limit is 63 bytes).
pub fn event_base(symbol: &str) -> String {
    let mut s: String = symbol
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(48)
        .collect();
    if s.is_empty() || s.as_bytes()[0].is_ascii_digit() {
        s.insert(0, '_');
    }
    s
}

/// Add numeric field `field` to an entry event's fields, before its strings (a string
/// must be followed by strings only); the string fields `args` refer to move up one.
pub(crate) fn insert_number(
    fields: &mut Vec<Field>,
    args: &mut [(String, ArgPlan)],
    field: Field,
) -> usize {
    let at = fields.iter().position(|f| f.string).unwrap_or(fields.len());
    fields.insert(at, field);
    for (_, plan) in args.iter_mut() {
        if let ArgPlan::Fetched {
            string: Some(i), ..
        } = plan
        {
            if *i >= at {
                *i += 1;
            }
        }
    }
    at
}

/// Plan a probe for each selected function: one per distinct entry address, unique
/// event names. With `call_sites`, the entry events of functions in binaries whose db
/// has inlined copies read their return address (the call site: where in its caller
/// the call was made).
pub fn plan_probes<'a>(
    targets: &[Target],
    selected: &[Selected<'a>],
    with_args: bool,
    with_ret: bool,
    call_sites: bool,
    reads: Reads,
    notes: &mut Vec<Notice>,
) -> Vec<Probe<'a>> {
    let mut seen_addr = HashSet::new();
    let mut names = HashSet::new();
    let mut probes = Vec::new();
    for s in selected {
        if !seen_addr.insert((s.target, s.addr)) {
            continue;
        }
        let t = &targets[s.target];
        let Some(offset) = file_offset(&t.segments, s.addr) else {
            notes.push(Notice::NotLoaded {
                symbol: s.symbol.clone(),
                addr: s.addr,
                path: t.path.clone(),
            });
            continue;
        };
        let base = event_base(&s.symbol);
        let mut n = 1;
        let jump = Jump::of(&s.symbol, s.func);
        let (entry, ret) = loop {
            let b = if n == 1 {
                base.clone()
            } else {
                format!("{base}_{n}")
            };
            let r = format!("{b}_ret");
            if !names.contains(&b) && !names.contains(&r) && !names.contains(&format!("{b}_ra")) {
                break (b, r);
            }
            n += 1;
        };
        names.insert(entry.clone());
        names.insert(ret.clone());
        let (mut entry_fields, mut args) = match s.func {
            Some(f) if with_args => plan_entry(f, reads),
            _ => (Vec::new(), Vec::new()),
        };
        let body = match s.func {
            Some(f) if with_args && !reads.at_entry => body_offset(f),
            _ => 0,
        };
        // The return address is on top of the stack at the entry. After the prologue
        // the function's uretprobe has replaced it by its trampoline: a probe of its own
        // at the entry reads it then.
        let call_site = call_sites && t.db.instance_count() > 0;
        let ra = (call_site && body == 0).then(|| {
            insert_number(
                &mut entry_fields,
                &mut args,
                Field {
                    name: RA_FIELD.into(),
                    fetch: RA_FETCH.into(),
                    string: false,
                },
            )
        });
        let ra_event = (call_site && body != 0).then(|| format!("{entry}_ra"));
        if let Some(e) = &ra_event {
            names.insert(e.clone());
        }
        // The task's name as the probe hits: trace_pipe names a pid from a cache that
        // can hold a previous owner's name (dcg's, before the exec; a dead process's).
        entry_fields.push(Field {
            name: COMM_FIELD.into(),
            fetch: "$comm".into(),
            string: true,
        });
        let (ret_fields, ret_text) = match s.func {
            // Called directly, a setjmp returns 0.
            _ if jump == Jump::Setjmp && with_ret => (Vec::new(), Some("0".into())),
            _ if jump.returns_twice() => (Vec::new(), None),
            Some(f) if with_ret => plan_return(f, reads),
            // No type: the raw register.
            None if with_ret => (
                vec![Field {
                    name: "ret".into(),
                    fetch: "$retval:x64".into(),
                    string: false,
                }],
                None,
            ),
            _ => (Vec::new(), None),
        };
        probes.push(Probe {
            func: s.func,
            symbol: s.symbol.clone(),
            target: s.target,
            offset,
            body,
            entry_event: entry,
            return_event: ret,
            entry_fields,
            args,
            ret_fields,
            ret_text,
            addr: s.addr,
            ra,
            ra_event,
            inlines: Vec::new(),
            jump,
            fields: Vec::new(),
            derefs: Vec::new(),
            outs: Vec::new(),
            out_fields: Vec::new(),
            saved: Vec::new(),
        });
    }
    probes
}

/// Make `p` a probe of a function dcg knows no types of, named `name`: no arguments, the
/// return register raw (an IFUNC's implementation).
pub fn make_raw(p: &mut Probe<'_>, name: &str) {
    p.func = None;
    p.symbol = name.to_string();
    p.entry_fields.retain(|f| f.name == COMM_FIELD);
    p.args.clear();
    p.ra = None;
    p.inlines.clear();
    p.ret_text = None;
    if !p.ret_fields.is_empty() {
        p.ret_fields = vec![Field {
            name: "ret".into(),
            fetch: "$retval:x64".into(),
            string: false,
        }];
    }
}

/// Make `p` a probe of function `name` typed by `f` (an IFUNC's implementation, typed by
/// the IFUNC's declaration): its arguments and return value planned from `f` for `reads`.
pub fn make_typed<'a>(p: &mut Probe<'a>, f: Function<'a>, name: &str, reads: Reads) {
    let with_ret = !p.ret_fields.is_empty() || p.ret_text.is_some();
    make_raw(p, name);
    p.func = Some(f);
    let (mut fields, args) = plan_entry(f, reads);
    fields.append(&mut p.entry_fields);
    p.entry_fields = fields;
    p.args = args;
    if with_ret {
        (p.ret_fields, p.ret_text) = plan_return(f, reads);
    }
}

/// The entry field holding the return address.
pub const RA_FIELD: &str = "ra";

/// The return address at a function's entry.
const RA_FETCH: &str = "+0(%sp):x64";

/// The fields of a [`Probe::ra_event`].
pub fn ra_fields() -> [Field; 1] {
    [Field {
        name: RA_FIELD.into(),
        fetch: RA_FETCH.into(),
        string: false,
    }]
}
