//! `--deref[=N]` on kernel functions (BPF engine): the structs behind every pointer
//! parameter passed in an argument register, planned by `dcg-deref` (the same read plan
//! as user space: the argument's struct, then what its members point to, N levels, at
//! most `--deref-bytes` an argument), copied by the BPF program at the call's entry (one
//! deref record a read of at most [`dcg_bpf::DEREF_BYTES`]) and shown in place of the
//! pointer: `how=(struct open_how *)0xffa0…{flags=33345, mode=416, resolve=0}`.

use std::collections::HashMap;
use std::rc::Rc;

use dcg_bpf::{DerefRead, DEREF_BYTES, DEREF_HOPS, DEREF_ITEMS};
use dcg_dbset::DbSet;
use dcg_deref::{From, ReadPlan};
use dcg_live::options::DerefRequest;

/// One pointer parameter whose struct is read.
#[derive(Debug, Clone)]
pub struct DerefParam<'db> {
    /// The parameter's name (the argument it is shown as).
    pub name: String,
    /// Its argument register (System V order).
    pub reg: usize,
    /// Its type: a pointer to a struct or union.
    pub ty: sigdb::Type<'db>,
    /// What is read, as `dcg-deref` planned it.
    pub plan: Rc<ReadPlan>,
}

/// What the program reads at one function's entry.
#[derive(Debug, Clone, Default)]
pub struct FuncDerefs<'db> {
    /// The parameters read behind.
    pub params: Vec<DerefParam<'db>>,
    /// The program's reads, in order (at most [`DEREF_ITEMS`]).
    pub reads: Vec<DerefRead>,
    /// For each of `reads`: the parameter (index in `params`) whose data it copies.
    pub owner: Vec<usize>,
}

/// An output parameter of a kernel function (`--deref`, `--fields`): a pointer to a
/// non-const scalar, read again when the call returns (`/* ret=0 *fildes=3 */`).
#[derive(Debug, Clone)]
pub struct OutParam<'db> {
    /// The parameter's name.
    pub name: String,
    /// The type it points to.
    pub pointee: sigdb::Type<'db>,
    /// Its argument register (System V index), when it is passed in one.
    pub reg: Option<usize>,
}

/// Which of a function's output parameters the program reads: the first passed in an
/// argument register, through a session link's cookie (one word a call). The others
/// show `?`.
pub fn read_output(outs: &[OutParam<'_>]) -> Option<usize> {
    outs.iter().position(|o| o.reg.is_some())
}

/// The output parameters `outs` of a returning call into `out`, each with the value
/// `read(i)` gives for output `i`: (its pointer, the value read through it; none where
/// the read failed). A `NULL` pointer shows nothing; an output not read shows `?`.
pub fn render_outs(
    outs: &[OutParam<'_>],
    read: impl Fn(usize) -> Option<(u64, Option<u64>)>,
    symbols: &dyn dcg_deref::Symbols,
    out: &mut dcg_calls::sink::ArgList,
) {
    for (i, o) in outs.iter().enumerate() {
        match read(i) {
            Some((0, _)) => {}
            Some((_, Some(v))) => {
                let (ty, size) = (o.pointee, o.pointee.resolve().size());
                let role = dcg_render::Role::Arg;
                out.push_with(&o.name, |s| {
                    dcg_deref::render_word(s, ty, v, size, None, symbols, role)
                });
            }
            _ => out.push(&o.name, "?"),
        }
    }
}

/// `--deref`'s reads, by function name (as `--fields`' are; the program's records name
/// the function by address, the feed by the name shown), and the output parameters.
#[derive(Debug, Clone, Default)]
pub struct KernelDerefs<'db> {
    /// By function name.
    pub by_func: HashMap<String, Rc<FuncDerefs<'db>>>,
    /// Output parameters by function name. Struct pointers are not outputs here: a
    /// kernel function's non-const struct pointers are mostly the objects it works on,
    /// which `--deref` shows at the entry.
    pub outs: HashMap<String, Rc<[OutParam<'db>]>>,
}

impl<'db> KernelDerefs<'db> {
    /// Nothing is read.
    pub fn is_empty(&self) -> bool {
        self.by_func.is_empty() && self.outs.is_empty()
    }

    /// The argument register and pointee size of the output parameter the program reads
    /// at `name`'s return, if any.
    pub fn out_read(&self, name: &str) -> Option<(u8, u8)> {
        let outs = self.outs.get(name)?;
        let read = &outs[read_output(outs)?];
        Some((read.reg? as u8, read.pointee.resolve().size() as u8))
    }

    /// The reads `--deref[=N]` (among `requests`) asks for at the entries of `names`
    /// (the traced functions, each once), bound to their signatures in `dbs`; empty
    /// without `--deref`.
    pub fn plan<'n>(
        requests: &[DerefRequest],
        dbs: &'db DbSet,
        names: impl IntoIterator<Item = &'n str>,
    ) -> KernelDerefs<'db> {
        let mut out = KernelDerefs::default();
        if requests.is_empty() {
            return out;
        }
        let members = requests.iter().find_map(|r| match r {
            DerefRequest::Members { depth, cap } => Some((*depth, *cap)),
            DerefRequest::Fields(_) => None,
        });
        // Plans by pointer type: many functions take the same (a `struct file *`).
        let mut plans: HashMap<(u32, u32, String), Rc<ReadPlan>> = HashMap::new();
        for name in names {
            if out.by_func.contains_key(name) {
                continue;
            }
            let Some(f) = dbs.by_name(name).next() else {
                continue;
            };
            let outs = outputs(&f);
            if !outs.is_empty() {
                out.outs.insert(name.to_string(), outs.into());
            }
            let Some((depth, cap)) = members else {
                continue;
            };
            let mut fd = FuncDerefs::default();
            for p in f.params() {
                let Some(reg) = arg_register(p) else {
                    continue;
                };
                let ty = p.ty();
                if dcg_deref::follow(ty).is_none_or(|(_, k)| k != dcg_deref::ReadKind::Struct) {
                    continue;
                }
                let key = (ty.resolve().index(), ty.size(), type_name(ty));
                let plan = Rc::clone(
                    plans
                        .entry(key)
                        .or_insert_with(|| Rc::new(dcg_deref::plan(ty, depth, cap))),
                );
                if plan.reads.is_empty() || !fd.add(fd.params.len(), reg, &plan) {
                    continue;
                }
                fd.params.push(DerefParam {
                    name: p.name().to_string(),
                    reg,
                    ty,
                    plan,
                });
            }
            if !fd.params.is_empty() {
                out.by_func.insert(name.to_string(), Rc::new(fd));
            }
        }
        out
    }
}

/// The argument register (System V index, 0-5) parameter `p` is passed in, if any.
fn arg_register(p: sigdb::Param<'_>) -> Option<usize> {
    let sigdb::Location::Reg(r) = p.loc() else {
        return None;
    };
    sigdb::regs::sysv_arg_index(r).filter(|&i| i < 6)
}

/// The output parameters of `f` ([`OutParam`]).
fn outputs<'db>(f: &sigdb::Function<'db>) -> Vec<OutParam<'db>> {
    let mut outs: Vec<OutParam<'db>> = Vec::new();
    for p in f.params() {
        if dcg_deref::output(p.ty()) != Some(dcg_deref::Output::Scalar) {
            continue;
        }
        let Some(pointee) = p.ty().resolve().target() else {
            continue;
        };
        outs.push(OutParam {
            name: p.name().to_string(),
            pointee,
            reg: arg_register(p),
        });
    }
    outs
}

/// A pointer type's name as C writes it (`struct file *`), to tell apart the types of
/// different dbs that share an index.
fn type_name(ty: sigdb::Type<'_>) -> String {
    ty.resolve()
        .target()
        .map(|t| t.resolve().name().to_string())
        .unwrap_or_default()
}

impl FuncDerefs<'_> {
    /// Each parameter read behind, rendered with what was read (`reads`: item, address,
    /// bytes; an item not there read nothing), into `out` as (name, text). `args`: the
    /// values of the argument registers.
    pub fn render<'b>(
        &self,
        args: &[u64; 6],
        reads: impl Iterator<Item = (u32, u64, &'b [u8])> + Clone,
        symbols: &dyn dcg_deref::Symbols,
        out: &mut Vec<(String, String)>,
    ) {
        for (i, param) in self.params.iter().enumerate() {
            // This parameter's reads, one block per run of contiguous bytes.
            let mut memory = dcg_deref::Blocks::default();
            for (item, addr, bytes) in reads.clone() {
                if self.owner.get(item as usize) != Some(&i) {
                    continue;
                }
                match memory.0.last_mut() {
                    Some((a, b)) if a.wrapping_add(b.len() as u64) == addr => {
                        b.extend_from_slice(bytes)
                    }
                    _ => memory.0.push((addr, bytes.to_vec())),
                }
            }
            let mut text = String::new();
            dcg_deref::render_deref(
                &mut text,
                param.ty,
                args[param.reg.min(5)],
                &param.plan,
                &memory,
                symbols,
                dcg_render::Role::Arg,
            );
            out.push((param.name.clone(), text));
        }
    }

    /// Add the program's reads for `plan` of parameter `owner` (in register `reg`);
    /// false (nothing added) when they do not fit in [`DEREF_ITEMS`] or a read is more
    /// than [`DEREF_HOPS`] pointers away.
    fn add(&mut self, owner: usize, reg: usize, plan: &ReadPlan) -> bool {
        let mut reads = Vec::new();
        // The pointers each of the plan's reads is reached through, from the register.
        let mut paths: Vec<Vec<i32>> = Vec::with_capacity(plan.reads.len());
        for read in &plan.reads {
            let hops = match read.from {
                From::Arg => Vec::new(),
                From::Pointer { read, offset } => {
                    let Some(p) = paths.get(read as usize) else {
                        return false;
                    };
                    let mut p = p.clone();
                    p.push(offset as i32);
                    p
                }
            };
            if hops.len() > DEREF_HOPS {
                return false;
            }
            // A long struct in several reads, each DEREF_BYTES further on.
            for k in 0..read.len.div_ceil(DEREF_BYTES).max(1) {
                reads.push(DerefRead {
                    reg: reg as u8,
                    hops: hops.clone(),
                    add: (k * DEREF_BYTES) as i32,
                    len: (read.len - k * DEREF_BYTES).min(DEREF_BYTES),
                });
            }
            paths.push(hops);
        }
        if self.reads.len() + reads.len() > DEREF_ITEMS {
            return false;
        }
        self.owner.extend(std::iter::repeat_n(owner, reads.len()));
        self.reads.extend(reads);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcg_deref::{Read, ReadKind};

    fn plan(reads: Vec<Read>) -> ReadPlan {
        ReadPlan {
            reads,
            capped: false,
            depth: 2,
        }
    }

    #[test]
    fn reads_follow_the_plan_and_split_long_structs() {
        // A 1,000-byte struct whose pointer at 16 leads to a 40-byte one.
        let p = plan(vec![
            Read {
                from: From::Arg,
                len: 1000,
                kind: ReadKind::Struct,
                level: 1,
            },
            Read {
                from: From::Pointer {
                    read: 0,
                    offset: 16,
                },
                len: 40,
                kind: ReadKind::Struct,
                level: 2,
            },
        ]);
        let mut fd = FuncDerefs::default();
        assert!(fd.add(0, 2, &p));
        let r = |reg, hops: &[i32], add, len| DerefRead {
            reg,
            hops: hops.to_vec(),
            add,
            len,
        };
        assert_eq!(
            fd.reads,
            vec![
                r(2, &[], 0, 480),
                r(2, &[], 480, 480),
                r(2, &[], 960, 40),
                r(2, &[16], 0, 40),
            ]
        );
        assert_eq!(fd.owner, vec![0; 4]);
        // A second parameter's reads start after the first's.
        let small = plan(vec![Read {
            from: From::Arg,
            len: 8,
            kind: ReadKind::Struct,
            level: 1,
        }]);
        assert!(fd.add(1, 0, &small));
        assert_eq!(fd.reads[4], r(0, &[], 0, 8));
        assert_eq!(fd.owner, vec![0, 0, 0, 0, 1]);
        // One that does not fit in the program's items is left out whole: 5 + 4 > 8.
        assert!(!fd.add(2, 1, &p));
        assert_eq!(fd.reads.len(), 5);
    }
}
