//! A root call's kernel stack (`--stack`) as the frames saved calls carry: the return
//! addresses the BPF program took at the root's entry, named through kallsyms, with the
//! code inlined at each return address expanded from the db's inline instances.

use dcg_calls::saved_format::StackFrame;
use dcg_dbset::kallsyms::Kallsyms;
use dcg_dbset::DbSet;

/// The frames above the root at `root` for the return addresses `ips` (innermost first,
/// as the kernel's unwinder gives them, starting in the root itself), innermost first:
/// the root's caller first. An address kallsyms does not know is a frame named by it.
pub(crate) fn frames(root: u64, ips: &[u64], syms: &Kallsyms, set: &DbSet) -> Vec<StackFrame> {
    let start_of = |a: u64| syms.locate(a).map(|(s, _, _)| s);
    let root_start = start_of(root);
    let in_root = |a: &u64| root_start.is_some() && start_of(*a) == root_start;
    // The unwinder starts where the probe stopped the root: leave out its own frame(s).
    let callers = match ips.iter().position(in_root) {
        Some(i) => i + ips[i..].iter().take_while(|a| in_root(a)).count(),
        None => 0,
    };
    let mut out = Vec::new();
    for &ip in &ips[callers..] {
        let Some((start, name, module)) = syms.locate(ip) else {
            out.push(StackFrame {
                func: format!("{ip:#x}"),
                offset: None,
                module: None,
                inline: false,
                cut: false,
            });
            continue;
        };
        let name = set.known_symbol_at(syms, start).unwrap_or(name);
        let offset = ip - start;
        inlined_at(set, name, module, offset, &mut out);
        out.push(StackFrame {
            func: name.to_string(),
            offset: Some(offset),
            module: module.map(str::to_string),
            inline: false,
            cut: false,
        });
    }
    out
}

/// The copies inlined into `func` (of `module`; `None`: the kernel image) that hold the
/// call before return address `func+offset`, innermost first, as frames.
fn inlined_at(
    set: &DbSet,
    func: &str,
    module: Option<&str>,
    offset: u64,
    out: &mut Vec<StackFrame>,
) {
    let ours = |m: sigdb::Module<'_>| match module {
        Some(name) => m.name() == name,
        None => m.kind() == sigdb::ModuleKind::Kernel,
    };
    let Some(f) = set
        .by_name(func)
        .find(|f| u64::from(f.size()) >= offset && f.module().is_some_and(ours))
    else {
        return;
    };
    let copies = f.copies_at_return(f.addr() + offset);
    out.extend(
        copies
            .iter()
            .filter_map(|i| i.callee())
            .map(|c| StackFrame {
                func: c.name().to_string(),
                offset: None,
                module: module.map(str::to_string),
                inline: true,
                cut: false,
            }),
    );
}
