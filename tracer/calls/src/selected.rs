//! Trees selected whole (`dcg decode --filter`, `--min-duration`): a sink that buffers
//! what the output it wraps writes for each task's call tree and, when the tree is
//! complete, writes the lines of the calls a [`TreeSelect`] keeps. Lines between trees
//! are left out, as `--errors-only` leaves them, lost events excepted.

use std::io;
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};

use dcg_dbset::DbSet;

use crate::record_sinks::record_of;
use crate::saved_format::CallRecord;
use crate::sink::{CallView, Kind, Note, Sink};

/// Which calls of a complete tree to keep: the records of its completed calls in
/// completion order (and the dbs the stream is decoded with), the answer one flag a
/// record.
pub trait TreeSelect: std::fmt::Debug {
    /// One flag per record of `calls`: keep it.
    fn select(&self, calls: &[CallRecord], dbs: &DbSet) -> Vec<bool>;
}

/// What a wrapped output wrote for one event of a tree.
struct Item {
    /// The call it is about; `None` for a note inside the tree.
    id: Option<u64>,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Tree {
    items: Vec<Item>,
    records: Vec<CallRecord>,
}

/// `inner`'s output, one whole tree at a time, cut to what `select` keeps.
pub struct Selected<'s> {
    inner: Box<dyn Sink + 's>,
    select: Rc<dyn TreeSelect>,
    dbs: &'s DbSet,
    trees: FxHashMap<u64, Tree>,
    /// Trees kept so far (shared with whoever counts them: `--count`).
    kept: Rc<std::cell::Cell<u64>>,
    /// No tree is shown beyond this many (`--count`).
    limit: Option<u64>,
}

impl<'s> Selected<'s> {
    /// Select the trees `inner` writes.
    pub fn new(
        inner: Box<dyn Sink + 's>,
        select: Rc<dyn TreeSelect>,
        dbs: &'s DbSet,
    ) -> Selected<'s> {
        Selected {
            inner,
            select,
            dbs,
            trees: FxHashMap::default(),
            kept: Rc::default(),
            limit: None,
        }
    }

    /// Show no tree beyond the first `limit` kept (`--count`).
    pub fn limit(&mut self, limit: Option<u64>) {
        self.limit = limit;
    }

    /// The count of trees kept so far, as it goes.
    pub fn kept(&self) -> Rc<std::cell::Cell<u64>> {
        Rc::clone(&self.kept)
    }

    /// Write the kept lines of `tree`.
    fn flush(&self, tree: &mut Tree, out: &mut Vec<u8>) {
        if self.limit.is_some_and(|n| self.kept.get() >= n) {
            tree.items.clear();
            tree.records.clear();
            return;
        }
        let keep = self.select.select(&tree.records, self.dbs);
        let kept: FxHashSet<u64> = tree
            .records
            .iter()
            .zip(&keep)
            .filter_map(|(r, &k)| k.then_some(r.id))
            .collect();
        let completed: FxHashSet<u64> = tree.records.iter().map(|r| r.id).collect();
        let any = !kept.is_empty();
        if any {
            self.kept.set(self.kept.get() + 1);
        }
        for item in tree.items.drain(..) {
            // A call that never completed is kept with the tree (it leads to kept calls).
            let show = match item.id {
                Some(id) => kept.contains(&id) || (any && !completed.contains(&id)),
                None => any,
            };
            if show {
                out.extend_from_slice(&item.bytes);
            }
        }
        tree.records.clear();
    }
}

impl Sink for Selected<'_> {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        let mut bytes = Vec::new();
        self.inner.call(c, &mut bytes)?;
        let tree = self.trees.entry(c.task.key).or_default();
        tree.items.push(Item {
            id: Some(c.id),
            bytes,
        });
        if let Some(r) = record_of(c) {
            tree.records.push(r);
        }
        if c.open_after == 0 && c.kind != Kind::Open {
            let mut tree = std::mem::take(tree);
            self.flush(&mut tree, out);
            self.trees.insert(c.task.key, tree);
        }
        Ok(())
    }

    fn note(&mut self, n: &Note<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        let task = match *n {
            Note::Line { task, .. } => task,
            Note::Probe { task, .. } => Some(task),
            Note::Comment { task, .. } => Some(task.key),
            Note::Lost { .. } => None,
        };
        match task.and_then(|k| self.trees.get_mut(&k)) {
            Some(tree) if !tree.items.is_empty() => {
                let mut bytes = Vec::new();
                self.inner.note(n, &mut bytes)?;
                tree.items.push(Item { id: None, bytes });
                Ok(())
            }
            // Between trees, as `--errors-only`: lost events only (no headers, markers
            // or comments of trees not shown).
            _ if matches!(n, Note::Lost { .. }) => self.inner.note(n, out),
            _ => Ok(()),
        }
    }

    fn wants_args_at_close(&self) -> bool {
        true
    }

    fn wants_notes(&self) -> bool {
        self.inner.wants_notes()
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let mut keys: Vec<u64> = self.trees.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            if let Some(mut tree) = self.trees.remove(&k) {
                self.flush(&mut tree, out);
            }
        }
        self.inner.finish(out)
    }
}
