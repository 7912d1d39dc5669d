//! `--fields FUNC:PATH[,PATH...]`: member paths in C syntax (`how->flags`,
//! `c->next->name`, `a.b`), resolved against a function's parameters into what to read.

use sigdb::{Function, Type, TypeKind};

/// Most pointers a field's path follows: the in-process recorder reads at most three
/// words in a row, and the BPF program as many.
pub const MAX_FIELD_HOPS: usize = 3;

/// How a step reaches its member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `->`: through a pointer.
    Arrow,
    /// `.`: a member of the struct itself.
    Dot,
}

/// A parsed path: the parameter and the member steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    /// The text as given (`how->flags`): the name the field is printed under.
    pub text: String,
    /// The parameter (`how`).
    pub root: String,
    /// The steps (`-> flags`).
    pub steps: Vec<(Access, String)>,
}

/// Why a path is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FieldError {
    /// Not `name(->name|.name)*`.
    #[error("{0:?}: not a member path (name, then ->member or .member)")]
    Syntax(String),
    /// No parameter of that name.
    #[error("{path}: {func} has no parameter {name} (it has: {have})")]
    NoParam {
        /// The path.
        path: String,
        /// The function.
        func: String,
        /// The name asked for.
        name: String,
        /// Its parameters, comma-separated.
        have: String,
    },
    /// No member of that name.
    #[error("{path}: {ty} has no member {name} (it has: {have})")]
    NoMember {
        /// The path.
        path: String,
        /// The struct or union.
        ty: String,
        /// The name asked for.
        name: String,
        /// Its members, comma-separated (those of anonymous members included).
        have: String,
    },
    /// `->` on a non-pointer, `.` on a pointer, either on a non-aggregate.
    #[error("{path}: {step} on {ty}, {why}")]
    Access {
        /// The path.
        path: String,
        /// The step (`->flags`).
        step: String,
        /// The type it was applied to.
        ty: String,
        /// What would be right.
        why: &'static str,
    },
    /// `.` on a parameter passed by value: it is in registers, not in memory.
    #[error("{0}: a member of a struct passed by value is not read (it is in registers)")]
    ByValue(String),
    /// The db has no members (format version 5) or a damaged block.
    #[error("{0}")]
    Db(String),
}

/// Parse `FUNC:PATH[,PATH...]` (FUNC may hold `:` itself, `./prog:apply`; paths never
/// do): the function, if given, and the paths.
pub fn parse_fields_arg(arg: &str) -> Result<(Option<&str>, Vec<FieldPath>), FieldError> {
    let (func, paths) = match arg.rsplit_once(':') {
        Some((f, p)) => (Some(f), p),
        None => (None, arg),
    };
    let paths = paths
        .split(',')
        .map(|p| parse_path(p.trim()))
        .collect::<Result<_, _>>()?;
    Ok((func, paths))
}

/// Parse one path: `how->flags`, `c->next->name`, `a.b`, `filename`.
pub fn parse_path(text: &str) -> Result<FieldPath, FieldError> {
    let bad = || FieldError::Syntax(text.to_string());
    let ident = |s: &str| {
        let mut c = s.chars();
        c.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut rest = text;
    let end = rest.find(['-', '.']).unwrap_or(rest.len());
    let root = &rest[..end];
    if !ident(root) {
        return Err(bad());
    }
    rest = &rest[end..];
    let mut steps = Vec::new();
    while !rest.is_empty() {
        let (access, after) = if let Some(r) = rest.strip_prefix("->") {
            (Access::Arrow, r)
        } else if let Some(r) = rest.strip_prefix('.') {
            (Access::Dot, r)
        } else {
            return Err(bad());
        };
        let end = after.find(['-', '.']).unwrap_or(after.len());
        if !ident(&after[..end]) {
            return Err(bad());
        }
        steps.push((access, after[..end].to_string()));
        rest = &after[end..];
    }
    Ok(FieldPath {
        text: text.to_string(),
        root: root.to_string(),
        steps,
    })
}

/// What an engine reads for a field, and its type.
///
/// Start with the argument's value as an address. Each of `hops` but the last: read the
/// 8-byte pointer at address + offset and continue from it (a `NULL` or error pointer
/// ends the field: `?`). The last hop: read `size` bytes at address + offset, the value.
/// No hops: the value is the argument itself (`filename`), rendered as today.
#[derive(Clone, Copy, Debug)]
pub struct FieldPlan<'a> {
    /// Byte offsets, one per pointer followed.
    pub hops: [u32; 8],
    /// How many of `hops` are used.
    pub hop_count: usize,
    /// Bytes of the value (the member's type's size; of the bytes holding a bit-field).
    pub size: u32,
    /// A bit-field: (first bit within the value's first byte, width).
    pub bits: Option<(u32, u32)>,
    /// The value's type.
    pub ty: Type<'a>,
}

impl FieldPlan<'_> {
    /// The hop offsets.
    pub fn hops(&self) -> &[u32] {
        &self.hops[..self.hop_count]
    }

    /// Why an engine does not read this field (more than [`MAX_FIELD_HOPS`] pointers, or
    /// a value that is not a word: [`FieldPlan::not_a_scalar`]); `None` when it does.
    pub fn unreadable(&self) -> Option<String> {
        if self.hop_count > MAX_FIELD_HOPS {
            return Some(format!(
                "follows {} pointers (at most {MAX_FIELD_HOPS})",
                self.hop_count
            ));
        }
        self.not_a_scalar()
    }

    /// Why the value is not one an engine reads as a word (a struct, union or array, or
    /// more than 8 bytes): `"24 bytes of a struct, not a scalar (name one of its
    /// members)"`; `None` for a scalar, enum, pointer, bit-field or a `char` array of
    /// at most 8 bytes ([`FieldPlan::is_string`]).
    pub fn not_a_scalar(&self) -> Option<String> {
        let t = self.ty.resolve();
        let what = match t.kind() {
            TypeKind::Array if self.is_string() => return None,
            TypeKind::Array => "an array",
            TypeKind::Union => "a union",
            TypeKind::Struct => "a struct",
            _ if self.size > 8 => "a value",
            _ => return None,
        };
        Some(format!(
            "{} bytes of {what}, not a scalar (name one of its members)",
            self.size
        ))
    }

    /// Whether the value is a `char` array of 1 to 8 bytes: read as one word like a
    /// scalar, shown as its string (`"hello"`).
    pub fn is_string(&self) -> bool {
        let t = self.ty.resolve();
        t.kind() == TypeKind::Array
            && (1..=8).contains(&self.size)
            && t.target()
                .map(|e| e.resolve())
                .is_some_and(|e| e.kind() == TypeKind::Char && e.size() == 1 && e.name() == "char")
    }
}

/// Resolve `path` against `func`'s parameters.
pub fn resolve<'a>(func: &Function<'a>, path: &FieldPath) -> Result<FieldPlan<'a>, FieldError> {
    let Some(param) = func.params().find(|p| p.name() == path.root) else {
        return Err(FieldError::NoParam {
            path: path.text.clone(),
            func: func.name().to_string(),
            name: path.root.clone(),
            have: func
                .params()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let mut plan = FieldPlan {
        hops: [0; 8],
        hop_count: 0,
        size: param.ty().resolve().size(),
        bits: None,
        ty: param.ty(),
    };
    for (access, name) in &path.steps {
        let r = plan.ty.resolve();
        let step = match access {
            Access::Arrow => format!("->{name}"),
            Access::Dot => format!(".{name}"),
        };
        let access_error = |why| FieldError::Access {
            path: path.text.clone(),
            step: step.clone(),
            ty: plan.ty.display(),
            why,
        };
        if plan.bits.is_some() {
            return Err(access_error("a bit-field has no members"));
        }
        let agg = match (access, r.kind()) {
            (Access::Arrow, TypeKind::Pointer) => {
                let t = r.target().map(|t| t.resolve());
                match t {
                    Some(t) if matches!(t.kind(), TypeKind::Struct | TypeKind::Union) => {
                        if plan.hop_count == plan.hops.len() {
                            return Err(access_error("too many pointers in one path"));
                        }
                        plan.hop_count += 1;
                        t
                    }
                    _ => return Err(access_error("-> needs a pointer to a struct or union")),
                }
            }
            (Access::Arrow, _) => return Err(access_error("not a pointer: use .")),
            (Access::Dot, TypeKind::Pointer) => return Err(access_error("a pointer: use ->")),
            (Access::Dot, TypeKind::Struct | TypeKind::Union) if plan.hop_count == 0 => {
                return Err(FieldError::ByValue(path.text.clone()))
            }
            (Access::Dot, TypeKind::Struct | TypeKind::Union) => r,
            (Access::Dot, _) => return Err(access_error("not a struct or union")),
        };
        let (m_ty, bit_offset, bit_size) = find_member(agg, name).map_err(|e| match e {
            Lookup::Missing(have) => FieldError::NoMember {
                path: path.text.clone(),
                ty: agg.display(),
                name: name.clone(),
                have,
            },
            Lookup::Db(e) => FieldError::Db(e),
        })?;
        plan.hops[plan.hop_count - 1] += bit_offset / 8;
        plan.ty = m_ty;
        if bit_size != 0 {
            let first = bit_offset % 8;
            plan.size = (first + bit_size).div_ceil(8);
            plan.bits = Some((first, bit_size));
        } else {
            plan.size = m_ty.resolve().size();
        }
    }
    Ok(plan)
}

enum Lookup {
    Missing(String),
    Db(String),
}

/// Member `name` of aggregate `t`, searched into anonymous members: (type, bit offset
/// from `t`'s start, bit-field width or 0); else the names there are.
fn find_member<'a>(t: Type<'a>, name: &str) -> Result<(Type<'a>, u32, u32), Lookup> {
    let mut have = Vec::new();
    match find_in(t, name, 0, &mut have, 0) {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(Lookup::Missing(have.join(", "))),
        Err(e) => Err(Lookup::Db(e)),
    }
}

fn find_in<'a>(
    t: Type<'a>,
    name: &str,
    base: u32,
    have: &mut Vec<String>,
    nest: u32,
) -> Result<Option<(Type<'a>, u32, u32)>, String> {
    if nest > crate::plan::MAX_NEST {
        return Ok(None);
    }
    for m in t.members().map_err(|e| e.to_string())? {
        let m = m.map_err(|e| e.to_string())?;
        let r = m.ty().resolve();
        let at = base.saturating_add(m.bit_offset());
        if m.name().is_empty() && matches!(r.kind(), TypeKind::Struct | TypeKind::Union) {
            if let Some(found) = find_in(r, name, at, have, nest + 1)? {
                return Ok(Some(found));
            }
        } else if m.name() == name {
            return Ok(Some((m.ty(), at, m.bit_size())));
        } else {
            have.push(m.name().to_string());
        }
    }
    Ok(None)
}
