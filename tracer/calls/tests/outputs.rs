//! Output parameters at a return (`Exit::outs`): in the text, after the return value in
//! the return comment of a leaf (`/* ret=1 *out=8087 */`), of a close (`} /* outer ret=0
//! *p={x=1} */`) and of a void call (`/* *p={x=1} */`); in the saved calls, `out`.

mod common;

use dcg_calls::funcs::FuncTable;
use dcg_calls::sink::{ArgList, Task};
use dcg_calls::tree::{ArgsIn, CallTree, Entry, Exit, RetIn, Shape};
use dcg_dbset::DbSet;

fn run(json: bool) -> String {
    let set = DbSet::new(Vec::new());
    let mut sinks = common::sinks(json);
    let mut tree = CallTree::new(FuncTable::new(&set), Shape::Flat, 0);
    let task = Task {
        key: 7,
        pid: Some(7),
        comm: Some("prog"),
        cpu: Some(0),
        process: None,
    };
    let mut out = Vec::new();
    let enter = |tree: &mut CallTree<'_>,
                 sinks: &mut dyn dcg_calls::sink::Sink,
                 name: &str,
                 t: u64,
                 out: &mut Vec<u8>| {
        let func = tree.funcs.intern(name, None);
        let e = Entry {
            task,
            depth: 0,
            func,
            name,
            module: None,
            args: ArgsIn::None,
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
        tree.enter(&e, sinks, out).unwrap();
    };
    let exit = |tree: &mut CallTree<'_>,
                sinks: &mut dyn dcg_calls::sink::Sink,
                name: &str,
                t: u64,
                ret: Option<&str>,
                outs: &ArgList,
                out: &mut Vec<u8>| {
        let func = tree.funcs.intern(name, None);
        let x = Exit {
            outs: Some(outs),
            task,
            depth: 0,
            func: Some(func),
            ret: ret.map(|r| RetIn::Rendered {
                text: r,
                raw: None,
                error: false,
            }),
            time_ns: Some(t),
            duration_ns: None,
            layout: None,
        };
        tree.exit(&x, sinks, out).unwrap();
    };
    let mut scalar = ArgList::default();
    scalar.push("out", "8087");
    let mut record = ArgList::default();
    record.push("p", "{x=1, y=?}");
    record.push("n", "?");
    enter(&mut tree, &mut sinks, "outer", 0, &mut out);
    enter(&mut tree, &mut sinks, "parse", 10, &mut out);
    exit(
        &mut tree,
        &mut sinks,
        "parse",
        20,
        Some("1"),
        &scalar,
        &mut out,
    );
    enter(&mut tree, &mut sinks, "fill", 30, &mut out);
    exit(&mut tree, &mut sinks, "fill", 40, None, &record, &mut out);
    exit(
        &mut tree,
        &mut sinks,
        "outer",
        50,
        Some("0"),
        &record,
        &mut out,
    );
    tree.finish(&mut sinks, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn outputs_follow_the_return_value() {
    let text = run(false);
    assert!(text.contains("parse(); /* ret=1 *out=8087 */"), "{text}");
    assert!(text.contains("fill(); /* *p={x=1, y=?} *n=? */"), "{text}");
    assert!(
        text.contains("} /* outer ret=0 *p={x=1, y=?} *n=? */"),
        "{text}"
    );
    let json = run(true);
    let records = dcg_calls::saved_format::read(
        format!("{{\"dcg\":\"calls\",\"version\":1,\"source\":\"t\"}}\n{json}").as_bytes(),
    )
    .unwrap()
    .1;
    let outs: Vec<Vec<(String, String)>> = records
        .iter()
        .map(|r| {
            r.out
                .iter()
                .map(|o| (o.name.clone(), o.value.clone()))
                .collect()
        })
        .collect();
    let p = ("p".to_string(), "{x=1, y=?}".to_string());
    let n = ("n".to_string(), "?".to_string());
    assert_eq!(
        outs,
        [
            vec![("out".to_string(), "8087".to_string())],
            vec![p.clone(), n.clone()],
            vec![p, n],
        ]
    );
}
