//! `--errors-only`: a sink that buffers each task's printed call tree and, when the tree
//! is complete, keeps only the lines that lie on a path to an error return.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::sink::{CallView, Kind, Note, Sink};
use crate::text::TextPrinter;

/// The `--errors-only` filter over a [`TextPrinter`].
pub struct ErrorsOnly {
    printer: TextPrinter,
    trees: FxHashMap<u64, Vec<Item>>,
}

impl ErrorsOnly {
    /// Filter what `printer` prints.
    pub fn new(printer: TextPrinter) -> ErrorsOnly {
        ErrorsOnly {
            printer,
            trees: FxHashMap::default(),
        }
    }
}

impl Sink for ErrorsOnly {
    fn call(&mut self, c: &CallView<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        let Some(text) = self.printer.call_line(c) else {
            return Ok(());
        };
        let kind = match c.kind {
            Kind::Open => ItemKind::Open,
            Kind::Close => ItemKind::Close,
            Kind::Leaf => ItemKind::Leaf,
        };
        let items = self.trees.entry(c.task.key).or_default();
        items.push(Item {
            kind,
            error: c.error,
            text: text.to_string(),
        });
        // A tree is complete when nothing is open any more.
        if c.open_after == 0 && kind != ItemKind::Open {
            write_error_paths(items, out)?;
            items.clear();
        }
        Ok(())
    }

    fn note(&mut self, n: &Note<'_>, out: &mut Vec<u8>) -> io::Result<()> {
        match *n {
            Note::Lost { .. } => self.printer.note(n, out),
            Note::Line {
                task: Some(k),
                text,
            } => {
                if let Some(items) = self.trees.get_mut(&k).filter(|i| !i.is_empty()) {
                    items.push(Item {
                        kind: ItemKind::Note,
                        error: false,
                        text: text.to_string(),
                    });
                }
                Ok(())
            }
            Note::Line { task: None, .. } | Note::Comment { .. } => Ok(()),
            Note::Probe { task, .. } => {
                if let Some(text) = self.printer.note_line(n) {
                    let text = text.to_string();
                    self.trees.entry(task).or_default().push(Item {
                        kind: ItemKind::Note,
                        error: false,
                        text,
                    });
                }
                Ok(())
            }
        }
    }

    fn wants_notes(&self) -> bool {
        self.printer.wants_notes()
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let mut keys: Vec<u64> = self.trees.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let items = std::mem::take(self.trees.get_mut(&k).expect("key"));
            write_error_paths(&items, out)?;
        }
        Ok(())
    }
}

/// What a buffered line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ItemKind {
    /// `func() {`
    Open,
    /// `}`
    Close,
    /// `func();`
    Leaf,
    /// Anything else inside the tree (comments, markers).
    Note,
}

/// One buffered output line of a call tree.
#[derive(Debug)]
struct Item {
    kind: ItemKind,
    /// The line returned (or shows) an error value.
    error: bool,
    text: String,
}

/// Print the calls of one buffered tree that are on paths to error returns: an open/close
/// pair when its own return or anything below it is an error, error leaves and notes.
fn write_error_paths(items: &[Item], out: &mut dyn Write) -> std::io::Result<()> {
    let n = items.len();
    let mut keep = vec![false; n];
    let mut subtree_error = vec![false; n];
    let mut open: Vec<usize> = Vec::new();
    for i in 0..n {
        match items[i].kind {
            ItemKind::Open => open.push(i),
            ItemKind::Leaf | ItemKind::Note => {
                if items[i].error {
                    keep[i] = true;
                    if let Some(&o) = open.last() {
                        subtree_error[o] = true;
                    }
                }
            }
            ItemKind::Close => {
                let o = open.pop();
                if items[i].error || o.is_some_and(|o| subtree_error[o]) {
                    keep[i] = true;
                    if let Some(o) = o {
                        keep[o] = true;
                    }
                    if let Some(&parent) = open.last() {
                        subtree_error[parent] = true;
                    }
                }
            }
        }
    }
    // Opens whose close never came but whose subtree had errors.
    for &o in &open {
        if subtree_error[o] {
            keep[o] = true;
        }
    }
    for (i, item) in items.iter().enumerate() {
        if keep[i] {
            out.write_all(item.text.as_bytes())?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
