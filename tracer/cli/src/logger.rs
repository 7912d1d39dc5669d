//! Where the libraries' `log` messages go: stderr, as `dcg: ...` notes. Warnings and
//! errors always (cleanup failures); debug messages when asked for by the environment:
//! `DCG_KTRACE_DEBUG=1` (the kernel tracer's progress), `DCG_BPF_DEBUG=1` (libbpf's own
//! messages), `DCG_DEBUG=1` (everything).

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr {
    /// When the logger was installed: debug lines carry the seconds since, one clock for
    /// the kernel tracer's progress and libbpf's steps alike.
    start: std::time::Instant,
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
            _ => eprintln!(
                "dcg debug [{}] {:8.3}: {}",
                r.target(),
                self.start.elapsed().as_secs_f64(),
                r.args()
            ),
        }
    }

    fn flush(&self) {}
}

/// Install the logger (once, first thing).
pub fn init() {
    let on = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "0");
    let logger = Stderr {
        start: std::time::Instant::now(),
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

/// Downloads (debuginfod) drawn as a progress bar on stderr when it is a terminal.
pub fn progress_bars() {
    use std::sync::Mutex;
    static BAR: Mutex<Option<indicatif::ProgressBar>> = Mutex::new(None);
    dcg_debuginfod::set_progress_hook(Box::new(|label, got, total, done| {
        let mut bar = BAR.lock().unwrap_or_else(|e| e.into_inner());
        if done {
            if let Some(b) = bar.take() {
                b.finish_and_clear();
            }
            return;
        }
        let b = bar.get_or_insert_with(|| {
            let b = match total {
                Some(t) => indicatif::ProgressBar::new(t),
                None => indicatif::ProgressBar::new_spinner(),
            };
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "dcg: debuginfod {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.set_message(label.to_string());
            b
        });
        b.set_position(got);
    }));
}
