//! Function names as people write them: C++ (Itanium ABI, `_Z…`) and Rust (`_R…`, and
//! the legacy `_ZN…17h<hash>E`) symbols demangled. C names are not mangled and come back
//! `None`, so nothing changes for them.

use cpp_demangle::{DemangleOptions, Symbol};

/// A symbol's demangled forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demangled {
    /// In full, parameters included: `ns::get<int>(ns::Box<int>)`, `demo::add` (Rust
    /// symbols have no parameters; the hash is left out).
    pub full: String,
    /// Without the parameters and return type (`ns::get<int>`): what `--func` patterns
    /// most naturally name.
    pub short: String,
    /// With the parameters, without a template's return type (`ns::get<int>(ns::Box<int>)`):
    /// how people write an overload.
    pub signature: String,
}

impl Demangled {
    /// Whether `name` is one of the forms, or `is`-matches one (a glob).
    pub fn any(&self, mut is: impl FnMut(&str) -> bool) -> bool {
        is(&self.short) || is(&self.signature) || is(&self.full)
    }
}

/// The demangled forms of `symbol`; `None` when it is not a C++ or Rust mangled name
/// (C names, kernel symbols) or does not demangle.
pub fn demangle(symbol: &str) -> Option<Demangled> {
    if !(symbol.starts_with("_Z") || symbol.starts_with("_R")) {
        return None;
    }
    if let Some(r) = rust(symbol) {
        return Some(Demangled {
            short: r.clone(),
            signature: r.clone(),
            full: r,
        });
    }
    let sym = Symbol::new(symbol).ok()?;
    let full = sym.demangle(&DemangleOptions::new()).ok()?;
    let short = sym
        .demangle(&DemangleOptions::new().no_params().no_return_type())
        .ok()?;
    let signature = sym
        .demangle(&DemangleOptions::new().no_return_type())
        .ok()?;
    Some(Demangled {
        full,
        short,
        signature,
    })
}

/// The name people read for `symbol`: demangled in full, else the symbol itself.
pub fn display(symbol: &str) -> std::borrow::Cow<'_, str> {
    match demangle(symbol) {
        Some(d) => d.full.into(),
        None => symbol.into(),
    }
}

/// A Rust symbol without its hash: v0 (`_R…`) always; a legacy one (`_ZN…E`) only when
/// it ends with the hash segment (`17h` and 16 hex digits) that rustc adds, as C++
/// names of the same shape never do.
fn rust(symbol: &str) -> Option<String> {
    let d = rustc_demangle::try_demangle(symbol).ok()?;
    if symbol.starts_with("_ZN") {
        let core = symbol.split('.').next().unwrap_or(symbol);
        let hash = core.strip_suffix('E')?;
        let tail = hash.get(hash.len().checked_sub(19)?..)?;
        let hex = tail.strip_prefix("17h")?;
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
    }
    Some(format!("{d:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names() {
        let d = demangle("_Z3getIiET_3BoxIS0_E").unwrap();
        assert_eq!(d.full, "int get<int>(Box<int>)");
        assert_eq!(d.short, "get<int>");
        assert_eq!(d.signature, "get<int>(Box<int>)");
        let d = demangle("_ZN2ns3getIiEET_NS_3BoxIS1_EE").unwrap();
        assert_eq!(d.short, "ns::get<int>");
        let d = demangle("_ZN2ns5totalEPKii").unwrap();
        assert_eq!(d.full, "ns::total(int const*, int)");
        assert_eq!(d.short, "ns::total");
    }

    #[test]
    fn rust_names() {
        let d = demangle("_ZN4demo3add17h0123456789abcdefE").unwrap();
        assert_eq!(d.full, "demo::add");
        let d = demangle("_RNvCs1234_4demo3add").unwrap();
        assert_eq!(d.full, "demo::add");
    }

    #[test]
    fn c_names_stay() {
        for s in [
            "main",
            "vfs_open",
            "slab_free.isra.0",
            "_start",
            "_Zgarbage",
            "",
        ] {
            assert_eq!(demangle(s), None, "{s}");
            assert_eq!(display(s), s);
        }
    }
}
