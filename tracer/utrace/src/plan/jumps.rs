//! Non-local jumps: the functions that return twice and the ones that make them return
//! again. No engine hooks the return of a function that returns twice (a hooked return
//! address saved by `setjmp` would send the second return to the recorder's thunk long
//! after its frame is gone); what the C standard says they return is shown instead.

use sigdb::Function;

/// Functions that return twice: no engine hooks their return.
pub const RETURNS_TWICE: &[&str] = &[
    "setjmp",
    "_setjmp",
    "__setjmp",
    "sigsetjmp",
    "__sigsetjmp",
    "savectx",
    "vfork",
    "__vfork",
    "getcontext",
    "__getcontext",
    "swapcontext",
];

/// The `setjmp` family: called directly, each returns 0 (C11 7.13.1.1).
const SETJMP: &[&str] = &["setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp"];

/// What resumes a `setjmp(env)`: `(env, val)`, after which that `setjmp` returns `val`,
/// or 1 when `val` is 0 (C11 7.13.2.1). glibc's names included (`longjmp` is an alias
/// of `__libc_siglongjmp`; `__longjmp_chk` is `_FORTIFY_SOURCE`'s).
const LONGJMP: &[&str] = &[
    "longjmp",
    "_longjmp",
    "siglongjmp",
    "__libc_siglongjmp",
    "__libc_longjmp",
    "__longjmp_chk",
    "____longjmp_chk",
];

/// A function's part in non-local jumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Jump {
    /// None.
    #[default]
    None,
    /// Returns twice, with nothing known of its values (`vfork`, `getcontext`).
    ReturnsTwice,
    /// A `setjmp`: returns twice, 0 when called directly.
    Setjmp,
    /// A `longjmp`: never returns; the `setjmp` of its first argument returns again.
    Longjmp,
}

impl Jump {
    /// The part of the function named `symbol` (its ELF symbol) typed by `func`.
    pub fn of(symbol: &str, func: Option<Function<'_>>) -> Jump {
        let named = |list: &[&str]| {
            list.contains(&symbol) || func.is_some_and(|f| list.contains(&f.name()))
        };
        if named(SETJMP) {
            Jump::Setjmp
        } else if named(RETURNS_TWICE) {
            Jump::ReturnsTwice
        } else if named(LONGJMP) {
            Jump::Longjmp
        } else {
            Jump::None
        }
    }

    /// Whether the function returns twice (its return is never hooked).
    pub fn returns_twice(self) -> bool {
        matches!(self, Jump::ReturnsTwice | Jump::Setjmp)
    }
}

/// The value a `setjmp` returns when a `longjmp` passes `val`.
pub fn setjmp_returns(val: u64) -> i64 {
    match val as i32 {
        0 => 1,
        v => i64::from(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts() {
        assert_eq!(Jump::of("_setjmp", None), Jump::Setjmp);
        assert_eq!(Jump::of("vfork", None), Jump::ReturnsTwice);
        assert_eq!(Jump::of("__libc_siglongjmp", None), Jump::Longjmp);
        assert_eq!(Jump::of("getpid", None), Jump::None);
        assert!(Jump::Setjmp.returns_twice() && !Jump::Longjmp.returns_twice());
        assert_eq!(setjmp_returns(0), 1);
        assert_eq!(setjmp_returns(3), 3);
        assert_eq!(setjmp_returns(0xffff_ffff), -1);
    }
}
