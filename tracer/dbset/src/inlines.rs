//! The inlined copies of functions (a db's inline instances) a trace can show: the one
//! selection the kernel and user-space tracers share.

use std::collections::HashSet;

use sigdb::{Db, Function, Instance};

/// Most inlined copies one session probes.
pub const INLINE_MAX: usize = 64;

/// The inlined copies of the functions `wanted` (indices in `db`) whose containing
/// function passes `traceable`, in db order (copies inlined into their own function
/// left out: [`Instance::is_self_copy`]): at most [`INLINE_MAX`], and how many more there
/// were.
pub fn copies_of<'a>(
    db: &'a Db,
    wanted: &HashSet<u32>,
    traceable: impl Fn(Function<'a>) -> bool,
) -> (Vec<Instance<'a>>, usize) {
    let mut found = Vec::new();
    let mut more = 0;
    if wanted.is_empty() {
        return (found, more);
    }
    for i in db.instances() {
        if !wanted.contains(&i.callee_index())
            || i.is_self_copy()
            || !i.caller().is_some_and(&traceable)
        {
            continue;
        }
        if found.len() < INLINE_MAX {
            found.push(i);
        } else {
            more += 1;
        }
    }
    (found, more)
}
