//! Output parameters at a return (`Exit::outs`): in the text, after the return value in
//! the return comment of a leaf (`/* ret=1 *out=8087 */`), of a close (`} /* outer ret=0
//! *p={x=1} */`) and of a void call (`/* *p={x=1} */`); in the saved calls, `out`.

mod common;

use common::Ev::{Enter, Return};
use dcg_calls::funcs::FuncTable;
use dcg_calls::sink::{ArgList, Task};
use dcg_calls::tree::{CallTree, Shape};
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
    let mut scalar = ArgList::default();
    scalar.push("out", "8087");
    let mut record = ArgList::default();
    record.push("p", "{x=1, y=?}");
    record.push("n", "?");
    let events = [
        Enter("outer", 0, None),
        Enter("parse", 10, None),
        Return("parse", 20, Some("1"), &scalar),
        Enter("fill", 30, None),
        Return("fill", 40, None, &record),
        Return("outer", 50, Some("0"), &record),
    ];
    common::drive(&mut tree, &mut sinks, task, &events)
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
