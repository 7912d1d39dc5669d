//! Counters reported by `--stats`.

use std::time::Duration;

use sigdb::FuncFlags;

/// Why a subprogram DIE did not become a function record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum SkipReason {
    /// A declaration (`DW_AT_declaration`).
    Declaration = 0,
    /// No code: an abstract instance or a prototype.
    NoCode = 1,
    /// Code at address 0 in a linked file (discarded by the linker).
    Discarded = 2,
    /// No name through any chain nor a symbol.
    NoName = 3,
    /// A reference or attribute that could not be read.
    BadDwarf = 4,
}

impl SkipReason {
    /// All reasons, in index order.
    pub const ALL: [SkipReason; 5] = [
        SkipReason::Declaration,
        SkipReason::NoCode,
        SkipReason::Discarded,
        SkipReason::NoName,
        SkipReason::BadDwarf,
    ];

    /// Display name.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Declaration => "declaration",
            SkipReason::NoCode => "no code (abstract instance or prototype)",
            SkipReason::Discarded => "discarded by the linker (address 0)",
            SkipReason::NoName => "no name",
            SkipReason::BadDwarf => "unreadable DWARF",
        }
    }
}

/// Counters of a scan (summed over units and files).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Input files.
    pub files: u64,
    /// Input bytes (after decompression).
    pub input_bytes: u64,
    /// `.debug_info` bytes.
    pub debug_info_bytes: u64,
    /// Compilation units scanned.
    pub units: u64,
    /// Units skipped (type units, partial units, unreadable units).
    pub units_skipped: u64,
    /// DIEs visited.
    pub dies: u64,
    /// Function records produced (before merging duplicates).
    pub functions: u64,
    /// Function records by flag (index = bit).
    pub by_flag: [u64; 16],
    /// Functions without any flag.
    pub plain: u64,
    /// Subprograms skipped, by [`SkipReason`].
    pub skipped: [u64; 5],
    /// Inlined-subroutine instances seen.
    pub inlined_instances: u64,
    /// Inline edges recorded (per unit, before global merging).
    pub inline_edges: u64,
    /// Type references that could not be read.
    pub bad_type_refs: u64,
    /// Relocations of unsupported types in relocatable inputs.
    pub skipped_relocations: u64,
    /// Structs and unions left without members (per unit): one did not fit.
    pub members_dropped: u64,
    /// Named structs given members unlike those the db keeps (the first unit's).
    pub member_conflicts: u64,
    /// Unique functions in the database.
    pub db_functions: u64,
    /// Types in the database builder.
    pub db_types: u64,
    /// Size of the written database.
    pub db_bytes: u64,
    /// Time reading and mapping inputs and ELF parsing.
    pub t_load: Duration,
    /// Time walking DWARF (wall clock, parallel).
    pub t_scan: Duration,
    /// Time merging into the builder.
    pub t_merge: Duration,
    /// Time serializing and writing.
    pub t_write: Duration,
}

impl Stats {
    /// Count a function record with `flags`.
    pub fn count_function(&mut self, flags: FuncFlags) {
        self.functions += 1;
        if flags.is_empty() {
            self.plain += 1;
        }
        for (i, slot) in self.by_flag.iter_mut().enumerate() {
            if flags.bits() & (1 << i) != 0 {
                *slot += 1;
            }
        }
    }

    /// Count a skipped subprogram.
    pub fn skip(&mut self, reason: SkipReason) {
        self.skipped[reason as usize] += 1;
    }

    /// Add another set of counters (times excluded).
    pub fn add(&mut self, o: &Stats) {
        self.files += o.files;
        self.input_bytes += o.input_bytes;
        self.debug_info_bytes += o.debug_info_bytes;
        self.units += o.units;
        self.units_skipped += o.units_skipped;
        self.dies += o.dies;
        self.functions += o.functions;
        for i in 0..16 {
            self.by_flag[i] += o.by_flag[i];
        }
        self.plain += o.plain;
        for i in 0..5 {
            self.skipped[i] += o.skipped[i];
        }
        self.inlined_instances += o.inlined_instances;
        self.inline_edges += o.inline_edges;
        self.bad_type_refs += o.bad_type_refs;
        self.skipped_relocations += o.skipped_relocations;
        self.members_dropped += o.members_dropped;
    }

    /// A human-readable report.
    pub fn report(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "files:                {}", self.files);
        let _ = writeln!(s, "input bytes:          {}", self.input_bytes);
        let _ = writeln!(s, ".debug_info bytes:    {}", self.debug_info_bytes);
        let _ = writeln!(
            s,
            "compilation units:    {} (+{} skipped)",
            self.units, self.units_skipped
        );
        let _ = writeln!(s, "DIEs visited:         {}", self.dies);
        let _ = writeln!(
            s,
            "function records:     {} (unique in db: {})",
            self.functions, self.db_functions
        );
        let _ = writeln!(s, "  without flags:      {}", self.plain);
        for (flag, name) in FuncFlags::NAMES {
            let i = flag.bits().trailing_zeros() as usize;
            if self.by_flag[i] > 0 {
                let _ = writeln!(s, "  {:<19} {}", format!("{name}:"), self.by_flag[i]);
            }
        }
        let _ = writeln!(s, "subprograms skipped:");
        for r in SkipReason::ALL {
            let _ = writeln!(
                s,
                "  {:<42} {}",
                format!("{}:", r.as_str()),
                self.skipped[r as usize]
            );
        }
        let _ = writeln!(s, "inlined instances:    {}", self.inlined_instances);
        let _ = writeln!(s, "inline edges (per CU): {}", self.inline_edges);
        let _ = writeln!(s, "unreadable type refs: {}", self.bad_type_refs);
        if self.skipped_relocations > 0 {
            let _ = writeln!(s, "skipped relocations:  {}", self.skipped_relocations);
        }
        if self.members_dropped > 0 {
            let _ = writeln!(
                s,
                "structs without members (one did not fit, per CU): {}",
                self.members_dropped
            );
        }
        if self.member_conflicts > 0 {
            let _ = writeln!(
                s,
                "structs defined with other members (the first kept): {}",
                self.member_conflicts
            );
        }
        let _ = writeln!(s, "types (builder):      {}", self.db_types);
        let _ = writeln!(s, "db bytes:             {}", self.db_bytes);
        let _ = writeln!(
            s,
            "time load:            {:.3} s",
            self.t_load.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "time scan:            {:.3} s",
            self.t_scan.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "time merge:           {:.3} s",
            self.t_merge.as_secs_f64()
        );
        let _ = writeln!(
            s,
            "time write:           {:.3} s",
            self.t_write.as_secs_f64()
        );
        s
    }
}
