//! A session tracing both sides (issue 42): a user call that failed (returned -1, or
//! NULL for a pointer) with a failed system call in its subtree has that call's error as
//! its errno, and the error's origin (the kernel call where it first appeared) as its
//! own. The errno is the last failed system call's: a libc wrapper returning -1 with
//! errno E is the kernel's -E.

use super::{CallTree, Frame};
use crate::funcs::FuncId;
use crate::origin::error_value;
use crate::saved_format::Space;

impl CallTree<'_> {
    /// Call `f` of `func` in task `ti` closed with the value [`CallTree::render_ret`]
    /// left (`shown`, `error`): a system call's error goes to the user call around it,
    /// a user call's to its caller. Whether it is a user call that failed because of it.
    pub(super) fn settle_kernel_error(
        &mut self,
        ti: usize,
        f: &Frame,
        func: FuncId,
        (shown, error): (bool, bool),
    ) -> bool {
        let Some(space) = self.funcs.get(func).space else {
            return false;
        };
        let (passed, failed) = match space {
            Space::Kernel => {
                let e = (f.space_entry && shown && error)
                    .then(|| error_value(Some(self.ret.as_str()), true))
                    .flatten();
                let Some(e) = e else {
                    return false;
                };
                let origin = f.origins.origin(e, (f.id, func));
                (Some(Box::new((e.into(), origin))), false)
            }
            Space::User => {
                let failed =
                    shown && f.kernel_error.is_some() && matches!(self.ret.as_str(), "-1" | "NULL");
                (f.kernel_error.clone(), failed)
            }
        };
        if let Some(k) = passed {
            // An inline frame ends before its container: the error goes to the container.
            let stack = &mut self.tasks[ti].stack;
            if let Some(g) = stack.iter_mut().rev().find(|g| g.inline.is_none()) {
                g.kernel_error = Some(k);
            }
        }
        failed
    }
}
