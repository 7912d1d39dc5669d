//! Exit and entry probe events that give return values and arguments on kernels whose
//! function_graph cannot print them: fprobe `f:` events in `dynamic_events`, else
//! kretprobes/kprobes in `kprobe_events`. Defined globally in the session's group,
//! enabled only in the session's instance.

use std::collections::{HashMap, HashSet};

use sigdb::Location;

use dcg_dbset::DbSet;
use dcg_live::tracefs::{EventFile, Session};

use super::funcs::{returns_void, Available};

/// Which probe flavour works on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Not tried yet.
    Unknown,
    /// fprobe (`f:` in `dynamic_events`).
    Fprobe,
    /// kprobe/kretprobe (`p:`/`r:` in `kprobe_events`).
    Kprobe,
}

/// The probes of a session.
#[derive(Debug)]
pub struct Probes {
    flavor: Flavor,
    cap: usize,
    /// function → exit event name.
    exits: HashMap<String, String>,
    /// function → entry event name.
    entries: HashMap<String, String>,
    /// function → `--deref` event name.
    derefs: HashMap<String, String>,
    /// function → output parameters' exit event name.
    outs: HashMap<String, String>,
    names: HashSet<String>,
    /// Functions whose probe could not be created (with the reason).
    pub failed: Vec<(String, String)>,
    /// Functions not probed because of the cap.
    pub capped: u64,
    tried: HashSet<String>,
}

/// `.` and other characters events may not have.
fn sanitize(func: &str) -> String {
    func.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Probes {
    /// At most `cap` probes in all.
    pub fn new(cap: usize) -> Probes {
        Probes {
            flavor: Flavor::Unknown,
            cap,
            exits: HashMap::new(),
            entries: HashMap::new(),
            derefs: HashMap::new(),
            outs: HashMap::new(),
            names: HashSet::new(),
            failed: Vec::new(),
            capped: 0,
            tried: HashSet::new(),
        }
    }

    /// The flavour in use.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// How many probes exist.
    pub fn len(&self) -> usize {
        self.exits.len() + self.entries.len() + self.derefs.len() + self.outs.len()
    }

    /// Whether no probe exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the cap is reached (the probe not created is counted).
    fn full(&mut self) -> bool {
        let full = self.len() >= self.cap;
        self.capped += u64::from(full);
        full
    }

    /// Whether `func` has an exit probe.
    pub fn has_exit(&self, func: &str) -> bool {
        self.exits.contains_key(func)
    }

    fn unique_name(&mut self, prefix: &str, func: &str) -> String {
        let base = format!("{prefix}{}", sanitize(func));
        let mut name = base.clone();
        let mut i = 1;
        while self.names.contains(&name) {
            name = format!("{base}_{i}");
            i += 1;
        }
        name
    }

    /// Create and enable an exit probe for `func` unless it has one, returns void, is not
    /// traceable, or the cap is reached. Returns the new event's name.
    pub fn add_exit(
        &mut self,
        sess: &mut Session,
        set: &DbSet,
        avail: &Available,
        func: &str,
    ) -> Option<String> {
        if self.exits.contains_key(func) || !self.tried.insert(format!("r {func}")) {
            return None;
        }
        if !avail.contains(func) || returns_void(set, func) {
            return None;
        }
        if self.full() {
            return None;
        }
        let ev = self.unique_name("r_", func);
        let group = sess.group().to_string();
        let fdef = format!("f:{group}/{ev} {func}%return ret=$retval");
        let kdef = format!("r:{group}/{ev} {func} ret=$retval");
        self.create(sess, &ev, func, &fdef, &kdef)?;
        self.exits.insert(func.to_string(), ev.clone());
        Some(ev)
    }

    /// Create and enable an entry probe fetching the parameters DWARF locates in registers
    /// or stack slots. Returns the new event's name.
    pub fn add_entry(
        &mut self,
        sess: &mut Session,
        set: &DbSet,
        avail: &Available,
        func: &str,
    ) -> Option<String> {
        if self.entries.contains_key(func) || !self.tried.insert(format!("a {func}")) {
            return None;
        }
        if !avail.contains(func) {
            return None;
        }
        let f = set.find(func, None)?;
        let fetch = |fprobe: bool| -> Vec<String> {
            f.params()
                .filter(|p| !p.name().is_empty())
                .filter_map(|p| Some(format!("{}={}:x64", p.name(), fetch_arg(p.loc(), fprobe)?)))
                .take(12)
                .collect()
        };
        let (ff, kf) = (fetch(true), fetch(false));
        if ff.is_empty() && kf.is_empty() {
            return None;
        }
        if self.full() {
            return None;
        }
        let ev = self.create_entry(sess, "a_", func, (&ff, &kf))?;
        self.entries.insert(func.to_string(), ev.clone());
        Some(ev)
    }

    /// Create and enable an entry probe reading the members `--fields` asks for at
    /// `func`'s entry (`reads`): member i in field `f{i}`, the pointers read on its way in
    /// `p{i}_{k}`. Returns the new event's name. Not counted against the cap: `--fields`
    /// names its functions.
    pub fn add_members(
        &mut self,
        sess: &mut Session,
        func: &str,
        reads: &[crate::fields::MemberRead<'_>],
    ) -> Option<String> {
        if reads.is_empty() || !self.tried.insert(format!("m {func}")) {
            return None;
        }
        let fetch = |fprobe: bool| -> Vec<String> {
            reads
                .iter()
                .enumerate()
                .flat_map(|(i, r)| member_fetches(i, &r.fetch, fprobe))
                .collect()
        };
        self.create_entry(sess, "m_", func, (&fetch(true), &fetch(false)))
    }

    /// Create and enable an entry probe copying the structs behind `func`'s pointer
    /// parameters (`--deref`), with the fetch arguments `fetches` gives for the flavour
    /// (fprobe: true) unless it has one or the cap is reached. Returns the new event's
    /// name.
    pub fn add_derefs(
        &mut self,
        sess: &mut Session,
        func: &str,
        fetches: impl Fn(bool) -> Vec<String>,
    ) -> Option<String> {
        if self.derefs.contains_key(func) || !self.tried.insert(format!("d {func}")) {
            return None;
        }
        let (ff, kf) = (fetches(true), fetches(false));
        if ff.is_empty() {
            return None;
        }
        if self.full() {
            return None;
        }
        let ev = self.create_entry(sess, "d_", func, (&ff, &kf))?;
        self.derefs.insert(func.to_string(), ev.clone());
        Some(ev)
    }

    /// Create and enable an exit probe reading `func`'s output parameters through its
    /// entry's arguments (`fetches`, the same for both flavours) unless it has one or the
    /// cap is reached. Returns the new event's name.
    pub fn add_outputs(
        &mut self,
        sess: &mut Session,
        func: &str,
        fetches: &[String],
    ) -> Option<String> {
        if fetches.is_empty()
            || self.outs.contains_key(func)
            || !self.tried.insert(format!("o {func}"))
        {
            return None;
        }
        if self.full() {
            return None;
        }
        let ev = self.unique_name("o_", func);
        let group = sess.group().to_string();
        let fdef = format!("f:{group}/{ev} {func}%return {}", fetches.join(" "));
        let kdef = format!("r:{group}/{ev} {func} {}", fetches.join(" "));
        self.create(sess, &ev, func, &fdef, &kdef)?;
        self.outs.insert(func.to_string(), ev.clone());
        Some(ev)
    }

    /// Create and enable an entry probe on `func` named `prefix` + the function, with the
    /// fetch arguments of each flavour (fprobe, kprobe). Returns its name.
    fn create_entry(
        &mut self,
        sess: &mut Session,
        prefix: &str,
        func: &str,
        (fprobe, kprobe): (&[String], &[String]),
    ) -> Option<String> {
        let ev = self.unique_name(prefix, func);
        let group = sess.group().to_string();
        let fdef = format!("f:{group}/{ev} {func} {}", fprobe.join(" "));
        let kdef = format!("p:{group}/{ev} {func} {}", kprobe.join(" "));
        self.create(sess, &ev, func, &fdef, &kdef)?;
        Some(ev)
    }

    fn create(
        &mut self,
        sess: &mut Session,
        ev: &str,
        func: &str,
        fdef: &str,
        kdef: &str,
    ) -> Option<()> {
        let t0 = std::time::Instant::now();
        let r = self.create_inner(sess, ev, func, fdef, kdef);
        super::debug(format_args!(
            "probe {ev}: {} in {:.3} s",
            if r.is_some() { "created" } else { "FAILED" },
            t0.elapsed().as_secs_f64()
        ));
        r
    }

    fn create_inner(
        &mut self,
        sess: &mut Session,
        ev: &str,
        func: &str,
        fdef: &str,
        kdef: &str,
    ) -> Option<()> {
        let try_f = matches!(self.flavor, Flavor::Unknown | Flavor::Fprobe);
        let mut last_err = String::new();
        if try_f {
            match sess.add_event(EventFile::Dynamic, ev, fdef) {
                Ok(()) => {
                    if self.flavor == Flavor::Unknown {
                        self.flavor = Flavor::Fprobe;
                    }
                    return self.enable(sess, ev, func);
                }
                Err(e) => {
                    last_err = e.to_string();
                    if self.flavor == Flavor::Fprobe {
                        self.failed.push((func.to_string(), last_err));
                        return None;
                    }
                }
            }
        }
        match sess.add_event(EventFile::Kprobe, ev, kdef) {
            Ok(()) => {
                self.flavor = Flavor::Kprobe;
                self.enable(sess, ev, func)
            }
            Err(e) => {
                if self.flavor == Flavor::Unknown && !last_err.is_empty() {
                    // Neither kind could be created for the first function: maybe this
                    // function only; keep trying fprobes next time.
                    self.failed
                        .push((func.to_string(), format!("{last_err}; {e}")));
                } else {
                    self.failed.push((func.to_string(), e.to_string()));
                }
                None
            }
        }
    }

    fn enable(&mut self, sess: &mut Session, ev: &str, func: &str) -> Option<()> {
        self.names.insert(ev.to_string());
        if let Err(e) = sess.enable_event(ev) {
            self.failed.push((func.to_string(), e.to_string()));
            return None;
        }
        Some(())
    }
}

/// The fetch argument for a parameter location at function entry. fprobes cannot read
/// registers by name: the n-th integer argument register is `$argN`, a stack slot
/// `$stackN` (the CFA is the stack pointer at entry plus 8). kprobes read `%reg` and
/// `+OFF(%sp)`.
pub fn fetch_arg(loc: Location, fprobe: bool) -> Option<String> {
    match loc {
        Location::Reg(r) => {
            if fprobe {
                let n = sigdb::regs::sysv_arg_index(r)?;
                return Some(format!("$arg{}", n + 1));
            }
            sigdb::regs::reg(r)
                .and_then(|r| r.fetch)
                .map(str::to_string)
        }
        Location::Stack(off) if off >= 0 && off % 8 == 0 => Some(if fprobe {
            format!("$stack{}", off / 8 + 1)
        } else {
            format!("+{}(%sp)", off + 8)
        }),
        _ => None,
    }
}

/// The fetch argument of argument register `reg` (System V order, 0-5) at an entry:
/// `$argN` for an fprobe, the register for a kprobe.
pub fn reg_expr(reg: u8, fprobe: bool) -> String {
    const REGS: [&str; 6] = ["%di", "%si", "%dx", "%cx", "%r8", "%r9"];
    let reg = usize::from(reg).min(5);
    if fprobe {
        format!("$arg{}", reg + 1)
    } else {
        REGS[reg].to_string()
    }
}

/// The fetch arguments of member `i` read as `fetch` says: `f{i}` the value (`:u8` to
/// `:u64` by its size), `p{i}_{k}` each pointer read on its way, the parameter first.
pub fn member_fetches(i: usize, fetch: &dcg_bpf::FieldFetch, fprobe: bool) -> Vec<String> {
    let mut expr = reg_expr(fetch.reg, fprobe);
    let mut out = Vec::new();
    let bits = match fetch.size {
        1 => 8,
        2 => 16,
        3 | 4 => 32,
        _ => 64,
    };
    let Some((last, hops)) = fetch.offsets.split_last() else {
        out.push(format!("f{i}={expr}:u{bits}"));
        return out;
    };
    out.push(format!("p{i}_0={expr}:x64"));
    for (k, off) in hops.iter().enumerate() {
        expr = format!("{off:+}({expr})");
        out.push(format!("p{i}_{}={expr}:x64", k + 1));
    }
    out.push(format!("f{i}={last:+}({expr}):u{bits}"));
    out
}

/// What the decoder shows of the members a [`Probes::add_members`] event reads.
pub fn member_fields<'db>(
    reads: &[crate::fields::MemberRead<'db>],
) -> Vec<dcg_calls::members::MemberField<'db>> {
    reads
        .iter()
        .enumerate()
        .map(|(i, r)| dcg_calls::members::MemberField {
            name: r.name.clone(),
            ty: r.ty,
            size: r.size,
            bits: r.bits,
            field: format!("f{i}"),
            through: (0..r.fetch.offsets.len())
                .map(|k| format!("p{i}_{k}"))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_args() {
        assert_eq!(fetch_arg(Location::Reg(5), false).as_deref(), Some("%di"));
        assert_eq!(fetch_arg(Location::Reg(9), false).as_deref(), Some("%r9"));
        assert_eq!(fetch_arg(Location::Reg(5), true).as_deref(), Some("$arg1"));
        assert_eq!(fetch_arg(Location::Reg(2), true).as_deref(), Some("$arg4"));
        assert_eq!(
            fetch_arg(Location::Stack(0), true).as_deref(),
            Some("$stack1")
        );
        assert_eq!(
            fetch_arg(Location::Stack(8), false).as_deref(),
            Some("+16(%sp)")
        );
        assert_eq!(fetch_arg(Location::OptimizedOut, true), None);
        assert_eq!(sanitize("getname_flags.part.0"), "getname_flags_part_0");
    }

    #[test]
    fn member_fetch_args() {
        let f = |reg, offsets: &[i32], size| dcg_bpf::FieldFetch {
            reg,
            offsets: offsets.to_vec(),
            size,
        };
        // how->flags: the u64 at how + 0.
        assert_eq!(
            member_fetches(0, &f(2, &[0], 8), false),
            ["p0_0=%dx:x64", "f0=+0(%dx):u64"]
        );
        // c->next->port: the pointer at c + 40, then the u32 at it + 4.
        assert_eq!(
            member_fetches(1, &f(0, &[40, 4], 4), true),
            [
                "p1_0=$arg1:x64",
                "p1_1=+40($arg1):x64",
                "f1=+4(+40($arg1)):u32"
            ]
        );
        // A parameter itself.
        assert_eq!(member_fetches(2, &f(1, &[], 4), false), ["f2=%si:u32"]);
        // A negative offset (container_of).
        assert_eq!(
            member_fetches(0, &f(0, &[-8], 2), false),
            ["p0_0=%di:x64", "f0=-8(%di):u16"]
        );
    }
}
