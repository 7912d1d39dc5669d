//! An entry event's arguments as shown: each parameter by its type (`--args`), a pointer
//! to a struct with the data behind it (`--deref`), then the members `--fields` read; and
//! a return event's output parameters.

use dcg_calls::sink::ArgList;
use dcg_render::Role;

use crate::plan::{render_arg, OutRead, Probe, Value};
use crate::symbolize::Symbolizer;

/// Push the arguments of probe `p`'s entry event with field `values` to `args`.
pub(crate) fn push(
    args: &mut ArgList,
    p: &Probe<'_>,
    values: &[Value],
    role: Role,
    symbols: &Symbolizer<'_>,
) {
    let params = p.func.into_iter().flat_map(|f| f.params());
    let sym = |v: u64| symbols.pointer_text(v);
    for (i, ((name, plan), param)) in p.args.iter().zip(params).enumerate() {
        let deref = p.derefs.iter().find(|d| d.arg == i);
        match (deref, deref.and_then(|d| values.get(d.word))) {
            (Some(d), Some(&Value::Num(value))) => {
                let memory = d.memory(values);
                args.push_with(name, |out| {
                    dcg_deref::render_deref(out, d.ty, value, &d.plan, &memory, symbols, role)
                });
            }
            _ => args.push(name, &render_arg(param.ty(), plan, values, role, &sym)),
        }
    }
    if p.func
        .is_some_and(|f| f.flags().contains(sigdb::FuncFlags::VARIADIC))
    {
        // The variadic arguments: their number and types are the callee's secret.
        args.push("", dcg_calls::sink::VARIADIC);
    }
    for f in &p.fields {
        let null = f
            .through
            .iter()
            .any(|&i| !matches!(values.get(i), Some(&Value::Num(a)) if a != 0));
        args.push_with(&f.name, |out| match values.get(f.word) {
            Some(&Value::Num(w)) if !null => {
                dcg_deref::render_word(out, f.ty, w, f.size, f.bits, symbols, role)
            }
            // Not read (through a NULL pointer): as a member not captured.
            _ => out.push('?'),
        });
    }
}

/// Push the output parameters of probe `p` to `outs`, from its return event's `values`
/// (the return value's fields, then the outputs'): each as what its pointer held, `?`
/// where it was not read; none for a `NULL` pointer.
pub(crate) fn push_outs(
    outs: &mut ArgList,
    p: &Probe<'_>,
    values: &[Value],
    role: Role,
    symbols: &Symbolizer<'_>,
) {
    for o in &p.outs {
        match &o.read {
            OutRead::Unreadable => outs.push(&o.name, "?"),
            OutRead::Scalar { ptr, data, ty } => match (values.get(*ptr), values.get(*data)) {
                (Some(&Value::Num(0)), _) => {}
                (Some(&Value::Num(_)), Some(Value::Bytes(b))) => {
                    let n = (ty.size() as usize).min(8).min(b.len());
                    outs.push_with(&o.name, |out| {
                        dcg_deref::render_value(out, *ty, &b[..n], ty.size(), None, symbols, role)
                    });
                }
                _ => outs.push(&o.name, "?"),
            },
            OutRead::Struct(d) => match values.get(d.word) {
                Some(&Value::Num(0)) => {}
                Some(&Value::Num(value)) => {
                    let memory = d.memory(values);
                    outs.push_with(&o.name, |out| {
                        dcg_deref::render_pointee(out, d.ty, value, &d.plan, &memory, symbols, role)
                    });
                }
                _ => outs.push(&o.name, "?"),
            },
        }
    }
}
