//! The text of a struct behind a pointer, from the bytes a [`ReadPlan`] captured.

use dcg_render::{
    aggregate_label, pointer_is_hex, push_hex, render_float_words, render_pointer, render_resolved,
    render_string, Role,
};
use sigdb::{Type, TypeKind};

use crate::plan::{follow, ReadKind, ReadPlan, MAX_NEST};
use crate::{Memory, Symbols};

/// Render pointer argument `value` of type `ptr` with the data behind it, from what
/// `mem` captured following `plan` (made by [`crate::plan`] for the same type):
/// `&sym{a=1, …}` where the pointer lands on a symbol, `(struct conf *)0x…{…}` otherwise;
/// the pointer alone (`NULL`, `ERR_PTR(-E…)`, `&sym`, hex) when nothing was captured.
pub fn render_deref(
    out: &mut String,
    ptr: Type<'_>,
    value: u64,
    plan: &ReadPlan,
    mem: &dyn Memory,
    syms: &dyn Symbols,
    role: Role,
) {
    let r = Renderer {
        plan,
        mem,
        syms,
        role,
    };
    if plan.reads.is_empty() {
        r.plain_pointer(out, ptr, value);
    } else {
        r.pointee(out, ptr, value, 0);
    }
}

/// Render what pointer `value` of type `ptr` points to, as [`render_deref`] shows it
/// without the pointer (`{a=1, …}`: an output parameter at a call's return); the pointer
/// alone when nothing was captured.
pub fn render_pointee(
    out: &mut String,
    ptr: Type<'_>,
    value: u64,
    plan: &ReadPlan,
    mem: &dyn Memory,
    syms: &dyn Symbols,
    role: Role,
) {
    let mut text = String::new();
    render_deref(&mut text, ptr, value, plan, mem, syms, role);
    // The pointer's text (`(struct conf *)0x…`, `&sym`) has no brace.
    match text.find('{') {
        Some(at) if text.ends_with('}') => out.push_str(&text[at..]),
        _ => out.push_str(&text),
    }
}

/// Render a value of type `ty` from `captured`, the first bytes of the `len` planned (a
/// `--fields` value: [`crate::FieldPlan`]'s `size`, `bits` and `ty`): as a member is
/// rendered in [`render_deref`], with `?` for what was not captured; pointers in it are
/// not followed.
pub fn render_value(
    out: &mut String,
    ty: Type<'_>,
    captured: &[u8],
    len: u32,
    bits: Option<(u32, u32)>,
    syms: &dyn Symbols,
    role: Role,
) {
    let plan = ReadPlan::default();
    let r = Renderer {
        plan: &plan,
        mem: &crate::Blocks(Vec::new()),
        syms,
        role,
    };
    let mut data = vec![0u8; len as usize];
    let got = captured.len().min(data.len());
    data[..got].copy_from_slice(&captured[..got]);
    let bytes = Bytes {
        read: usize::MAX,
        data,
        got,
    };
    let _ = match bits {
        Some((first, width)) => r.bitfield(out, ty, &bytes, u64::from(first), width),
        None => r.value(out, ty, &bytes, 0, 0),
    };
}

/// [`render_value`] of a value read as one word `v` (a fetch of 1 to 8 bytes: a
/// `--fields` member, an output parameter), its low `len` bytes the value's.
pub fn render_word(
    out: &mut String,
    ty: Type<'_>,
    v: u64,
    len: u32,
    bits: Option<(u32, u32)>,
    syms: &dyn Symbols,
    role: Role,
) {
    let bytes = v.to_le_bytes();
    let n = (len as usize).min(8);
    render_value(out, ty, &bytes[..n], len, bits, syms, role);
}

struct Renderer<'p> {
    plan: &'p ReadPlan,
    mem: &'p dyn Memory,
    syms: &'p dyn Symbols,
    role: Role,
}

/// The bytes of one read: `len` planned, the first `got` captured.
struct Bytes {
    read: usize,
    data: Vec<u8>,
    got: usize,
}

/// Why a value is not shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Miss {
    /// Past the byte cap: `…`, and the rest of the struct is left out.
    Cut,
    /// Planned but not captured: `?`.
    Absent,
}

impl Bytes {
    fn get(&self, off: u32, size: u32) -> Result<&[u8], Miss> {
        let (off, end) = (off as usize, off as usize + size as usize);
        if end > self.data.len() {
            Err(Miss::Cut)
        } else if end > self.got {
            Err(Miss::Absent)
        } else {
            Ok(&self.data[off..end])
        }
    }
}

/// Little-endian bytes (at most 8 used) as a number.
fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .rev()
        .fold(0, |v, &b| (v << 8) | u64::from(b))
}

fn sep(out: &mut String, first: &mut bool) {
    if !*first {
        out.push_str(", ");
    }
    *first = false;
}

impl Renderer<'_> {
    /// How members read: never as error codes (a `-2` in a struct is not `-ENOENT`, even
    /// behind a returned pointer); `Role::Plain` stays plain.
    fn member_role(&self) -> Role {
        match self.role {
            Role::Plain => Role::Plain,
            Role::Arg | Role::Return => Role::Arg,
        }
    }

    /// The engine's text for an integer of a typedef (kernel flags), `ty` unresolved.
    fn typedef_text(&self, ty: Type<'_>, raw: u64) -> Option<String> {
        let (names, t) = dcg_render::typedefs::int_typedef_chain(ty)?;
        let v = dcg_render::truncate(raw, t.size(), t.is_signed());
        self.syms.typedef_text(&names, v)
    }

    /// A pointer not followed: `NULL`, `ERR_PTR(…)`, `&sym`, `sym` for a function, hex.
    fn plain_pointer(&self, out: &mut String, ptr: Type<'_>, value: u64) {
        let to_func = ptr
            .resolve()
            .target()
            .is_some_and(|t| t.resolve().kind() == TypeKind::Func);
        if pointer_is_hex(value) {
            if let Some(text) = self.syms.pointer_text(value, to_func) {
                out.push_str(&text);
                return;
            }
        }
        if self.role.errno() {
            render_pointer(out, value);
        } else if value == 0 {
            out.push_str("NULL");
        } else {
            push_hex(out, value);
        }
    }

    /// Pointer `value` of type `ptr` followed by read `index` of the plan.
    fn pointee(&self, out: &mut String, ptr: Type<'_>, value: u64, index: usize) {
        let Some(read) = self.plan.reads.get(index) else {
            return self.plain_pointer(out, ptr, value);
        };
        if !pointer_is_hex(value) {
            return self.plain_pointer(out, ptr, value);
        }
        let mut data = vec![0u8; read.len as usize];
        let got = self.mem.read(value, &mut data).min(data.len());
        if got == 0 {
            return self.plain_pointer(out, ptr, value);
        }
        let bytes = Bytes {
            read: index,
            data,
            got,
        };
        let Some(target) = ptr.resolve().target() else {
            return self.plain_pointer(out, ptr, value);
        };
        if read.kind == ReadKind::String {
            return string(out, &bytes.data[..got], got == bytes.data.len());
        }
        match self.syms.pointer_text(value, false) {
            Some(text) if !text.contains('+') => out.push_str(&text),
            _ => {
                out.push('(');
                out.push_str(&aggregate_label(target, target.resolve()));
                out.push_str(" *)");
                push_hex(out, value);
            }
        }
        self.aggregate(out, target.resolve(), &bytes, 0, 0);
    }

    /// `{a=1, b=2}` for the struct or union `t` (resolved) at `base` in `bytes`.
    fn aggregate(
        &self,
        out: &mut String,
        t: Type<'_>,
        bytes: &Bytes,
        base: u32,
        nest: u32,
    ) -> Flow {
        out.push('{');
        let mut first = true;
        let flow = self.members(out, t, bytes, base, nest, &mut first);
        out.push('}');
        flow
    }

    /// The members of `t` (resolved) at `base`, anonymous ones flattened into the list.
    fn members(
        &self,
        out: &mut String,
        t: Type<'_>,
        bytes: &Bytes,
        base: u32,
        nest: u32,
        first: &mut bool,
    ) -> Flow {
        if nest > MAX_NEST {
            sep(out, first);
            out.push('…');
            return Flow::Go;
        }
        let union = t.kind() == TypeKind::Union;
        let Ok(members) = t.members() else {
            sep(out, first);
            out.push('?');
            return Flow::Go;
        };
        for m in members {
            let Ok(m) = m else { break };
            let mt = m.ty();
            let r = mt.resolve();
            let off = base.saturating_add(m.offset());
            let flow =
                if m.name().is_empty() && matches!(r.kind(), TypeKind::Struct | TypeKind::Union) {
                    self.members(out, r, bytes, off, nest + 1, first)
                } else {
                    let (mark, was_first) = (out.len(), *first);
                    sep(out, first);
                    out.push_str(m.name());
                    out.push('=');
                    let flow = if m.is_bitfield() {
                        let bits = u64::from(base) * 8 + u64::from(m.bit_offset());
                        self.bitfield(out, mt, bytes, bits, m.bit_size())
                    } else {
                        self.value(out, mt, bytes, off, nest + 1)
                    };
                    if flow == Flow::Cut && out[mark..].ends_with("=…") {
                        // Nothing of the member was read: the `…` stands alone.
                        out.truncate(mark);
                        *first = was_first;
                        sep(out, first);
                        out.push('…');
                    }
                    flow
                };
            if union {
                out.push_str(" /* union */");
                return flow;
            }
            if flow == Flow::Cut {
                return Flow::Cut;
            }
        }
        Flow::Go
    }

    /// A bit-field of `size` bits at bit `bits` of the read.
    fn bitfield(
        &self,
        out: &mut String,
        ty: Type<'_>,
        bytes: &Bytes,
        bits: u64,
        size: u32,
    ) -> Flow {
        let r = ty.resolve();
        let first = (bits / 8) as u32;
        let last = ((bits + u64::from(size)).div_ceil(8)) as u32;
        let data = match bytes.get(first, last.saturating_sub(first)) {
            Ok(d) => d,
            Err(m) => return miss(out, m),
        };
        let mut v: u128 = 0;
        for &b in data.iter().take(16).rev() {
            v = (v << 8) | u128::from(b);
        }
        let size = size.min(64);
        let mut raw = (v >> (bits % 8)) as u64;
        if size < 64 {
            raw &= (1u64 << size) - 1;
            if r.is_signed() && size > 0 && raw >> (size - 1) & 1 == 1 {
                raw |= !((1u64 << size) - 1);
            }
        }
        if !render_resolved(out, ty, r, raw, self.member_role()) {
            out.push('?');
        }
        Flow::Go
    }

    /// Whether pointer `v` of type `ty` in read `read` would have been followed but for
    /// the byte cap: `…` after it says so.
    fn cut_before(&self, read: usize, ty: Type<'_>, v: u64) -> bool {
        let level = self.plan.reads.get(read).map_or(u32::MAX, |r| r.level);
        self.plan.capped && level < self.plan.depth && follow(ty).is_some() && pointer_is_hex(v)
    }

    /// A value of type `ty` at byte `off` of the read.
    fn value(&self, out: &mut String, ty: Type<'_>, bytes: &Bytes, off: u32, nest: u32) -> Flow {
        let r = ty.resolve();
        match r.kind() {
            TypeKind::Struct | TypeKind::Union if nest <= MAX_NEST => {
                self.aggregate(out, r, bytes, off, nest)
            }
            TypeKind::Array if nest <= MAX_NEST => self.array(out, r, bytes, off, nest),
            TypeKind::Pointer => match bytes.get(off, r.size()) {
                Ok(d) => {
                    let v = le(d);
                    match self.plan.child(bytes.read, off) {
                        Some(i) if follow(ty).is_some() => self.pointee(out, ty, v, i),
                        _ => {
                            self.plain_pointer(out, ty, v);
                            if self.cut_before(bytes.read, ty, v) {
                                out.push('…');
                            }
                        }
                    }
                    Flow::Go
                }
                Err(m) => miss(out, m),
            },
            TypeKind::Float => match bytes.get(off, r.size()) {
                Ok(d) => {
                    let words: Vec<u64> = d.chunks(8).map(le).collect();
                    match render_float_words(&words, r) {
                        Some(s) => out.push_str(&s),
                        None => push_bytes(out, d),
                    }
                    Flow::Go
                }
                Err(m) => miss(out, m),
            },
            TypeKind::Void
            | TypeKind::Func
            | TypeKind::Struct
            | TypeKind::Union
            | TypeKind::Array => {
                out.push('…');
                Flow::Go
            }
            _ => match bytes.get(off, r.size().max(1)) {
                Ok(d) if d.len() > 8 => {
                    push_bytes(out, d);
                    Flow::Go
                }
                Ok(d) => {
                    if let Some(text) = self.typedef_text(ty, le(d)) {
                        out.push_str(&text);
                    } else if !render_resolved(out, ty, r, le(d), self.member_role()) {
                        out.push('?');
                    }
                    Flow::Go
                }
                Err(m) => miss(out, m),
            },
        }
    }

    /// An array: a string for `char` elements, `{…}` for a flexible one, else `{1, 2}`.
    fn array(&self, out: &mut String, r: Type<'_>, bytes: &Bytes, off: u32, nest: u32) -> Flow {
        let Some(elem) = r.target() else {
            out.push('?');
            return Flow::Go;
        };
        let e = elem.resolve();
        let n = r.array_len();
        if n == 0 || e.size() == 0 {
            out.push_str("{…}");
            return Flow::Go;
        }
        if e.kind() == TypeKind::Char && e.size() == 1 && e.name() == "char" {
            return self.char_array(out, bytes, off, n);
        }
        out.push('{');
        let mut first = true;
        for i in 0..n {
            sep(out, &mut first);
            let at = off.saturating_add(i.saturating_mul(e.size()));
            if self.value(out, elem, bytes, at, nest + 1) == Flow::Cut {
                out.push('}');
                return Flow::Cut;
            }
        }
        out.push('}');
        Flow::Go
    }

    /// A `char[n]` at `off`: the string up to its NUL (all `n` bytes without one).
    fn char_array(&self, out: &mut String, bytes: &Bytes, off: u32, n: u32) -> Flow {
        let start = off as usize;
        let planned = bytes.data.len().saturating_sub(start).min(n as usize);
        let got = bytes.got.saturating_sub(start).min(planned);
        if planned == 0 {
            return miss(out, Miss::Cut);
        }
        let d = &bytes.data[start..start + got];
        if let Some(nul) = d.iter().position(|&b| b == 0) {
            out.push_str(&render_string(&String::from_utf8_lossy(&d[..nul])));
            return Flow::Go;
        }
        if got == 0 {
            out.push('?');
            return Flow::Go;
        }
        out.push_str(&render_string(&String::from_utf8_lossy(d)));
        if got == n as usize {
            Flow::Go
        } else if got < planned {
            out.push('?');
            Flow::Go
        } else {
            out.push('…');
            Flow::Cut
        }
    }
}

/// Whether the walk goes on after a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Go,
    Cut,
}

fn miss(out: &mut String, m: Miss) -> Flow {
    match m {
        Miss::Cut => {
            out.push('…');
            Flow::Cut
        }
        Miss::Absent => {
            out.push('?');
            Flow::Go
        }
    }
}

/// A C string read through a `char *`: up to its NUL; `…` when the read ended first.
fn string(out: &mut String, d: &[u8], full: bool) {
    match d.iter().position(|&b| b == 0) {
        Some(nul) => out.push_str(&render_string(&String::from_utf8_lossy(&d[..nul]))),
        None => {
            out.push_str(&render_string(&String::from_utf8_lossy(d)));
            out.push(if full { '…' } else { '?' });
        }
    }
}

/// Bytes no rule renders (a 128-bit integer, a complex): `0x` and their hex, low first.
fn push_bytes(out: &mut String, d: &[u8]) {
    out.push_str("0x");
    for b in d {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('?'));
        out.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('?'));
    }
}
