//! `--deref[=N]`: the structs behind pointer arguments, copied at the call's entry by both
//! engines as more entry fields (blocks of words: `+0(%di):x64[16]`, and for what a member
//! points to `+0(+24(%di)):x64[8]`), and shown by `dcg-deref` in place of the pointer
//! (`c=&top{port=8080, in={a=5}, …}`).

use dcg_deref::{From, ReadPlan};
use dcg_live::options::DerefRequest;

use super::{ArgPlan, Probe, Value};

/// Most words one entry field copies: a uprobe's longest array.
const BLOCK_WORDS: u32 = 64;

/// Most pointers one of the in-process recorder's fetches follows (the argument's own
/// read, when it is passed on the stack, counts); a uprobe's follow `--deref`'s 3 levels
/// from anywhere.
const RECORDER_DEREFS: u32 = 3;

/// Bytes every `--deref` block of one entry event may take: a uprobe's fetched values
/// share one page (the kernel warns past it), which `--stack`'s copy also uses.
const EVENT_BYTES: u32 = 3072;
/// The same with `--stack` (2 KiB of stack in each entry event).
const EVENT_BYTES_WITH_STACK: u32 = 1024;

/// Most entry fields a probe event gets (the kernel takes 128 arguments at most).
const MAX_FIELDS: usize = 112;

/// A pointer argument an entry event copies the data behind.
#[derive(Debug, Clone)]
pub struct DerefArg<'a> {
    /// Its index among the probe's arguments ([`Probe::args`]).
    pub arg: usize,
    /// Its type (a pointer to a struct or union).
    pub ty: sigdb::Type<'a>,
    /// The entry field holding the pointer.
    pub word: usize,
    /// What is copied, as `dcg-deref` planned it.
    pub plan: ReadPlan,
    /// For each of the plan's reads, the entry fields holding its bytes, in order.
    pub blocks: Vec<Vec<usize>>,
}

impl DerefArg<'_> {
    /// The memory the entry event captured for this argument, as `dcg-deref` reads it:
    /// each read's bytes at the address it was read at (the argument's value, or the
    /// pointer an earlier read holds; a `NULL` or error pointer was not followed).
    pub fn memory(&self, values: &[Value]) -> dcg_deref::Blocks {
        // Each read's address (`None`: not read) and bytes.
        let mut reads: Vec<(Option<u64>, Vec<u8>)> = Vec::with_capacity(self.blocks.len());
        for (read, fields) in self.plan.reads.iter().zip(&self.blocks) {
            let addr = match read.from {
                From::Arg => match values.get(self.word) {
                    Some(&Value::Num(a)) => Some(a),
                    _ => None,
                },
                From::Pointer { read: r, offset } => reads.get(r as usize).and_then(|(_, b)| {
                    let o = offset as usize;
                    let word = b.get(o..o.checked_add(8)?)?;
                    Some(u64::from_le_bytes(word.try_into().ok()?))
                }),
            }
            .filter(|&a| dcg_render::pointer_is_hex(a));
            let mut bytes = Vec::new();
            if addr.is_some() {
                for &f in fields {
                    match values.get(f) {
                        Some(Value::Bytes(b)) => bytes.extend_from_slice(b),
                        _ => break,
                    }
                }
                bytes.truncate(read.len as usize);
            }
            reads.push((addr, bytes));
        }
        dcg_deref::Blocks(
            reads
                .into_iter()
                .filter_map(|(a, b)| Some((a?, b)))
                .collect(),
        )
    }
}

/// Add the entry fields of `--deref` (among `requests`) to `probes`: every parameter
/// that points to a struct or union and is read from one register or stack word at the
/// entry. `stack`: entry events also carry `--stack`'s copy; `recorder`: the in-process
/// recorder reads them. An argument the event has no room left for is shown as without
/// `--deref`.
pub fn plan_derefs(
    requests: &[DerefRequest],
    probes: &mut [Probe<'_>],
    (stack, recorder): (bool, bool),
) {
    let Some((depth, cap)) = requests.iter().find_map(|r| match r {
        DerefRequest::Members { depth, cap } => Some((*depth, *cap)),
        DerefRequest::Fields(_) => None,
    }) else {
        return;
    };
    let room = if stack {
        EVENT_BYTES_WITH_STACK
    } else {
        EVENT_BYTES
    };
    for p in probes.iter_mut() {
        let Some(f) = p.func else { continue };
        let pointers: Vec<(usize, usize, sigdb::Type<'_>)> = p
            .args
            .iter()
            .zip(f.params())
            .enumerate()
            .filter_map(|(i, ((_, a), q))| match a {
                ArgPlan::Fetched {
                    words,
                    string: None,
                } if words.len() == 1 => Some((i, words[0], q.ty())),
                _ => None,
            })
            .collect();
        let mut left = room;
        for (arg, word, ty) in pointers {
            let base = p.entry_expr(word);
            let depth = match recorder {
                true => depth.min(RECORDER_DEREFS.saturating_sub(base.matches('(').count() as u32)),
                false => depth,
            };
            if depth == 0 || left < 8 {
                continue;
            }
            let plan = dcg_deref::plan(ty, depth, cap.min(left));
            let words = |len: u32| len.div_ceil(8);
            let nfields: usize = plan
                .reads
                .iter()
                .map(|r| words(r.len).div_ceil(BLOCK_WORDS) as usize)
                .sum();
            if plan.reads.is_empty() || p.entry_fields.len() + nfields > MAX_FIELDS {
                continue;
            }
            // The address each read is made at, as a fetch expression.
            let mut addrs: Vec<String> = Vec::with_capacity(plan.reads.len());
            let mut blocks = Vec::with_capacity(plan.reads.len());
            for (r, read) in plan.reads.iter().enumerate() {
                let addr = match read.from {
                    From::Arg => base.clone(),
                    From::Pointer { read, offset } => {
                        format!("+{offset}({})", addrs[read as usize])
                    }
                };
                let mut fields = Vec::new();
                let n = words(read.len);
                for k in 0..n.div_ceil(BLOCK_WORDS) {
                    let len = (n - k * BLOCK_WORDS).min(BLOCK_WORDS);
                    fields.push(p.add_entry_field(
                        format!("d{arg}_{r}_{k}"),
                        format!("+{}({addr}):x64[{len}]", k * BLOCK_WORDS * 8),
                    ));
                }
                left = left.saturating_sub(n * 8);
                addrs.push(addr);
                blocks.push(fields);
            }
            p.derefs.push(DerefArg {
                arg,
                ty,
                word,
                plan,
                blocks,
            });
        }
    }
}
