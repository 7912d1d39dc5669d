//! Where each value of a function is fetched from: its parameters by their DWARF
//! locations (registers, stack words, frame slots after the prologue, strings) and its
//! return value, as fetch expressions both user-space engines read.

use super::*;

/// Where a function's arguments are read: after the prologue (`body`, unoptimized code
/// with frame slots, uprobes) or at the entry, by an engine that reads `reads`.
#[derive(Debug, Clone, Copy)]
struct ReadAt {
    body: bool,
    reads: Reads,
}

/// The fetch of DWARF register `dwarf` for an engine that reads `reads`: general
/// registers always, `%xmmN` where vector registers are read.
fn reg_fetch(dwarf: u8, reads: Reads) -> Option<String> {
    match dwarf {
        17..=24 if reads.vector => Some(format!("%xmm{}", dwarf - 17)),
        _ => uprobe_reg(dwarf).map(str::to_string),
    }
}

/// The uprobe register name (`%di`) of a DWARF register, for general-purpose registers.
pub fn uprobe_reg(dwarf: u8) -> Option<&'static str> {
    sigdb::regs::reg(dwarf).and_then(|r| r.fetch)
}

/// Most words fetched for one argument passed in memory (a struct by value).
const MAX_STACK_WORDS: u32 = 4;

/// Plan the fetches of one parameter, appending its fields (numbers first; strings go to
/// `strings` and are appended last, so a string can only be followed by strings).
fn plan_param(
    index: usize,
    ty: Type<'_>,
    loc: Location,
    fields: &mut Vec<Field>,
    strings: &mut Vec<(usize, Field)>,
    pname: &mut dyn FnMut(&mut Vec<Field>, String, String) -> usize,
    at: ReadAt,
) -> ArgPlan {
    let ReadAt {
        body: at_body,
        reads,
    } = at;
    let t = ty.resolve();
    let float = t.kind() == TypeKind::Float;
    let want_string = is_c_string(ty);
    let string_of = |base: String, strings: &mut Vec<(usize, Field)>| {
        strings.push((
            index,
            Field {
                name: format!("s{index}"),
                fetch: format!("+0({base}):ustring"),
                string: true,
            },
        ));
    };
    // Words of a value in memory at `base(reg)`, `+8`, ...
    let mut in_memory =
        |fields: &mut Vec<Field>, strings: &mut Vec<(usize, Field)>, reg: &str, base: i64| {
            let n = t.size().div_ceil(8).clamp(1, MAX_STACK_WORDS);
            let mut words = Vec::new();
            for k in 0..n {
                let name = if k == 0 {
                    format!("a{index}")
                } else {
                    format!("a{index}_{k}")
                };
                words.push(pname(
                    fields,
                    name,
                    format!("{:+}({reg}):x64", base + 8 * i64::from(k)),
                ));
            }
            if want_string {
                string_of(format!("{base:+}({reg})"), strings);
            }
            ArgPlan::Fetched {
                words,
                string: None,
            }
        };
    let aggregate = matches!(t.kind(), TypeKind::Struct | TypeKind::Union);
    if aggregate && t.size() == 0 {
        // An empty struct takes no register and no memory: nothing to read.
        return ArgPlan::Text(format!("({}){{}}", dcg_render::aggregate_label(ty, t)));
    }
    match loc {
        // After the prologue (the probe sits there when any argument is in a frame slot)
        // registers no longer hold the arguments; the CFA is rbp + 16.
        Location::Reg(_) | Location::RegPair(..) if at_body => ArgPlan::Text(unreadable(loc)),
        Location::Reg(r) => match reg_fetch(r, reads) {
            // A 16-byte value in one vector register (`_Float128`): both halves.
            Some(reg) if reg.starts_with("%xmm") && t.size() > 8 => {
                let lo = pname(fields, format!("a{index}"), format!("{reg}:x64"));
                let hi = pname(fields, format!("a{index}_1"), format!("{reg}_hi:x64"));
                ArgPlan::Fetched {
                    words: vec![lo, hi],
                    string: None,
                }
            }
            Some(reg) if !float || reg.starts_with("%xmm") => {
                let w = pname(fields, format!("a{index}"), format!("{reg}:x64"));
                if want_string {
                    string_of(reg, strings);
                }
                ArgPlan::Fetched {
                    words: vec![w],
                    string: None,
                }
            }
            // xmm registers cannot be fetched by uprobes.
            _ => ArgPlan::Text(unreadable(loc)),
        },
        Location::RegPair(a, b) => match (reg_fetch(a, reads), reg_fetch(b, reads)) {
            (Some(ra), Some(rb)) if !float || reads.vector => {
                let w0 = pname(fields, format!("a{index}"), format!("{ra}:x64"));
                let w1 = pname(fields, format!("a{index}_1"), format!("{rb}:x64"));
                ArgPlan::Fetched {
                    words: vec![w0, w1],
                    string: None,
                }
            }
            _ => ArgPlan::Text(unreadable(loc)),
        },
        // CFA = %sp at entry + 8, so CFA+off is %sp + 8 + off at entry, %bp + 16 + off
        // after the prologue.
        Location::Stack(off) if at_body => in_memory(fields, strings, "%bp", i64::from(off) + 16),
        Location::Stack(off) => in_memory(fields, strings, "%sp", i64::from(off) + 8),
        Location::Frame { off, .. } => in_memory(fields, strings, "%bp", i64::from(off) + 16),
        Location::Const(v) => ArgPlan::Text(
            render(ty, i64::from(v) as u64, Role::Arg).unwrap_or_else(|| v.to_string()),
        ),
        Location::OptimizedOut | Location::Unknown => ArgPlan::Text("?".into()),
    }
}

/// Where the entry probe of `f` sits, in bytes after its entry: after the prologue when
/// an argument is in a frame slot (unoptimized code), else at the entry.
pub fn body_offset(f: Function<'_>) -> u64 {
    f.params()
        .find_map(|p| match p.loc() {
            Location::Frame { body, .. } => Some(u64::from(body)),
            _ => None,
        })
        .unwrap_or(0)
}

/// The fields and argument plans of a function's entry event.
pub fn plan_entry(f: Function<'_>, reads: Reads) -> (Vec<Field>, Vec<(String, ArgPlan)>) {
    let at_body = !reads.at_entry && body_offset(f) != 0;
    let abi = if reads.at_entry && body_offset(f) != 0 {
        abi_locations(f)
    } else {
        Vec::new()
    };
    let mut fields = Vec::new();
    let mut strings = Vec::new();
    let mut args = Vec::new();
    let mut push = |fields: &mut Vec<Field>, name: String, fetch: String| {
        fields.push(Field {
            name,
            fetch,
            string: false,
        });
        fields.len() - 1
    };
    for (i, p) in f.params().enumerate() {
        // A frame slot is filled by the prologue: at the entry the value is where the
        // ABI passes it.
        let loc = match (p.loc(), abi.get(i)) {
            (Location::Frame { .. }, Some(&at)) => at,
            (loc, _) => loc,
        };
        let plan = plan_param(
            i,
            p.ty(),
            loc,
            &mut fields,
            &mut strings,
            &mut push,
            ReadAt {
                body: at_body,
                reads,
            },
        );
        let name = if p.name().is_empty() {
            format!("arg{}", i + 1)
        } else {
            p.name().to_string()
        };
        args.push((name, plan));
    }
    for (i, field) in strings {
        fields.push(field);
        let at = fields.len() - 1;
        if let ArgPlan::Fetched { string, .. } = &mut args[i].1 {
            *string = Some(at);
        }
    }
    (fields, args)
}

/// Where the System V ABI passes each parameter of `f` at its first instruction.
fn abi_locations(f: Function<'_>) -> Vec<Location> {
    use dwarfscan::abi;
    let class = |t: Type<'_>, ret: bool| {
        let r = t.resolve();
        if ret {
            abi::classify_ret(r.kind(), r.size(), r.flags(), r.name())
        } else {
            abi::classify(r.kind(), r.size(), r.flags(), r.name())
        }
    };
    let params: Vec<_> = f.params().map(|p| class(p.ty(), false)).collect();
    abi::expected_locations(class(f.ret(), true), &params)
}

/// The fields of a function's return event: none for void, `$retval` (and `%dx` for a
/// struct returned in two registers, the words `$retval` points to for one returned in
/// memory, the string of a `char *`); or the marker of a value no uprobe can read (in
/// xmm0 or the x87 stack).
pub fn plan_return(f: Function<'_>, reads: Reads) -> (Vec<Field>, Option<String>) {
    let t = f.ret().resolve();
    let field = |name: &str, fetch: String| Field {
        name: name.into(),
        fetch,
        string: false,
    };
    let words = |n: u32| -> Vec<Field> {
        (0..n)
            .map(|k| {
                let name = if k == 0 {
                    "ret".to_string()
                } else {
                    format!("ret_{k}")
                };
                field(&name, format!("+{}($retval):x64", 8 * k))
            })
            .collect()
    };
    let vector = |fetches: &[&str]| -> (Vec<Field>, Option<String>) {
        let fields = fetches
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let name = if k == 0 {
                    "ret".to_string()
                } else {
                    format!("ret_{k}")
                };
                field(&name, format!("{f}:x64"))
            })
            .collect();
        (fields, None)
    };
    match t.kind() {
        TypeKind::Void => (Vec::new(), None),
        TypeKind::Float if reads.vector => match sigdb::float_format(t.size(), t.name()) {
            sigdb::FloatFormat::X87 => vector(&["%st0", "%st0_hi"]),
            sigdb::FloatFormat::Complex(16) => vector(&["%xmm0", "%xmm1"]),
            sigdb::FloatFormat::Complex(32) => (Vec::new(), Some("?st0".into())),
            sigdb::FloatFormat::Quad => vector(&["%xmm0", "%xmm0_hi"]),
            _ => vector(&["%xmm0"]),
        },
        TypeKind::Float => (
            Vec::new(),
            Some(
                match sigdb::float_format(t.size(), t.name()) {
                    sigdb::FloatFormat::X87 | sigdb::FloatFormat::Complex(32) => "?st0",
                    sigdb::FloatFormat::Complex(16) => "?xmm0:xmm1",
                    _ => "?xmm0",
                }
                .into(),
            ),
        ),
        TypeKind::Struct | TypeKind::Union if t.size() == 0 => (Vec::new(), None),
        TypeKind::Struct | TypeKind::Union => match dcg_render::ret_class(t) {
            dcg_render::RetClass::Regs(false, false) if t.size() <= 8 => {
                (vec![field("ret", "$retval:x64".into())], None)
            }
            dcg_render::RetClass::Regs(false, false) => (
                vec![
                    field("ret", "$retval:x64".into()),
                    field("ret_1", "%dx:x64".into()),
                ],
                None,
            ),
            dcg_render::RetClass::Regs(lo, hi) if reads.vector => {
                let first = if lo { "%xmm0" } else { "$retval" };
                let second = match (lo, hi) {
                    (true, true) => "%xmm1",
                    (false, true) => "%xmm0",
                    _ => "%dx",
                };
                if t.size() <= 8 {
                    vector(&[first])
                } else {
                    vector(&[first, second])
                }
            }
            dcg_render::RetClass::Regs(lo, hi) => (
                Vec::new(),
                Some(
                    match (lo, hi, t.size() > 8) {
                        (true, false, true) => "?rax:xmm0",
                        (false, true, _) => "?xmm0:rdx",
                        (true, true, true) => "?xmm0:xmm1",
                        _ => "?xmm0",
                    }
                    .into(),
                ),
            ),
            dcg_render::RetClass::Memory => {
                (words(t.size().div_ceil(8).clamp(1, MAX_STACK_WORDS)), None)
            }
            dcg_render::RetClass::Unknown => (Vec::new(), Some("?rax".into())),
        },
        _ if is_c_string(f.ret()) => (
            vec![
                field("ret", "$retval:x64".into()),
                Field {
                    name: "sret".into(),
                    fetch: "+0($retval):ustring".into(),
                    string: true,
                },
            ],
            None,
        ),
        _ => (vec![field("ret", "$retval:x64".into())], None),
    }
}
