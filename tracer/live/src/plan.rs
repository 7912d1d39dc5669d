//! What every engine of a session reads, kernel or user space, made once from the
//! options: what is traced, when the session stops, which values are shown, how deep,
//! whether inlined code is shown as frames, and the slots the next features fill
//! (filters bound to parameters, stack and dereference requests). The kernel plan
//! (`dcg_ktrace::plan`) and the user-space plan (`dcg_utrace::plan`) each carry one,
//! beside what only their engines need.

use crate::options::{DerefRequest, StopAt, Target, TraceOptions};

/// Which values of a call are read and shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Values {
    /// The arguments at entry (`--args`).
    pub args: bool,
    /// The return value (`--show-retvals`).
    pub retvals: bool,
}

impl Values {
    /// Whether any value is read.
    pub fn any(&self) -> bool {
        self.args || self.retvals
    }
}

/// The engine-independent part of a trace plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionPlan {
    /// What is traced: a command dcg starts, a running process, or every task.
    pub target: Target,
    /// When the session stops, besides the command ending and a stop signal.
    pub stop: StopAt,
    /// The values read and shown.
    pub values: Values,
    /// Calls shown only down to this nesting depth (0: all).
    pub depth: u32,
    /// Calls made from inlined code are placed under frames for it, where the db has
    /// inline instances.
    pub inline_frames: bool,
    /// `--filter`, parsed (each plan binds them to its functions' signatures).
    pub filters: Vec<dcg_filter::Filter>,
    /// `--min-duration`, in ns.
    pub min_duration: Option<u64>,
    /// Each top-level call carries the stack that led to it (`--stack`).
    pub stack: bool,
    /// Requests to follow pointers.
    pub derefs: Vec<DerefRequest>,
    /// Nobody watches the trace as it runs (the output is not a terminal, or a report is
    /// printed at the end): a source keeps its raw records while the traced command runs
    /// and decodes them afterwards, leaving the CPU to it.
    pub shown_at_end: bool,
    /// The kernel half of a session tracing both sides (set by its driver, not an
    /// option): its times are CLOCK_MONOTONIC's, the user side's clock, and each call
    /// needs its time.
    pub joined: bool,
}

impl SessionPlan {
    /// The part of `opts` every engine reads.
    pub fn of(opts: &TraceOptions) -> SessionPlan {
        SessionPlan {
            target: opts.target.clone(),
            stop: opts.stop,
            values: Values {
                args: opts.args,
                retvals: opts.show_retvals,
            },
            depth: opts.depth,
            inline_frames: !opts.no_inline_frames,
            filters: opts.filters.clone(),
            min_duration: opts.min_duration,
            stack: opts.stack,
            derefs: opts.derefs.clone(),
            shown_at_end: opts.output.shown_at_end,
            joined: false,
        }
    }

    /// What the bound filters `select` read is captured (and shown): parameters as
    /// `--args`, the return value as `--show-retvals`, each member path as `--fields
    /// FUNC:PATH` on the function it was bound to (shown as an argument named by its
    /// path, like `--fields`). Whether it added member paths.
    pub fn read_for(&mut self, select: &dcg_filter::saved::TreeFilter) -> bool {
        let (args, ret) = select.reads();
        self.values.args |= args;
        self.values.retvals |= ret;
        let members = select.members();
        for (func, path) in &members {
            self.derefs
                .push(DerefRequest::Fields(format!("{func}:{path}")));
        }
        !members.is_empty()
    }

    /// What is traced once the session runs, given the pid of the command dcg started.
    pub fn traced(&self, command_pid: Option<i32>) -> Traced {
        match (command_pid, self.target.pid()) {
            (Some(c), _) => Traced::Command(c),
            (None, Some(p)) => Traced::Pid(p),
            (None, None) => Traced::AllTasks,
        }
    }
}

/// What a running session traces (for the binary to word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traced {
    /// The command dcg started, by its pid.
    Command(i32),
    /// The running process given with `-p`.
    Pid(i32),
    /// Every task.
    AllTasks,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_from_the_options() {
        let opts = TraceOptions {
            args: true,
            depth: 3,
            no_inline_frames: true,
            target: Target::Pid(42),
            ..TraceOptions::default()
        };
        let p = SessionPlan::of(&opts);
        assert_eq!(
            p.values,
            Values {
                args: true,
                retvals: false
            }
        );
        assert!(p.values.any());
        assert_eq!(p.depth, 3);
        assert!(!p.inline_frames);
        assert_eq!(p.traced(None), Traced::Pid(42));
        assert_eq!(p.traced(Some(7)), Traced::Command(7));
        assert_eq!(SessionPlan::default().traced(None), Traced::AllTasks);
    }
}
