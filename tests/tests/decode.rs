//! `dcg decode` on real captures from the test kernel, with that kernel's DWARF: golden
//! outputs for every format variant of function_graph text (`tests/data/captures/README.md`).

use dcg_calls::decode::{Decoder, Options};
use dcg_dbset::DbSet;
use dcg_tests::*;
use std::process::Command;

fn decode(capture: &str, opts: Options) -> (String, dcg_calls::decode::Stats) {
    let db = sigdb::Db::open(testkernel_db()).unwrap();
    let set = DbSet::new(vec![db]);
    let input = std::fs::read(dcg_tests::capture(capture)).unwrap();
    let mut out = Vec::new();
    let mut dec = Decoder::new(&set, opts);
    dec.decode_stream(&input[..], &mut out).unwrap();
    dec.finish(&mut out).unwrap();
    let stats = dec.stats().clone();
    (String::from_utf8(out).unwrap(), stats)
}

/// Every variant: a0 no retval, a `ret=`, b retval-hex, c args + retaddr, d abstime/cpu/
/// proc/duration columns, e fprobe/kretprobe exit events inside the graph, g/g2 the
/// raw-buffer companion runs, h module functions.
#[test]
fn golden_text_for_every_capture() {
    for name in ["a0", "a", "b", "c", "d", "e", "g-text", "g2-text", "h"] {
        let (out, stats) = decode(&format!("{name}.txt"), Options::default());
        check_golden(&format!("decode/{name}.out"), &out);
        assert!(stats.decoded > 0, "{name}: nothing decoded");
    }
}

#[test]
fn typed_values_in_the_captures() {
    let (a, stats) = decode("a.txt", Options::default());
    // void callees print no value at all.
    assert!(a.contains("_raw_spin_unlock_irqrestore();\n"));
    // errno names for int returns, ERR_PTR for pointer returns, bool as true/false.
    assert!(a.contains("} /* do_sys_openat2 ret=-ENOENT from step_into_slowpath */"));
    assert!(a.contains("ret=ERR_PTR(-ENOENT)"));
    assert!(a.contains("ret=true") || a.contains("ret=false"));
    assert!(a.contains("ret=NULL"));
    // Nothing in a.txt is missing from the DWARF of its own kernel... except asm.
    let unknown: u64 = stats.unknown.values().sum();
    assert!(
        unknown * 100 < stats.decoded,
        "{unknown} undecoded of {}",
        stats.decoded
    );

    // Hex output (retval-hex) decodes to the same values as decimal output.
    let (b, _) = decode("b.txt", Options::default());
    assert!(b.contains("} /* do_sys_openat2 ret=-ENOENT from step_into_slowpath */"));

    // funcgraph-args: AT_FDCWD printed as unsigned by the kernel is -100 for an int.
    let (c, _) = decode("c.txt", Options::default());
    assert!(c.contains("do_sys_openat2(dfd=-100, "), "{}", &c[..2000]);
    assert!(c.contains("/* <-__x64_sys_openat+0x60/0x80 */"));

    // Exit events join the closing brace on a kernel trace.
    let (e, _) = decode("e.txt", Options::default());
    assert!(e.contains("arg1=-ENOENT */"));
    assert!(e.contains("} /* do_file_open ret=ERR_PTR(-ENOENT) */"));

    // Module functions.
    let (h, _) = decode("h.txt", Options::default());
    assert!(h.contains("bm_register_write [binfmt_misc]("));
    assert!(h.contains("ret=-EINVAL"));
}

#[test]
fn json_and_errors_only() {
    let (json, _) = decode(
        "c.txt",
        Options {
            json: true,
            ..Options::default()
        },
    );
    check_golden("decode/c.json", &json);
    let mut n = 0;
    for line in json.lines() {
        let r: dcg_calls::saved_format::CallRecord = serde_json::from_str(line).unwrap();
        if r.func == "do_sys_openat2" {
            assert_eq!(r.args[0].name, "dfd");
            assert_eq!(r.args[0].value, "-100");
            n += 1;
        }
    }
    assert!(n >= 9, "{n} do_sys_openat2 calls");

    let (errs, _) = decode(
        "a.txt",
        Options {
            errors_only: true,
            ..Options::default()
        },
    );
    check_golden("decode/a.errors-only.out", &errs);
    for expect in [
        "-ENOENT",
        "-ENOTDIR",
        "-EISDIR",
        "-ELOOP",
        "-ENXIO",
        "-EROFS",
        "-EACCES",
        "-ENAMETOOLONG",
    ] {
        assert!(
            errs.contains(&format!("do_sys_openat2 ret={expect}")),
            "{expect} missing"
        );
    }
    assert!(!errs.contains("_raw_spin_lock"), "error paths only");
}

/// Error origins marked on the closing line of failing top-level calls: the workload's
/// failing opens of a.txt (see the trace markers in the capture), checked against what the
/// tree shows, and the saved records' `origin` ids checked against the rule walked by hand
/// over the records.
#[test]
fn error_origins_of_failing_opens() {
    let (a, _) = decode("a.txt", Options::default());
    for mark in [
        // cat /nonexistent: the lookup fails in step_into_slowpath; link_path_walk, called
        // after it with the error pointer, only passes it on.
        "} /* do_sys_openat2 ret=-ENOENT from step_into_slowpath */",
        "} /* do_sys_openat2 ret=-ENOTDIR from link_path_walk */",
        // The symlink loop: pick_link gives up (ERR_PTR(-ELOOP)) inside step_into_slowpath.
        "} /* do_sys_openat2 ret=-ELOOP from pick_link */",
        "} /* do_sys_openat2 ret=-EROFS from mnt_get_write_access */",
        "} /* do_sys_openat2 ret=-EACCES from generic_permission */",
        // No callee of path_openat returned -EISDIR: it is made there.
        "} /* do_sys_openat2 ret=-EISDIR from path_openat */",
    ] {
        assert!(a.contains(mark), "{mark}");
    }
    // Only top-level calls carry a mark, and only after an error value.
    for line in a.lines().filter(|l| l.contains(" from ")) {
        assert!(line.contains("|  } /* "), "{line}");
        assert!(line.contains(" ret=-E"), "{line}");
    }
    // Module functions are named with their module.
    let (h, _) = decode("h.txt", Options::default());
    assert!(h.contains("} /* vfs_write ret=-EINVAL from bm_register_write [binfmt_misc] */"));

    // Saved records (funcgraph-args + retaddr capture): the origin of every failing
    // top-level call is reached from it through children returning the same error, the
    // first such child at each step, and returns that error with no child returning it.
    let (json, _) = decode(
        "c.txt",
        Options {
            json: true,
            ..Options::default()
        },
    );
    let recs: Vec<dcg_calls::saved_format::CallRecord> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id: std::collections::HashMap<u64, &dcg_calls::saved_format::CallRecord> =
        recs.iter().map(|r| (r.id, r)).collect();
    let err = |r: &dcg_calls::saved_format::CallRecord| {
        r.ret
            .as_deref()
            .map(|v| {
                v.trim_start_matches("ERR_PTR(")
                    .trim_end_matches(')')
                    .to_string()
            })
            .filter(|_| r.error)
    };
    // Children in entry order (ids are given at entry).
    let mut children: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for r in &recs {
        if let Some(p) = r.parent {
            children.entry(p).or_default().push(r.id);
        }
    }
    for v in children.values_mut() {
        v.sort_unstable();
    }
    let first_child_with = |id: u64, e: &str| {
        children.get(&id).and_then(|k| {
            k.iter()
                .copied()
                .find(|c| err(by_id[c]).as_deref() == Some(e))
        })
    };
    let mut checked = 0;
    for r in &recs {
        let failing_root = r.parent.is_none() && err(r).is_some();
        assert_eq!(r.origin.is_some(), failing_root, "call {}", r.id);
        let Some(o) = r.origin else { continue };
        let e = err(r).unwrap();
        let mut at = r.id;
        while let Some(c) = first_child_with(at, &e) {
            at = c;
        }
        assert_eq!(o, at, "call {} ({e})", r.id);
        assert_eq!(err(by_id[&o]).as_deref(), Some(e.as_str()));
        checked += 1;
        if e == "-ELOOP" {
            assert_eq!(by_id[&o].func, "pick_link");
            assert_ne!(o, r.id);
        }
    }
    assert!(checked >= 9, "{checked} failing opens");
}

#[test]
fn cli_decodes_and_reports_unknown_functions() {
    let dcg = dcg_bin();
    let db = testkernel_db();
    let capture = dcg_tests::capture("a.txt");
    let out = Command::new(&dcg)
        .arg("decode")
        .arg("--db")
        .arg(&db)
        .arg(&capture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (lib, _) = decode("a.txt", Options::default());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), lib);

    // Lines the decoder does not understand pass through unchanged.
    let out = Command::new(&dcg)
        .args(["decode", "--db"])
        .arg(&db)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(
                b"hello world\n 0)   1.000 us    |  no_such_function_xyz(); /* ret=0x5 */\n",
            )?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        "hello world\n 0)   1.000 us    |  no_such_function_xyz(); /* ret=0x5 (raw) */\n"
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("1 calls of 1 functions not in the db"),
        "{err}"
    );
    assert!(err.contains("no_such_function_xyz (1)"), "{err}");

    // A bad db is one clear line and a non-zero exit.
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bad.path(), b"not a db").unwrap();
    let out = Command::new(&dcg)
        .args(["decode", "--db"])
        .arg(bad.path())
        .arg(&capture)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&bad.path().display().to_string()) && err.contains("bad magic"),
        "{err}"
    );
}

/// The same run captured as text and as binary ring-buffer pages (`trace_pipe_raw`, g:
/// retval; g2: retval + args + retaddr): `dcg decode --raw` finds the same calls with the
/// same values as the text; its arguments agree with funcgraph-args' wherever the kernel
/// printed some (the binary record gives dcg every parameter in a register, also of the
/// clones BTF cannot describe), and its call sites with funcgraph-retaddr's.
#[test]
fn raw_pages_decode_like_their_text() {
    let caps = captures_dir();
    let formats = caps.join("f-all-ftrace-formats.txt");
    let system_map = testkernel_dir().join("System.map");
    // `dcg decode --db <test kernel db> ARGS...` (with `raw`: of binary pages).
    let decode = |raw: bool, args: &[&std::ffi::OsStr]| {
        let mut cmd = Command::new(dcg_bin());
        // The same symbols for both: they name raw records' functions and, in both,
        // pointers that land on a symbol (`ret=&noop_backing_dev_info`).
        cmd.arg("decode")
            .arg("--db")
            .arg(testkernel_db())
            .arg("--kallsyms")
            .arg(&system_map);
        if raw {
            cmd.arg("--raw").arg("--formats").arg(&formats);
        }
        cmd.args(args).output().unwrap()
    };
    let json = |raw: bool, file: std::path::PathBuf| -> Vec<serde_json::Value> {
        let out = decode(raw, &["--json".as_ref(), file.as_os_str()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for run in ["g", "g2"] {
        let text = json(false, caps.join(format!("{run}-text.txt")));
        let raw = json(true, caps.join(format!("{run}-raw-cpu0.bin")));
        assert!(text.len() > 100, "{run}: {} calls in the text", text.len());
        assert_eq!(raw.len(), text.len(), "{run}: calls");
        let mut with_args = 0;
        for (r, t) in raw.iter().zip(&text) {
            for k in ["func", "depth", "ret", "error", "parent"] {
                assert_eq!(r[k], t[k], "{run}: {k} of {t}\nraw: {r}");
            }
            let targs = t["args"].as_array().unwrap();
            if !targs.is_empty() {
                with_args += 1;
                // Every argument the kernel printed, dcg read the same from the record
                // (structs by value the kernel prints as `(STRUCT)`: dcg by their type).
                let rargs = r["args"].as_array().unwrap();
                for a in targs {
                    let same = rargs.iter().any(|b| {
                        b["name"] == a["name"]
                            && (b["value"] == a["value"]
                                || a["value"]
                                    .as_str()
                                    .is_some_and(|v| v.starts_with("(STRUCT)")))
                    });
                    assert!(same, "{run}: {a} missing in {r}");
                }
            }
        }
        if run == "g2" {
            assert!(with_args > 100, "g2: {with_args} calls with arguments");
        }
    }
    // Call sites: the text output of g2 names them exactly as the kernel does.
    let out = decode(true, &[caps.join("g2-raw-cpu0.bin").as_os_str()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("do_sys_openat2(dfd=-100, filename=0x7ffca6f94f96, how=0xffa0000000233f18) { /* <-__x64_sys_openat+0x60/0x80 */"),
        "{}",
        &text[..text.len().min(2000)]
    );
    // A truncated page is an error naming the file, not a panic.
    let short = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(short.path(), [0u8; 100]).unwrap();
    let out = decode(true, &[short.path().as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not a whole page"), "{err}");
}

/// Inline frames from return addresses (issue 16): the g2 run's text (what `dcg decode`
/// reads) and its binary pages (what the live function_graph engine reads), with a db
/// holding the test kernel's inline instances, show the same inline frames with the
/// same calls under them; `--no-inline-frames` and a db without instances show none.
#[test]
fn retaddr_captures_show_inline_frames() {
    let caps = captures_dir();
    let system_map = testkernel_dir().join("System.map");
    let formats = caps.join("f-all-ftrace-formats.txt");
    let run = |db: &std::path::Path, raw: bool, extra: &[&str]| -> String {
        let mut cmd = Command::new(dcg_bin());
        cmd.arg("decode")
            .arg("--db")
            .arg(db)
            .arg("--kallsyms")
            .arg(&system_map)
            .args(extra);
        if raw {
            cmd.arg("--raw")
                .arg("--formats")
                .arg(&formats)
                .arg(caps.join("g2-raw-cpu0.bin"));
        } else {
            cmd.arg(caps.join("g2-text.txt"));
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let db = testkernel_db_inline();
    let frames = |json: &str| -> Vec<(String, String, Option<u64>, Vec<String>)> {
        let recs: Vec<dcg_calls::saved_format::CallRecord> = json
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut v: Vec<_> = recs
            .iter()
            .filter_map(|r| {
                let site = r.inline.as_ref()?;
                let mut kids: Vec<&dcg_calls::saved_format::CallRecord> =
                    recs.iter().filter(|k| k.parent == Some(r.id)).collect();
                kids.sort_by_key(|k| k.id);
                // A parent's id is smaller than its children's.
                assert!(r.parent.is_none_or(|p| p < r.id), "{r:?}");
                assert!(kids.iter().all(|k| k.id > r.id), "{r:?}");
                Some((
                    r.func.clone(),
                    site.container.clone(),
                    Some(r.id),
                    kids.iter().map(|k| k.func.clone()).collect(),
                ))
            })
            .collect();
        v.sort_by_key(|f| f.2);
        v
    };
    let text = frames(&run(&db, false, &["--json"]));
    let raw = frames(&run(&db, true, &["--json"]));
    assert!(
        text.iter().any(|(f, c, _, kids)| f == "walk_component"
            && c == "link_path_walk"
            && kids == &["lookup_fast", "step_into"]),
        "{text:?}"
    );
    assert!(text.len() > 10, "{} inline frames", text.len());
    // Copies of header `inline` helpers are not in the db (dwarfscan's default):
    // no frame for them.
    assert!(
        !text
            .iter()
            .any(|(f, ..)| f == "class_filename_flags_constructor"),
        "{text:?}"
    );
    assert_eq!(text, raw, "text and binary records");
    // The text: each frame with its container, its calls indented under it.
    let out = run(&db, false, &[]);
    assert!(
        out.contains("|          walk_component() /* inlined in link_path_walk */ {\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "|            lookup_fast(nd=0xffa0000000233db0) { /* <-link_path_walk+0x23a/0x600 */"
        ),
        "{out}"
    );
    // Off, or a db without instances: the output is the plain one.
    let off = run(&db, false, &["--no-inline-frames"]);
    assert!(!off.contains("inlined in"), "{off}");
    assert_eq!(off, run(&testkernel_db(), false, &[]));
}
