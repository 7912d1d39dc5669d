//! Command-line options of `dcg trace`, shared by the kernel and the user-space (uprobe)
//! tracers: `--func` patterns, what to show, when to stop, and what to trace (a command
//! started by dcg, or a running process).

use std::path::{Path, PathBuf};

use crate::decode::ColorChoice;

/// Options of `dcg trace`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TraceArgs {
    /// Functions to trace: a glob over function names (`vfs_*`), or `PATH:PATTERN` for the
    /// functions of a user-space executable or shared library (`./prog:parse_*`).
    #[arg(long = "func", value_name = "[PATH:]PATTERN", required = true)]
    pub func: Vec<String>,
    /// Show return values, decoded by their types.
    #[arg(long)]
    pub show_retvals: bool,
    /// Show arguments, decoded by their types.
    #[arg(long)]
    pub args: bool,
    /// Show calls only down to this nesting depth (1: top-level calls only; 0: all).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub depth: u32,
    /// Stop after N completed top-level calls.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Stop after SECS seconds (fractions allowed).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// One JSON object (a saved-calls record) per completed call instead of text.
    #[arg(long)]
    pub json: bool,
    /// Only call paths that contain an error return.
    #[arg(long)]
    pub errors_only: bool,
    /// Also save the calls to FILE (saved-calls JSON lines, for `dcg report`).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Signature db of the traced code (sigdb file or ELF with `.dcg_sigdb`); default: the
    /// store's db (by build-id), else one built in memory from the binary's DWARF.
    #[arg(long = "db", value_name = "FILE")]
    pub db: Vec<PathBuf>,
    /// Color error values: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_name = "WHEN")]
    pub color: ColorChoice,
    /// Trace a running process (and its threads) instead of starting a command.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID",
        conflicts_with = "command"
    )]
    pub pid: Option<i32>,
    /// The command to start and trace (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl TraceArgs {
    /// Whether every `--func` names user-space code (`PATH:PATTERN`): those go to the
    /// uprobe tracer.
    pub fn is_user_space(&self) -> bool {
        !self.func.is_empty() && self.func.iter().all(|f| split_user_func(f).is_some())
    }
}

/// Split a `PATH:PATTERN` function spec into the path and the pattern, or `None` for a
/// kernel pattern. A spec is a user-space one when the text before a `:` contains a `/`,
/// names an existing file, or looks like a shared library (`libc.so.6:malloc`).
pub fn split_user_func(spec: &str) -> Option<(&str, &str)> {
    // Try every `:` from the left: the first prefix that is a path wins, so paths with
    // a `:` in them still work when the file exists.
    let mut fallback = None;
    for (i, _) in spec.match_indices(':') {
        let (path, pattern) = (&spec[..i], &spec[i + 1..]);
        if path.is_empty() || pattern.is_empty() {
            continue;
        }
        if Path::new(path).is_file() {
            return Some((path, pattern));
        }
        if fallback.is_none() && (path.contains('/') || path.contains(".so")) {
            fallback = Some((path, pattern));
        }
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_specs() {
        assert_eq!(split_user_func("./prog:main"), Some(("./prog", "main")));
        assert_eq!(
            split_user_func("/usr/lib/x86_64-linux-gnu/libc.so.6:mall*"),
            Some(("/usr/lib/x86_64-linux-gnu/libc.so.6", "mall*"))
        );
        assert_eq!(
            split_user_func("libz.so.1:inflate"),
            Some(("libz.so.1", "inflate"))
        );
        assert_eq!(split_user_func("vfs_read"), None);
        assert_eq!(split_user_func("do_sys_*"), None);
        assert_eq!(split_user_func("./prog:"), None);
        let a = TraceArgs {
            func: vec!["./a:x".into(), "b/c:y".into()],
            ..TraceArgs::default()
        };
        assert!(a.is_user_space());
        let k = TraceArgs {
            func: vec!["./a:x".into(), "vfs_read".into()],
            ..TraceArgs::default()
        };
        assert!(!k.is_user_space());
    }
}
