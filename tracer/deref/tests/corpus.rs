//! Real input: `tests/corpus/deref.c` compiled with gcc -g at -O0 and -O2, its db made by
//! dwarfscan, the memory images the program itself writes (each object's bytes and
//! address), and the rendered text checked exactly at depths 1 to 3 and under a cap.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use dcg_deref::*;
use dcg_render::Role;

/// The objects the program wrote: name → (address, bytes).
fn objects(dump: &[u8]) -> HashMap<String, (u64, Vec<u8>)> {
    let mut out = HashMap::new();
    let mut d = dump;
    while d.len() >= 32 {
        let name = String::from_utf8_lossy(&d[..16])
            .trim_end_matches('\0')
            .to_string();
        let addr = u64::from_le_bytes(d[16..24].try_into().unwrap());
        let size = u64::from_le_bytes(d[24..32].try_into().unwrap()) as usize;
        out.insert(name, (addr, d[32..32 + size].to_vec()));
        d = &d[32 + size..];
    }
    out
}

struct Names(HashMap<u64, (String, bool)>);

impl Symbols for Names {
    fn pointer_text(&self, addr: u64, to_func: bool) -> Option<String> {
        let (name, func) = self.0.get(&addr)?;
        Some(if *func || to_func {
            name.clone()
        } else {
            format!("&{name}")
        })
    }
}

#[test]
fn deref_c_at_o0_and_o2() {
    let have_gcc = Command::new("gcc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_gcc {
        eprintln!("skipped: no gcc");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/deref.c");
    let tmp = tempfile::tempdir().unwrap();
    for opt in ["-O0", "-O2"] {
        let prog = tmp.path().join(format!("deref{opt}"));
        let ok = Command::new("gcc")
            .args(["-g", opt])
            .arg(&src)
            .arg("-o")
            .arg(&prog)
            .status()
            .unwrap()
            .success();
        assert!(ok, "gcc {opt}");
        let dump = tmp.path().join(format!("dump{opt}"));
        let status = Command::new(&prog).arg(&dump).status().unwrap();
        assert_eq!(status.code(), Some(0), "{opt}");
        let objs = objects(&std::fs::read(&dump).unwrap());
        let mem = Blocks(
            objs.values()
                .filter(|(_, b)| !b.is_empty())
                .cloned()
                .collect(),
        );
        let mut names = HashMap::new();
        for n in ["table", "head", "tail", "handler"] {
            names.insert(objs[n].0, (n.to_string(), n == "handler"));
        }
        let syms = Names(names);

        let input = dwarfscan::Input::new(&prog);
        let mut r = dwarfscan::scan(&[input], &dwarfscan::Options::default()).unwrap();
        let db = sigdb::Db::from_bytes(r.to_bytes().unwrap()).unwrap();
        let apply = db.by_name("apply").next().expect("apply in the db");
        let c = apply.params().next().unwrap();
        assert_eq!(c.ty().declare(c.name()), "struct conf *c");
        let show = |depth, cap| {
            let p = plan(c.ty(), depth, cap);
            let mut out = String::new();
            render_deref(
                &mut out,
                c.ty(),
                objs["table"].0,
                &p,
                &mem,
                &syms,
                Role::Plain,
            );
            out
        };
        // Depth 2 reads the list's first node, whose string is a third level.
        let (hl, tl) = (objs["head.label"].0, objs["tail.label"].0);
        let tail = "cb=handler, ratio=1.5, data={…}}";
        let front =
            "&table{port=8080, name=\"dcg\", m=MODE_FAST, on=true, in={a=7, tag=\"hello\"}, \
                     ready=1, level=5, sbits=-3, count=42 /* union */, v={i=7 /* union */}";
        assert_eq!(
            show(1, DEFAULT_CAP),
            format!("{front}, list=&head, {tail}"),
            "{opt}"
        );
        assert_eq!(
            show(2, DEFAULT_CAP),
            format!("{front}, list=&head{{next=&tail, value=1, label={hl:#x}}}, {tail}"),
            "{opt}"
        );
        assert_eq!(
            show(3, DEFAULT_CAP),
            format!(
                "{front}, list=&head{{next=&tail{{next=NULL, value=2, label={tl:#x}}}, \
                 value=1, label=\"head\"}}, {tail}"
            ),
            "{opt}"
        );
        assert_eq!(
            show(1, 34),
            "&table{port=8080, name=\"dcg\", m=MODE_FAST, on=true, in={a=7, tag=\"he\"…}}",
            "{opt}"
        );
        // A field of the list, resolved against the real db and read from the image.
        let f = resolve(&apply, &parse_path("c->list->label").unwrap()).unwrap();
        // `list`, `cb`, `ratio` are the struct's last 24 bytes; `label` is at 16 in a node.
        assert_eq!(f.hops(), [objs["table"].1.len() as u32 - 24, 16]);
        let (_, head) = &objs["head"];
        let label = u64::from_le_bytes(head[16..24].try_into().unwrap());
        assert_eq!(label, objs["head.label"].0);
    }
}
