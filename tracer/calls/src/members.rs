//! What a probe event read at a function's entry or return, as values of the call
//! ([`EventReads`]): with the function_graph engine, `--fields`' members (read with
//! probe-event dereferences, `+8(+24(%di)):u32`), shown after the call's arguments under
//! their paths as the BPF engine shows its fields (`how->flags=33345`), rendered by the
//! member's type; `--deref`'s structs (dcg-ktrace's) in place of their pointers; output
//! parameters read at the return (dcg-ktrace's), in the return comment.

use sigdb::Type;

use crate::sink::ArgList;

/// Turns the fields of a probe event that reads at a function's entry into arguments of
/// the call, or at its return into its output parameters.
pub trait EventReads {
    /// Append to `out` the values the event's `fields` (name, value text) give.
    fn render(&self, fields: &[(&str, &str)], symbols: &dyn dcg_deref::Symbols, out: &mut ArgList);
}

impl EventReads for Vec<MemberField<'_>> {
    fn render(&self, fields: &[(&str, &str)], symbols: &dyn dcg_deref::Symbols, out: &mut ArgList) {
        render_members(self, fields.iter().copied(), symbols, out);
    }
}

/// One member an event reads.
#[derive(Debug, Clone)]
pub struct MemberField<'a> {
    /// Its path (`how->flags`): the name it is shown under.
    pub name: String,
    /// Its type.
    pub ty: Type<'a>,
    /// Bytes of the value.
    pub size: u32,
    /// A bit-field: (first bit, width).
    pub bits: Option<(u32, u32)>,
    /// The event field holding it.
    pub field: String,
    /// The event fields holding the pointers read on the way: a `NULL` among them means
    /// the member was not read (the event shows 0 for a read that faulted).
    pub through: Vec<String>,
}

/// Append `members`, from an event's `fields` (name, value text), to `out`: each rendered
/// by its type, `?` where a pointer on its way was `NULL` or a field is missing.
pub fn render_members<'f>(
    members: &[MemberField<'_>],
    fields: impl Iterator<Item = (&'f str, &'f str)> + Clone,
    symbols: &dyn dcg_deref::Symbols,
    out: &mut ArgList,
) {
    let value = |name: &str| {
        fields
            .clone()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| dcg_fgraph::parse_number(v))
    };
    for m in members {
        let through = m.through.iter().all(|p| value(p).is_some_and(|a| a != 0));
        match value(&m.field).filter(|_| through) {
            Some(v) => out.push_with(&m.name, |s| {
                let role = dcg_render::Role::Arg;
                dcg_deref::render_word(s, m.ty, v, m.size, m.bits, symbols, role)
            }),
            None => out.push(&m.name, "?"),
        }
    }
}
