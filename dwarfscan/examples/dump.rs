//! Print every function of a sigdb, one line each: `dump DB [NAME...]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: dump DB [NAME...]");
    let names: Vec<String> = args.collect();
    let db = sigdb::Db::open(&path).expect("open db");
    for f in db.functions() {
        if !names.is_empty() && !names.iter().any(|n| n == f.name() || n == f.symbol()) {
            continue;
        }
        let module = f.module().map(|m| m.name().to_string()).unwrap_or_default();
        println!(
            "{module} {:#x} {}",
            f.addr(),
            dwarfscan::render::render_function(&f)
        );
        if !names.is_empty() {
            for c in f.inlined_into().take(10) {
                println!("    inlined into {}", c.name());
            }
            for i in f.inlined_copies() {
                let ranges: Vec<String> =
                    i.ranges().map(|(s, e)| format!("{s:#x}-{e:#x}")).collect();
                let locs: Vec<String> = i
                    .params()
                    .map(|(p, l)| format!("{}={l:?}", p.name()))
                    .collect();
                println!(
                    "    copy in {} at {:#x} [{}] {}:{} ({})",
                    i.caller().map_or("?", |c| c.symbol()),
                    i.entry_pc(),
                    ranges.join(" "),
                    i.call_file(),
                    i.call_line(),
                    locs.join(", ")
                );
            }
        }
    }
}
