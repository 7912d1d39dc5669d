//! Decoding speed, on records made up from a real kernel's db and `System.map`
//! (`DCG_DECODE_DB=k.sigdb DCG_DECODE_MAP=System.map cargo test --release -p dcg-ktrace
//! decode_speed -- --ignored --nocapture`): trees of a root with nested calls of the
//! db's functions, each call an entry and a return record, decoded into JSON lines and the
//! saved-calls file (`--json --trace-output F`), or with `DCG_DECODE_TEXT=1` into the text
//! tree (`dcg trace`'s default output). The outputs go to `DCG_DECODE_OUT` (a path prefix;
//! `.json` or `.txt` and `.calls` are appended), by default in the temporary directory;
//! `DCG_DECODE_LOOPS` sets the number of trees (3000); `DCG_DECODE_ARGS=1` shows arguments
//! too (`--args`).

use super::*;
use crate::derefs::KernelDerefs;
use crate::fields::KernelFields;
use dcg_bpf::Record;
use dcg_calls::outputs::OutputSpec;
use dcg_dbset::DbSet;
use std::path::Path;

#[test]
#[ignore]
fn decode_speed() {
    let (Some(db), Some(map)) = (
        std::env::var_os("DCG_DECODE_DB"),
        std::env::var_os("DCG_DECODE_MAP"),
    ) else {
        return;
    };
    let set = DbSet::new(vec![sigdb::Db::open(Path::new(&db)).unwrap()]);
    let text = std::fs::read_to_string(map).unwrap();
    let kallsyms = Kallsyms::parse(&text);
    let sites: Vec<Site> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let kind = it.next()?;
            let name = it.next()?;
            (matches!(kind, "t" | "T") && set.by_name(name).next().is_some()).then(|| Site {
                addr,
                name: name.to_string(),
                module: None,
            })
        })
        .collect();
    let pool: Vec<u64> = sites
        .iter()
        .step_by(sites.len() / 300)
        .map(|s| s.addr)
        .collect();
    let root = sites
        .iter()
        .find(|s| s.name == "do_faccessat")
        .unwrap()
        .addr;
    // What a session computes before the command starts (natively; emulated CPUs
    // take 25-35 times as long).
    let t = Instant::now();
    let none = KernelFields::default();
    let no_derefs = KernelDerefs::default();
    let plans = targets(
        &sites,
        &["do_faccessat".to_string()],
        (&set, &none, &no_derefs),
        true,
        &[],
    );
    let t_targets = t.elapsed();
    let t = Instant::now();
    let parsed = Kallsyms::parse(&text);
    let t_kallsyms = t.elapsed();
    let t = Instant::now();
    let pointer_names = parsed.symbol_map();
    let t_pointers = t.elapsed();
    let t = Instant::now();
    let kernel_text = crate::callees::KernelText::new(&parsed);
    let t_kernel_text = t.elapsed();
    drop(kernel_text);
    eprintln!(
        "before the command: targets (with plans) of {} sites {:?}, kallsyms parsed {:?} ({} bytes), pointer names {:?}, kernel text {:?}",
        plans.len(),
        t_targets,
        t_kallsyms,
        text.len(),
        t_pointers,
        t_kernel_text
    );
    drop(parsed);
    let mut funcs = FuncTable::new(&set);
    funcs.set_pointer_names(&pointer_names);
    let prefix = std::env::var_os("DCG_DECODE_OUT")
        .unwrap_or_else(|| std::env::temp_dir().join("decode-speed").into_os_string());
    let path = |ext: &str| {
        let mut p = prefix.clone();
        p.push(ext);
        p
    };
    let text_output = std::env::var_os("DCG_DECODE_TEXT").is_some_and(|v| v == "1");
    let loops: usize = std::env::var("DCG_DECODE_LOOPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    // As `--json --trace-output F` (the load benchmark's session): JSON lines on the
    // output and the saved-calls file; or the text tree alone.
    let spec = OutputSpec {
        json: !text_output,
        cpu_width: 1,
        saved: (!text_output).then(|| path(".calls").into()),
        source: "decode_speed".into(),
        ..OutputSpec::default()
    };
    let mut tree = CallTree::new(funcs, Shape::Flat, 0);
    tree.show_inline_frames(set.has_inline_instances());
    let site_at = site_index(&sites);
    let values = dcg_live::plan::Values {
        retvals: true,
        args: std::env::var_os("DCG_DECODE_ARGS").is_some_and(|v| v == "1"),
    };
    let pipe = Pipeline::new(tree, Outputs::open(spec).unwrap());
    let none = KernelFields::default();
    let no_derefs = KernelDerefs::default();
    let mut feed = Feed::new(
        pipe,
        Vec::new(),
        (&sites, site_at),
        kallsyms,
        (values, &none, &no_derefs),
    );
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path(if text_output { ".txt" } else { ".json" })).unwrap(),
    );
    let (mut ts, mut k, mut records) = (0u64, 0usize, 0usize);
    let t = Instant::now();
    for _ in 0..loops {
        // A root, then 38 calls: each the child of the last open one, four deep at most.
        let mut stack = vec![root];
        let enter = |feed: &mut Feed, ts: u64, ip: u64, parent: u64| {
            feed.record(Record::Entry {
                tid: 7,
                tgid: 7,
                cpu: 0,
                ts,
                ip,
                callsite: parent + 0x24,
                args: [1, 2, 3, 4, 5, 6],
                ctx: dcg_bpf::ctx::TASK,
            })
            .unwrap();
        };
        let exit = |feed: &mut Feed, ts: u64, ip: u64| {
            feed.record(Record::Exit {
                tid: 7,
                cpu: 0,
                ts,
                ip,
                rax: (ts % 5).wrapping_sub(2),
                rdx: 0,
                ctx: dcg_bpf::ctx::TASK,
            })
            .unwrap();
        };
        ts += 100;
        enter(&mut feed, ts, root, root);
        for _ in 0..38 {
            k += 1;
            while stack.len() > 4 || (stack.len() > 1 && k % 3 == 0) {
                ts += 100;
                exit(&mut feed, ts, stack.pop().unwrap());
                records += 1;
            }
            let ip = pool[k * 7 % pool.len()];
            ts += 100;
            enter(&mut feed, ts, ip, *stack.last().unwrap());
            records += 1;
            stack.push(ip);
        }
        while let Some(ip) = stack.pop() {
            ts += 100;
            exit(&mut feed, ts, ip);
            records += 1;
        }
        records += 1;
        feed.write_out(&mut out).unwrap();
    }
    feed.flush_all().unwrap();
    feed.pipe.finish(&mut out).unwrap();
    out.flush().unwrap();
    let el = t.elapsed();
    eprintln!(
        "{records} records decoded in {:.3} s: {:.2} us/record",
        el.as_secs_f64(),
        el.as_secs_f64() * 1e6 / records as f64
    );
    feed.pipe.close().unwrap();
}
