//! The context each kernel call ran in: task, hard interrupt, softirq or NMI. One rule
//! for every engine and every output (text marks, saved calls, reports).
//!
//! The engines report what the CPU's preempt count said when a call was entered. At the
//! edges of an interrupt the count says "task" while the interrupt runs: the interrupt
//! entry code calls `irq_enter_rcu` before it raises the count, `irq_exit_rcu` drops it
//! before running softirqs and reprogramming the timer, and on its way out the entry code
//! checks for preemption with the count back at zero. So the count is read together
//! with where the call came from:
//! - a call whose count says task, made under a call in an interrupt context, runs in
//!   that interrupt (the CPU does not return to the task inside an interrupt's call);
//! - the calls the interrupt entry code itself makes before raising the count
//!   (`irq_enter_rcu`, `irq_enter`) are the interrupt's;
//! - softirq processing (`handle_softirqs`, `__do_softirq`) is softirq context, wherever
//!   it was entered from;
//! - the entry code's work on its way out — the preemption check
//!   (`raw_irqentry_exit_cond_resched` and its wrappers) and, since 7.x, the deferred
//!   hrtimer rearm (`__hrtimer_rearm_deferred`) — is the interrupt's when it directly
//!   follows an interrupt's calls at the same depth (after an exception it is the
//!   task's);
//! - an inline frame runs in its container's context.
//!
//! These are the callees of the kernel's generic interrupt entry (kernel/entry/common.c,
//! kernel/softirq.c), the same on every x86 kernel since 5.12; they are matched by name
//! for kernel functions only.

use super::CallTree;
use crate::funcs::FuncId;
use crate::saved_format::Context;

/// What a kernel function is to the interrupt entry code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryRole {
    /// The entry code calls it before raising the count: the interrupt's.
    Enters,
    /// Softirq processing.
    Softirqs,
    /// The entry code's work on the way out of an interrupt or exception: the
    /// preemption check, the deferred hrtimer rearm.
    ExitCheck,
}

impl EntryRole {
    /// The role of the kernel function `name`, if it has one.
    pub fn of(name: &str) -> Option<EntryRole> {
        match name {
            "irq_enter_rcu" | "irq_enter" => Some(EntryRole::Enters),
            "handle_softirqs" | "__do_softirq" => Some(EntryRole::Softirqs),
            "raw_irqentry_exit_cond_resched"
            | "irqentry_exit_cond_resched"
            | "dynamic_irqentry_exit_cond_resched"
            | "__hrtimer_rearm_deferred"
            | "hrtimer_rearm_deferred" => Some(EntryRole::ExitCheck),
            _ => None,
        }
    }
}

/// The context of a call whose own count said `own` (`None`: the engine does not know
/// contexts), made under a caller in `caller`, of a function with `role`; `after_interrupt`:
/// the call before it at its depth was an interrupt subtree's.
pub fn decide(
    own: Option<Context>,
    caller: Option<Context>,
    role: Option<EntryRole>,
    after_interrupt: bool,
) -> Option<Context> {
    let own = own?;
    let by_role = match (role, own) {
        (Some(EntryRole::Softirqs), Context::Task | Context::Irq) => Some(Context::Softirq),
        (Some(EntryRole::Enters), Context::Task) => Some(Context::Irq),
        (Some(EntryRole::ExitCheck), Context::Task) if after_interrupt => Some(Context::Irq),
        _ => None,
    };
    if by_role.is_some() {
        return by_role;
    }
    match caller {
        Some(c) if c != Context::Task && own == Context::Task => Some(c),
        _ => Some(own),
    }
}

impl CallTree<'_> {
    /// The context of a call of `func` entered at `depth` in task `ti`, its own count
    /// saying `own`, under a caller in `caller`; and whether it begins an interrupt
    /// subtree. Every entry of the task passes here (it ends the "just after an
    /// interrupt" state).
    pub(super) fn call_context(
        &mut self,
        ti: usize,
        func: FuncId,
        own: Option<Context>,
        caller: Option<Context>,
        depth: u32,
    ) -> (Option<Context>, bool) {
        let after = self.tasks[ti].interrupt_closed.take() == Some(depth);
        let role = self.funcs.get(func).entry_role();
        let ctx = decide(own, caller, role, after);
        (ctx, ctx.is_some_and(|c| c.begins_subtree(caller)))
    }

    /// A call that began an interrupt subtree closed at `depth` in task `ti`.
    pub(super) fn interrupt_closed(&mut self, ti: usize, depth: u32) {
        self.tasks[ti].interrupt_closed = Some(depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Context::*;

    #[test]
    fn the_count_is_read_with_where_the_call_came_from() {
        // Engines without contexts: none.
        assert_eq!(decide(None, Some(Irq), None, false), None);
        // Under an interrupt's call, "task" is the interrupt.
        assert_eq!(decide(Some(Task), Some(Irq), None, false), Some(Irq));
        assert_eq!(
            decide(Some(Task), Some(Softirq), None, false),
            Some(Softirq)
        );
        // A nested interrupt keeps its own.
        assert_eq!(decide(Some(Irq), Some(Softirq), None, false), Some(Irq));
        assert_eq!(decide(Some(Nmi), Some(Irq), None, false), Some(Nmi));
        // The entry code's own calls.
        let enters = EntryRole::of("irq_enter_rcu");
        assert_eq!(decide(Some(Task), Some(Task), enters, false), Some(Irq));
        let soft = EntryRole::of("handle_softirqs");
        assert_eq!(decide(Some(Task), Some(Irq), soft, false), Some(Softirq));
        // The preemption check: the interrupt's right after one, else the task's.
        let check = EntryRole::of("raw_irqentry_exit_cond_resched");
        assert_eq!(decide(Some(Task), Some(Task), check, true), Some(Irq));
        assert_eq!(decide(Some(Task), Some(Task), check, false), Some(Task));
        assert_eq!(decide(Some(Task), None, None, false), Some(Task));
        assert_eq!(EntryRole::of("irq_exit_rcu"), None);
        // The deferred hrtimer rearm after the check (7.2): the interrupt's too.
        let rearm = EntryRole::of("__hrtimer_rearm_deferred");
        assert_eq!(decide(Some(Task), Some(Task), rearm, true), Some(Irq));
        assert_eq!(decide(Some(Task), Some(Task), rearm, false), Some(Task));
    }
}
