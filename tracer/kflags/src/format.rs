//! One trace-event format file: its fields (`field:TYPE NAME;`) and the flag tables of
//! its `print fmt:` line.

use crate::expr::{eval, is_c_word, tokens, Consts, Tok};
use crate::{Error, Skipped, Table, TableKind};
pub use dcg_ringbuf::format::Field;

/// A table as read, with what tells which typedef it prints.
#[derive(Clone, Debug)]
pub struct RawTable {
    /// The table.
    pub table: Table,
    /// The field whose value it prints (`gfp_flags`).
    pub field: String,
    /// The typedef names its values are cast to, one list per entry (`["gfp_t"]`).
    pub casts: Vec<Vec<String>>,
}

/// Integer typedefs too general to carry one table (`u64 flags` printed by one event
/// says nothing of every `u64`).
fn is_generic(ty: &str) -> bool {
    let t = ty.trim_start_matches('_');
    let fixed = ["8", "16", "32", "64"];
    let sized = |p: &str| fixed.iter().any(|n| t == format!("{p}{n}"));
    sized("u")
        || sized("s")
        || sized("int")
        || fixed
            .iter()
            .any(|n| t == format!("int{n}_t") || t == format!("uint{n}_t"))
        || matches!(
            t,
            "size_t"
                | "ssize_t"
                | "loff_t"
                | "bool"
                | "pid_t"
                | "dev_t"
                | "ino_t"
                | "sector_t"
                | "uint"
                | "ulong"
                | "ushort"
                | "uchar"
                | "u_int"
                | "u_long"
                | "u_short"
                | "u_char"
        )
}

impl RawTable {
    /// The typedef the table prints: the one typedef every cast entry is cast to
    /// (`( gfp_t)`: the kmalloc event's field is an `unsigned long`), else the field's
    /// declared type when it is one typedef name that is not a generic integer.
    pub fn typedef(&self, fields: &[Field]) -> Option<String> {
        let mut names = self.casts.iter().flatten();
        if let Some(first) = names.next() {
            if names.all(|n| n == first) {
                return Some(first.clone());
            }
        }
        let f = fields.iter().find(|f| f.name == self.field)?;
        let words: Vec<&str> = f.ty.split_whitespace().filter(|w| *w != "const").collect();
        match words[..] {
            [w] if !is_c_word(w) && !is_generic(w) => Some(w.to_string()),
            _ => None,
        }
    }
}

/// What a format file holds that matters here.
#[derive(Debug, Default)]
pub struct EventFormat {
    /// Fields, common ones included.
    pub fields: Vec<Field>,
    /// Tables over a plain field (`__print_flags(REC->gfp_flags, "|", …)`).
    pub tables: Vec<RawTable>,
    /// Tables left out.
    pub skipped: Vec<Skipped>,
}

/// Parse the format file `text` of event `event`.
pub fn parse_format(event: &str, text: &str) -> EventFormat {
    parse_format_with(event, text, &|_| None)
}

/// [`parse_format`], identifiers left unexpanded (enum constants) valued by `consts`.
pub fn parse_format_with(event: &str, text: &str, consts: Consts<'_>) -> EventFormat {
    let mut f = EventFormat {
        // dcg-ringbuf's parser (one reading of a field line); a file it refuses has none.
        fields: dcg_ringbuf::format::Format::parse(text)
            .map(|f| f.fields)
            .unwrap_or_default(),
        ..EventFormat::default()
    };
    for line in text.lines() {
        if let Some(fmt) = line.trim().strip_prefix("print fmt:") {
            print_tables(event, fmt, consts, &mut f);
        }
    }
    f
}

/// The `__print_flags` / `__print_symbolic` calls of a print format.
fn print_tables(event: &str, fmt: &str, consts: Consts<'_>, f: &mut EventFormat) {
    let toks = match tokens(fmt) {
        Ok(t) => t,
        Err(error) => {
            f.skipped.push(Skipped {
                event: event.into(),
                field: String::new(),
                error,
            });
            return;
        }
    };
    let mut i = 0;
    while i < toks.len() {
        let flags = match &toks[i] {
            Tok::Ident(n) if n == "__print_flags" => true,
            Tok::Ident(n) if n == "__print_symbolic" => false,
            _ => {
                i += 1;
                continue;
            }
        };
        let (args, end) = call_args(&toks, i + 1);
        i = end.max(i + 1);
        let Some(field) = args.first().and_then(|a| plain_field(a)) else {
            continue;
        };
        match table(event, flags, &args, consts) {
            Ok((table, casts)) => f.tables.push(RawTable {
                table,
                field,
                casts,
            }),
            Err(error) => f.skipped.push(Skipped {
                event: event.into(),
                field,
                error,
            }),
        }
    }
}

/// The top-level comma-separated arguments of the call whose `(` is at `open`, and the
/// index after its `)`.
fn call_args(toks: &[Tok], open: usize) -> (Vec<&[Tok]>, usize) {
    let mut args = Vec::new();
    if toks.get(open) != Some(&Tok::Punct("(")) {
        return (args, open);
    }
    let mut depth = 0usize;
    let mut start = open + 1;
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct("(" | "{") => depth += 1,
            Tok::Punct(")" | "}") => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    args.push(&toks[start..i]);
                    return (args, i + 1);
                }
            }
            Tok::Punct(",") if depth == 1 => {
                args.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    (args, toks.len())
}

/// `REC->name`, possibly in parentheses: the field printed; `None` for an expression of
/// it (`(REC->ioprio >> 13) & 7`), whose table is not the field's.
fn plain_field(arg: &[Tok]) -> Option<String> {
    let mut a = arg;
    while let (Some(Tok::Punct("(")), Some(Tok::Punct(")"))) = (a.first(), a.last()) {
        a = &a[1..a.len() - 1];
    }
    match a {
        [Tok::Ident(rec), Tok::Punct("->"), Tok::Ident(name)] if rec == "REC" => Some(name.clone()),
        _ => None,
    }
}

/// The table of a call's arguments: (field, "delim",) `{VAL, "NAME"}`…, up to the
/// terminating `{ 0, NULL }` / `{ -1, NULL }`.
fn table(
    event: &str,
    flags: bool,
    args: &[&[Tok]],
    consts: Consts<'_>,
) -> Result<(Table, Vec<Vec<String>>), Error> {
    let (kind, first) = if flags {
        match args.get(1) {
            Some([Tok::Str(d)]) => (TableKind::Flags { delim: d.clone() }, 2),
            _ => return Err(Error::Table("no delimiter".into())),
        }
    } else {
        (TableKind::Symbolic, 1)
    };
    let mut entries = Vec::new();
    let mut casts = Vec::new();
    for arg in &args[first.min(args.len())..] {
        let inner = match arg {
            [Tok::Punct("{"), inner @ .., Tok::Punct("}")] => inner,
            _ => return Err(Error::Table(format!("not an entry: {arg:?}"))),
        };
        let Some(comma) = inner.iter().rposition(|t| *t == Tok::Punct(",")) else {
            return Err(Error::Table("an entry without a name".into()));
        };
        let name = match &inner[comma + 1..] {
            [Tok::Str(s)] => s.clone(),
            // `{ 0, ((void *)0) }`, `{ -1, NULL }`: the end.
            _ => break,
        };
        let v = eval(&inner[..comma], consts)?;
        entries.push((v.value, name));
        casts.push(v.casts);
    }
    Ok((
        Table {
            kind,
            entries,
            event: event.into(),
        },
        casts,
    ))
}
