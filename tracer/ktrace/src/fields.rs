//! `--fields` on kernel functions (BPF engine): each member path resolved against the
//! function's signature in the db by `dcg-deref`, read by the BPF program at the call's
//! entry (a fields record after the entry's) and shown after the arguments under its
//! path: `do_sys_openat2(dfd=-100, filename="/etc/passwd", how=0x…, how->flags=32768)`.

use std::collections::HashMap;

use dcg_bpf::{FieldFetch, FIELDS_MAX};
use dcg_dbset::DbSet;
use dcg_deref::{parse_fields_arg, resolve, FieldPath};
use dcg_live::options::DerefRequest;

use crate::error::{KtraceError, Result};

/// A member read at a function's entry.
#[derive(Debug, Clone)]
pub struct MemberRead<'db> {
    /// Its path, as given (`how->flags`): the name it is shown under.
    pub name: String,
    /// How the program reads it.
    pub fetch: FieldFetch,
    /// Bytes of the value.
    pub size: u32,
    /// A bit-field: (first bit, width).
    pub bits: Option<(u32, u32)>,
    /// Its type.
    pub ty: sigdb::Type<'db>,
}

/// The members read, by function name, in the order its fields records carry them.
#[derive(Debug, Clone, Default)]
pub struct KernelFields<'db> {
    /// By function name.
    pub by_func: HashMap<String, Vec<MemberRead<'db>>>,
}

fn refuse(what: String) -> KtraceError {
    KtraceError::Fields(what)
}

impl<'db> KernelFields<'db> {
    /// Nothing is read.
    pub fn is_empty(&self) -> bool {
        self.by_func.is_empty()
    }

    /// The `--fields` of `requests` (user-space ones have no place here: `dcg trace`
    /// sends those elsewhere) for functions `traceable` says are, bound to their
    /// signatures in `dbs`; without `FUNC:` a path applies to the `roots` that have its
    /// parameter. Refused: a path that does not resolve, a function not traceable, a
    /// parameter not in an argument register at the entry, one
    /// [`dcg_deref::FieldPlan::unreadable`] refuses, more than [`FIELDS_MAX`] a function.
    pub fn plan(
        requests: &[DerefRequest],
        dbs: &'db DbSet,
        roots: &[String],
        traceable: &dyn Fn(&str) -> bool,
    ) -> Result<KernelFields<'db>> {
        let mut out = KernelFields::default();
        for spec in requests.iter().filter_map(|r| match r {
            DerefRequest::Fields(spec) => Some(spec),
            DerefRequest::Members { .. } => None,
        }) {
            let (func, paths) = parse_fields_arg(spec).map_err(|e| refuse(e.to_string()))?;
            for path in &paths {
                match func {
                    Some(name) if !traceable(name) => {
                        return Err(refuse(format!(
                            "{}: {name} is not a traceable function",
                            path.text
                        )))
                    }
                    Some(name) => {
                        out.add(dbs, name, path, true)?;
                    }
                    None => {
                        let mut placed = false;
                        for r in roots {
                            placed |= out.add(dbs, r, path, false)?;
                        }
                        if !placed {
                            return Err(refuse(format!(
                                "{}: no traced root has a parameter {}",
                                path.text, path.root
                            )));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// Add `path` to `func`'s reads (once); `named`: the user named the function, so a
    /// path that does not resolve in it is refused (else it is left out: false).
    fn add(&mut self, dbs: &'db DbSet, func: &str, path: &FieldPath, named: bool) -> Result<bool> {
        let Some(f) = dbs.by_name(func).next() else {
            return match named {
                true => Err(refuse(format!(
                    "{}: the db has no function {func}",
                    path.text
                ))),
                false => Ok(false),
            };
        };
        let plan = match resolve(&f, path) {
            Ok(p) => p,
            Err(_) if !named && !f.params().any(|p| p.name() == path.root) => return Ok(false),
            Err(e) => return Err(refuse(e.to_string())),
        };
        let text = &path.text;
        if let Some(why) = plan.unreadable() {
            return Err(refuse(format!("{text}: {why}")));
        }
        let hops = plan.hops();
        let reg = f
            .params()
            .find(|p| p.name() == path.root)
            .and_then(|p| match p.loc() {
                sigdb::Location::Reg(r) => sigdb::regs::sysv_arg_index(r),
                _ => None,
            })
            .filter(|&i| i < 6)
            .ok_or_else(|| {
                refuse(format!(
                    "{text}: {} is not in an argument register at the entry of {func}",
                    path.root
                ))
            })?;
        let reads = self.by_func.entry(func.to_string()).or_default();
        // Asked for again (by --fields and a --filter): read and shown once.
        if reads.iter().any(|r| r.name == *text) {
            return Ok(true);
        }
        if reads.len() >= FIELDS_MAX {
            return Err(refuse(format!(
                "{text}: {func} already has {FIELDS_MAX} members read (at most {FIELDS_MAX})"
            )));
        }
        reads.push(MemberRead {
            name: text.clone(),
            fetch: FieldFetch {
                reg: reg as u8,
                offsets: hops.iter().map(|&o| o as i32).collect(),
                size: plan.size.clamp(1, 8) as u8,
            },
            size: plan.size,
            bits: plan.bits,
            ty: plan.ty,
        });
        Ok(true)
    }
}
