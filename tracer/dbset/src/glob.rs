//! Function patterns: shell-style globs (`vfs_*`, `do_sys_open?`, `vfs_[rw]*`) over
//! function names, as `--func` takes them, for kernel and user-space functions alike.

/// A `--func` pattern.
#[derive(Debug, Clone)]
pub struct Glob {
    text: String,
    pattern: glob::Pattern,
}

/// A pattern that is not a valid glob (an unclosed `[`, say).
#[derive(Debug, thiserror::Error)]
#[error("invalid pattern '{text}': {reason}")]
pub struct GlobError {
    /// The pattern.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Glob {
    /// Compile `text`.
    pub fn new(text: &str) -> Result<Glob, GlobError> {
        let pattern = glob::Pattern::new(text).map_err(|e| GlobError {
            text: text.to_string(),
            reason: e.msg.to_string(),
        })?;
        Ok(Glob {
            text: text.to_string(),
            pattern,
        })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.pattern.matches(name)
    }

    /// Whether the pattern has glob characters (else it names one function).
    pub fn is_glob(&self) -> bool {
        is_glob(&self.text)
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Whether a pattern has glob characters.
pub fn is_glob(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

/// Whether `name` matches `pattern`; an invalid pattern matches only itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    match Glob::new(pattern) {
        Ok(g) => g.matches(name),
        Err(_) => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("do_sys_*", "do_sys_openat2"));
        assert!(glob_match("*openat*", "do_sys_openat2"));
        assert!(glob_match("vfs_rea?", "vfs_read"));
        assert!(!glob_match("vfs_rea?", "vfs_readv"));
        assert!(glob_match("vfs_[rw]*", "vfs_write"));
        assert!(!glob_match("vfs_[!rw]*", "vfs_write"));
        assert!(glob_match("*", "x"));
        assert!(glob_match("*.cold", "classify.cold"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXbYY"));
        assert!(glob_match("", ""));
        assert!(!glob_match("check", "check_arg"));
        assert!(Glob::new("vfs_[rw").is_err());
        assert!(glob_match("vfs_[rw", "vfs_[rw"));
    }
}
