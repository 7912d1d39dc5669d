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
        }
    }
}
