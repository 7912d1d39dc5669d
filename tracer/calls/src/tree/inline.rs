//! Inline frames (flat sources): the code a function inlined from others, shown as calls
//! of those functions. The db's inline instances say which code of a function is an
//! inlined copy of what (ranges, nesting, where its parameters are at its first
//! instruction). A call made from inside a copy's ranges is placed under a frame for it;
//! the frame opens at the first such call (or at a probe on the copy's entry,
//! [`CallTree::enter_inline`], which also gives its arguments) and closes at the first
//! call from outside it, or when its container returns. Inline frames have no return
//! value: DWARF does not say where an inlined copy leaves it.

use std::io;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use sigdb::Instance;

use super::flat::close_kind;
use super::{CallTree, CodeSite};
use crate::funcs::FuncId;
use crate::sink::{CallView, Inlined, Kind, Layout, Sink, Task};
use crate::tree::{Entry, Frame, Shape};

/// The inlined copies a tree has met, and which copies hold each call site.
#[derive(Default)]
pub(super) struct Inlines<'a> {
    copies: Vec<Copy<'a>>,
    /// Copy index by instance.
    by_instance: FxHashMap<Instance<'a>, u32>,
    /// The copies holding a call site, outermost first.
    chains: FxHashMap<CodeSite, Rc<[u32]>>,
}

/// One inlined copy.
struct Copy<'a> {
    instance: Instance<'a>,
    /// The inlined function.
    func: FuncId,
    /// The enclosing copy (an inline inside an inline), self copies skipped.
    parent: Option<u32>,
    container: &'a str,
    /// A copy of the container inlined into its own body (directly, or inside such
    /// copies only): not a frame, since it would only repeat the function it is in.
    own: bool,
}

impl<'a> CallTree<'a> {
    /// The copy of `instance` (and of its enclosing copies), interned.
    fn copy_of(&mut self, instance: Instance<'a>) -> Option<u32> {
        let inl = self.inlines.as_mut()?;
        if let Some(&c) = inl.by_instance.get(&instance) {
            return Some(c);
        }
        let parent = match instance.parent() {
            Some(p) => Some(self.copy_of(p)?),
            None => None,
        };
        let callee = instance.callee()?;
        let caller = instance.caller()?;
        let own = instance.is_self_copy();
        // A self copy's children hang from its own parent.
        let parent = match parent {
            Some(p) => {
                let inl = self.inlines.as_ref()?;
                let up = &inl.copies[p as usize];
                if up.own {
                    up.parent
                } else {
                    Some(p)
                }
            }
            None => None,
        };
        let container = caller.symbol();
        let func = self.funcs.intern_function(callee, None);
        let inl = self.inlines.as_mut()?;
        let c = inl.copies.len() as u32;
        inl.copies.push(Copy {
            instance,
            func,
            parent,
            container,
            own,
        });
        inl.by_instance.insert(instance, c);
        Some(c)
    }

    /// The copies holding `site`, outermost first.
    fn chain_at(&mut self, site: CodeSite) -> Rc<[u32]> {
        if let Some(c) = self.inlines.as_ref().and_then(|i| i.chains.get(&site)) {
            return Rc::clone(c);
        }
        let mut found: Vec<Instance<'a>> = Vec::new();
        if let Some(f) = self.funcs.get(site.func).func {
            let at = f.addr() + site.offset;
            // The return address is the byte after the call instruction, which belongs
            // to the copy that made the call even when it is the copy's last.
            let call = at.saturating_sub(1);
            found = f
                .inline_instances()
                .filter(|i| i.ranges().any(|(s, e)| s <= call && call < e))
                .collect();
        }
        // Outermost first: each copy's parent precedes it.
        found.sort_by_key(Instance::nesting);
        let mut chain = Vec::with_capacity(found.len());
        for i in found {
            let Some(c) = self.copy_of(i) else { break };
            let Some(copy) = self.inlines.as_ref().map(|l| &l.copies[c as usize]) else {
                break;
            };
            if copy.own {
                continue;
            }
            if copy.parent != chain.last().copied() {
                break; // not nested as DWARF should have it: stop at what is
            }
            chain.push(c);
        }
        let chain: Rc<[u32]> = chain.into();
        if let Some(inl) = self.inlines.as_mut() {
            inl.chains.insert(site, Rc::clone(&chain));
        }
        chain
    }

    /// How a frame shows its inlined copy.
    pub(super) fn inlined_view(&self, copy: Option<u32>) -> Option<Inlined<'a>> {
        let c = &self.inlines.as_ref()?.copies[copy? as usize];
        Some(Inlined {
            container: c.container,
            file: c.instance.call_file(),
            line: c.instance.call_line(),
        })
    }

    /// The open frames of task `ti` above its innermost real call: (its position, the
    /// copies open above it).
    fn open_copies(&self, ti: usize) -> Option<(usize, Vec<u32>)> {
        let stack = &self.tasks[ti].stack;
        let base = stack.iter().rposition(|f| f.inline.is_none())?;
        Some((
            base,
            stack[base + 1..].iter().filter_map(|f| f.inline).collect(),
        ))
    }

    /// A call made from `site` is about to enter: close the inline frames it is not
    /// inside and open the ones it is.
    pub(super) fn place_in_inlines(
        &mut self,
        ti: usize,
        site: CodeSite,
        task: Task<'_>,
        time_ns: Option<u64>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let Some((base, open)) = self.open_copies(ti) else {
            return Ok(());
        };
        // A call from a function other than the innermost traced one (an untraced
        // function between them) says nothing about where in it we are.
        if self.tasks[ti].stack[base].func != site.func {
            return Ok(());
        }
        let chain = self.chain_at(site);
        let common = open
            .iter()
            .zip(chain.iter())
            .take_while(|(a, b)| a == b)
            .count();
        self.reshape(
            ti,
            base,
            common,
            &chain[common..],
            task,
            time_ns,
            None,
            sink,
            out,
        )
    }

    /// Close the inline frames above `base + common` and open `new` above them (the
    /// last with `args` when given).
    #[allow(clippy::too_many_arguments)]
    fn reshape(
        &mut self,
        ti: usize,
        base: usize,
        common: usize,
        new: &[u32],
        task: Task<'_>,
        time_ns: Option<u64>,
        mut args: Option<crate::sink::ArgList>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        while self.tasks[ti].stack.len() > base + 1 + common {
            self.close_inline(ti, task, time_ns, sink, out)?;
        }
        for (i, &c) in new.iter().enumerate() {
            let func = self.inlines.as_ref().expect("inlines").copies[c as usize].func;
            self.args.clear();
            if i + 1 == new.len() {
                if let Some(a) = args.take() {
                    self.args = a;
                }
            }
            self.note_known(func);
            let id = self.next_id;
            self.next_id += 1;
            self.push_flat(ti, id, func, task, time_ns, Some(c), sink, out)?;
        }
        Ok(())
    }

    /// Close the innermost frame of task `ti`, an inline frame, at `time_ns`.
    pub(super) fn close_inline(
        &mut self,
        ti: usize,
        task: Task<'_>,
        time_ns: Option<u64>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.close_inline_at(ti, task, time_ns, None, sink, out)
    }

    /// [`CallTree::close_inline`]; for a shaped source, laid out like the line `trigger`
    /// (its layout and source depth) that ended it.
    fn close_inline_at(
        &mut self,
        ti: usize,
        task: Task<'_>,
        time_ns: Option<u64>,
        trigger: Option<(Layout<'_>, u32)>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let Some(f) = self.tasks[ti].stack.pop() else {
            return Ok(());
        };
        self.counts.calls += 1;
        self.pass_lost(ti, &f);
        let (lost, lost_here) = Self::lost_view(&f);
        let (depth, head) = self.shaped_place(ti, &f, trigger);
        // An inline frame: never an interrupt's entry.
        let view = crate::sink::CallView {
            depth,
            layout: laid_out(&head, None),
            named: true,
            duration_ns: super::duration(time_ns, f.time_ns, None),
            open_after: self.tasks[ti].stack.len(),
            visible: self.visible(f.depth),
            entry_cpu: f.cpu,
            lost,
            lost_here,
            ..self.frame_view(close_kind(&f), &f, Task { cpu: f.cpu, ..task })
        };
        sink.call(&view, out)
    }

    /// The first instruction of an inlined copy ran in task `key` (a probe on it): its
    /// frame opens (again, when it was open: a loop ran it once more) inside the innermost
    /// traced call, which must be its container, with its arguments read from `values`:
    /// the general registers by DWARF number (0..16) and the words from the stack pointer
    /// up, where the db says the parameters are (`None`: no arguments shown). Ignored
    /// when inline frames are off or the task is not inside the container.
    #[allow(clippy::too_many_arguments)]
    pub fn enter_inline(
        &mut self,
        task: Task<'_>,
        instance: Instance<'a>,
        values: Option<(&[u64], &[u64])>,
        time_ns: Option<u64>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let ti = self.task(task.key);
        let Some(c) = self.copy_of(instance) else {
            return Ok(());
        };
        if self
            .inlines
            .as_ref()
            .is_some_and(|l| l.copies[c as usize].own)
        {
            return Ok(());
        }
        let Some((base, open)) = self.open_copies(ti) else {
            return Ok(());
        };
        let container = self.funcs.get(self.tasks[ti].stack[base].func).func;
        let Some(caller) = instance.caller() else {
            return Ok(());
        };
        if !container.is_some_and(|f| f.index() == caller.index() && f.addr() == caller.addr()) {
            return Ok(());
        }
        let mut chain = Vec::new();
        let mut at = Some(c);
        while let Some(x) = at {
            chain.push(x);
            at = self.inlines.as_ref().expect("inlines").copies[x as usize].parent;
        }
        chain.reverse();
        // Enclosing copies already open stay; the copy itself always opens anew.
        let common = open
            .iter()
            .zip(&chain[..chain.len() - 1])
            .take_while(|(a, b)| a == b)
            .count();
        let func = self.inlines.as_ref().expect("inlines").copies[c as usize].func;
        let mut args = crate::sink::ArgList::default();
        if let Some((regs, stack)) = values {
            let info = self.funcs.get(func);
            let role = self.inline_role;
            info.located_args(instance.locations(), regs, stack, role, |name, value| {
                args.push_with(name, |s| value(s))
            });
        }
        let new = chain[common..].to_vec();
        self.reshape(ti, base, common, &new, task, time_ns, Some(args), sink, out)
    }
}

/// The layout of a line head built here (`(head, where its indentation starts)`), else
/// `or`.
pub(super) fn laid_out<'l>(
    owned: &'l Option<(String, usize)>,
    or: Option<Layout<'l>>,
) -> Option<Layout<'l>> {
    match owned {
        Some((head, at)) => Some(Layout {
            head,
            indent_start: *at,
            shift: 0,
        }),
        None => or,
    }
}

/// The columns of a function_graph line with its duration blanked (an inline frame's own
/// line has none): ` 1)   0.591 us    |  ` gives ` 1)               |  `.
fn blank_duration(columns: &str) -> String {
    let mut s = columns.to_string();
    if let Some(end) = columns.rfind('|') {
        let start = columns[..end].rfind(['|', ')']).map_or(0, |i| i + 1);
        s.replace_range(start..end, &" ".repeat(end - start));
    }
    s
}

impl CallTree<'_> {
    /// Inline frames among the open frames of task `ti`.
    pub(super) fn inline_count(&self, ti: usize) -> u32 {
        self.tasks[ti]
            .stack
            .iter()
            .filter(|f| f.inline.is_some())
            .count() as u32
    }

    /// Shaped sources: the depth to show frame `f` (not on the stack: it was just popped,
    /// or is about to be pushed) at — its source depth plus the inline frames around it
    /// — and, for a text source, its line head laid out like `trigger`'s: the trigger's
    /// columns (duration blanked) and indentation moved to that depth. Flat sources keep
    /// the frame's depth.
    fn shaped_place(
        &self,
        ti: usize,
        f: &Frame,
        trigger: Option<(Layout<'_>, u32)>,
    ) -> (u32, Option<(String, usize)>) {
        if self.shape == Shape::Flat {
            return (f.depth, None);
        }
        let around = self.inline_count(ti);
        let depth = f.depth + around;
        let head = trigger.map(|(l, at)| {
            let columns = l.head.get(..l.indent_start).unwrap_or("");
            let indent = l.head.len().saturating_sub(l.indent_start);
            let spaces =
                (indent as i64 + 2 * (i64::from(f.depth) - i64::from(at)) + 2 * i64::from(around)
                    - l.shift as i64)
                    .max(0) as usize;
            let mut h = blank_duration(columns);
            let at = h.len();
            h.push_str(&" ".repeat(spaces));
            (h, at)
        });
        (depth, head)
    }

    /// Shaped sources: a line's head moved right past `extra` inline frames (`None`:
    /// none, or no layout).
    pub(super) fn shifted_head(l: Option<Layout<'_>>, extra: u32) -> Option<(String, usize)> {
        let l = l.filter(|_| extra > 0)?;
        let columns = l.head.get(..l.indent_start).unwrap_or("");
        let indent = l.head.len().saturating_sub(l.indent_start);
        let spaces = (indent + 2 * extra as usize).saturating_sub(l.shift);
        Some((format!("{columns}{}", " ".repeat(spaces)), columns.len()))
    }

    /// Shaped sources, before entry `e` of task `ti`: inline frames deeper than it end
    /// (their container's `}` was not seen), then the call is placed in the inlined
    /// copies of its parent its call site lies in.
    pub(super) fn place_shaped(
        &mut self,
        ti: usize,
        e: &Entry<'_>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let trigger = e.layout.map(|l| (l, e.depth));
        self.close_inlines_deeper(ti, e.depth, e.task, e.time_ns, e.layout, sink, out)?;
        let Some(site) = e.site else {
            return Ok(());
        };
        let stack = &self.tasks[ti].stack;
        let Some(base) = stack
            .iter()
            .rposition(|f| f.inline.is_none() && f.depth < e.depth)
        else {
            return Ok(());
        };
        if stack[base].func != site.func {
            return Ok(());
        }
        // Calls above the parent whose `}` was not seen are gone.
        while self.tasks[ti]
            .stack
            .last()
            .is_some_and(|f| f.inline.is_none() && f.depth >= e.depth)
        {
            self.tasks[ti].stack.pop();
        }
        let open: Vec<u32> = self.tasks[ti].stack[base + 1..]
            .iter()
            .filter_map(|f| f.inline)
            .collect();
        let chain = self.chain_at(site);
        let common = open
            .iter()
            .zip(chain.iter())
            .take_while(|(a, b)| a == b)
            .count();
        while self.tasks[ti].stack.len() > base + 1 + common {
            self.close_inline_at(ti, e.task, e.time_ns, trigger, sink, out)?;
        }
        for &c in &chain[common..] {
            let func = self.inlines.as_ref().expect("inlines").copies[c as usize].func;
            self.note_known(func);
            let id = self.next_id;
            self.next_id += 1;
            let parent = self.tasks[ti].stack.last().map(|f| f.id);
            // An inline frame runs in its container's context.
            let ctx = self.tasks[ti].stack.last().and_then(|f| f.ctx);
            let f = Frame {
                depth: e.depth,
                func,
                id,
                parent,
                args: Default::default(),
                time_ns: e.time_ns,
                cpu: e.task.cpu,
                opened: true,
                origins: Default::default(),
                inline: Some(c),
                ctx,
                irq_entry: false,
                irq_ns: 0,
                lost_here: 0,
                lost: 0,
                comment: None,
                stack: None,
                space_entry: false,
                entry_read: false,
                args_event: false,
                kernel_error: None,
            };
            let (depth, head) = self.shaped_place(ti, &f, trigger);
            // Its arguments are empty, its interrupt mark off: as the plain view's.
            let view = CallView {
                depth,
                layout: laid_out(&head, None),
                open_after: self.tasks[ti].stack.len() + 1,
                ..self.frame_view(Kind::Open, &f, e.task)
            };
            sink.call(&view, out)?;
            self.tasks[ti].stack.push(f);
        }
        Ok(())
    }

    /// Shaped sources: end the inline frames of task `ti` deeper than `depth` (before an
    /// entry at that depth, or the `}` of the call at it), laid out like that line.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn close_inlines_deeper(
        &mut self,
        ti: usize,
        depth: u32,
        task: Task<'_>,
        time_ns: Option<u64>,
        layout: Option<Layout<'_>>,
        sink: &mut dyn Sink,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let trigger = layout.map(|l| (l, depth));
        while self.tasks[ti]
            .stack
            .last()
            .is_some_and(|f| f.inline.is_some() && f.depth > depth)
        {
            self.close_inline_at(ti, task, time_ns, trigger, sink, out)?;
        }
        Ok(())
    }
}
