//! Print the inline instances inside a function of a sigdb:
//! `cargo run -p sigdb --example instances -- DB FUNCTION`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, name] = &args[..] else {
        eprintln!("usage: instances DB FUNCTION");
        std::process::exit(2);
    };
    let db = match sigdb::Db::open(db) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("instances: {e}");
            std::process::exit(1);
        }
    };
    for f in db.by_name(name) {
        println!("{} {:#x}+{:#x}", f.symbol(), f.addr(), f.size());
        for i in f.inline_instances() {
            let depth = std::iter::successors(i.parent(), |p| p.parent()).count();
            let ranges: Vec<String> = i.ranges().map(|(a, b)| format!("{a:#x}..{b:#x}")).collect();
            let params: Vec<String> = i
                .params()
                .map(|(p, l)| format!("{}={l}", p.name()))
                .collect();
            println!(
                "{:indent$}{} entry {:#x} [{}] {}:{} ({})",
                "",
                i.callee().map_or("?", |c| c.name()),
                i.entry_pc(),
                ranges.join(" "),
                i.call_file(),
                i.call_line(),
                params.join(", "),
                indent = 2 + 2 * depth
            );
        }
    }
}
