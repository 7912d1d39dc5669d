//! `--errors-only`: keep only the lines of a buffered call tree that lie on a path to an
//! error return. Shared by the kernel-trace decoder and the uprobe tracer.

use std::io::Write;

/// What a buffered line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
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
pub struct Item {
    pub kind: ItemKind,
    /// The line returned (or shows) an error value.
    pub error: bool,
    pub text: String,
}

/// Print the calls of one buffered tree that are on paths to error returns: an open/close
/// pair when its own return or anything below it is an error, error leaves and notes.
pub fn write_error_paths(items: &[Item], out: &mut dyn Write) -> std::io::Result<()> {
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
