//! `--fields`: members of the structs a parameter points to, read at the call's entry by
//! both engines as more entry fields (the same fetch expressions: `+8(+16(%di)):x64`) and
//! shown after the arguments under their paths (`c->next->port=8080`).

use dcg_deref::{parse_fields_arg, resolve};
use dcg_live::options::DerefRequest;

use super::{ArgPlan, Probe};
use crate::UtraceError;

/// A member an entry event reads.
#[derive(Debug, Clone)]
pub struct FieldRead<'a> {
    /// Its path, as given (`c->next->port`): the name it is shown under.
    pub name: String,
    /// The entry field holding it (a word read at the member's address).
    pub word: usize,
    /// The entry fields of the pointers it is read through (the parameter, then each
    /// one followed): when one is `NULL` nothing was read (a fetch that faults reads 0).
    pub through: Vec<usize>,
    /// Bytes of the value (the low ones of the word).
    pub size: u32,
    /// A bit-field: (first bit, width).
    pub bits: Option<(u32, u32)>,
    /// Its type.
    pub ty: sigdb::Type<'a>,
}

fn refuse(what: String) -> UtraceError {
    UtraceError::Fields(what)
}

/// Add the entry fields of `requests` to `probes`: each path to the probes of the
/// function it names (every probe whose function has the path's parameter when it names
/// none). Refused: a path that does not resolve in a function it names, one that names a
/// function not traced, or resolves nowhere, one through a parameter not in a register
/// or stack word at the entry, and one [`dcg_deref::FieldPlan::unreadable`] refuses.
pub fn plan_fields<'a>(
    requests: &[DerefRequest],
    probes: &mut [Probe<'a>],
) -> Result<(), UtraceError> {
    for spec in requests.iter().filter_map(|r| match r {
        DerefRequest::Fields(spec) => Some(spec),
        DerefRequest::Members { .. } => None,
    }) {
        let (func, paths) = parse_fields_arg(spec).map_err(|e| refuse(e.to_string()))?;
        // `PATH:FUNC` or `FUNC`: the function's name is after the last colon.
        let name = func.map(|f| f.rsplit(':').next().unwrap_or(f));
        for path in &paths {
            let mut placed = false;
            // Without FUNC: why the path failed in a function that has its parameter.
            let mut why = None;
            for p in probes.iter_mut() {
                let Some(f) = p.func else { continue };
                if name.is_some_and(|n| n != p.symbol && n != f.name()) {
                    continue;
                }
                let plan = match resolve(&f, path) {
                    Ok(plan) => plan,
                    Err(e) if name.is_none() => {
                        if f.params().any(|q| q.name() == path.root) {
                            why.get_or_insert(e.to_string());
                        }
                        continue;
                    }
                    Err(e) => return Err(refuse(e.to_string())),
                };
                add_field(p, &path.text, &path.root, plan)?;
                placed = true;
            }
            if !placed {
                return Err(refuse(match (name, why) {
                    (Some(n), _) => format!("{}: {n} is not among the traced functions", path.text),
                    (None, Some(why)) => why,
                    (None, None) => format!(
                        "{}: no traced function has a parameter {}",
                        path.text, path.root
                    ),
                }));
            }
        }
    }
    Ok(())
}

/// The entry field reading `plan` from parameter `root` of `p` (once: a path asked for
/// again, by `--fields` and a `--filter`, is read and shown once).
fn add_field<'a>(
    p: &mut Probe<'a>,
    text: &str,
    root: &str,
    plan: dcg_deref::FieldPlan<'a>,
) -> Result<(), UtraceError> {
    if p.fields.iter().any(|f| f.name == text) {
        return Ok(());
    }
    let word = match p.args.iter().find(|(n, _)| n == root).map(|(_, a)| a) {
        Some(ArgPlan::Fetched { words, .. }) if words.len() == 1 => words[0],
        _ => {
            return Err(refuse(format!(
                "{text}: {root} is not in a register or stack word at the entry of {}",
                p.symbol
            )))
        }
    };
    if let Some(why) = plan.unreadable() {
        return Err(refuse(format!("{text}: {why}")));
    }
    let hops = plan.hops();
    let mut through = Vec::new();
    let mut at = word;
    let mut e = p.entry_expr(word);
    for (i, o) in hops.iter().enumerate() {
        through.push(at);
        e = format!("+{o}({e})");
        at = p.add_entry_field(format!("m{}_{i}", p.fields.len()), format!("{e}:x64"));
    }
    p.fields.push(FieldRead {
        name: text.to_string(),
        word: at,
        through,
        size: plan.size,
        bits: plan.bits,
        ty: plan.ty,
    });
    Ok(())
}
