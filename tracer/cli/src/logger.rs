//! Where the libraries' `log` messages go: stderr, as `dcg: ...` notes. Warnings and
//! errors always (cleanup failures); debug messages when asked for by the environment:
//! `DCG_KTRACE_DEBUG=1` (the kernel tracer's progress), `DCG_BPF_DEBUG=1` (libbpf's own
//! messages), `DCG_DEBUG=1` (everything).

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr {
    ktrace: bool,
    libbpf: bool,
    all: bool,
}

impl Stderr {
    fn wanted(&self, m: &Metadata<'_>) -> bool {
        m.level() <= Level::Warn
            || self.all
            || (self.ktrace && m.target().starts_with("dcg_ktrace"))
            || (self.libbpf && m.target() == "libbpf")
    }
}

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.wanted(m)
    }

    fn log(&self, r: &Record<'_>) {
        if !self.wanted(r.metadata()) {
            return;
        }
        match r.level() {
            Level::Error | Level::Warn => eprintln!("dcg: {}", r.args()),
            _ => eprintln!("dcg debug [{}] {}", r.target(), r.args()),
        }
    }

    fn flush(&self) {}
}

/// Install the logger (once, first thing).
pub fn init() {
    let on = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "0");
    let logger = Stderr {
        ktrace: on("DCG_KTRACE_DEBUG"),
        libbpf: on("DCG_BPF_DEBUG"),
        all: on("DCG_DEBUG"),
    };
    let max = if logger.ktrace || logger.libbpf || logger.all {
        LevelFilter::Debug
    } else {
        LevelFilter::Warn
    };
    if log::set_logger(Box::leak(Box::new(logger))).is_ok() {
        log::set_max_level(max);
    }
}
