//! Error origins: where the error a call returned first appeared below it.
//!
//! **The rule.** The *error value* of a return is its errno, whether the function returned
//! it as an integer (`-ENOENT`) or as an error pointer (`ERR_PTR(-ENOENT)` is `-ENOENT`
//! too); see [`error_value`]. The *origin* of a call that returned error `E` is found by
//! walking down from the call: among its children that returned `E`, take the **first**
//! one to complete (the earliest call) and continue from it; the call where the walk stops
//! — one none of whose children returned `E` — is the origin. A call none of whose children
//! returned `E` is its own origin. A child returning another error, or no error, ends that
//! branch: an error that changed on the way (`-ECHILD` below, `-ENOENT` above) was made
//! where it changed.
//!
//! Why the first child: errors travel upwards by value, and a function often hands an
//! error it already holds to a later callee, which returns it unchanged. In the test
//! kernel's `open("/nonexistent")`, `path_openat` calls `step_into_slowpath` (returns
//! `ERR_PTR(-ENOENT)`: the lookup failed there) and then `link_path_walk`, which is given
//! that error pointer as its path and returns `-ENOENT` at once; the first child is where
//! the error was made, the last one only passed it on.
//!
//! **Computing it.** Streaming needs little memory: each open call keeps one candidate
//! per error value its children returned ([`Origins`]); a completing call picks its origin
//! from its own candidates and offers it to its parent's. The call tree
//! ([`crate::tree::CallTree`]) does this as calls complete and gives the origin of every
//! top-level call that returned an error to the sinks; `dcg report` does the same over
//! saved calls. Both go through [`Origins`], so they agree.

/// The error value of a return rendered as `ret` (with the source's error flag `error`):
/// `-ENOENT` for `-ENOENT` and for `ERR_PTR(-ENOENT)`; `None` when it is not an error.
/// An errno name counts even without the flag (values rendered elsewhere).
pub fn error_value(ret: Option<&str>, error: bool) -> Option<&str> {
    let ret = ret?;
    let v = ret
        .strip_prefix("ERR_PTR(")
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(ret);
    let named = v.len() > 2
        && v.starts_with("-E")
        && v[2..]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    (named || error).then_some(v)
}

/// The origin candidates of one open call: for each error value its children returned,
/// the origin of the first child that returned it. `T` identifies a call (an id, an
/// index, an id with its function). One word, allocation-free until a child fails: every
/// open call of the tree has one.
#[derive(Debug, Clone)]
pub struct Origins<T> {
    first: Option<Box<[Candidate<T>]>>,
}

/// An error value and the origin of the first child that returned it.
type Candidate<T> = (Box<str>, T);

impl<T> Default for Origins<T> {
    fn default() -> Self {
        Origins { first: None }
    }
}

impl<T: Copy> Origins<T> {
    /// No candidates.
    pub fn new() -> Origins<T> {
        Origins::default()
    }

    /// A child completed, returning error `error` whose origin is `origin` (the child
    /// itself or a call below it). Children must be given in the order they completed:
    /// only the first one with a given error counts.
    pub fn child(&mut self, error: &str, origin: T) {
        if self.first.iter().flatten().any(|(e, _)| &**e == error) {
            return;
        }
        // Rare (a new error value among one call's children): grown one at a time, to
        // the exact size (no spare room for the boxed slice to shed again).
        let old = self.first.take().map_or_else(Vec::new, <[_]>::into_vec);
        let mut v = Vec::with_capacity(old.len() + 1);
        v.extend(old);
        v.push((error.into(), origin));
        self.first = Some(v.into_boxed_slice());
    }

    /// The origin of the call itself, `own`, returning `error`: the first child's origin
    /// for that error, or `own` when no child returned it.
    pub fn origin(&self, error: &str, own: T) -> T {
        self.first
            .iter()
            .flatten()
            .find(|(e, _)| &**e == error)
            .map_or(own, |&(_, o)| o)
    }

    /// Whether no child returned an error.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test tree: (name, error returned, children in completion order).
    struct Call(&'static str, Option<&'static str>, Vec<Call>);

    /// The origin of `c` by the rule, computed bottom-up the way the tree does it.
    fn origin_of(c: &Call) -> Option<&'static str> {
        fn walk(c: &Call) -> &'static str {
            let mut o = Origins::new();
            for k in &c.2 {
                let ko = walk(k);
                if let Some(e) = error_value(k.1, false) {
                    o.child(e, ko);
                }
            }
            match error_value(c.1, false) {
                Some(e) => o.origin(e, c.0),
                None => c.0,
            }
        }
        error_value(c.1, false).map(|_| walk(c))
    }

    fn leaf(name: &'static str, ret: Option<&'static str>) -> Call {
        Call(name, ret, Vec::new())
    }

    #[test]
    fn error_values() {
        assert_eq!(error_value(Some("-ENOENT"), true), Some("-ENOENT"));
        assert_eq!(error_value(Some("ERR_PTR(-ENOENT)"), true), Some("-ENOENT"));
        assert_eq!(error_value(Some("-ENOENT"), false), Some("-ENOENT"));
        // An errno without a name is an error only when the source says so.
        assert_eq!(error_value(Some("-4095"), true), Some("-4095"));
        assert_eq!(error_value(Some("-4095"), false), None);
        assert_eq!(error_value(Some("0"), false), None);
        assert_eq!(error_value(Some("-E"), false), None);
        assert_eq!(error_value(Some("NULL"), false), None);
        assert_eq!(error_value(None, true), None);
    }

    #[test]
    fn nested_same_errno_goes_to_the_deepest() {
        let t = Call(
            "root",
            Some("-ENOENT"),
            vec![Call(
                "mid",
                Some("-ENOENT"),
                vec![leaf("ok", Some("0")), leaf("deep", Some("-ENOENT"))],
            )],
        );
        assert_eq!(origin_of(&t), Some("deep"));
    }

    /// `top { mid { deep } }`, each (name, value).
    fn chain(
        top: (&'static str, &'static str),
        mid: (&'static str, &'static str),
        deep: (&'static str, &'static str),
    ) -> Call {
        Call(
            top.0,
            Some(top.1),
            vec![Call(mid.0, Some(mid.1), vec![leaf(deep.0, Some(deep.1))])],
        )
    }

    #[test]
    fn a_different_errno_in_between_ends_the_chain() {
        let t = chain(("root", "-ENOENT"), ("mid", "-EINVAL"), ("deep", "-ENOENT"));
        assert_eq!(origin_of(&t), Some("root"));
        // The same error below a call that returned something else is not followed.
        let t = chain(("root", "-ENOENT"), ("mid", "0"), ("deep", "-ENOENT"));
        assert_eq!(origin_of(&t), Some("root"));
    }

    #[test]
    fn err_ptr_and_int_are_the_same_error() {
        let t = chain(
            ("do_sys_openat2", "-ENOENT"),
            ("do_file_open", "ERR_PTR(-ENOENT)"),
            ("lookup", "-ENOENT"),
        );
        assert_eq!(origin_of(&t), Some("lookup"));
    }

    #[test]
    fn root_is_its_own_origin() {
        assert_eq!(origin_of(&leaf("root", Some("-EPERM"))), Some("root"));
        let t = Call(
            "root",
            Some("-EPERM"),
            vec![leaf("a", Some("-ENOENT")), leaf("b", Some("1"))],
        );
        assert_eq!(origin_of(&t), Some("root"));
        // No error, no origin.
        assert_eq!(origin_of(&leaf("root", Some("0"))), None);
    }

    #[test]
    fn first_of_several_children_wins() {
        // As in the test kernel's path_openat: the lookup fails first, then a later call
        // is handed the error and returns it too.
        let t = Call(
            "path_openat",
            Some("ERR_PTR(-ELOOP)"),
            vec![
                Call(
                    "step_into_slowpath",
                    Some("ERR_PTR(-ELOOP)"),
                    vec![leaf("pick_link", Some("ERR_PTR(-ELOOP)"))],
                ),
                leaf("other", Some("-ENOENT")),
                leaf("link_path_walk", Some("-ELOOP")),
            ],
        );
        assert_eq!(origin_of(&t), Some("pick_link"));
        // Candidates per error value are independent.
        let mut o = Origins::new();
        o.child("-ENOENT", 1);
        o.child("-ELOOP", 2);
        o.child("-ENOENT", 3);
        assert_eq!(o.origin("-ENOENT", 0), 1);
        assert_eq!(o.origin("-ELOOP", 0), 2);
        assert_eq!(o.origin("-EIO", 0), 0);
        assert!(!o.is_empty());
    }
}
