//! What to probe: the binaries of `--func PATH:PATTERN`, their signature dbs, the
//! functions a pattern selects, and for each one the uprobe / uretprobe definitions that
//! fetch its arguments and return value from their DWARF locations.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use object::{Object as _, ObjectSegment as _};
use sigdb::{Db, FuncFlags, Function, Instance, Location, Type, TypeKind};

use dcg_dbset::glob::glob_match;
use dcg_dbset::symbols::SymbolMap;

use crate::UtraceError;

type Result<T> = std::result::Result<T, UtraceError>;

fn binary_error(path: impl std::fmt::Display, what: impl std::fmt::Display) -> UtraceError {
    UtraceError::Binary {
        path: path.to_string(),
        what: what.to_string(),
    }
}
use dcg_render::{is_c_string, render, render_string, Role};

pub use dcg_dbset::binary::DbSource;

/// A loadable segment: ELF address range and the file offset of its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// `p_vaddr`.
    pub vaddr: u64,
    /// `p_filesz`: only bytes backed by the file can be probed.
    pub filesz: u64,
    /// `p_offset`.
    pub offset: u64,
}

/// File offset of ELF address `vaddr`: `vaddr - p_vaddr + p_offset` of the `PT_LOAD`
/// segment containing it.
pub fn file_offset(segments: &[Segment], vaddr: u64) -> Option<u64> {
    segments
        .iter()
        .find(|s| vaddr >= s.vaddr && vaddr - s.vaddr < s.filesz)
        .map(|s| vaddr - s.vaddr + s.offset)
}

/// The `PT_LOAD` segments of an ELF file.
pub fn load_segments(bytes: &[u8]) -> std::result::Result<Vec<Segment>, String> {
    let file = object::File::parse(bytes).map_err(|e| format!("not a valid ELF file: {e}"))?;
    Ok(file
        .segments()
        .map(|s| {
            let (offset, filesz) = s.file_range();
            Segment {
                vaddr: s.address(),
                filesz,
                offset,
            }
        })
        .collect())
}

/// A traced binary: its path, segments and db.
pub struct Target {
    /// The path as given in `--func`.
    pub given: String,
    /// Absolute path, as the kernel resolves it for the uprobe.
    pub path: PathBuf,
    /// File name, used as the module name of its calls.
    pub name: String,
    /// `PT_LOAD` segments.
    pub segments: Vec<Segment>,
    /// Its signature db.
    pub db: Db,
    /// Where the db came from.
    pub source: DbSource,
    /// GNU build-id (empty when none).
    pub build_id: Vec<u8>,
    /// Its ELF symbols (`.symtab`, `.dynsym`, and its debug file's): aliases of
    /// functions, functions without DWARF, what pointers land on.
    pub symbols: SymbolMap,
}

/// Find the file `given` names: an existing path, a file mapped by process `pid` with that
/// name (`libc.so.6`, or `libc` as a prefix), or a command in `$PATH`.
pub fn resolve_binary(given: &str, pid: Option<i32>) -> Result<PathBuf> {
    let p = Path::new(given);
    if p.is_file() {
        return p
            .canonicalize()
            .map_err(|e| binary_error(given, format!("resolving the path: {e}")));
    }
    if let Some(pid) = pid {
        if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            let want = p.file_name().map(|n| n.to_string_lossy().into_owned());
            for line in maps.lines() {
                let Some(path) = line.split_whitespace().nth(5) else {
                    continue;
                };
                let name = Path::new(path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if want
                    .as_deref()
                    .is_some_and(|w| name == w || name.starts_with(&format!("{w}.")))
                {
                    // The process's view: /proc/PID/root keeps it right across mount
                    // namespaces.
                    let root = PathBuf::from(format!("/proc/{pid}/root{path}"));
                    if root.is_file() {
                        return Ok(PathBuf::from(path));
                    }
                }
            }
        }
    }
    if !given.contains('/') {
        if let Some(found) = dcg_live::process::search_path(given) {
            return Ok(found);
        }
    }
    Err(binary_error(given, "no such file"))
}

/// Open the binary at `path` and find its db: `--db` files (the one with the binary's
/// build-id, or the only one), the store by build-id, else one built in memory with
/// dwarfscan (with a note on how to keep it). Notes go to `notes`.
pub fn load_target(
    given: &str,
    path: &Path,
    dbs: &[PathBuf],
    notes: &mut Vec<String>,
) -> Result<Target> {
    let bytes = std::fs::read(path).map_err(|e| binary_error(path.display(), e))?;
    let segments = load_segments(&bytes).map_err(|e| binary_error(path.display(), e))?;
    let build_id = object::File::parse(&*bytes)
        .ok()
        .and_then(|f| f.build_id().ok().flatten().map(<[u8]>::to_vec))
        .unwrap_or_default();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| given.to_string());
    let found = dcg_dbset::binary::resolve_binary(path, &bytes, &build_id, dbs)?;
    notes.extend(found.notes);
    let (db, source) = (found.db, found.source);
    let mut symbols = SymbolMap::from_elf(&bytes).map_err(|e| binary_error(path.display(), e))?;
    if let Some(debug) = loader::binary::debug_file(path, &bytes, &build_id) {
        if let Ok(dbytes) = std::fs::read(&debug) {
            if let Ok(more) = SymbolMap::from_elf(&dbytes) {
                symbols.merge(more);
            }
        }
    }
    Ok(Target {
        given: given.to_string(),
        path: path.to_path_buf(),
        name,
        segments,
        db,
        source,
        build_id,
        symbols,
    })
}

/// One probe argument of an event: its name in the event and the fetch expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`a0`, `a0_1`, `s0`, `ret`).
    pub name: String,
    /// Fetch expression (`%di:x64`, `+0(%si):ustring`, `$retval:x64`).
    pub fetch: String,
    /// A string field (printed quoted, or `(fault)`).
    pub string: bool,
}

/// How an argument's value is obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgPlan {
    /// From event fields: 64-bit words (indices into the entry fields), and for `char *`
    /// the string it points to.
    Fetched {
        /// Word fields, low first.
        words: Vec<usize>,
        /// The `ustring` field.
        string: Option<usize>,
    },
    /// Known without fetching: a constant, `?` (optimized out or unknown), or `?LOC` for
    /// a value in a register no uprobe can read (`?xmm0`, `?rdi:xmm0`, `?st0`).
    Text(String),
}

/// The marker of a value in `loc` that no uprobe can read (uprobes fetch general-purpose
/// registers and memory only): `?xmm0`.
pub fn unreadable(loc: sigdb::Location) -> String {
    format!("?{loc}")
}

/// What an engine can read, which shapes the plan of every value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reads {
    /// xmm0-xmm7 and the x87 `st0` (the in-process recorder; uprobes cannot).
    pub vector: bool,
    /// Arguments are read at the first instruction, always: unoptimized code's frame
    /// slots (filled by the prologue) are read from where the ABI passes them instead.
    pub at_entry: bool,
}

impl Reads {
    /// What uprobes read.
    pub const UPROBES: Reads = Reads {
        vector: false,
        at_entry: false,
    };
    /// What the in-process recorder reads.
    pub const IN_PROCESS: Reads = Reads {
        vector: true,
        at_entry: true,
    };
}

/// The fetch of DWARF register `dwarf` for an engine that reads `reads`: general
/// registers always, `%xmmN` where vector registers are read.
fn reg_fetch(dwarf: u8, reads: Reads) -> Option<String> {
    match dwarf {
        17..=24 if reads.vector => Some(format!("%xmm{}", dwarf - 17)),
        _ => uprobe_reg(dwarf).map(str::to_string),
    }
}

/// Why some values of `probes` will show as `?xmm0`, `?st0` (said once), if any will.
pub fn unreadable_note(probes: &[Probe<'_>]) -> Option<String> {
    let mut funcs: Vec<&str> = probes
        .iter()
        .filter(|p| {
            p.ret_text.is_some()
                || p.args.iter().any(
                    |(_, a)| matches!(a, ArgPlan::Text(t) if t.len() > 1 && t.starts_with('?')),
                )
        })
        .map(|p| p.symbol.as_str())
        .collect();
    if funcs.is_empty() {
        return None;
    }
    funcs.sort_unstable();
    funcs.dedup();
    Some(format!(
        "values in xmm and x87 registers cannot be read by uprobes (they fetch general-purpose \
         registers and memory only), shown as ?xmm0, ?st0, ?rdi:xmm0 (where the value is); \
         arguments unoptimized code spills to a frame (-O0 with a frame pointer) are read \
         from there: {}",
        shorten_list(&funcs, 8)
    ))
}

/// A function to probe and its two events.
#[derive(Debug, Clone)]
pub struct Probe<'a> {
    /// The function, when DWARF describes it.
    pub func: Option<Function<'a>>,
    /// Its symbol.
    pub symbol: String,
    /// Index of its [`Target`].
    pub target: usize,
    /// File offset of its entry.
    pub offset: u64,
    /// Where the entry probe sits, in bytes after the entry: 0, or the prologue's length
    /// when arguments are read from their frame slots (`-O0`).
    pub body: u64,
    /// Entry event name.
    pub entry_event: String,
    /// Return event name.
    pub return_event: String,
    /// Entry event fields.
    pub entry_fields: Vec<Field>,
    /// One plan per parameter (empty without `--args`).
    pub args: Vec<(String, ArgPlan)>,
    /// Return event fields (empty for void, or without `--show-retvals`).
    pub ret_fields: Vec<Field>,
    /// A return value no uprobe can read (`?xmm0`), shown instead of fields.
    pub ret_text: Option<String>,
    /// Its ELF address.
    pub addr: u64,
    /// The entry field holding the return address (where the call was made from), read
    /// when calls are placed under inline frames.
    pub ra: Option<usize>,
    /// When the entry probe sits after the prologue: the event of a probe at the entry
    /// reading the return address (field [`RA_FIELD`] alone), just before the entry
    /// event.
    pub ra_event: Option<String>,
    /// Inlined copies starting at the probe's address ([`InlineSite`]s whose values
    /// this probe's entry event reads).
    pub inlines: Vec<usize>,
    /// The function returns twice (`setjmp`, `vfork`): its return is never hooked (a
    /// hooked return would send the second one back to the first's caller); its call
    /// shows as a leaf without a value.
    pub returns_twice: bool,
}

/// Functions that return twice: no engine hooks their return.
pub const RETURNS_TWICE: &[&str] = &[
    "setjmp",
    "_setjmp",
    "__setjmp",
    "sigsetjmp",
    "__sigsetjmp",
    "savectx",
    "vfork",
    "__vfork",
    "getcontext",
    "__getcontext",
    "swapcontext",
];

impl Probe<'_> {
    /// The `uprobe_events` line of the entry probe.
    pub fn entry_def(&self, group: &str, path: &Path) -> String {
        def(
            'p',
            group,
            &self.entry_event,
            path,
            self.offset + self.body,
            &self.entry_fields,
        )
    }

    /// The `uprobe_events` line of the probe reading the return address at the entry,
    /// when the entry probe sits after the prologue.
    pub fn ra_def(&self, group: &str, path: &Path) -> Option<String> {
        let event = self.ra_event.as_deref()?;
        Some(def('p', group, event, path, self.offset, &ra_fields()))
    }

    /// The `uprobe_events` line of the return probe.
    pub fn return_def(&self, group: &str, path: &Path) -> String {
        def(
            'r',
            group,
            &self.return_event,
            path,
            self.offset,
            &self.ret_fields,
        )
    }
}

fn def(kind: char, group: &str, event: &str, path: &Path, offset: u64, fields: &[Field]) -> String {
    let mut s = format!("{kind}:{group}/{event} {}:{offset:#x}", path.display());
    for f in fields {
        let _ = write!(s, " {}={}", f.name, f.fetch);
    }
    s
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
    at_body: bool,
    reads: Reads,
) -> ArgPlan {
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
            at_body,
            reads,
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

/// The entry field holding the task's name (`$comm`), always last.
pub const COMM_FIELD: &str = "comm";

/// A field value parsed from an event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A number.
    Num(u64),
    /// A string, unquoted.
    Str(String),
    /// The string could not be read (`(fault)`).
    Fault,
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
            let list: Vec<String> = many.iter().map(|w| format!("{w:#x}")).collect();
            format!("({label}){{{}}}", list.join(", "))
        }
    }
}

/// Sanitize a symbol into a tracefs event name: `[A-Za-z0-9_]`, not starting with a
/// digit, short enough for a `_ret` suffix (the kernel limit is 63 bytes).
pub fn event_base(symbol: &str) -> String {
    let mut s: String = symbol
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(48)
        .collect();
    if s.is_empty() || s.as_bytes()[0].is_ascii_digit() {
        s.insert(0, '_');
    }
    s
}

/// A function selected by a pattern, before its probe is planned.
#[derive(Debug, Clone)]
pub struct Selected<'a> {
    /// The function, when DWARF describes it (else an ELF function symbol, traced
    /// without arguments).
    pub func: Option<Function<'a>>,
    /// Its symbol.
    pub symbol: String,
    /// Its address.
    pub addr: u64,
    /// Index of its target.
    pub target: usize,
}

/// An inlined copy of a selected function, in a function of target `target`.
#[derive(Debug, Clone, Copy)]
pub struct SelectedCopy<'a> {
    /// The copy (the db's inline instance).
    pub instance: Instance<'a>,
    /// Index of its target.
    pub target: usize,
}

/// What a pattern selects: functions to probe (entry and return), and inlined copies of
/// functions (their containers are among the functions).
#[derive(Debug, Default)]
pub struct Selection<'a> {
    /// Functions to probe.
    pub funcs: Vec<Selected<'a>>,
    /// Inlined copies to probe at their first instruction.
    pub copies: Vec<SelectedCopy<'a>>,
}

pub use dcg_dbset::inlines::INLINE_MAX;

/// Whether `f` is an entry point a probe can trace with its types (a container of
/// inlined copies).
fn is_entry(f: Function<'_>) -> bool {
    f.addr() != 0
        && !f
            .flags()
            .intersects(FuncFlags::INLINE_ONLY | FuncFlags::COLD | FuncFlags::NO_TYPES)
}

/// The inlined copies of the functions `wanted` (indices in `db`) inside functions a
/// probe can trace.
fn copies_of<'a>(db: &'a Db, wanted: &HashSet<u32>) -> (Vec<Instance<'a>>, usize) {
    dcg_dbset::inlines::copies_of(db, wanted, is_entry)
}

/// Select the functions `pattern` matches in `target`'s db, and the inlined copies of
/// the matching functions (the db's inline instances) with the functions holding them;
/// `frames`: the copies are shown as frames (else only their containers are traced).
/// Inline-only functions without copies in the db and `.cold` parts are skipped with a
/// note. Returns an error message when nothing traceable matches.
pub fn select<'a>(
    targets: &'a [Target],
    target: usize,
    pattern: &str,
    frames: bool,
    notes: &mut Vec<String>,
) -> std::result::Result<Selection<'a>, String> {
    let t = &targets[target];
    let wild = pattern.contains(['*', '?']);
    let mut found = Vec::new();
    let mut inline_only = Vec::new();
    let mut cold = Vec::new();
    let mut with_dwarf = HashSet::new();
    let mut no_dwarf: Vec<(String, u64)> = Vec::new();
    for f in t.db.functions() {
        if f.addr() != 0 && !f.flags().contains(FuncFlags::NO_TYPES) {
            with_dwarf.insert(f.addr());
        }
        // By its DWARF name, its symbol, or any ELF symbol at its address (`free` is
        // `__libc_free` in libc's DWARF).
        let alias = || {
            f.addr() != 0
                && t.symbols
                    .at(f.addr())
                    .iter()
                    .any(|s| s.func && glob_match(pattern, &s.name))
        };
        if !glob_match(pattern, f.name()) && !glob_match(pattern, f.symbol()) && !alias() {
            continue;
        }
        let flags = f.flags();
        if flags.contains(FuncFlags::INLINE_ONLY) || f.addr() == 0 {
            inline_only.push(f);
        } else if flags.contains(FuncFlags::NO_TYPES) {
            // Named by an assembly unit: no types, as if it had no DWARF.
            with_dwarf.remove(&f.addr());
            let named = glob_match(pattern, f.name());
            match no_dwarf.iter_mut().find(|(_, a)| *a == f.addr()) {
                // Shown by the name asked for (`kill`, not `__GI___kill`).
                Some((n, _)) if named && !glob_match(pattern, n) => *n = f.name().to_string(),
                Some(_) => {}
                None => no_dwarf.push((f.name().to_string(), f.addr())),
            }
        } else if flags.contains(FuncFlags::COLD) {
            cold.push(f);
        } else {
            found.push(Selected {
                func: Some(f),
                symbol: f.symbol().to_string(),
                addr: f.addr(),
                target,
            });
        }
    }
    // Function symbols no DWARF describes (assembly: libc's syscall wrappers `kill`,
    // `chmod`), by name only: traced without arguments, the return value raw.
    for s in t.symbols.functions() {
        if !with_dwarf.contains(&s.addr)
            && glob_match(pattern, &s.name)
            && !no_dwarf.iter().any(|(_, a)| *a == s.addr)
        {
            no_dwarf.push((s.name.clone(), s.addr));
        }
    }
    no_dwarf.retain(|(_, a)| !with_dwarf.contains(a));
    if !wild {
        for (name, addr) in no_dwarf {
            notes.push(format!(
                "{name}: no DWARF gives its types (written in assembly, or built without -g): \
                 traced without arguments, its return value raw"
            ));
            found.push(Selected {
                func: None,
                symbol: name,
                addr,
                target,
            });
        }
    } else if !no_dwarf.is_empty() {
        notes.push(format!(
            "{}:{pattern}: {} matching functions have no DWARF and are not traced (name one \
             to trace it without arguments)",
            t.given,
            no_dwarf.len()
        ));
    }
    // Inlined copies of what matched, and the functions holding them.
    let mut copies = Vec::new();
    {
        let wanted: HashSet<u32> = found
            .iter()
            .filter_map(|s| s.func.map(|f| f.index()))
            .chain(inline_only.iter().map(|f| f.index()))
            .collect();
        let (instances, more) = copies_of(&t.db, &wanted);
        let mut inlined: Vec<&str> = Vec::new();
        let mut containers: Vec<&str> = Vec::new();
        for i in &instances {
            let (Some(callee), Some(caller)) = (i.callee(), i.caller()) else {
                continue;
            };
            if !inlined.contains(&callee.name()) {
                inlined.push(callee.name());
            }
            if !containers.contains(&caller.symbol()) {
                containers.push(caller.symbol());
            }
            if !found.iter().any(|s| s.addr == caller.addr()) {
                found.push(Selected {
                    func: Some(caller),
                    symbol: caller.symbol().to_string(),
                    addr: caller.addr(),
                    target,
                });
            }
            copies.push(SelectedCopy {
                instance: *i,
                target,
            });
        }
        // Inline-only functions with copies are traced through them.
        inline_only.retain(|f| !inlined.contains(&f.name()));
        if !copies.is_empty() {
            let how = match (frames, copies.len()) {
                (false, _) => "not shown (--no-inline-frames)",
                (true, 1) => {
                    "shown as a frame with the arguments at its first instruction and no \
                     return value (DWARF does not say where an inlined copy leaves it)"
                }
                (true, _) => {
                    "each shown as a frame with the arguments at its first instruction and \
                     no return value (DWARF does not say where an inlined copy leaves it)"
                }
            };
            notes.push(format!(
                "{}: {} inlined in {} (traced), {how}{}",
                shorten_list(&inlined, 8),
                if copies.len() == 1 {
                    "a copy".to_string()
                } else {
                    format!("{} copies", copies.len())
                },
                shorten_list(&containers, 8),
                if more > 0 {
                    format!("; {more} more copies left out (at most {INLINE_MAX})")
                } else {
                    String::new()
                }
            ));
        }
    }
    // A function inlined somewhere but with an out-of-line copy too is traced: no note.
    inline_only.retain(|f| {
        !found
            .iter()
            .any(|s| s.func.is_some_and(|g| g.name() == f.name()))
    });
    for f in &cold {
        let parent = f.symbol().strip_suffix(".cold").unwrap_or(f.name());
        notes.push(format!(
            "{}: the cold part of {parent}, not an entry point: not probed (its calls show as {parent})",
            f.symbol()
        ));
    }
    if !wild {
        for f in &inline_only {
            let into: Vec<&str> = f.inlined_into().map(|c| c.symbol()).collect();
            let mut msg = if into.is_empty() {
                format!("{}: only inlined, no code of its own: not traced", f.name())
            } else {
                format!(
                    "{}: inlined into {}, no code of its own: not traced",
                    f.name(),
                    shorten_list(&into, 8)
                )
            };
            if t.db.instance_count() == 0 {
                msg.push_str(
                    " (a db with its inlined copies, what dwarfscan writes by default, would \
                     trace them)",
                );
            }
            notes.push(msg);
        }
    } else if !inline_only.is_empty() {
        notes.push(format!(
            "{}:{pattern}: {} matching functions are only inlined and not traced",
            t.given,
            inline_only.len()
        ));
    }
    if found.is_empty() {
        let why = if !inline_only.is_empty() || !cold.is_empty() {
            " that can be probed"
        } else {
            ""
        };
        return Err(format!(
            "no function{why} matches '{pattern}' in {}",
            t.path.display()
        ));
    }
    Ok(Selection {
        funcs: found,
        copies,
    })
}

fn shorten_list(v: &[&str], max: usize) -> String {
    if v.len() <= max {
        v.join(", ")
    } else {
        format!("{} and {} more", v[..max].join(", "), v.len() - max)
    }
}

/// Add numeric field `field` to an entry event's fields, before its strings (a string
/// must be followed by strings only); the string fields `args` refer to move up one.
fn insert_number(fields: &mut Vec<Field>, args: &mut [(String, ArgPlan)], field: Field) -> usize {
    let at = fields.iter().position(|f| f.string).unwrap_or(fields.len());
    fields.insert(at, field);
    for (_, plan) in args.iter_mut() {
        if let ArgPlan::Fetched {
            string: Some(i), ..
        } = plan
        {
            if *i >= at {
                *i += 1;
            }
        }
    }
    at
}

/// Plan a probe for each selected function: one per distinct entry address, unique
/// event names. With `call_sites`, the entry events of functions in binaries whose db
/// has inlined copies read their return address (the call site: where in its caller
/// the call was made).
pub fn plan_probes<'a>(
    targets: &[Target],
    selected: &[Selected<'a>],
    with_args: bool,
    with_ret: bool,
    call_sites: bool,
    reads: Reads,
    notes: &mut Vec<String>,
) -> Vec<Probe<'a>> {
    let mut seen_addr = HashSet::new();
    let mut names = HashSet::new();
    let mut probes = Vec::new();
    for s in selected {
        if !seen_addr.insert((s.target, s.addr)) {
            continue;
        }
        let t = &targets[s.target];
        let Some(offset) = file_offset(&t.segments, s.addr) else {
            notes.push(format!(
                "{}: address {:#x} is in no loadable segment of {}: not probed",
                s.symbol,
                s.addr,
                t.path.display()
            ));
            continue;
        };
        let base = event_base(&s.symbol);
        let mut n = 1;
        let returns_twice = RETURNS_TWICE.contains(&s.symbol.as_str())
            || s.func.is_some_and(|f| RETURNS_TWICE.contains(&f.name()));
        let (entry, ret) = loop {
            let b = if n == 1 {
                base.clone()
            } else {
                format!("{base}_{n}")
            };
            let r = format!("{b}_ret");
            if !names.contains(&b) && !names.contains(&r) && !names.contains(&format!("{b}_ra")) {
                break (b, r);
            }
            n += 1;
        };
        names.insert(entry.clone());
        names.insert(ret.clone());
        let (mut entry_fields, mut args) = match s.func {
            Some(f) if with_args => plan_entry(f, reads),
            _ => (Vec::new(), Vec::new()),
        };
        let body = match s.func {
            Some(f) if with_args && !reads.at_entry => body_offset(f),
            _ => 0,
        };
        // The return address is on top of the stack at the entry. After the prologue
        // the function's uretprobe has replaced it by its trampoline: a probe of its own
        // at the entry reads it then.
        let call_site = call_sites && t.db.instance_count() > 0;
        let ra = (call_site && body == 0).then(|| {
            insert_number(
                &mut entry_fields,
                &mut args,
                Field {
                    name: RA_FIELD.into(),
                    fetch: RA_FETCH.into(),
                    string: false,
                },
            )
        });
        let ra_event = (call_site && body != 0).then(|| format!("{entry}_ra"));
        if let Some(e) = &ra_event {
            names.insert(e.clone());
        }
        // The task's name as the probe hits: trace_pipe names a pid from a cache that
        // can hold a previous owner's name (dcg's, before the exec; a dead process's).
        entry_fields.push(Field {
            name: COMM_FIELD.into(),
            fetch: "$comm".into(),
            string: true,
        });
        let (ret_fields, ret_text) = match s.func {
            _ if returns_twice => (Vec::new(), None),
            Some(f) if with_ret => plan_return(f, reads),
            // No type: the raw register.
            None if with_ret => (
                vec![Field {
                    name: "ret".into(),
                    fetch: "$retval:x64".into(),
                    string: false,
                }],
                None,
            ),
            _ => (Vec::new(), None),
        };
        probes.push(Probe {
            func: s.func,
            symbol: s.symbol.clone(),
            target: s.target,
            offset,
            body,
            entry_event: entry,
            return_event: ret,
            entry_fields,
            args,
            ret_fields,
            ret_text,
            addr: s.addr,
            ra,
            ra_event,
            inlines: Vec::new(),
            returns_twice,
        });
    }
    probes
}

/// The entry field holding the return address.
pub const RA_FIELD: &str = "ra";

/// The return address at a function's entry.
const RA_FETCH: &str = "+0(%sp):x64";

/// The fields of a [`Probe::ra_event`].
pub fn ra_fields() -> [Field; 1] {
    [Field {
        name: RA_FIELD.into(),
        fetch: RA_FETCH.into(),
        string: false,
    }]
}

/// Most stack words read for the parameters of an inlined copy: words `sp + 8k`, k
/// below this.
pub const INLINE_STACK_WORDS: usize = 32;

/// General registers by DWARF number an inlined copy's parameters can be read from
/// (rax..r15).
pub const INLINE_REGS: usize = 16;

/// The first instruction of inlined copies (nested copies can share it): a uprobe of
/// its own, or, at the address of a function's entry probe, fields of that probe's
/// entry event (one probe hit, so the copies open after their container's entry).
#[derive(Debug, Clone)]
pub struct InlineSite<'a> {
    /// The copies starting here, outermost first.
    pub copies: Vec<Instance<'a>>,
    /// Index of its [`Target`].
    pub target: usize,
    /// File offset of the address.
    pub offset: u64,
    /// Its event, when it has its own.
    pub event: Option<String>,
    /// The [`Probe`] whose entry event reads its values, when it has no event.
    pub folded: Option<usize>,
    /// The fields of its own event.
    pub fields: Vec<Field>,
    /// The general registers read, by DWARF number, and their fields.
    pub regs: Vec<(u8, usize)>,
    /// The stack words read (`sp + 8k` at the address, for the db's stack locations: its
    /// `Stack(o)` is the word at `sp + 8 + o`), and their fields.
    pub stack: Vec<(usize, usize)>,
}

impl InlineSite<'_> {
    /// The `uprobe_events` line of its own probe.
    pub fn def(&self, group: &str, path: &Path) -> Option<String> {
        let event = self.event.as_deref()?;
        Some(def('p', group, event, path, self.offset, &self.fields))
    }

    /// The registers (by DWARF number, 0..16) and stack words (from the stack pointer
    /// up) its copies' parameters are read from, out of an event's `values`. What is not
    /// read is 0 and no location of its copies refers to it.
    pub fn values(&self, values: &[Value]) -> ([u64; INLINE_REGS], Vec<u64>) {
        let num = |i: usize| match values.get(i) {
            Some(Value::Num(v)) => *v,
            _ => 0,
        };
        let mut regs = [0u64; INLINE_REGS];
        for &(r, i) in &self.regs {
            regs[usize::from(r)] = num(i);
        }
        let words = self.stack.iter().map(|&(k, _)| k + 1).max().unwrap_or(0);
        let mut stack = vec![0u64; words];
        for &(k, i) in &self.stack {
            stack[k] = num(i);
        }
        (regs, stack)
    }

    /// Whether every value its copies' parameters need was fetched.
    pub fn complete(&self, values: &[Value]) -> bool {
        self.regs
            .iter()
            .map(|&(_, i)| i)
            .chain(self.stack.iter().map(|&(_, i)| i))
            .all(|i| matches!(values.get(i), Some(Value::Num(_))))
    }
}

/// What the parameters of copy `i` need read at its first instruction: general registers
/// (DWARF numbers) and stack words (`sp + 8k`). Other locations (constants, optimized
/// out, xmm) need nothing: the tree shows them as the db says, or `?`.
fn copy_needs(i: &Instance<'_>, regs: &mut Vec<u8>, stack: &mut Vec<usize>) {
    let mut reg = |r: u8| {
        if usize::from(r) < INLINE_REGS && uprobe_reg(r).is_some() && !regs.contains(&r) {
            regs.push(r);
        }
    };
    for loc in i.locations() {
        match loc {
            Location::Reg(r) => reg(r),
            Location::RegPair(a, b) => {
                reg(a);
                reg(b);
            }
            Location::Stack(o) if o >= -8 && (o + 8) % 8 == 0 => {
                let k = (o + 8) as usize / 8;
                if k < INLINE_STACK_WORDS && !stack.contains(&k) {
                    stack.push(k);
                }
            }
            _ => {}
        }
    }
}

/// Nesting depth of a copy (0: directly in its container).
fn nesting(i: &Instance<'_>) -> usize {
    std::iter::successors(i.parent(), Instance::parent).count()
}

/// Plan the probes of inlined copies: one per distinct first instruction, reading the
/// registers and stack words the copies' parameters are in there (`with_args`); at the
/// address of a function's entry probe, the fields are added to its entry event
/// instead. Copies at no file offset are left out with a note.
pub fn plan_inlines<'a>(
    targets: &[Target],
    copies: &[SelectedCopy<'a>],
    probes: &mut [Probe<'a>],
    with_args: bool,
    notes: &mut Vec<String>,
) -> Vec<InlineSite<'a>> {
    let mut names: HashSet<String> = probes
        .iter()
        .flat_map(|p| {
            [
                Some(&p.entry_event),
                Some(&p.return_event),
                p.ra_event.as_ref(),
            ]
        })
        .flatten()
        .cloned()
        .collect();
    let mut sites: Vec<InlineSite<'a>> = Vec::new();
    for c in copies {
        let t = &targets[c.target];
        let pc = c.instance.entry_pc();
        let Some(offset) = file_offset(&t.segments, pc) else {
            notes.push(format!(
                "{} inlined in {}: address {pc:#x} is in no loadable segment of {}: not probed",
                c.instance.callee().map_or("?", |f| f.name()),
                c.instance.caller().map_or("?", |f| f.symbol()),
                t.path.display()
            ));
            continue;
        };
        let key = (c.target, offset);
        match sites.iter_mut().find(|s| (s.target, s.offset) == key) {
            Some(s) => {
                if !s.copies.contains(&c.instance) {
                    s.copies.push(c.instance);
                }
            }
            None => sites.push(InlineSite {
                copies: vec![c.instance],
                target: c.target,
                offset,
                event: None,
                folded: None,
                fields: Vec::new(),
                regs: Vec::new(),
                stack: Vec::new(),
            }),
        }
    }
    for (si, s) in sites.iter_mut().enumerate() {
        s.copies.sort_by_key(nesting);
        let mut regs = Vec::new();
        let mut stack = Vec::new();
        if with_args {
            for i in &s.copies {
                copy_needs(i, &mut regs, &mut stack);
            }
        }
        regs.sort_unstable();
        stack.sort_unstable();
        let fetches = regs
            .iter()
            .map(|&r| {
                let reg = uprobe_reg(r).expect("a general register");
                (format!("r{r}"), format!("{reg}:x64"))
            })
            .chain(
                stack
                    .iter()
                    .map(|&k| (format!("w{k}"), format!("+{}(%sp):x64", 8 * k))),
            );
        let folded = probes
            .iter()
            .position(|p| p.target == s.target && p.offset + p.body == s.offset);
        let mut at = Vec::new();
        match folded {
            Some(pi) => {
                let p = &mut probes[pi];
                for (name, fetch) in fetches {
                    at.push(insert_number(
                        &mut p.entry_fields,
                        &mut p.args,
                        Field {
                            name: format!("i{si}_{name}"),
                            fetch,
                            string: false,
                        },
                    ));
                }
                p.inlines.push(si);
            }
            None => {
                for (name, fetch) in fetches {
                    s.fields.push(Field {
                        name,
                        fetch,
                        string: false,
                    });
                    at.push(s.fields.len() - 1);
                }
                let base = format!(
                    "{}_inl",
                    event_base(s.copies[0].callee().map_or("inline", |f| f.name()))
                );
                let mut n = 1;
                let name = loop {
                    let b = if n == 1 {
                        base.clone()
                    } else {
                        format!("{base}_{n}")
                    };
                    if !names.contains(&b) {
                        break b;
                    }
                    n += 1;
                };
                names.insert(name.clone());
                s.event = Some(name);
            }
        }
        s.folded = folded;
        s.regs = regs.iter().copied().zip(at.iter().copied()).collect();
        s.stack = stack
            .iter()
            .copied()
            .zip(at[regs.len()..].iter().copied())
            .collect();
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets() {
        let segs = [
            Segment {
                vaddr: 0,
                filesz: 0x618,
                offset: 0,
            },
            Segment {
                vaddr: 0x401000,
                filesz: 0x1b5,
                offset: 0x1000,
            },
            Segment {
                vaddr: 0x3dd0,
                filesz: 0x248,
                offset: 0x2dd0,
            },
        ];
        assert_eq!(file_offset(&segs, 0x401139), Some(0x1139));
        assert_eq!(file_offset(&segs, 0x100), Some(0x100));
        assert_eq!(file_offset(&segs, 0x3de0), Some(0x2de0));
        assert_eq!(file_offset(&segs, 0x402000), None);
    }

    #[test]
    fn names() {
        assert_eq!(event_base("foo.isra.0"), "foo_isra_0");
        assert_eq!(event_base("0abc"), "_0abc");
        assert_eq!(event_base(&"x".repeat(100)).len(), 48);
    }

    fn f(name: &str, string: bool) -> Field {
        Field {
            name: name.into(),
            fetch: String::new(),
            string,
        }
    }

    #[test]
    fn numbers_before_strings() {
        let mut fields = vec![f("a0", false), f("s1", true), f("comm", true)];
        let mut args = vec![
            (
                "a".to_string(),
                ArgPlan::Fetched {
                    words: vec![0],
                    string: None,
                },
            ),
            (
                "s".to_string(),
                ArgPlan::Fetched {
                    words: vec![],
                    string: Some(1),
                },
            ),
        ];
        assert_eq!(insert_number(&mut fields, &mut args, f(RA_FIELD, false)), 1);
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a0", "ra", "s1", "comm"]);
        assert_eq!(
            args[1].1,
            ArgPlan::Fetched {
                words: vec![],
                string: Some(2)
            }
        );
        assert_eq!(
            args[0].1,
            ArgPlan::Fetched {
                words: vec![0],
                string: None
            }
        );
    }

    #[test]
    fn inline_values() {
        let site = InlineSite {
            copies: Vec::new(),
            target: 0,
            offset: 0x1000,
            event: Some("scale_inl".into()),
            folded: None,
            fields: [("r1", "%dx:x64"), ("r5", "%di:x64"), ("w2", "+16(%sp):x64")]
                .iter()
                .map(|(name, fetch)| Field {
                    name: name.to_string(),
                    fetch: fetch.to_string(),
                    string: false,
                })
                .collect(),
            regs: vec![(1, 0), (5, 1)],
            stack: vec![(2, 2)],
        };
        let values = [Value::Num(7), Value::Num(9), Value::Num(0x40)];
        assert!(site.complete(&values));
        let (regs, stack) = site.values(&values);
        assert_eq!((regs[1], regs[5], regs[0]), (7, 9, 0));
        assert_eq!(stack, [0, 0, 0x40]);
        assert!(!site.complete(&values[..2]));
        assert_eq!(
            site.def("dcg_1", Path::new("/bin/prog")).as_deref(),
            Some("p:dcg_1/scale_inl /bin/prog:0x1000 r1=%dx:x64 r5=%di:x64 w2=+16(%sp):x64")
        );
    }

    #[test]
    fn fields() {
        let fs = [f("a0", false), f("a1", false), f("s0", true), f("s1", true)];
        let v = parse_fields(r#"a0=0x1 a1=0xffffffffffffffea s0="a b" s1="x""#, &fs).unwrap();
        assert_eq!(
            v,
            vec![
                Value::Num(1),
                Value::Num(0xffff_ffff_ffff_ffea),
                Value::Str("a b".into()),
                Value::Str("x".into()),
            ]
        );
        let v = parse_fields(r#"a0=0x0 a1=0x2 s0=(fault) s1="he said "hi" ""#, &fs).unwrap();
        assert_eq!(v[2], Value::Fault);
        assert_eq!(v[3], Value::Str("he said \"hi\" ".into()));
        assert_eq!(parse_fields("a0=0x1", &fs), None);
        assert_eq!(parse_fields("", &[]), Some(vec![]));
    }
}
