//! A stable, human-readable one-line rendering of a database function, used by tests
//! (snapshots) and for debugging: `[flags] name(symbol) ret (type name@loc, ...)`.

use sigdb::{Function, TypeKind};

/// Render `f`: `[static,clone:isra] foo (foo.isra.0) -> int (struct file *file@rdi, ...)`.
pub fn render_function(f: &Function<'_>) -> String {
    let flags: Vec<&str> = f.flags().names().collect();
    let mut s = String::new();
    if !flags.is_empty() {
        s.push('[');
        s.push_str(&flags.join(","));
        s.push_str("] ");
    }
    s.push_str(f.name());
    if !f.symbol().is_empty() && f.symbol() != f.name() {
        s.push_str(" (");
        s.push_str(f.symbol());
        s.push(')');
    }
    s.push_str(" -> ");
    s.push_str(&f.ret().display());
    s.push_str(" (");
    let params: Vec<String> = f
        .params()
        .map(|p| format!("{}@{}", p.ty().declare(p.name()), p.loc()))
        .collect();
    s.push_str(&params.join(", "));
    if f.flags().contains(sigdb::FuncFlags::VARIADIC) {
        if !params.is_empty() {
            s.push_str(", ");
        }
        s.push_str("...");
    }
    s.push(')');
    s
}

/// Render the enumerators of an enum type (resolving typedefs): `A=0 B=-1`.
pub fn render_enum(t: &sigdb::Type<'_>) -> Option<String> {
    let r = t.resolve();
    (r.kind() == TypeKind::Enum).then(|| {
        r.enumerators()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    })
}
