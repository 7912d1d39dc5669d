//! What the kernel's tracefs offers the function_graph engine, and the release test the
//! engine choice needs.

use dcg_live::tracefs::Session;

/// What the kernel's tracefs offers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Features {
    /// `options/funcgraph-retval`.
    pub retval: bool,
    /// `options/funcgraph-retaddr`.
    pub retaddr: bool,
    /// `options/funcgraph-args`.
    pub args: bool,
    /// fprobes run on the function-graph tracer (Linux 6.14 on) rather than on rethook.
    pub fprobe_on_fgraph: bool,
}

impl Features {
    /// Detect from the instance's option files. `pretend_none` (`--fgraph-probes`)
    /// pretends the kernel lacks `funcgraph-retval` and `funcgraph-args`, to exercise the
    /// probe path on any kernel (tests).
    pub fn detect(s: &Session, pretend_none: bool) -> Features {
        if pretend_none {
            return Features::default();
        }
        Features {
            retval: s.has("options/funcgraph-retval"),
            retaddr: s.has("options/funcgraph-retaddr"),
            args: s.has("options/funcgraph-args"),
            fprobe_on_fgraph: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .is_ok_and(|r| release_at_least(&r, (6, 14))),
        }
    }
}

/// Whether a kernel release string (`7.2.13+deb14-cloud-amd64`) is at least `want`.
pub(crate) fn release_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= want
}

#[cfg(test)]
mod tests {
    #[test]
    fn release_order() {
        assert!(super::release_at_least("7.2.13+deb14-cloud-amd64", (6, 14)));
        assert!(super::release_at_least("6.14.0", (6, 14)));
        assert!(!super::release_at_least(
            "6.12.117+deb12-cloud-amd64\n",
            (6, 14)
        ));
        assert!(!super::release_at_least("", (6, 14)));
    }
}
