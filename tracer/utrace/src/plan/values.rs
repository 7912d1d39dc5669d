//! Field values as events carry them, and their rendering by type (the words of a value,
//! a fetched string, a pointer landing on a symbol).

use super::*;

/// The entry field holding the task's name (`$comm`), always last.
pub const COMM_FIELD: &str = "comm";

/// A field value parsed from an event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A number.
    Num(u64),
    /// A string, unquoted.
    Str(String),
    /// The string could not be read (`(fault)`), or the block (`--deref`).
    Fault,
    /// A block of memory (`--deref`): an array of words a uprobe fetched (`x64[N]`), or
    /// the bytes the recorder copied (fewer than asked where its readable memory ended).
    Bytes(Vec<u8>),
}

/// Parse the fields of an event body (the text after `(location)`), knowing their names
/// and order. Numbers first, strings last: a string runs to the `"` before the next
/// string field's ` name=`, the last one to the final `"`.
pub fn parse_fields(raw: &str, fields: &[Field]) -> Option<Vec<Value>> {
    let mut out = Vec::with_capacity(fields.len());
    let mut rest = raw.trim_start();
    for (i, f) in fields.iter().enumerate() {
        rest = rest.trim_start_matches(' ');
        rest = rest.strip_prefix(f.name.as_str())?.strip_prefix('=')?;
        if f.string {
            if let Some(r) = rest.strip_prefix("(fault)") {
                out.push(Value::Fault);
                rest = r;
                continue;
            }
            let body = rest.strip_prefix('"')?;
            let end = match fields.get(i + 1) {
                Some(next) => body.find(&format!("\" {}=", next.name))?,
                None => body.rfind('"')?,
            };
            out.push(Value::Str(body[..end].to_string()));
            rest = &body[end + 1..];
        } else if let Some(body) = rest.strip_prefix('{') {
            // An array of words (`{0x1,0x2}`), the low byte first as in memory.
            let end = body.find('}')?;
            let mut bytes = Vec::new();
            for w in body[..end].split(',') {
                bytes.extend_from_slice(&dcg_fgraph::parse_number(w)?.to_le_bytes());
            }
            out.push(Value::Bytes(bytes));
            rest = &body[end + 1..];
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            let v = dcg_fgraph::parse_number(&rest[..end])?;
            out.push(Value::Num(v));
            rest = &rest[end..];
        }
    }
    Some(out)
}

/// Longest shown string argument, in characters.
pub const MAX_STRING: usize = 256;

/// A fetched string, quoted, cut after [`MAX_STRING`] characters.
pub fn render_text(s: &str) -> String {
    if s.chars().count() > MAX_STRING {
        let cut: String = s.chars().take(MAX_STRING).collect();
        return format!("{}...", render_string(&cut));
    }
    render_string(s)
}

/// Render argument `plan` of type `ty` from the entry event's `values`, as `role` says
/// (`Role::Arg` with the kernel's error conventions, else `Role::Plain`).
pub fn render_arg(
    ty: Type<'_>,
    plan: &ArgPlan,
    values: &[Value],
    role: Role,
    sym: &dyn Fn(u64) -> Option<String>,
) -> String {
    let (words, string) = match plan {
        ArgPlan::Text(t) => return t.clone(),
        ArgPlan::Fetched { words, string } => (words, string),
    };
    let nums: Vec<u64> = words
        .iter()
        .map(|&i| match values.get(i) {
            Some(Value::Num(v)) => *v,
            _ => 0,
        })
        .collect();
    if let Some(si) = string {
        let p = nums.first().copied().unwrap_or(0);
        match values.get(*si) {
            Some(Value::Str(s)) if p != 0 => return render_text(s),
            _ => return render_pointer_or(ty, &[p], role, sym),
        }
    }
    render_pointer_or(ty, &nums, role, sym)
}

/// [`render_words`], except that a pointer landing on a symbol is named by `sym`
/// (`&static_var`, `&_IO_2_1_stdout_`, a function's name).
pub fn render_pointer_or(
    ty: Type<'_>,
    words: &[u64],
    role: Role,
    sym: &dyn Fn(u64) -> Option<String>,
) -> String {
    if let ([w], TypeKind::Pointer) = (words, ty.resolve().kind()) {
        if *w != 0 {
            if let Some(name) = sym(*w) {
                return name;
            }
        }
    }
    render_words(ty, words, role)
}

/// Render a value held in one or more 64-bit words (a struct in two registers or in
/// memory: `(struct wide){0x3, 0x4}`; a float read from memory). Bytes past the type's
/// size are not part of the value and are cleared.
pub fn render_words(ty: Type<'_>, words: &[u64], role: Role) -> String {
    let t = ty.resolve();
    if t.kind() == TypeKind::Float {
        if let Some(text) = dcg_render::render_float_words(words, t) {
            return text;
        }
    }
    // Aggregates, and floats shown by their bytes (complex, quad).
    let aggregate = matches!(
        t.kind(),
        TypeKind::Struct | TypeKind::Union | TypeKind::Float
    );
    let mut words = words.to_vec();
    if aggregate && t.size() > 0 {
        words.truncate(t.size().div_ceil(8) as usize);
        let tail = t.size() % 8;
        if let (Some(last), true) = (words.last_mut(), tail != 0) {
            *last &= (1u64 << (8 * tail)) - 1;
        }
    }
    match words.as_slice() {
        [] => "?".into(),
        [one] => render(ty, *one, role).unwrap_or_default(),
        many => {
            let label = dcg_render::aggregate_label(ty, t);
            let mut list: Vec<String> = many.iter().map(|w| format!("{w:#x}")).collect();
            // A value larger than the words read (a big struct passed in memory): say so.
            if aggregate && u64::from(t.size()) > 8 * many.len() as u64 {
                list.push("...".into());
            }
            format!("({label}){{{}}}", list.join(", "))
        }
    }
}
