//! The C corpus (`tests/corpus/`) compiled at test time in every variant, scanned, and
//! checked three ways: exact signatures (insta snapshots), the same source-level
//! signatures in every variant, and pahole's BTF of the same objects as an oracle.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus")
}

const SOURCES: [&str; 4] = ["sigs.c", "same_a.c", "same_b.c", "clones.c"];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Exe,
    Pie,
    Shared,
    Obj,
}

#[derive(Clone, Debug)]
struct Variant {
    cc: &'static str,
    opt: &'static str,
    dwarf: &'static str,
    gz: Option<&'static str>,
    kind: Kind,
}

impl Variant {
    fn tag(&self) -> String {
        format!(
            "{}{}-{}-{}-{:?}",
            self.cc,
            self.opt,
            self.dwarf.trim_start_matches("-g"),
            self.gz.unwrap_or("plain").trim_start_matches("-gz="),
            self.kind
        )
        .to_lowercase()
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compile `v` into `dir`; the files to scan, or None when the compiler refuses the
/// variant (e.g. no zstd support).
fn build(v: &Variant, dir: &Path) -> Option<Vec<PathBuf>> {
    let src: Vec<PathBuf> = SOURCES.iter().map(|s| corpus_dir().join(s)).collect();
    let mut common_args: Vec<String> = vec![
        v.opt.into(),
        v.dwarf.into(),
        "-fno-omit-frame-pointer".into(),
    ];
    if let Some(gz) = v.gz {
        common_args.push(gz.into());
    }
    let run = |args: &[String]| -> bool {
        let out = Command::new(v.cc)
            .args(args)
            .output()
            .expect("run compiler");
        if !out.status.success() {
            eprintln!(
                "{} {:?}: {}",
                v.cc,
                args,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out.status.success()
    };
    match v.kind {
        Kind::Obj => {
            let mut outs = vec![];
            for s in &src {
                let o = dir.join(format!("{}.o", s.file_stem()?.to_string_lossy()));
                let mut a = common_args.clone();
                a.extend([
                    "-c".into(),
                    s.display().to_string(),
                    "-o".into(),
                    o.display().to_string(),
                ]);
                if !run(&a) {
                    return None;
                }
                outs.push(o);
            }
            Some(outs)
        }
        k => {
            let out = dir.join("prog");
            let mut a = common_args.clone();
            match k {
                Kind::Exe => a.push("-no-pie".into()),
                Kind::Pie => a.extend(["-fPIE".into(), "-pie".into()]),
                Kind::Shared => a.extend(["-fPIC".into(), "-shared".into()]),
                Kind::Obj => unreachable!(),
            }
            a.extend(src.iter().map(|s| s.display().to_string()));
            a.extend(["-o".into(), out.display().to_string()]);
            run(&a).then_some(vec![out])
        }
    }
}

fn variants() -> Vec<Variant> {
    let mut v = vec![];
    let mut ccs = vec![];
    if have("gcc") {
        ccs.push("gcc");
    }
    if have("clang") {
        ccs.push("clang");
    }
    for cc in ccs {
        for opt in ["-O0", "-O2"] {
            for dwarf in ["-gdwarf-4", "-gdwarf-5"] {
                for kind in [Kind::Exe, Kind::Pie, Kind::Shared, Kind::Obj] {
                    v.push(Variant {
                        cc,
                        opt,
                        dwarf,
                        gz: None,
                        kind,
                    });
                }
                for gz in ["-gz=zlib", "-gz=zstd"] {
                    v.push(Variant {
                        cc,
                        opt,
                        dwarf,
                        gz: Some(gz),
                        kind: Kind::Obj,
                    });
                    v.push(Variant {
                        cc,
                        opt,
                        dwarf,
                        gz: Some(gz),
                        kind: Kind::Exe,
                    });
                }
            }
        }
    }
    v
}

/// Stable rendering of the corpus functions of a db: one line per function, sorted.
fn render(db: &sigdb::Db) -> String {
    let mut lines: Vec<String> = db
        .functions()
        .filter(|f| f.module().is_some())
        .map(|f| dwarfscan::render::render_function(&f))
        .collect();
    lines.sort();
    lines.dedup();
    lines.join("\n") + "\n"
}

/// The source-level signature of a function (no locations, no flags).
fn source_sig(f: &sigdb::Function<'_>) -> String {
    let params: Vec<String> = f.params().map(|p| p.ty().declare(p.name())).collect();
    format!(
        "{} -> {} ({})",
        f.name(),
        f.ret().display(),
        params.join(", ")
    )
}

/// Externally visible functions whose signature must be the same in every variant.
const STABLE: [(&str, &str); 16] = [
    ("ret_void", "ret_void -> void (int x)"),
    ("ret_bool", "ret_bool -> _Bool (int x)"),
    ("ret_u8", "ret_u8 -> u8 (u8 v)"),
    ("ret_u16", "ret_u16 -> u16 (u16 v)"),
    ("ret_int", "ret_int -> int (int a, int b)"),
    ("ret_long", "ret_long -> long int (long int a)"),
    (
        "ret_unsigned",
        "ret_unsigned -> unsigned int (unsigned int a)",
    ),
    ("ret_enum", "ret_enum -> enum color (enum sign s)"),
    (
        "ret_ptr",
        "ret_ptr -> const char * (const char *s, size_t n)",
    ),
    ("call_cb", "call_cb -> int (callback_t cb, void *arg)"),
    ("by_value", "by_value -> int (struct small s, struct big b)"),
    ("ret_big", "ret_big -> struct big (long int v)"),
    (
        "seven",
        "seven -> int (int a, int b, int c, int d, int e, int f, int g)",
    ),
    ("mixed", "mixed -> double (int a, double d, float f)"),
    ("with_typedef", "with_typedef -> gfp_t (gfp_t flags)"),
    ("sum", "sum -> int (int n)"),
];

#[test]
fn corpus_all_variants() {
    let vs = variants();
    if vs.is_empty() {
        eprintln!("skipped: no C compiler");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut built = 0;
    for v in &vs {
        let dir = tmp.path().join(v.tag());
        std::fs::create_dir_all(&dir).unwrap();
        let Some(files) = build(v, &dir) else {
            eprintln!("variant {} not supported by the compiler, skipped", v.tag());
            continue;
        };
        built += 1;
        let (db, _) = common::scan_to_db(&files);
        let text = render(&db);
        // clang spells `long int` as `long`.
        let norm = |s: &str| s.replace("long int", "long");
        for (name, want) in STABLE {
            let got: Vec<String> = db.by_name(name).map(|f| norm(&source_sig(&f))).collect();
            assert!(
                got.iter().any(|g| *g == norm(want)),
                "{}: {name}: got {got:?}\n{text}",
                v.tag()
            );
        }
        // Two distinct static functions called same_name.
        let same: Vec<String> = db
            .by_name("same_name")
            .map(|f| norm(&source_sig(&f)))
            .collect();
        assert!(
            same.contains(&"same_name -> int (int x)".to_string()),
            "{}: {same:?}",
            v.tag()
        );
        assert!(
            same.contains(&"same_name -> long (long x, long y)".to_string()),
            "{}: {same:?}",
            v.tag()
        );
        let e = db.by_name("ret_enum").next().unwrap();
        let p = e.params().next().unwrap();
        assert_eq!(
            dwarfscan::render::render_enum(&p.ty()).as_deref(),
            Some("NEG=-2 ZERO=0 POS=5"),
            "{}",
            v.tag()
        );
        assert!(
            e.flags().is_empty() || v.kind == Kind::Obj || e.flags() == sigdb::FuncFlags::NOTRACE
        );
        let s = db.by_name("sum").next().unwrap();
        assert!(
            s.flags().contains(sigdb::FuncFlags::VARIADIC),
            "{}",
            v.tag()
        );
        if v.cc == "gcc" && v.opt == "-O2" {
            // The inline-only helper and its callers.
            let io: Vec<_> = db.by_name("inline_only_add").collect();
            assert!(
                io.iter()
                    .any(|f| f.flags().contains(sigdb::FuncFlags::INLINE_ONLY)
                        && f.inlined_into().any(|c| c.name() == "uses_inline")),
                "{}: {text}",
                v.tag()
            );
            // GCC clones at -O2.
            let flags = |n: &str| {
                db.by_name(n)
                    .fold(sigdb::FuncFlags::empty(), |a, f| a | f.flags())
            };
            assert!(
                flags("isra_target")
                    .intersects(sigdb::FuncFlags::CLONE_ISRA | sigdb::FuncFlags::CLONE_CONSTPROP),
                "{}: {text}",
                v.tag()
            );
            assert!(
                flags("constprop_target").contains(sigdb::FuncFlags::CLONE_CONSTPROP),
                "{}: {text}",
                v.tag()
            );
            assert!(
                flags("part_target").contains(sigdb::FuncFlags::PART),
                "{}: {text}",
                v.tag()
            );
            assert!(
                flags("cold_split").contains(sigdb::FuncFlags::COLD),
                "{}: {text}",
                v.tag()
            );
        }
        if v.cc == "gcc" && v.dwarf == "-gdwarf-5" && v.gz.is_none() && v.kind == Kind::Exe {
            insta::assert_snapshot!(format!("corpus-{}", v.tag()), text);
        }
    }
    assert!(built > 0);
}

/// pahole turns the same objects into BTF; every function it describes must match.
#[test]
fn corpus_pahole_oracle() {
    if !have("pahole") || !have("gcc") {
        eprintln!("skipped: needs pahole and gcc");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        for dwarf in ["-gdwarf-4", "-gdwarf-5"] {
            let v = Variant {
                cc: "gcc",
                opt,
                dwarf,
                gz: None,
                kind: Kind::Exe,
            };
            let dir = tmp.path().join(v.tag());
            std::fs::create_dir_all(&dir).unwrap();
            let files = build(&v, &dir).expect("build");
            let btf_path = dir.join("out.btf");
            let out = Command::new("pahole")
                .arg("-J")
                .arg(format!("--btf_encode_detached={}", btf_path.display()))
                .arg(&files[0])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "pahole: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let btf = std::fs::read(&btf_path).unwrap();
            let funcs = common::btf::Btf::parse(&btf).expect("BTF").funcs();
            assert!(
                funcs.len() >= 15,
                "{}: only {} BTF functions",
                v.tag(),
                funcs.len()
            );
            let (db, _) = common::scan_to_db(&files);
            let a = common::btf::compare(&funcs, &db);
            eprint!("{}: {}", v.tag(), a.report());
            assert_eq!(a.agree, a.total, "{}: {}", v.tag(), a.report());
        }
    }
}
