//! What binding needs of a function: its parameters' names and the kinds of their
//! values, from the db (typedefs and qualifiers resolved) or, for saved calls read
//! without a db, the names alone.

use sigdb::{Function, Type, TypeKind};

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

/// The signature a filter binds to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Parameters in order: a filter names them, the engines deliver them by index.
    pub params: Vec<Param>,
    /// The return value's type.
    pub ret: ValueType,
}

impl Signature {
    /// The signature of a db function.
    pub fn of(f: &Function<'_>) -> Signature {
        Signature {
            params: f
                .params()
                .map(|p| Param {
                    name: p.name().to_string(),
                    ty: value_type(p.ty()),
                })
                .collect(),
            ret: value_type(f.ret()),
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
        }
    }

    /// The index of parameter `name`.
    pub fn param(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
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
