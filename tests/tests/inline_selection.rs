//! Which inlined copies a kernel db records (issue 15): by default those of functions
//! worth tracing, not those of header `inline` helpers; what `--func` says of a helper
//! whose copies were left out.

use std::collections::HashSet;

use dcg_dbset::DbSet;
use dcg_ktrace::funcs::{explain, match_pattern, Available, Rebuild, Unmatched};
use dcg_tests::*;
use sigdb::{Db, FuncFlags};

/// Names of the functions with at least one recorded inlined copy.
fn with_copies(db: &Db) -> HashSet<String> {
    db.instances()
        .filter_map(|i| i.callee().map(|c| c.name().to_string()))
        .collect()
}

#[test]
fn default_db_leaves_out_header_inline_helpers() {
    let traceable = Db::open(testkernel_db_inline()).unwrap();
    let all = Db::open(testkernel_db_all_inline()).unwrap();
    let (kept, every) = (with_copies(&traceable), with_copies(&all));
    // Compiler-chosen inlining of .c functions: recorded either way.
    for f in [
        "pidfd_create",
        "walk_component",
        "step_into",
        "getname_flags",
    ] {
        assert!(kept.contains(f) && every.contains(f), "{f}");
    }
    // Header helpers declared `inline`: only with --all-inline-instances.
    for f in ["class_filename_flags_constructor", "get_current", "IS_ERR"] {
        assert!(!kept.contains(f) && every.contains(f), "{f}");
    }
    assert!(kept.is_subset(&every));
    // Every left-out copy is of a declared-inline function; the kept ones are a small
    // part of all copies.
    for f in every.difference(&kept) {
        let declared = all
            .by_name(f)
            .any(|x| x.flags().contains(FuncFlags::DECLARED_INLINE));
        assert!(declared, "{f} left out but not declared inline");
    }
    assert!(
        traceable.instance_count() * 3 < all.instance_count(),
        "{} of {} copies kept",
        traceable.instance_count(),
        all.instance_count()
    );
    // Nested copies of a left-out helper hang from the nearest kept copy: every parent
    // is in the same container.
    for i in traceable.instances() {
        if let Some(p) = i.parent() {
            assert_eq!(p.caller_index(), i.caller_index());
        }
    }
}

#[test]
fn func_of_a_left_out_helper_says_how_to_record_it() {
    let avail = Available::parse("do_sys_openat2\n__x64_sys_pidfd_open\n");
    let why = |db: std::path::PathBuf, f: &str| {
        let set = DbSet::new(vec![Db::open(db).unwrap()]);
        explain(&match_pattern(f, &set, &avail), &set, &avail)
    };
    let rebuild = |u: Unmatched| match u {
        Unmatched::Inlined { rebuild, .. } => Some(rebuild),
        _ => None,
    };
    let helper = why(testkernel_db_inline(), "class_filename_flags_constructor");
    assert_eq!(
        rebuild(helper.clone()),
        Some(Rebuild::WithAllInlineInstances),
        "{helper:?}"
    );
    // Recorded copies, or a db with all of them: no such hint.
    assert_eq!(
        rebuild(why(
            testkernel_db_all_inline(),
            "class_filename_flags_constructor"
        )),
        Some(Rebuild::Nothing)
    );
    assert_eq!(
        rebuild(why(testkernel_db_inline(), "pidfd_create")),
        Some(Rebuild::Nothing)
    );
}

/// The same rule on a user-space program, through the `dwarfscan` command's three
/// choices: a header `inline` helper's copies only with `--all-inline-instances`; the
/// copy of a `.c` function the compiler inlined by default; none with
/// `--no-inline-instances`.
#[test]
fn dwarfscan_flags_choose_the_copies() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("helper.h"),
        "static inline int helper_sq(int x) { return x * x + 1; }\n",
    )
    .unwrap();
    std::fs::write(
        d.join("prog.c"),
        "#include \"helper.h\"\n\
         static int work(int a) { return helper_sq(a) * 3 + a; }\n\
         int main(int argc, char **argv) { (void)argv; return work(argc); }\n",
    )
    .unwrap();
    let exe = d.join("prog");
    let ok = std::process::Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&exe)
        .arg(d.join("prog.c"))
        .status()
        .expect("gcc")
        .success();
    assert!(ok, "gcc");
    let copies = |flag: Option<&str>| -> Vec<String> {
        let db = d.join("prog.sigdb");
        let st = std::process::Command::new(dwarfscan_bin())
            .args(["-q", "-j", "1"])
            .args(flag)
            .arg("-o")
            .arg(&db)
            .arg(&exe)
            .status()
            .expect("running dwarfscan");
        assert!(st.success());
        let db = Db::open(&db).unwrap();
        let mut v: Vec<String> = db
            .instances()
            .map(|i| {
                format!(
                    "{} in {}",
                    i.callee().unwrap().name(),
                    i.caller().unwrap().name()
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(copies(None), ["work in main"]);
    assert_eq!(
        copies(Some("--all-inline-instances")),
        ["helper_sq in main", "work in main"]
    );
    assert!(copies(Some("--no-inline-instances")).is_empty());
}
