//! What the BPF program is told about the functions it attaches to, from the plan and
//! the db: each target's plan bits ([`targets`]: C strings, stack parameters, a root, the
//! members and structs read, the output parameter), the members (`--fields`) and structs
//! (`--deref`) read at each site, and the roots' conditions (`--filter`).

use std::collections::HashMap;

use dcg_bpf::Target;
use dcg_dbset::DbSet;

use crate::derefs::KernelDerefs;
use crate::fields::KernelFields;
use crate::funcs::Site;
use crate::plan::KernelPlan;

/// What the program reads at `name`'s entry besides the argument registers, by the db:
/// which registers hold C strings (bit i: register i), and whether some parameter is on
/// the stack.
pub(crate) fn fetch_plan(set: &DbSet, name: &str) -> (u8, bool) {
    let Some(f) = set.by_name(name).next() else {
        return (0, false);
    };
    let mut mask = 0u8;
    let mut stack = false;
    for p in f.params() {
        match p.loc() {
            sigdb::Location::Reg(r) => {
                if let Some(i) = sigdb::regs::sysv_arg_index(r) {
                    if i < 6 && dcg_render::is_c_string(p.ty()) {
                        mask |= 1 << i;
                    }
                }
            }
            sigdb::Location::Stack(_) => stack = true,
            _ => {}
        }
    }
    (mask, stack)
}

/// The targets: every site but those `notrace` globs name, roots marked; strings and
/// stack words asked for when arguments are shown, members where `fields` reads some,
/// structs where `derefs` does.
pub(crate) fn targets(
    sites: &[Site],
    roots: &[String],
    (set, fields, derefs): (&DbSet, &KernelFields<'_>, &KernelDerefs<'_>),
    args: bool,
    notrace: &[String],
) -> Vec<Target> {
    let mut plans: HashMap<&str, (u8, bool)> = HashMap::new();
    sites
        .iter()
        .filter(|s| {
            !notrace
                .iter()
                .any(|p| dcg_dbset::glob::glob_match(p, &s.name))
        })
        .map(|s| {
            let (strings, stack) = if args {
                *plans
                    .entry(s.name.as_str())
                    .or_insert_with(|| fetch_plan(set, &s.name))
            } else {
                (0, false)
            };
            Target {
                addr: s.addr,
                root: roots.contains(&s.name),
                strings,
                stack,
                fields: fields.by_func.contains_key(&s.name),
                derefs: derefs.by_func.contains_key(&s.name),
                out: derefs.out_read(&s.name),
            }
        })
        .collect()
}

/// What the program reads at each site of the functions `fields` names (`--fields`).
pub(crate) fn site_fields(sites: &[Site], fields: &KernelFields<'_>) -> Vec<dcg_bpf::FuncFields> {
    sites
        .iter()
        .filter_map(|s| {
            let reads = fields.by_func.get(&s.name)?;
            Some(dcg_bpf::FuncFields {
                addr: s.addr,
                fetches: reads.iter().map(|r| r.fetch.clone()).collect(),
            })
        })
        .collect()
}

/// What the program reads at each site of the functions `derefs` names (`--deref`).
pub(crate) fn site_derefs(sites: &[Site], derefs: &KernelDerefs<'_>) -> Vec<dcg_bpf::FuncDerefs> {
    sites
        .iter()
        .filter_map(|s| {
            let fd = derefs.by_func.get(&s.name)?;
            Some(dcg_bpf::FuncDerefs {
                addr: s.addr,
                reads: fd.reads.clone(),
            })
        })
        .collect()
}

/// The conditions the program checks at a root's entry (`--filter` on a top-level
/// call's arguments in registers): a call that fails one costs no records. Roots whose
/// name several sites share are left to the decoded calls.
pub(crate) fn root_conds(plan: &KernelPlan<'_>, sites: &[Site]) -> Vec<dcg_bpf::RootCond> {
    let Some(select) = &plan.select else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for root in &plan.roots {
        let mut at = sites.iter().filter(|s| &s.name == root);
        let (Some(site), None) = (at.next(), at.next()) else {
            continue;
        };
        let Some(func) = plan.dbs.find(root, None) else {
            continue;
        };
        let params: Vec<sigdb::Param<'_>> = func.params().collect();
        let tests: Vec<dcg_bpf::CondTest> = select
            .entry_tests(root, false)
            .iter()
            .filter_map(|t| {
                // Members are not read by the program's entry tests: left to the decoded
                // calls.
                let dcg_filter::EntryValue::Arg(arg) = t.value else {
                    return None;
                };
                let sigdb::Location::Reg(r) = params.get(arg)?.loc() else {
                    return None;
                };
                let reg = sigdb::regs::sysv_arg_index(r).filter(|&i| i < 6)?;
                Some(cond_test(t, reg as u8))
            })
            .take(dcg_bpf::COND_TESTS)
            .collect();
        if !tests.is_empty() {
            out.push(dcg_bpf::RootCond {
                addr: site.addr,
                tests,
            });
        }
    }
    out
}

/// An entry test on the parameter in argument register `reg`.
pub(crate) fn cond_test(t: &dcg_filter::EntryTest, reg: u8) -> dcg_bpf::CondTest {
    use dcg_bpf::CondOp;
    use dcg_filter::CmpOp;
    let (op, value) = match t.cmp {
        None => (CondOp::Truth, 0),
        Some((op, v)) => (
            match op {
                CmpOp::Eq => CondOp::Eq,
                CmpOp::Ne => CondOp::Ne,
                CmpOp::Lt => CondOp::Lt,
                CmpOp::Le => CondOp::Le,
                CmpOp::Gt => CondOp::Gt,
                // `~` never reaches entry tests.
                CmpOp::Ge | CmpOp::Glob => CondOp::Ge,
            },
            v,
        ),
    };
    dcg_bpf::CondTest {
        reg,
        op,
        size: t.size as u8,
        signed: t.signed,
        mask: t.mask,
        value,
    }
}
