//! Describing functions: the C declaration of `dcg sig` and the JSON of `dcg dump`.

use serde_json::{json, Value};
use sigdb::{FuncFlags, Function, Location, Type, TypeKind};

/// A C declaration with parameter locations, module, address, size and flags:
/// `static int do_sys_openat2(int dfd /* rdi */, ...)  [vmlinux 0xffffffff81234560+0x120]`.
pub fn signature_line(f: Function<'_>) -> String {
    let flags = f.flags();
    let mut params: Vec<String> = f
        .params()
        .map(|p| {
            let decl = p.ty().declare(p.name());
            format!("{decl} /* {} */", p.loc())
        })
        .collect();
    if flags.contains(FuncFlags::VARIADIC) {
        params.push("...".into());
    }
    if params.is_empty() {
        params.push("void".into());
    }
    // A C++ or Rust function by its qualified name (`ns::get<int>`: DWARF names it
    // without its namespace).
    let demangled = crate::names::demangle(f.symbol());
    let name = demangled.as_ref().map_or(f.name(), |d| d.short.as_str());
    let head = format!("{name}({})", params.join(", "));
    let decl = f.ret().declare(&head);
    let storage = if flags.contains(FuncFlags::STATIC) {
        "static "
    } else {
        ""
    };
    let module = f.module().map(|m| m.name()).unwrap_or("?");
    let mut tail = vec![module.to_string()];
    if flags.contains(FuncFlags::INLINE_ONLY) {
        let callers: Vec<&str> = f.inlined_into().map(|c| c.symbol()).collect();
        tail.push(match callers.len() {
            0 => "inline-only".to_string(),
            n if n <= 8 => format!("inline-only, inlined into {}", callers.join(", ")),
            n => format!(
                "inline-only, inlined into {} and {} more",
                callers[..8].join(", "),
                n - 8
            ),
        });
    } else if f.is_declaration() {
        tail.push("declaration".to_string());
    } else {
        tail.push(format!("{:#x}+{:#x}", f.addr(), f.size()));
    }
    if f.symbol() != f.name() {
        tail.push(f.symbol().to_string());
    }
    let extra: Vec<&str> = (flags
        - FuncFlags::STATIC
        - FuncFlags::INLINE_ONLY
        - FuncFlags::VARIADIC
        - if f.is_declaration() {
            FuncFlags::NO_SYMBOL
        } else {
            FuncFlags::empty()
        })
    .names()
    .collect();
    if !extra.is_empty() {
        tail.push(extra.join(" "));
    }
    format!("{storage}{decl}  [{}]", tail.join(" "))
}

/// The JSON form of a location: `rdi`, `rdi:rsi`, `stack+8`, `optimized-out`, `const:3`,
/// `unknown`.
pub fn location_json(loc: Location) -> String {
    match loc {
        Location::Unknown => "unknown".into(),
        Location::OptimizedOut => "optimized-out".into(),
        Location::Const(v) => format!("const:{v}"),
        Location::Stack(o) if o < 0 => format!("stack{o}"),
        other => other.to_string(),
    }
}

/// The JSON form of a type: `kind` (after typedefs and qualifiers), `size`, `signed`,
/// `name` (the C spelling as written, e.g. `size_t`, `const char *`).
pub fn type_json(t: Type<'_>) -> Value {
    let r = t.resolve();
    let mut v = json!({
        "kind": r.kind().as_str(),
        "size": r.size(),
        "signed": matches!(r.kind(), TypeKind::Int | TypeKind::Char | TypeKind::Enum) && r.is_signed(),
        "name": t.display(),
    });
    if r.kind() == TypeKind::Enum {
        v["enumerators"] = r
            .enumerators()
            .map(|(n, val)| json!([n, val]))
            .collect::<Vec<_>>()
            .into();
    }
    v
}

/// One function as a JSON object (one line of `dcg dump --json`).
pub fn function_json(f: Function<'_>) -> Value {
    let params: Vec<Value> = f
        .params()
        .map(|p| {
            json!({
                "name": p.name(),
                "type": type_json(p.ty()),
                "loc": location_json(p.loc()),
            })
        })
        .collect();
    let mut v = json!({
        "name": f.name(),
        "symbol": f.symbol(),
        "module": f.module().map(|m| m.name()).unwrap_or(""),
        "addr": format!("{:#x}", f.addr()),
        "size": f.size(),
        "ret": type_json(f.ret()),
        "params": params,
        "flags": f.flags().names().collect::<Vec<_>>(),
    });
    if let Some(d) = crate::names::demangle(f.symbol()) {
        v["demangled"] = d.full.into();
    }
    if f.is_declaration() {
        v["declaration"] = true.into();
    }
    if f.flags().contains(FuncFlags::INLINE_ONLY) {
        v["inlined_into"] = f
            .inlined_into()
            .map(|c| c.symbol())
            .collect::<Vec<_>>()
            .into();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use sigdb::*;

    #[test]
    fn declarations() {
        let mut b = DbBuilder::new(62);
        let m = b.add_module(ModuleDesc {
            name: "vmlinux".into(),
            kind: ModuleKind::Kernel,
            build_id: vec![],
            base: 0xffff_ffff_8100_0000,
        });
        let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
        let ch = b.add_type(TypeDesc::base(TypeKind::Char, "char", 1, true));
        let cch = b.add_type(TypeDesc::qualified(Qualifiers::CONST, ch, 1));
        let pcch = b.add_type(TypeDesc::pointer(cch, 8));
        let how = b.add_type(TypeDesc::aggregate(TypeKind::Struct, "open_how", 24));
        let phow = b.add_type(TypeDesc::pointer(how, 8));
        let proto = b.add_type(TypeDesc::function(int, vec![], false));
        let pproto = b.add_type(TypeDesc::pointer(proto, 8));
        let p = |name: &str, ty, loc| ParamDesc {
            name: name.into(),
            ty,
            loc,
        };
        b.add_function(FunctionDesc {
            module: m,
            addr: 0xffffffff81234560,
            size: 0x120,
            name: "do_sys_openat2".into(),
            symbol: None,
            ret: int,
            params: vec![
                p("dfd", int, Location::Reg(5)),
                p("filename", pcch, Location::Reg(4)),
                p("how", phow, Location::Reg(1)),
            ],
            flags: FuncFlags::STATIC,
        });
        b.add_function(FunctionDesc {
            module: m,
            addr: 0xffffffff81000000,
            size: 0x20,
            name: "get_cb".into(),
            symbol: Some("get_cb.constprop.0".into()),
            ret: pproto,
            params: vec![
                p("x", int, Location::Const(3)),
                p("y", int, Location::OptimizedOut),
            ],
            flags: FuncFlags::STATIC | FuncFlags::CLONE_CONSTPROP | FuncFlags::ABI_CHANGED,
        });
        let db = Db::from_bytes(b.finish().unwrap()).unwrap();
        let f = db.by_name("do_sys_openat2").next().unwrap();
        assert_eq!(
            signature_line(f),
            "static int do_sys_openat2(int dfd /* rdi */, const char *filename /* rsi */, struct open_how *how /* rdx */)  [vmlinux 0xffffffff81234560+0x120]"
        );
        let g = db.by_name("get_cb.constprop.0").next().unwrap();
        assert_eq!(
            signature_line(g),
            "static int (*get_cb(int x /* const 3 */, int y /* optimized out */))(void)  [vmlinux 0xffffffff81000000+0x20 get_cb.constprop.0 clone:constprop abi-changed]"
        );
        let j = function_json(g);
        assert_eq!(
            j["flags"],
            json!(["static", "clone:constprop", "abi-changed"])
        );
        assert_eq!(
            j["ret"],
            json!({"kind": "pointer", "size": 8, "signed": false, "name": "int (*)(void)"})
        );
        assert_eq!(j["params"][1]["loc"], "optimized-out");
        assert_eq!(j["params"][0]["loc"], "const:3");
    }
}
