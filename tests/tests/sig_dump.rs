//! `dcg sig` and `dcg dump` on the test kernel's real db: C declarations of plain
//! functions, clones, module functions and inline-only functions; the JSON schema.

use dcg_tests::*;
use std::process::Command;

fn dcg(args: &[&str]) -> String {
    let db = testkernel_db();
    let out = Command::new(dcg_bin())
        .args(&args[..1])
        .arg("--db")
        .arg(&db)
        .args(&args[1..])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn sig_golden() {
    let text = dcg(&[
        "sig",
        "do_sys_openat2",
        "slab_free.isra.0",
        "do_getname.constprop.0",
        "bm_status_write",
        "getname_flags",
        "kmem_cache_alloc_noprof",
        "pidfd_create",
        "proc_misc_d_revalidate",
        "make_vfsuid",
        "__legitimize_path",
    ]);
    check_golden("sig/testkernel.out", &text);
    assert!(text.contains("[vmlinux inline-only, inlined into __x64_sys_pidfd_open]"));
    assert!(text.contains("slab_free.isra.0 clone:isra]"));

    // By address: the middle of do_sys_openat2.
    let line = text.lines().next().unwrap();
    let addr = line
        .split("[vmlinux ")
        .nth(1)
        .unwrap()
        .split('+')
        .next()
        .unwrap();
    let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
    let by_addr = dcg(&["sig", &format!("{:#x}", addr + 0x10)]);
    assert_eq!(by_addr.lines().next(), Some(line));
}

#[test]
fn dump_json_schema() {
    let text = dcg(&["dump", "--json"]);
    let kinds = [
        "void", "bool", "int", "char", "float", "pointer", "enum", "struct", "union", "array",
        "func",
    ];
    let mut n = 0;
    let mut flags = std::collections::BTreeSet::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in [
            "name", "symbol", "module", "addr", "size", "ret", "params", "flags",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
        let check_type = |t: &serde_json::Value| {
            assert!(kinds.contains(&t["kind"].as_str().unwrap()), "{t}");
            assert!(t["size"].is_u64() && t["signed"].is_boolean() && t["name"].is_string());
        };
        check_type(&v["ret"]);
        for p in v["params"].as_array().unwrap() {
            check_type(&p["type"]);
            assert!(p["loc"].is_string());
        }
        for f in v["flags"].as_array().unwrap() {
            flags.insert(f.as_str().unwrap().to_string());
        }
        n += 1;
    }
    assert!(n > 20_000, "{n} functions");
    for f in [
        "static",
        "clone:isra",
        "clone:constprop",
        "part",
        "inline-only",
        "variadic",
        "abi-changed",
    ] {
        assert!(flags.contains(f), "no function flagged {f}: {flags:?}");
    }
    // A closed pipe is not an error.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} dump --db {} --json | head -n 1 >/dev/null",
            dcg_bin().display(),
            testkernel_db().display()
        ))
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
