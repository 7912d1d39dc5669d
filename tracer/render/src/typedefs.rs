//! The typedef names of an integer type (`gfp_t` → `unsigned int`): what an engine that
//! names some typedefs' values (the kernel's flag tables) looks a value up by.

use sigdb::{Type, TypeKind};

/// The typedefs `ty` goes through to an integer (or char) type, outermost first
/// (qualifiers skipped), with that type; `None` when `ty` is no typedef of an integer.
pub fn int_typedef_chain(ty: Type<'_>) -> Option<(Vec<&str>, Type<'_>)> {
    let mut names = Vec::new();
    let mut t = ty;
    while matches!(t.kind(), TypeKind::Typedef | TypeKind::Qualified) && names.len() < 16 {
        if t.kind() == TypeKind::Typedef {
            names.push(t.name());
        }
        t = t.target()?;
    }
    (!names.is_empty() && matches!(t.kind(), TypeKind::Int | TypeKind::Char)).then_some((names, t))
}
