//! The function_graph engine's probe events: those of the values the kernel does not
//! print (exit and entry probes), of `--fields`' members and of `--deref`'s structs,
//! created before the trace for the roots and the callees found in the kernel text, and
//! lazily for the callees seen in the stream; the decoder is told what each reads.

use std::rc::Rc;

use dcg_calls::decode::Decoder;

use super::{Setup, LAZY_PER_ROUND};
use crate::error::{KtraceError, Result};
use crate::funcs;
use crate::outcome::Notice;
use crate::{callees, debug, PROBE_CAP};

/// What a probe event of `--deref` or of the output parameters reads.
pub(super) enum Reads {
    /// The structs behind the pointer parameters, at the entry: the first `items` of the
    /// function's reads (those that fit in the event).
    Structs { items: usize },
    /// The output parameters, at the return.
    Outputs,
}

impl<'s> Setup<'s> {
    /// Probe events for the values the kernel does not print: the roots and their callees
    /// found in the kernel text.
    pub(super) fn probe(&mut self, notify: &mut dyn FnMut(Notice)) -> Result<()> {
        // `--fields`: a probe event reads the members at each function's entry.
        let mut fields: Vec<_> = self.plan.fields.by_func.iter().collect();
        fields.sort_by(|a, b| a.0.cmp(b.0));
        for (func, reads) in fields {
            match self.probes.add_members(&mut self.sess, func, reads) {
                Some(ev) => {
                    self.filter.add_event(&ev);
                    self.member_events.push((ev, func.clone()));
                }
                None => {
                    let why = self.probes.failed.iter().rev().find(|(f, _)| f == func);
                    return Err(KtraceError::Fields(format!(
                        "{func}: its members' probe event could not be created: {}",
                        why.map_or("unknown reason", |(_, e)| e.as_str())
                    )));
                }
            }
        }
        if !(self.want_exit || self.want_entry || self.want_reads) {
            return Ok(());
        }
        let (set, avail) = (self.set, self.avail);
        let mut funcs: Vec<String> = self.roots.to_vec();
        if self.lazy_depth > 0 {
            if let Some(kt) = callees::KernelText::new(&self.kallsyms) {
                // Void callees only matter for their arguments.
                let want_entry = self.want_entry || self.want_reads;
                let keep =
                    |n: &str| avail.contains(n) && (want_entry || !funcs::returns_void(set, n));
                funcs.extend(kt.closure(self.roots, self.lazy_depth, PROBE_CAP, &keep));
            }
        }
        debug(format_args!("{} functions to probe", funcs.len()));
        for f in &funcs {
            self.add_probes(f);
        }
        for r in self.roots {
            if self.want_exit && !self.probes.has_exit(r) && !funcs::returns_void(set, r) {
                let why = self
                    .probes
                    .failed
                    .iter()
                    .find(|(f, _)| f == r)
                    .map_or("unknown reason".to_string(), |(_, e)| e.clone());
                notify(Notice::NoExitProbe {
                    func: r.to_string(),
                    why,
                });
            }
        }
        Ok(())
    }

    /// Exit and entry probes for `f` as wanted; whether any was created.
    fn add_probes(&mut self, f: &str) -> bool {
        let before = self.probes.len();
        if self.want_exit {
            if let Some(ev) = self
                .probes
                .add_exit(&mut self.sess, self.set, self.avail, f)
            {
                self.filter.add_event(&ev);
            }
        }
        if self.want_entry {
            if let Some(ev) = self
                .probes
                .add_entry(&mut self.sess, self.set, self.avail, f)
            {
                self.filter.add_event(&ev);
            }
        }
        if self.want_reads && self.avail.contains(f) {
            self.add_reads(f);
        }
        self.probes.len() > before
    }

    /// The probes reading `f`'s structs at its entry (`--deref`) and its output
    /// parameters at its return (`--deref`, `--fields`), as the plan has them.
    fn add_reads(&mut self, f: &str) {
        let derefs = &self.plan.derefs;
        if let Some(fd) = derefs.by_func.get(f) {
            let fetches = |fprobe| crate::deref_events::deref_fetches(fd, fprobe).0;
            if let Some(ev) = self.probes.add_derefs(&mut self.sess, f, fetches) {
                self.filter.add_event(&ev);
                let items = crate::deref_events::deref_fetches(fd, false).1;
                self.read_events
                    .push((ev, f.to_string(), Reads::Structs { items }));
            }
        }
        if let Some(outs) = derefs.outs.get(f) {
            let fetches = crate::deref_events::out_fetches(outs);
            if let Some(ev) = self.probes.add_outputs(&mut self.sess, f, &fetches) {
                self.filter.add_event(&ev);
                self.read_events.push((ev, f.to_string(), Reads::Outputs));
            }
        }
    }

    /// Tell the decoder what the `--deref` and output events created since it was last
    /// told read.
    pub(super) fn tell_reads<'d>(&mut self, dec: &mut Decoder<'d>)
    where
        's: 'd,
    {
        let derefs = &self.plan.derefs;
        for (ev, func, what) in &self.read_events[self.reads_told..] {
            match what {
                &Reads::Structs { items } => {
                    if let Some(fd) = derefs.by_func.get(func) {
                        let reads = Rc::clone(fd);
                        let event = crate::deref_events::DerefEvent { reads, items };
                        dec.read_event(ev, Box::new(event));
                    }
                }
                Reads::Outputs => {
                    if let Some(outs) = derefs.outs.get(func) {
                        let event = crate::deref_events::OutEvent {
                            outs: Rc::clone(outs),
                        };
                        dec.read_event(ev, Box::new(event));
                    }
                }
            }
        }
        self.reads_told = self.read_events.len();
    }

    /// Lazy probes for callees seen in the stream, as deep as static discovery goes, a few
    /// per round: each registration takes ~0.1 s under TCG, and the pipe must keep being
    /// read.
    pub(super) fn lazy_probes(&mut self, seen: Vec<(String, u32)>) {
        if !(self.want_exit || self.want_entry || self.want_reads) {
            return;
        }
        let mut budget = LAZY_PER_ROUND;
        for (f, rel) in seen {
            if rel > self.lazy_depth || budget == 0 {
                continue;
            }
            if self.add_probes(&f) {
                budget -= 1;
            }
        }
    }
}
