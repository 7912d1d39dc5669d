//! Rendering raw 64-bit register values by their DWARF type: the one implementation every
//! dcg output uses (decode, trace, uprobes, report).
//!
//! - void → nothing; `bool` → `true`/`false`;
//! - integers truncated to their size and sign-extended when signed; a signed return in
//!   -4095..-1 → its errno name (`-EINVAL`, `-ERESTARTSYS`);
//! - pointers → `NULL`, `ERR_PTR(-ENOMEM)` in the `IS_ERR` range, else hex;
//! - enums → the enumerator (`A|B` for flag enums, the number when nothing matches);
//! - `char` → `'c'`; struct/union by value → `(struct name)0x…`.

pub mod describe;
pub mod names;
pub mod typedefs;
pub mod x87;

use sigdb::{Type, TypeKind};
use std::fmt::Write;

/// `MAX_ERRNO` of the kernel: values in -4095..-1 are error codes.
pub const MAX_ERRNO: u64 = 4095;

/// Whether the value is being rendered as a return value or as an argument. Only
/// returns are read as error codes (`dfd=-100` is `AT_FDCWD`, not an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A function's return value.
    Return,
    /// A function argument.
    Arg,
    /// A value of code that does not follow the kernel's error conventions (user space,
    /// unless asked): no errno names, no `ERR_PTR`.
    Plain,
}

impl Role {
    /// Whether values in -4095..-1 are read as error codes (`-EINVAL`, `ERR_PTR(…)`).
    pub fn errno(self) -> bool {
        self != Role::Plain
    }
}

/// Kernel-internal error codes from `include/linux/errno.h` (512..530), which no
/// user-space errno table carries. The uapi range 1..133 comes from `nix`.
const KERNEL_ERRNOS: [(i32, &str); 19] = [
    (512, "ERESTARTSYS"),
    (513, "ERESTARTNOINTR"),
    (514, "ERESTARTNOHAND"),
    (515, "ENOIOCTLCMD"),
    (516, "ERESTART_RESTARTBLOCK"),
    (517, "EPROBE_DEFER"),
    (518, "EOPENSTALE"),
    (519, "ENOPARAM"),
    (521, "EBADHANDLE"),
    (522, "ENOTSYNC"),
    (523, "EBADCOOKIE"),
    (524, "ENOTSUPP"),
    (525, "ETOOSMALL"),
    (526, "ESERVERFAULT"),
    (527, "EBADTYPE"),
    (528, "EJUKEBOX"),
    (529, "EIOCBQUEUED"),
    (530, "ERECALLCONFLICT"),
    (531, "ENOGRACE"),
];

/// The name of a positive errno value (`22` → `EINVAL`), Linux numbering.
pub fn errno_name(code: i64) -> Option<&'static str> {
    if (1..512).contains(&code) {
        return uapi_errno_names()[code as usize];
    }
    KERNEL_ERRNOS
        .iter()
        .find(|(n, _)| *n as i64 == code)
        .map(|(_, s)| *s)
}

/// The value of errno name `name` (`EINVAL` → 22), Linux numbering: the inverse of
/// [`errno_name`], from the same tables.
pub fn errno_code(name: &str) -> Option<i64> {
    if let Some(n) = uapi_errno_names().iter().position(|n| *n == Some(name)) {
        return Some(n as i64);
    }
    KERNEL_ERRNOS
        .iter()
        .find(|(_, s)| *s == name)
        .map(|(n, _)| *n as i64)
}

/// The names of the uapi errno values, by value (1..512; `None`: unnamed): `Errno`'s
/// variant names (their `Debug` form), made once. An array, not a map: a session names an
/// errno on every failing return.
fn uapi_errno_names() -> &'static [Option<&'static str>; 512] {
    use std::sync::OnceLock;
    static NAMES: OnceLock<[Option<&'static str>; 512]> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = [None; 512];
        for (n, name) in names.iter_mut().enumerate().skip(1) {
            let e = nix::errno::Errno::from_raw(n as i32);
            if e != nix::errno::Errno::UnknownErrno {
                *name = Some(&*Box::leak(format!("{e:?}").into_boxed_str()));
            }
        }
        names
    })
}

/// The errno form of a negative value, `-EINVAL`, or the number when unnamed.
pub fn errno_text(value: i64) -> String {
    let mut s = String::new();
    push_errno_text(&mut s, value);
    s
}

/// Append [`errno_text`]'s text.
pub fn push_errno_text(out: &mut String, value: i64) {
    match errno_name(-value) {
        Some(n) => {
            out.push('-');
            out.push_str(n);
        }
        None => push_i64(out, value),
    }
}

/// Truncate `raw` to `size` bytes and sign-extend when `signed`.
pub fn truncate(raw: u64, size: u32, signed: bool) -> u64 {
    let bits = size.saturating_mul(8);
    if bits == 0 || bits >= 64 {
        return raw;
    }
    let v = raw & ((1u64 << bits) - 1);
    if signed && v >> (bits - 1) & 1 == 1 {
        v | !((1u64 << bits) - 1)
    } else {
        v
    }
}

/// Render `raw` as a value of type `ty`; `None` for void (nothing to show).
pub fn render(ty: Type<'_>, raw: u64, role: Role) -> Option<String> {
    let mut out = String::new();
    render_into(&mut out, ty, raw, role).then_some(out)
}

/// Append the rendering of `raw` as a `ty` to `out`; false (nothing appended) for void.
pub fn render_into(out: &mut String, ty: Type<'_>, raw: u64, role: Role) -> bool {
    render_resolved(out, ty, ty.resolve(), raw, role)
}

/// [`render_into`] with `t` = `ty.resolve()` already known (callers that render many
/// values of one type resolve it once).
pub fn render_resolved(out: &mut String, ty: Type<'_>, t: Type<'_>, raw: u64, role: Role) -> bool {
    match t.kind() {
        TypeKind::Void => return false,
        TypeKind::Bool => {
            let v = truncate(raw, t.size().max(1), false);
            out.push_str(if v != 0 { "true" } else { "false" });
        }
        TypeKind::Int => render_int(out, raw, t.size(), t.is_signed(), role),
        // Only plain `char` is text; `unsigned char` (`u8`, `uint8_t`) and `signed char`
        // hold numbers.
        TypeKind::Char if t.name() == "char" => {
            let v = truncate(raw, t.size().max(1), t.is_signed()) as u8;
            render_char(out, v);
        }
        TypeKind::Char => render_int(out, raw, t.size().max(1), t.is_signed(), role),
        TypeKind::Float => out.push_str("?float"),
        TypeKind::Pointer | TypeKind::Array | TypeKind::Func if role.errno() => {
            render_pointer(out, raw)
        }
        TypeKind::Pointer | TypeKind::Array | TypeKind::Func => match raw {
            0 => out.push_str("NULL"),
            _ => push_hex(out, raw),
        },
        TypeKind::Enum => render_enum(out, t, raw),
        TypeKind::Struct | TypeKind::Union => {
            let label = aggregate_label(ty, t);
            push_aggregate(out, &label, raw);
        }
        TypeKind::Typedef | TypeKind::Qualified => render_int(out, raw, 8, false, role),
    }
    true
}

/// The label of a struct or union passed by value, `t` being `ty` resolved: the typedef
/// name (`vfsuid_t`) when the tag is anonymous, else `struct name`.
pub fn aggregate_label(ty: Type<'_>, t: Type<'_>) -> String {
    if t.name().is_empty() {
        ty.display()
    } else {
        t.base_name()
    }
}

/// Where a struct or union returned by value is (System V), from its type's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetClass {
    /// In registers: whether the first and the second eightbyte are SSE (xmm0/xmm1)
    /// rather than INTEGER (rax/rdx).
    Regs(bool, bool),
    /// In memory the caller provides; rax holds its address on return.
    Memory,
    /// Not known (a db without the aggregate's classes).
    Unknown,
}

/// The return class of resolved aggregate type `t`.
pub fn ret_class(t: Type<'_>) -> RetClass {
    use sigdb::TypeFlags as F;
    let f = t.flags();
    if t.size() > 16 || f.contains(F::MEMORY) {
        RetClass::Memory
    } else if f.contains(F::CLASSIFIED) {
        RetClass::Regs(f.contains(F::SSE_LO), f.contains(F::SSE_HI))
    } else {
        RetClass::Unknown
    }
}

/// Render a struct or union passed by value: `(label)0x…`.
pub fn push_aggregate(out: &mut String, label: &str, raw: u64) {
    out.push('(');
    out.push_str(label);
    out.push(')');
    push_hex(out, raw);
}

/// Render a pointer-sized value: `NULL`, `ERR_PTR(-E…)` or hex.
pub fn render_pointer(out: &mut String, raw: u64) {
    if raw == 0 {
        out.push_str("NULL");
    } else if !pointer_is_hex(raw) {
        out.push_str("ERR_PTR(");
        push_errno_text(out, raw as i64);
        out.push(')');
    } else {
        push_hex(out, raw);
    }
}

/// Render a value of floating-point type `t` (resolved) from its bits in memory (`words`,
/// little-endian, low first): `float`, `double`, the x87 `long double`. The shortest
/// decimal that reads back to the same value (`1.5`, `2.25`, `0.1`), in exponent form
/// outside 1e-5..1e16 (`1e20`), as C's `%g` shows such values; a long double at its own
/// precision too (`-2000000.00000000009`: [`x87`]). `None` for the formats it does
/// not decode (complex, quad): their bytes are shown instead.
pub fn render_float_words(words: &[u64], t: Type<'_>) -> Option<String> {
    use sigdb::FloatFormat;
    let size = match sigdb::float_format(t.size(), t.name()) {
        FloatFormat::Single => 4,
        FloatFormat::Double => 8,
        FloatFormat::X87 => 16,
        FloatFormat::Quad | FloatFormat::Complex(_) => return None,
    };
    float_bits_text(words, size)
}

/// [`render_float_words`] by size: 4, 8, or 16 (x87).
fn float_bits_text(words: &[u64], size: u32) -> Option<String> {
    let w0 = words.first().copied()?;
    // The magnitude decides the form; the value prints at its own precision (a float's
    // shortest decimal is `0.1`, not the double it widens to).
    fn form<T: std::fmt::Display + std::fmt::LowerExp>(v: T, f: f64) -> String {
        if f.is_nan() {
            return "nan".into();
        }
        if f.is_infinite() {
            return if f < 0.0 { "-inf" } else { "inf" }.into();
        }
        let a = f.abs();
        if a == 0.0 || (1e-5..1e16).contains(&a) {
            format!("{v}")
        } else {
            format!("{v:e}")
        }
    }
    let shortest = |v: f64| form(v, v);
    match size {
        4 => {
            let v = f32::from_bits(w0 as u32);
            Some(form(v, f64::from(v)))
        }
        8 => Some(shortest(f64::from_bits(w0))),
        10 | 16 => {
            let se = *words.get(1)? as u16;
            Some(x87::shortest(w0, se))
        }
        _ => None,
    }
}

/// Append `0x` and the lower-case hex digits of `v` (faster than `format!`).
pub fn push_hex(out: &mut String, v: u64) {
    let digits = hex_digits(v);
    let n = ((64 - v.leading_zeros()).div_ceil(4).max(1)) as usize;
    out.push_str("0x");
    push_ascii(out, &digits[16 - n..]);
}

/// What [`push_hex`] writes for `v`, in `buf` (`format!("{v:#x}")` without allocating):
/// the text a value is rendered from when a source gives only its bits.
pub fn hex_text(v: u64, buf: &mut [u8; 18]) -> &str {
    let n = ((64 - v.leading_zeros()).div_ceil(4).max(1)) as usize;
    buf[..2].copy_from_slice(b"0x");
    buf[2..2 + n].copy_from_slice(&hex_digits(v)[16 - n..]);
    std::str::from_utf8(&buf[..2 + n]).unwrap_or("")
}

/// Whether `text` is exactly what [`push_hex`] writes for `v` (`0x`, lower-case digits,
/// no leading zeros): then it can be copied instead of formatted.
pub fn is_hex_of(text: &str, v: u64) -> bool {
    let n = ((64 - v.leading_zeros()).div_ceil(4).max(1)) as usize;
    let b = text.as_bytes();
    b.len() == n + 2 && b.starts_with(b"0x") && b[2..] == hex_digits(v)[16 - n..]
}

/// Whether [`render_pointer`] writes `raw` in hex (not `NULL` or `ERR_PTR`).
pub fn pointer_is_hex(raw: u64) -> bool {
    raw != 0 && raw < MAX_ERRNO.wrapping_neg()
}

/// The 16 lower-case hex digits of `v`, most significant first.
#[inline]
fn hex_digits(v: u64) -> [u8; 16] {
    const LO: u64 = 0x0101_0101_0101_0101;
    // One nibble per byte, the most significant nibble in the highest byte.
    fn spread(x: u32) -> u64 {
        let mut x = u64::from(x);
        x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
        x
    }
    // '0' + d, plus 'a' - '0' - 10 where d > 9.
    fn ascii(x: u64) -> u64 {
        let letters = ((x + LO * 6) >> 4) & LO;
        x + LO * u64::from(b'0') + letters * u64::from(b'a' - b'0' - 10)
    }
    let hi = ascii(spread((v >> 32) as u32)).to_be_bytes();
    let lo = ascii(spread(v as u32)).to_be_bytes();
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&hi);
    d[8..].copy_from_slice(&lo);
    d
}

/// Append decimal `v` (faster than `write!`).
pub fn push_u64(out: &mut String, v: u64) {
    let mut buf = [0u8; 20];
    let digits = decimal(&mut buf, v);
    // A few digits as a rule (durations, CPUs, small values): pushed one by one, which
    // costs less than checking the buffer is UTF-8 and copying it.
    out.reserve(digits.len());
    for &d in digits {
        out.push(char::from(d));
    }
}

/// `v`'s decimal digits (ASCII), written at the end of `buf`.
pub fn decimal(buf: &mut [u8; 20], v: u64) -> &[u8] {
    let mut i = buf.len();
    let mut x = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Append decimal `v` with its sign.
pub fn push_i64(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Append bytes known to be ASCII digits and letters.
#[inline]
fn push_ascii(out: &mut String, b: &[u8]) {
    // Always ASCII here, so the check cannot fail; it is cheap next to formatting.
    out.push_str(std::str::from_utf8(b).unwrap_or(""));
}

fn render_int(out: &mut String, raw: u64, size: u32, signed: bool, role: Role) {
    let v = truncate(raw, size, signed);
    if signed {
        let s = v as i64;
        if role == Role::Return && (-(MAX_ERRNO as i64)..0).contains(&s) {
            // (Role::Plain never names errnos.)
            if let Some(name) = errno_name(-s) {
                out.push('-');
                out.push_str(name);
                return;
            }
        }
        push_i64(out, s);
    } else if v <= u32::MAX as u64 {
        push_u64(out, v);
    } else {
        push_hex(out, v);
    }
}

fn render_char(out: &mut String, c: u8) {
    match c {
        b'\'' => out.push_str("'\\''"),
        b'\\' => out.push_str("'\\\\'"),
        b'\n' => out.push_str("'\\n'"),
        b'\t' => out.push_str("'\\t'"),
        b'\r' => out.push_str("'\\r'"),
        0 => out.push_str("'\\0'"),
        0x20..=0x7e => {
            let _ = write!(out, "'{}'", c as char);
        }
        _ => {
            let _ = write!(out, "'\\x{c:02x}'");
        }
    }
}

fn render_enum(out: &mut String, t: Type<'_>, raw: u64) {
    let v = truncate(raw, t.size().max(1), t.is_signed()) as i64;
    if let Some((name, _)) = t.enumerators().find(|&(_, e)| e == v) {
        out.push_str(name);
        return;
    }
    // A flag enum: every nonzero enumerator is a single bit and the value is their OR.
    let bits: Vec<(&str, i64)> = t.enumerators().filter(|&(_, e)| e != 0).collect();
    let is_flags = !bits.is_empty() && bits.iter().all(|&(_, e)| (e as u64).is_power_of_two());
    if is_flags && v > 0 {
        let mut rest = v as u64;
        let mut parts = Vec::new();
        for &(name, e) in &bits {
            if rest & e as u64 != 0 {
                parts.push(name);
                rest &= !(e as u64);
            }
        }
        if rest == 0 {
            out.push_str(&parts.join("|"));
            return;
        }
    }
    let _ = write!(out, "{v}");
}

/// Whether a type is a pointer to a character type (`char *`, `const char *`): its
/// value is shown as the string it points to where a source can read it.
pub fn is_c_string(ty: Type<'_>) -> bool {
    let t = ty.resolve();
    t.kind() == TypeKind::Pointer
        && t.target()
            .map(|p| p.resolve())
            .is_some_and(|p| p.kind() == TypeKind::Char && p.size() == 1)
}

/// Render a string argument fetched by a probe (already unquoted): `"text"` with C escapes.
pub fn render_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Append a rendered value to `s`, in red when `red` (an error value on a color terminal).
#[inline]
pub fn push_value(s: &mut String, v: &str, red: bool) {
    if red {
        s.push_str("\x1b[31m");
        s.push_str(v);
        s.push_str("\x1b[0m");
    } else {
        s.push_str(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sigdb::*;

    #[test]
    fn hex_texts() {
        for v in [0, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 1 << 63] {
            let mut buf = [0u8; 18];
            assert_eq!(hex_text(v, &mut buf), format!("{v:#x}"));
        }
    }

    #[test]
    fn floats() {
        let f = |w: &[u64], n| float_bits_text(w, n).unwrap();
        assert_eq!(f(&[1.5f32.to_bits() as u64 | 0xdead_0000_0000], 4), "1.5");
        assert_eq!(f(&[2.25f64.to_bits()], 8), "2.25");
        // A float prints its own shortest decimal, not the double it widens to.
        assert_eq!(f(&[(-0.1f32).to_bits() as u64], 4), "-0.1");
        assert_eq!(f(&[(-0.3f32).to_bits() as u64], 4), "-0.3");
        assert_eq!(f(&[0.1f64.to_bits()], 8), "0.1");
        assert_eq!(f(&[1e20f64.to_bits()], 8), "1e20");
        assert_eq!(f(&[(-0.125f64).to_bits()], 8), "-0.125");
        assert_eq!(f(&[f64::INFINITY.to_bits()], 8), "inf");
        // long double 2.5: mantissa 0xa000000000000000, exponent 16384.
        assert_eq!(f(&[0xa000_0000_0000_0000, 0x4000], 16), "2.5");
        assert_eq!(f(&[0xc000_0000_0000_0000, 0xbffe], 16), "-0.75");
        // 1/3 as a long double: no double holds it; its own shortest decimal.
        assert_eq!(
            f(&[0xaaaa_aaaa_aaaa_aaab, 0x3ffd], 16),
            x87::shortest(0xaaaa_aaaa_aaaa_aaab, 0x3ffd)
        );
        assert_eq!(float_bits_text(&[0], 2), None);
    }

    fn db() -> Db {
        let mut b = DbBuilder::new(62);
        let m = b.add_module(ModuleDesc {
            name: "vmlinux".into(),
            kind: ModuleKind::Kernel,
            build_id: vec![],
            base: 0,
        });
        let void = b.add_type(TypeDesc::void());
        let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
        let long = b.add_type(TypeDesc::base(TypeKind::Int, "long int", 8, true));
        let uint = b.add_type(TypeDesc::base(TypeKind::Int, "unsigned int", 4, false));
        let u8t = b.add_type(TypeDesc::base(TypeKind::Char, "unsigned char", 1, false));
        let u8td = b.add_type(TypeDesc::typedef("u8", u8t, 1));
        let u16t = b.add_type(TypeDesc::base(
            TypeKind::Int,
            "short unsigned int",
            2,
            false,
        ));
        let s16 = b.add_type(TypeDesc::base(TypeKind::Int, "short int", 2, true));
        let boolean = b.add_type(TypeDesc::base(TypeKind::Bool, "_Bool", 1, false));
        let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
        let sch = b.add_type(TypeDesc::base(TypeKind::Char, "signed char", 1, true));
        let page = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "page", 64));
        let ppage = b.add_type(TypeDesc::pointer(page, 8));
        let mut e = TypeDesc::aggregate(TypeKind::Enum, "lru_status", 4);
        e.enumerators = vec![
            ("LRU_REMOVED".into(), 0),
            ("LRU_ROTATE".into(), 1),
            ("LRU_RETRY".into(), -2),
        ];
        e.flags = TypeFlags::SIGNED;
        let en = b.add_type(e);
        let mut fl = TypeDesc::aggregate(TypeKind::Enum, "flags", 4);
        fl.enumerators = vec![
            ("F_NONE".into(), 0),
            ("F_A".into(), 1),
            ("F_B".into(), 2),
            ("F_C".into(), 4),
        ];
        let fl = b.add_type(fl);
        let ssize = b.add_type(TypeDesc::typedef("ssize_t", long, 8));
        let cint = b.add_type(TypeDesc::qualified(Qualifiers::CONST, int, 4));
        for (i, (name, ty)) in [
            ("v", void),
            ("i", int),
            ("l", long),
            ("u", uint),
            ("b", u8td),
            ("w", u16t),
            ("s", s16),
            ("t", boolean),
            ("c", ch),
            ("sc", sch),
            ("p", ppage),
            ("e", en),
            ("f", fl),
            ("z", ssize),
            ("k", cint),
            ("st", page),
        ]
        .into_iter()
        .enumerate()
        {
            b.add_function(FunctionDesc {
                module: m,
                addr: 0x1000 + i as u64 * 16,
                size: 16,
                name: name.into(),
                symbol: None,
                ret: ty,
                params: vec![],
                flags: FuncFlags::empty(),
            });
        }
        Db::from_bytes(b.finish().unwrap()).unwrap()
    }

    fn ret(db: &Db, f: &str, raw: u64) -> Option<String> {
        render(db.by_name(f).next().unwrap().ret(), raw, Role::Return)
    }

    #[test]
    fn rules() {
        let db = db();
        assert_eq!(ret(&db, "v", 0xffff_8880_0000_1234), None);
        assert_eq!(ret(&db, "i", 0xffff_ffea).as_deref(), Some("-EINVAL"));
        assert_eq!(ret(&db, "i", (-22i64) as u64).as_deref(), Some("-EINVAL"));
        assert_eq!(ret(&db, "i", 0xdead_0000_0000_0003).as_deref(), Some("3"));
        assert_eq!(
            ret(&db, "i", (-512i64) as u64).as_deref(),
            Some("-ERESTARTSYS")
        );
        assert_eq!(ret(&db, "i", (-4000i64) as u64).as_deref(), Some("-4000"));
        assert_eq!(ret(&db, "i", (-5000i64) as u64).as_deref(), Some("-5000"));
        assert_eq!(ret(&db, "z", (-2i64) as u64).as_deref(), Some("-ENOENT"));
        assert_eq!(ret(&db, "l", 0xffff_ffea).as_deref(), Some("4294967274"));
        assert_eq!(ret(&db, "k", 0xffff_fff4).as_deref(), Some("-ENOMEM"));
        assert_eq!(ret(&db, "u", 0xffff_ffea).as_deref(), Some("4294967274"));
        // `u8` / `unsigned char` / `signed char` are numbers; only `char` is a character.
        assert_eq!(ret(&db, "b", 0x1234_5601).as_deref(), Some("1"));
        assert_eq!(ret(&db, "b", 0xef).as_deref(), Some("239"));
        assert_eq!(ret(&db, "sc", 0x1234_5605).as_deref(), Some("5"));
        assert_eq!(ret(&db, "w", 0xffff_0010).as_deref(), Some("16"));
        assert_eq!(ret(&db, "s", 0xffff).as_deref(), Some("-EPERM"));
        assert_eq!(ret(&db, "t", 0x6938_0600).as_deref(), Some("false"));
        assert_eq!(ret(&db, "t", 0x6938_0601).as_deref(), Some("true"));
        assert_eq!(ret(&db, "c", 0x41).as_deref(), Some("'A'"));
        assert_eq!(ret(&db, "p", 0).as_deref(), Some("NULL"));
        assert_eq!(
            ret(&db, "p", (-12i64) as u64).as_deref(),
            Some("ERR_PTR(-ENOMEM)")
        );
        assert_eq!(
            ret(&db, "p", 0xffff_8880_0123_4000).as_deref(),
            Some("0xffff888001234000")
        );
        assert_eq!(ret(&db, "e", 1).as_deref(), Some("LRU_ROTATE"));
        assert_eq!(ret(&db, "e", 0xffff_fffe).as_deref(), Some("LRU_RETRY"));
        assert_eq!(ret(&db, "e", 7).as_deref(), Some("7"));
        assert_eq!(ret(&db, "f", 5).as_deref(), Some("F_A|F_C"));
        assert_eq!(ret(&db, "f", 0).as_deref(), Some("F_NONE"));
        assert_eq!(ret(&db, "f", 9).as_deref(), Some("9"));
        assert_eq!(ret(&db, "st", 0x10).as_deref(), Some("(struct page)0x10"));
        // Arguments are not read as error codes.
        let i = db.by_name("i").next().unwrap().ret();
        assert_eq!(
            render(i, (-100i64) as u64, Role::Arg).as_deref(),
            Some("-100")
        );
    }

    #[test]
    fn numbers() {
        for v in [
            0u64,
            1,
            9,
            10,
            15,
            16,
            0xabc,
            0xffff_ffff,
            1 << 32,
            u64::MAX,
            0x0123_4567_89ab_cdef,
        ] {
            let mut s = String::new();
            push_hex(&mut s, v);
            assert_eq!(s, format!("{v:#x}"));
            assert!(is_hex_of(&s, v));
            let upper = format!("{v:#X}");
            assert_eq!(is_hex_of(&upper, v), upper == s);
            assert!(!is_hex_of(&format!("{v:#019x}"), v));
            assert!(!is_hex_of(&format!("{v:#x} "), v));
            assert!(!is_hex_of(&format!("{:#x}", v ^ 1), v));
            s.clear();
            push_u64(&mut s, v);
            assert_eq!(s, v.to_string());
            s.clear();
            push_i64(&mut s, v as i64);
            assert_eq!(s, (v as i64).to_string());
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for v in [x, x >> (x % 64), x as i32 as i64 as u64] {
                let mut s = String::new();
                push_hex(&mut s, v);
                assert_eq!(s, format!("{v:#x}"));
                s.clear();
                push_i64(&mut s, v as i64);
                assert_eq!(s, (v as i64).to_string());
            }
        }
    }

    #[test]
    fn errnos() {
        assert_eq!(errno_name(2), Some("ENOENT"));
        assert_eq!(errno_name(133), Some("EHWPOISON"));
        assert_eq!(errno_name(517), Some("EPROBE_DEFER"));
        assert_eq!(errno_name(520), None);
        assert_eq!(errno_name(0), None);
        assert_eq!(errno_text(-36), "-ENAMETOOLONG");
        assert_eq!(render_string("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
