//! Time opening (mapping and validating) a sigdb:
//! `cargo run --release -p sigdb --example open_time -- DB [REPEAT]`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: open_time DB [REPEAT]");
        std::process::exit(2);
    };
    let n: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let start = std::time::Instant::now();
    let mut functions = 0;
    for _ in 0..n {
        match sigdb::Db::open(path) {
            Ok(db) => functions = db.function_count(),
            Err(e) => {
                eprintln!("open_time: {e}");
                std::process::exit(1);
            }
        }
    }
    let each = start.elapsed() / n;
    println!("{path}: {functions} functions, open + validate {each:?} (mean of {n})");
}
