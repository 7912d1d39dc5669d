//! What binding needs of a function: its parameters' names and the kinds of their
//! values, from the db (typedefs and qualifiers resolved) or, for saved calls read
//! without a db, the names alone; and the member paths the filters name, resolved by
//! `dcg-deref` as `--fields` resolves them.

use sigdb::{Function, Type, TypeKind};

use crate::parse::Filter;

/// How a value of a type is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueType {
    /// An integer (a `char` included) of `size` bytes.
    Int {
        /// Width in bytes.
        size: u32,
        /// Signedness.
        signed: bool,
    },
    /// `bool`: `true`/`false`, nonzero.
    Bool,
    /// A pointer that is not a C string: `NULL`, addresses, `-E…` (an `ERR_PTR`).
    Pointer,
    /// `char *`: the string it points to (`==`, `!=`, `~`), or `NULL`.
    CString,
    /// An enum: its enumerators by name.
    Enum(EnumType),
    /// A value no filter compares (struct or union by value, float, `void`): its C name.
    Other(String),
    /// Unknown: a saved call's value read back from its text as what it looks like.
    Untyped,
}

/// An enum type's name, width and enumerators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumType {
    /// `enum pid_type` (or its typedef's name).
    pub name: String,
    /// Width in bytes.
    pub size: u32,
    /// Signedness.
    pub signed: bool,
    /// Enumerators: name and value.
    pub enumerators: Vec<(String, i64)>,
}

impl EnumType {
    /// The value of enumerator `name`.
    pub fn value(&self, name: &str) -> Option<i64> {
        self.enumerators
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }
}

/// A parameter: its name and how its value compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The DWARF name (empty when unnamed).
    pub name: String,
    /// Its type.
    pub ty: ValueType,
}

/// A member path resolved against a function (`c->next->port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The path as written: the name `--fields` shows its value under.
    pub path: String,
    /// How its value compares, or why `--fields` would not read it (`dcg-deref`'s
    /// message: `c->prot: struct conf has no member prot (it has: port, …)`).
    pub ty: Result<ValueType, String>,
    /// Read as a whole word (not a bit-field): a raw entry test can take it.
    pub word: bool,
}

/// The signature a filter binds to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Parameters in order: a filter names them, the engines deliver them by index.
    pub params: Vec<Param>,
    /// The return value's type.
    pub ret: ValueType,
    /// The member paths the filters given to [`Signature::of`] name.
    pub members: Vec<Member>,
}

impl Signature {
    /// The signature of a db function, with the member paths `filters` name resolved
    /// against it.
    pub fn of(f: &Function<'_>, filters: &[Filter]) -> Signature {
        let mut members: Vec<Member> = Vec::new();
        for path in filters.iter().flat_map(Filter::paths) {
            if !members.iter().any(|m| m.path == path) {
                members.push(member(f, path));
            }
        }
        Signature {
            params: f
                .params()
                .map(|p| Param {
                    name: p.name().to_string(),
                    ty: value_type(p.ty()),
                })
                .collect(),
            ret: value_type(f.ret()),
            members,
        }
    }

    /// Parameters known by name only, their values and the return value read back from
    /// their text (saved calls read without a db).
    pub fn untyped<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Signature {
        Signature {
            params: names
                .into_iter()
                .map(|n| Param {
                    name: n.into(),
                    ty: ValueType::Untyped,
                })
                .collect(),
            ret: ValueType::Untyped,
            members: Vec::new(),
        }
    }

    /// Whether the values are read back from their text as what it is (saved calls
    /// read without a db): [`Signature::untyped`].
    pub fn is_untyped(&self) -> bool {
        self.ret == ValueType::Untyped && self.params.iter().all(|p| p.ty == ValueType::Untyped)
    }

    /// The index of parameter `name`.
    pub fn param(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }
}

/// Member `path` of `f` as `--fields` reads it: a `char` array as its string, a
/// `char *` as the pointer (`--fields` shows the pointer, not the string).
fn member(f: &Function<'_>, path: &str) -> Member {
    let plan = dcg_deref::parse_path(path)
        .and_then(|p| dcg_deref::resolve(f, &p))
        .map_err(|e| e.to_string())
        .and_then(|plan| match plan.unreadable() {
            Some(why) => Err(format!("{path}: {why}")),
            None => Ok(plan),
        });
    Member {
        path: path.to_string(),
        word: plan.as_ref().is_ok_and(|p| p.bits.is_none()),
        ty: plan.map(|plan| match value_type(plan.ty) {
            _ if plan.is_string() => ValueType::CString,
            ValueType::CString => ValueType::Pointer,
            ty => ty,
        }),
    }
}

/// How a value of DWARF type `ty` compares.
pub fn value_type(ty: Type<'_>) -> ValueType {
    let t = ty.resolve();
    match t.kind() {
        TypeKind::Int | TypeKind::Char => ValueType::Int {
            size: t.size().clamp(1, 8),
            signed: t.is_signed(),
        },
        TypeKind::Bool => ValueType::Bool,
        TypeKind::Pointer | TypeKind::Array | TypeKind::Func if dcg_render::is_c_string(ty) => {
            ValueType::CString
        }
        TypeKind::Pointer | TypeKind::Array | TypeKind::Func => ValueType::Pointer,
        TypeKind::Enum => ValueType::Enum(EnumType {
            name: type_name(ty, t, "enum"),
            size: t.size().clamp(1, 8),
            signed: t.is_signed(),
            enumerators: t.enumerators().map(|(n, v)| (n.to_string(), v)).collect(),
        }),
        TypeKind::Void => ValueType::Other("void".into()),
        TypeKind::Float => ValueType::Other(type_name(ty, t, "")),
        TypeKind::Struct => ValueType::Other(type_name(ty, t, "struct")),
        TypeKind::Union => ValueType::Other(type_name(ty, t, "union")),
        TypeKind::Typedef | TypeKind::Qualified => ValueType::Other(ty.name().to_string()),
    }
}

/// `enum pid_type`, or the typedef's name when the tag is anonymous.
fn type_name(ty: Type<'_>, t: Type<'_>, tag: &str) -> String {
    match (t.name(), tag) {
        ("", _) => ty.name().to_string(),
        (n, "") => n.to_string(),
        (n, tag) => format!("{tag} {n}"),
    }
}
