//! Output parameters (`--deref`, `--fields`): a parameter that is a non-const pointer to
//! a scalar (`int *out`, `struct node **found`) or, with `--deref`, to a struct, read again
//! when the call returns and shown in its return comment (`/* ret=0 *out=8087 */`).
//!
//! The in-process recorder keeps the pointer each call was passed (its entry fetch, one
//! of [`SAVED_WORDS`] per call) and its return record reads through it (`%saved0`). A
//! uretprobe reads registers at the return only, where the pointer is gone: with uprobes
//! every output parameter is `?`, as is one the recorder has no saved word left for.

use dcg_deref::{From, ReadPlan};
use dcg_inproc::layout::SAVED_WORDS;
use dcg_live::options::DerefRequest;

use super::{ArgPlan, DerefArg, Field, Probe};
use dcg_deref::Output;
use sigdb::Type;

/// Most words one return field copies (a struct output's block).
const BLOCK_WORDS: u32 = 64;

/// Bytes the return fields of one call's struct outputs copy at most.
const RETURN_BYTES: u32 = 2048;

/// An output parameter of a probe.
#[derive(Debug, Clone)]
pub struct OutArg<'a> {
    /// The parameter's name.
    pub name: String,
    /// How its value at the return is read.
    pub read: OutRead<'a>,
}

/// How an output parameter's value is read at the return.
#[derive(Debug, Clone)]
pub enum OutRead<'a> {
    /// The engine cannot reach the pointer there: shown as `?`.
    Unreadable,
    /// A scalar: the return field holding the pointer (`NULL`: no output) and the one
    /// holding the bytes it points to, of type `ty`.
    Scalar {
        /// Return field of the pointer.
        ptr: usize,
        /// Return field of the value's bytes (a one-word block).
        data: usize,
        /// The pointed-to type.
        ty: Type<'a>,
    },
    /// A struct or union, read as `--deref` reads it at the entry, from the return fields
    /// (`word` is the pointer's).
    Struct(DerefArg<'a>),
}

/// Plan the output parameters of `probes` when `requests` has `--deref` or `--fields`
/// (struct outputs with `--deref` only); `recorder`: the in-process recorder reads them.
pub fn plan_outputs(requests: &[DerefRequest], probes: &mut [Probe<'_>], recorder: bool) {
    if requests.is_empty() {
        return;
    }
    let members = requests.iter().find_map(|r| match r {
        DerefRequest::Members { depth, cap } => Some((*depth, *cap)),
        DerefRequest::Fields(_) => None,
    });
    for p in probes.iter_mut() {
        let Some(f) = p.func else { continue };
        // The parameters that are outputs, with the entry field holding the pointer.
        let outs: Vec<(String, Type<'_>, Option<usize>, bool)> = p
            .args
            .iter()
            .zip(f.params())
            .filter_map(|((name, a), q)| {
                let is_struct = dcg_deref::output(q.ty())? == Output::Struct;
                if is_struct && members.is_none() {
                    return None;
                }
                let word = match a {
                    ArgPlan::Fetched {
                        words,
                        string: None,
                    } if words.len() == 1 => Some(words[0]),
                    _ => None,
                };
                Some((name.clone(), q.ty(), word, is_struct))
            })
            .collect();
        let mut left = RETURN_BYTES;
        for (name, ty, word, is_struct) in outs {
            let k = p.saved.len();
            let read = match word {
                Some(w) if recorder && k < SAVED_WORDS => {
                    let planned = if is_struct {
                        let (depth, cap) = members.unwrap_or((1, 0));
                        plan_struct(p, ty, k, (depth.min(3), cap.min(left)))
                    } else {
                        Some(plan_scalar(p, ty, k))
                    };
                    match planned {
                        Some((read, bytes)) => {
                            left = left.saturating_sub(bytes);
                            p.saved.push(w as u16);
                            read
                        }
                        None => OutRead::Unreadable,
                    }
                }
                _ => OutRead::Unreadable,
            };
            p.outs.push(OutArg { name, read });
        }
    }
}

/// Add a return field to `p`'s output fields; its index among the return values (after
/// the return value's own fields).
fn push_field(p: &mut Probe<'_>, name: String, fetch: String) -> usize {
    p.out_fields.push(Field {
        name,
        fetch,
        string: false,
    });
    p.ret_fields.len() + p.out_fields.len() - 1
}

/// A scalar output through saved word `k`: the pointer and one word at it.
fn plan_scalar<'a>(p: &mut Probe<'a>, ptr: Type<'a>, k: usize) -> (OutRead<'a>, u32) {
    let ty = ptr.resolve().target().expect("a pointer's target");
    let at = push_field(p, format!("o{k}"), format!("%saved{k}:x64"));
    let data = push_field(p, format!("o{k}_v"), format!("+0(%saved{k}):x64[1]"));
    (OutRead::Scalar { ptr: at, data, ty }, 16)
}

/// A struct output through saved word `k`: the pointer and `--deref`'s reads from it;
/// `None` when nothing would be read.
fn plan_struct<'a>(
    p: &mut Probe<'a>,
    ty: Type<'a>,
    k: usize,
    (depth, cap): (u32, u32),
) -> Option<(OutRead<'a>, u32)> {
    let plan: ReadPlan = dcg_deref::plan(ty, depth.max(1), cap);
    if plan.reads.is_empty() {
        return None;
    }
    let base = format!("%saved{k}");
    let word = push_field(p, format!("o{k}"), format!("{base}:x64"));
    let mut addrs: Vec<String> = Vec::with_capacity(plan.reads.len());
    let mut blocks = Vec::with_capacity(plan.reads.len());
    let mut bytes = 0;
    for (r, read) in plan.reads.iter().enumerate() {
        // The expression of the address read at (as `plan_derefs` makes them).
        let addr = match read.from {
            From::Arg => base.clone(),
            From::Pointer { read, offset } => format!("+{offset}({})", addrs[read as usize]),
        };
        let n = read.len.div_ceil(8);
        let mut fields = Vec::new();
        for c in 0..n.div_ceil(BLOCK_WORDS) {
            let len = (n - c * BLOCK_WORDS).min(BLOCK_WORDS);
            let at = c * BLOCK_WORDS * 8;
            fields.push(push_field(
                p,
                format!("o{k}_{r}_{c}"),
                format!("+{at}({addr}):x64[{len}]"),
            ));
        }
        bytes += n * 8;
        addrs.push(addr);
        blocks.push(fields);
    }
    let read = OutRead::Struct(DerefArg {
        arg: usize::MAX,
        ty,
        word,
        plan,
        blocks,
    });
    Some((read, bytes))
}
