//! What the recorder knows after start-up, read-only from then on: the plan, the rings,
//! each traced function's hook site, and the memory known to be readable.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

use dcg_inproc::layout::*;

use crate::ring::Shm;

/// Set in a forked child that is not traced: nothing more is recorded there.
pub static DISABLED: AtomicBool = AtomicBool::new(false);

/// Set once the program called `dlclose`: the object mappings of start-up may be gone,
/// so every read of the target's memory goes through the kernel from then on.
pub static RO_STALE: AtomicBool = AtomicBool::new(false);

static STATE: AtomicPtr<State> = AtomicPtr::new(core::ptr::null_mut());

/// The recorder's state.
pub struct State {
    /// The ring file.
    pub shm: Shm,
    /// The plan's functions.
    pub funcs: &'static [FuncDesc],
    /// The plan's fetch ops.
    pub ops: &'static [FetchOp],
    /// The plan's entry tests (`--filter`).
    pub conds: &'static [CondTest],
    /// Hook sites (where the hook call returns) and their functions, by address.
    pub sites: Vec<(u64, u32)>,
    /// The loaded objects' mappings at start-up (code, constants, data, `.bss`), by
    /// address: safe to read directly until a `dlclose`.
    pub ro: Vec<(u64, u64)>,
    /// This process.
    pub pid: AtomicI32,
    /// Whether forked children are traced.
    pub follow: bool,
    /// The key whose destructor gives a ring back when its thread ends.
    pub thread_key: libc::pthread_key_t,
    /// Timestamps are `rdtsc` ticks ([`CLOCK_TSC`]): dcg asked for them and this process
    /// may read the counter.
    pub tsc: bool,
    /// `--stack`: a top-level call of a root is preceded by its stack ([`REC_STACK`]).
    ///
    /// [`REC_STACK`]: dcg_inproc::layout::REC_STACK
    pub stacks: bool,
    /// Where the main thread's stack starts (`__libc_stack_end`; 0: unknown): a stack
    /// copy stops there.
    pub stack_end: u64,
}

/// The state, once the recorder is set up in this process.
#[inline(always)]
pub fn state() -> Option<&'static State> {
    // SAFETY: published once, never freed.
    unsafe { STATE.load(Ordering::Acquire).as_ref() }
}

/// Publish the state.
pub fn publish(s: State) {
    STATE.store(Box::into_raw(Box::new(s)), Ordering::Release);
}

impl State {
    /// The function whose hook returns to `site`.
    #[inline(always)]
    pub fn lookup(&self, site: u64) -> Option<u32> {
        self.sites
            .binary_search_by_key(&site, |&(s, _)| s)
            .ok()
            .map(|i| self.sites[i].1)
    }

    /// Function `i` of the plan.
    #[inline(always)]
    pub fn func(&self, i: u32) -> &FuncDesc {
        &self.funcs[i as usize]
    }

    /// `n` ops from `first`.
    #[inline(always)]
    pub fn ops(&self, first: u32, n: u16) -> &[FetchOp] {
        self.ops
            .get(first as usize..first as usize + n as usize)
            .unwrap_or(&[])
    }

    /// The entry tests of function `f`.
    #[inline(always)]
    pub fn conds(&self, f: &FuncDesc) -> &[CondTest] {
        let first = f.cond_first as usize;
        self.conds
            .get(first..first.saturating_add(f.cond_n as usize))
            .unwrap_or(&[])
    }

    /// Bytes from `addr` to the end of the start-up object mapping it lies in (0 when
    /// none, or once a `dlclose` may have unmapped one: [`RO_STALE`]).
    #[inline(always)]
    pub fn readable_len(&self, addr: u64) -> u64 {
        if RO_STALE.load(Ordering::Relaxed) {
            return 0;
        }
        let i = self.ro.partition_point(|&(s, _)| s <= addr);
        match i.checked_sub(1).map(|i| self.ro[i]) {
            Some((_, end)) if addr < end => end - addr,
            _ => 0,
        }
    }

    /// Whether dcg stopped reading.
    #[inline(always)]
    pub fn stopped(&self) -> bool {
        self.shm.stopped()
    }

    /// The process id, for reads through the kernel.
    #[inline(always)]
    pub fn pid(&self) -> i32 {
        self.pid.load(Ordering::Relaxed)
    }
}
