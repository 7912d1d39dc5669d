//! A session tracing both sides (issue 42): a kernel session's saved calls of a thread,
//! replayed into the user side's pipeline at their place, nest below the thread's open
//! user call; the text marks where the kernel begins and saved calls say each call's
//! side.

mod common;

use dcg_calls::funcs::FuncTable;
use dcg_calls::pipeline::Pipeline;
use dcg_calls::saved_format::{ArgValue, CallRecord, Space};
use dcg_calls::sink::{ArgList, Task};
use dcg_calls::tree::{ArgsIn, CallTree, Entry, Exit, RetIn, Shape};
use dcg_dbset::DbSet;

fn task() -> Task<'static> {
    Task {
        key: 7,
        pid: Some(7),
        comm: Some("prog"),
        cpu: Some(0),
        process: Some(7),
    }
}

/// A kernel call as the kernel session saved it.
fn kcall(id: u64, parent: Option<u64>, func: &str, t: u64, d: Option<u64>) -> CallRecord {
    CallRecord {
        id,
        parent,
        func: func.to_string(),
        demangled: None,
        module: None,
        cpu: Some(1),
        comm: Some("prog".into()),
        pid: Some(7),
        tgid: Some(7),
        depth: 0,
        time_ns: Some(t),
        duration_ns: d,
        args: Vec::new(),
        ret: None,
        ret_raw: None,
        out: Vec::new(),
        error: false,
        origin: None,
        decoded: false,
        inline: None,
        ctx: None,
        irq_ns: None,
        lost: None,
        ended: None,
        stack: None,
        space: None,
    }
}

fn user(pipe: &mut Pipeline<'_>, name: &str, t: u64, ret: Option<&str>) {
    let func = pipe.tree_mut().funcs.intern(name, None);
    match ret {
        None => {
            let args = ArgList::default();
            let e = Entry {
                task: task(),
                depth: 0,
                func,
                name,
                module: None,
                args: ArgsIn::Rendered(&args),
                ret: None,
                leaf: false,
                time_ns: Some(t),
                duration_ns: None,
                callsite: None,
                site: None,
                comment: None,
                layout: None,
                ctx: None,
            };
            pipe.enter(&e).unwrap();
        }
        Some(text) => {
            let x = Exit {
                task: task(),
                depth: 0,
                func: Some(func),
                ret: Some(RetIn::Rendered {
                    text,
                    raw: None,
                    error: false,
                }),
                outs: None,
                time_ns: Some(t),
                duration_ns: None,
                layout: None,
            };
            pipe.exit(&x).unwrap();
        }
    }
}

/// `main` → `load_config`, which opens a missing file: `do_sys_openat2` → `getname`
/// (leaf), `do_filp_open` returning -ENOENT, and fails (-1); then `getpid`'s kernel call
/// below `main`, which returns 0 after all.
fn trace(json: bool) -> String {
    let (user_set, kernel_set) = (DbSet::new(Vec::new()), DbSet::new(Vec::new()));
    let mut funcs = FuncTable::new(&user_set);
    funcs.set_kernel_set(&kernel_set);
    let tree = CallTree::new(funcs, Shape::Flat, 0);
    let mut pipe = Pipeline::with_sinks(tree, common::sinks(json));
    let mut open = kcall(1, None, "do_sys_openat2", 2_000, Some(5_000));
    open.args = vec![ArgValue {
        name: "dfd".into(),
        value: "-100".into(),
    }];
    open.ret = Some("-ENOENT".into());
    open.error = true;
    let getname = kcall(2, Some(1), "getname", 2_100, Some(300));
    let mut filp = kcall(3, Some(1), "do_filp_open", 3_000, Some(3_000));
    filp.ret = Some("-ENOENT".into());
    filp.error = true;
    let mut getpid = kcall(4, None, "__x64_sys_getpid", 9_000, Some(200));
    getpid.ret = Some("7".into());

    user(&mut pipe, "main", 0, None);
    user(&mut pipe, "load_config", 1_000, None);
    pipe.replay_kernel(task(), &[open, getname, filp]).unwrap();
    user(&mut pipe, "load_config", 8_000, Some("-1"));
    pipe.replay_kernel(task(), &[getpid]).unwrap();
    user(&mut pipe, "main", 10_000, Some("0"));
    let mut out = Vec::new();
    pipe.finish(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn kernel_calls_nest_below_the_user_call_that_made_them() {
    let text = trace(false);
    let body = common::body(&text);
    let want = [
        "  main() {",
        "    load_config() {",
        "      do_sys_openat2(dfd=-100) { /* kernel */",
        "        getname();",
        "        do_filp_open(); /* ret=-ENOENT */",
        "      } /* do_sys_openat2 ret=-ENOENT */",
        "    } /* load_config ret=-1 errno=ENOENT from do_filp_open */",
        "    __x64_sys_getpid(); /* kernel ret=7 */",
        "  } /* main ret=0 */",
    ];
    assert_eq!(body, want, "{text}");
}

#[test]
fn saved_calls_say_each_calls_side_and_parent() {
    let text = trace(true);
    let calls: Vec<CallRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by = |f: &str| calls.iter().find(|c| c.func == f).unwrap();
    for f in ["main", "load_config"] {
        assert_eq!(by(f).space, Some(Space::User), "{text}");
    }
    for f in [
        "do_sys_openat2",
        "getname",
        "do_filp_open",
        "__x64_sys_getpid",
    ] {
        assert_eq!(by(f).space, Some(Space::Kernel), "{text}");
    }
    assert_eq!(by("do_sys_openat2").parent, Some(by("load_config").id));
    assert_eq!(by("do_sys_openat2").depth, 2);
    assert_eq!(by("do_filp_open").parent, Some(by("do_sys_openat2").id));
    assert_eq!(by("__x64_sys_getpid").parent, Some(by("main").id));
    assert_eq!(by("do_filp_open").duration_ns, Some(3_000));
    // The failed user call: the system call's error, from where it first appeared.
    assert_eq!(by("load_config").origin, Some(by("do_filp_open").id));
    assert!(by("load_config").error, "{text}");
    assert_eq!(by("main").origin, None, "{text}");
    assert!(!by("main").error, "{text}");
    assert!(text.contains(r#""space":"kernel""#), "{text}");
}

/// `run` → `open_db` (NULL) → `open` (-1) over a failed `do_sys_openat2`; then `check`
/// returns -1 though its system call succeeded.
#[test]
fn the_errno_reaches_every_failed_user_call_above_it_and_no_other() {
    let (user_set, kernel_set) = (DbSet::new(Vec::new()), DbSet::new(Vec::new()));
    let mut funcs = FuncTable::new(&user_set);
    funcs.set_kernel_set(&kernel_set);
    let tree = CallTree::new(funcs, Shape::Flat, 0);
    let mut pipe = Pipeline::with_sinks(tree, common::sinks(false));
    let mut failed = kcall(1, None, "do_sys_openat2", 3_000, Some(1_000));
    failed.ret = Some("-EACCES".into());
    failed.error = true;
    let mut fine = kcall(2, None, "do_sys_openat2", 7_000, Some(1_000));
    fine.ret = Some("3".into());
    user(&mut pipe, "run", 0, None);
    user(&mut pipe, "open_db", 1_000, None);
    user(&mut pipe, "open", 2_000, None);
    pipe.replay_kernel(task(), &[failed]).unwrap();
    user(&mut pipe, "open", 4_500, Some("-1"));
    user(&mut pipe, "open_db", 5_000, Some("NULL"));
    user(&mut pipe, "check", 6_000, None);
    pipe.replay_kernel(task(), &[fine]).unwrap();
    user(&mut pipe, "check", 9_000, Some("-1"));
    user(&mut pipe, "run", 10_000, Some("0"));
    let mut out = Vec::new();
    pipe.finish(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("} /* open ret=-1 errno=EACCES from do_sys_openat2 */"),
        "{text}"
    );
    assert!(
        text.contains("} /* open_db ret=NULL errno=EACCES from do_sys_openat2 */"),
        "{text}"
    );
    assert!(text.contains("} /* check ret=-1 */"), "{text}");
    assert!(text.contains("} /* run ret=0 */"), "{text}");
}
