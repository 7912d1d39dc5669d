//! Values rendered by their DWARF types as they reach the tree: return values (text,
//! registers, already rendered, or a probe's), arguments (text, words, fetched values),
//! and the fields of probe events.

use super::{ArgsIn, CallTree, RetIn};
use crate::funcs::FuncId;
use crate::sink::ArgList;

impl CallTree<'_> {
    pub(super) fn note_known(&mut self, id: FuncId) {
        if self.funcs.get(id).func.is_some() {
            self.counts.decoded += 1;
        } else {
            *self.counts.unknown.entry(id).or_default() += 1;
        }
    }

    /// Render `ret` of function `id` into `self.ret`/`self.raw`: (shown, error, raw given).
    pub(super) fn render_ret(
        &mut self,
        id: FuncId,
        ret: Option<RetIn<'_>>,
        probe: Option<u64>,
    ) -> (bool, bool, bool) {
        self.ret.clear();
        self.raw.clear();
        let info = self.funcs.get(id);
        match (ret, probe) {
            (Some(RetIn::Text { raw, value }), _) => {
                self.raw.push_str(raw);
                match info.ret_into(raw, value, &mut self.ret) {
                    Some(e) => (true, e, true),
                    None => (false, false, true),
                }
            }
            (Some(RetIn::Regs { rax, rdx }), _) => {
                dcg_render::push_hex(&mut self.raw, rax);
                let r = match info.ret_words() {
                    2 => info.ret_pair_into(rax, rdx, &mut self.ret),
                    _ => info.ret_into(&self.raw, Some(rax), &mut self.ret),
                };
                match r {
                    Some(e) => (true, e, true),
                    None => (false, false, true),
                }
            }
            (Some(RetIn::Rendered { text, raw, error }), _) => {
                self.ret.push_str(text);
                if let Some(r) = raw {
                    self.raw.push_str(r);
                }
                (true, error, raw.is_some())
            }
            (None, Some(v)) => {
                let text = format!("{v:#x}");
                match info.ret_into(&text, Some(v), &mut self.ret) {
                    Some(e) => (true, e, false),
                    None => (false, false, false),
                }
            }
            (None, None) => (false, false, false),
        }
    }

    pub(super) fn render_args(&mut self, id: FuncId, args: ArgsIn<'_>, pending: Option<ArgList>) {
        self.args.clear();
        match args {
            ArgsIn::Text(t) if !t.trim().is_empty() => {
                let info = self.funcs.get(id);
                let pairs = dcg_fgraph::Args::new(t);
                for (i, (n, v)) in pairs.enumerate() {
                    self.args.push_with(n, |s| {
                        if !info.push_arg(s, i, n, v) {
                            s.push_str(v);
                        }
                    });
                }
            }
            ArgsIn::Rendered(list) => self.args.clone_from(list),
            ArgsIn::Words(words) => {
                let info = self.funcs.get(id);
                let args = &mut self.args;
                info.reg_args(words, &[], &[], |name, value| {
                    args.push_with(name, |s| value(s))
                });
            }
            ArgsIn::Fetched {
                words,
                strings,
                stack,
                members,
                derefs,
            } => {
                let info = self.funcs.get(id);
                let args = &mut self.args;
                info.reg_args(words, strings, stack, |name, value| {
                    match derefs.iter().find(|(n, _)| n == name) {
                        Some((_, text)) => args.push(name, text),
                        None => args.push_with(name, |s| value(s)),
                    }
                });
                for (name, text) in members {
                    args.push(name, text);
                }
            }
            _ => {
                if let Some(p) = pending {
                    self.args = p;
                }
            }
        }
    }

    /// A probe event's fields rendered by `func`'s parameter types (entry) or return
    /// type (the first field of a return event); returns whether that value is an error.
    pub fn render_fields<'f>(
        &mut self,
        func: FuncId,
        fields: impl Iterator<Item = (&'f str, &'f str)>,
        is_return: bool,
        out: &mut ArgList,
    ) -> bool {
        out.clear();
        if self.funcs.get(func).func.is_some() {
            self.counts.decoded += 1;
        }
        let info = self.funcs.get(func);
        let mut error = false;
        for (i, (n, v)) in fields.enumerate() {
            if is_return {
                if i == 0 {
                    let mut text = String::new();
                    if let Some(e) = info.ret_into(v, dcg_fgraph::parse_number(v), &mut text) {
                        error = e;
                        out.push(n, &text);
                        continue;
                    }
                }
                out.push(n, v);
            } else {
                out.push_with(n, |s| {
                    if !info.push_arg(s, i, n, v) {
                        s.push_str(v);
                    }
                });
            }
        }
        error
    }
}
