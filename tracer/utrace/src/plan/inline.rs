//! Inlined copies as frames: the first instruction of each copy, and which registers and
//! stack words its parameters need there.

use super::*;

/// Most stack words read for the parameters of an inlined copy: words `sp + 8k`, k
/// below this.
pub const INLINE_STACK_WORDS: usize = 32;

/// General registers by DWARF number an inlined copy's parameters can be read from
/// (rax..r15).
pub const INLINE_REGS: usize = 16;

/// The first instruction of inlined copies (nested copies can share it): a uprobe of
/// its own, or, at the address of a function's entry probe, fields of that probe's
/// entry event (one probe hit, so the copies open after their container's entry).
#[derive(Debug, Clone)]
pub struct InlineSite<'a> {
    /// The copies starting here, outermost first.
    pub copies: Vec<Instance<'a>>,
    /// Index of its [`Target`].
    pub target: usize,
    /// File offset of the address.
    pub offset: u64,
    /// Its event, when it has its own.
    pub event: Option<String>,
    /// The [`Probe`] whose entry event reads its values, when it has no event.
    pub folded: Option<usize>,
    /// The fields of its own event.
    pub fields: Vec<Field>,
    /// The general registers read, by DWARF number, and their fields.
    pub regs: Vec<(u8, usize)>,
    /// The stack words read (`sp + 8k` at the address, for the db's stack locations: its
    /// `Stack(o)` is the word at `sp + 8 + o`), and their fields.
    pub stack: Vec<(usize, usize)>,
}

impl InlineSite<'_> {
    /// The `uprobe_events` line of its own probe.
    pub fn def(&self, group: &str, path: &Path) -> Option<String> {
        let event = self.event.as_deref()?;
        Some(def('p', group, event, path, self.offset, &self.fields))
    }

    /// The registers (by DWARF number, 0..16) and stack words (from the stack pointer
    /// up) its copies' parameters are read from, out of an event's `values`. What is not
    /// read is 0 and no location of its copies refers to it.
    pub fn values(&self, values: &[Value]) -> ([u64; INLINE_REGS], Vec<u64>) {
        let num = |i: usize| match values.get(i) {
            Some(Value::Num(v)) => *v,
            _ => 0,
        };
        let mut regs = [0u64; INLINE_REGS];
        for &(r, i) in &self.regs {
            regs[usize::from(r)] = num(i);
        }
        let words = self.stack.iter().map(|&(k, _)| k + 1).max().unwrap_or(0);
        let mut stack = vec![0u64; words];
        for &(k, i) in &self.stack {
            stack[k] = num(i);
        }
        (regs, stack)
    }

    /// Whether every value its copies' parameters need was fetched.
    pub fn complete(&self, values: &[Value]) -> bool {
        self.regs
            .iter()
            .map(|&(_, i)| i)
            .chain(self.stack.iter().map(|&(_, i)| i))
            .all(|i| matches!(values.get(i), Some(Value::Num(_))))
    }
}

/// What the parameters of copy `i` need read at its first instruction: general registers
/// (DWARF numbers) and stack words (`sp + 8k`). Other locations (constants, optimized
/// out, xmm) need nothing: the tree shows them as the db says, or `?`.
fn copy_needs(i: &Instance<'_>, regs: &mut Vec<u8>, stack: &mut Vec<usize>) {
    let mut reg = |r: u8| {
        if usize::from(r) < INLINE_REGS && uprobe_reg(r).is_some() && !regs.contains(&r) {
            regs.push(r);
        }
    };
    for loc in i.locations() {
        match loc {
            Location::Reg(r) => reg(r),
            Location::RegPair(a, b) => {
                reg(a);
                reg(b);
            }
            Location::Stack(o) if o >= -8 && (o + 8) % 8 == 0 => {
                let k = (o + 8) as usize / 8;
                if k < INLINE_STACK_WORDS && !stack.contains(&k) {
                    stack.push(k);
                }
            }
            _ => {}
        }
    }
}

/// Plan the probes of inlined copies: one per distinct first instruction, reading the
/// registers and stack words the copies' parameters are in there (`with_args`); at the
/// address of a function's entry probe, the fields are added to its entry event
/// instead. Copies at no file offset are left out with a note. Without `own_probes` (the
/// in-process engine, which reads function entries only) a copy elsewhere gets no probe:
/// its frame opens at its first call, without arguments.
pub fn plan_inlines<'a>(
    targets: &[Target],
    copies: &[SelectedCopy<'a>],
    probes: &mut [Probe<'a>],
    with_args: bool,
    own_probes: bool,
    notes: &mut Vec<Notice>,
) -> Vec<InlineSite<'a>> {
    let mut names: HashSet<String> = probes
        .iter()
        .flat_map(|p| {
            [
                Some(&p.entry_event),
                Some(&p.return_event),
                p.ra_event.as_ref(),
            ]
        })
        .flatten()
        .cloned()
        .collect();
    let mut sites: Vec<InlineSite<'a>> = Vec::new();
    for c in copies {
        let t = &targets[c.target];
        let pc = c.instance.entry_pc();
        let Some(offset) = file_offset(&t.segments, pc) else {
            notes.push(Notice::InlineNotLoaded {
                callee: c.instance.callee().map_or("?", |f| f.name()).to_string(),
                caller: c.instance.caller().map_or("?", |f| f.symbol()).to_string(),
                pc,
                path: t.path.clone(),
            });
            continue;
        };
        let key = (c.target, offset);
        match sites.iter_mut().find(|s| (s.target, s.offset) == key) {
            Some(s) => {
                if !s.copies.contains(&c.instance) {
                    s.copies.push(c.instance);
                }
            }
            None => sites.push(InlineSite {
                copies: vec![c.instance],
                target: c.target,
                offset,
                event: None,
                folded: None,
                fields: Vec::new(),
                regs: Vec::new(),
                stack: Vec::new(),
            }),
        }
    }
    for (si, s) in sites.iter_mut().enumerate() {
        s.copies.sort_by_key(Instance::nesting);
        let mut regs = Vec::new();
        let mut stack = Vec::new();
        if with_args {
            for i in &s.copies {
                copy_needs(i, &mut regs, &mut stack);
            }
        }
        regs.sort_unstable();
        stack.sort_unstable();
        let fetches = regs
            .iter()
            .map(|&r| {
                let reg = uprobe_reg(r).expect("a general register");
                (format!("r{r}"), format!("{reg}:x64"))
            })
            .chain(
                stack
                    .iter()
                    .map(|&k| (format!("w{k}"), format!("+{}(%sp):x64", 8 * k))),
            );
        let folded = probes
            .iter()
            .position(|p| p.target == s.target && p.offset + p.body == s.offset);
        let mut at = Vec::new();
        match folded {
            Some(pi) => {
                let p = &mut probes[pi];
                for (name, fetch) in fetches {
                    at.push(insert_number(
                        &mut p.entry_fields,
                        &mut p.args,
                        Field {
                            name: format!("i{si}_{name}"),
                            fetch,
                            string: false,
                        },
                    ));
                }
                p.inlines.push(si);
            }
            None if !own_probes => {
                regs.clear();
                stack.clear();
            }
            None => {
                for (name, fetch) in fetches {
                    s.fields.push(Field {
                        name,
                        fetch,
                        string: false,
                    });
                    at.push(s.fields.len() - 1);
                }
                let base = format!(
                    "{}_inl",
                    event_base(s.copies[0].callee().map_or("inline", |f| f.name()))
                );
                let mut n = 1;
                let name = loop {
                    let b = if n == 1 {
                        base.clone()
                    } else {
                        format!("{base}_{n}")
                    };
                    if !names.contains(&b) {
                        break b;
                    }
                    n += 1;
                };
                names.insert(name.clone());
                s.event = Some(name);
            }
        }
        s.folded = folded;
        s.regs = regs.iter().copied().zip(at.iter().copied()).collect();
        s.stack = stack
            .iter()
            .copied()
            .zip(at[regs.len()..].iter().copied())
            .collect();
    }
    sites
}
