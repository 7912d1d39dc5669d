//! Print the structs and unions of a sigdb with their members, one struct a line group:
//! `cargo run -p sigdb --example members -- DB [NAME]` (NAME: only the structs so named).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: members DB [NAME]");
        std::process::exit(2);
    };
    let db = match sigdb::Db::open(path) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("members: {e}");
            std::process::exit(1);
        }
    };
    for i in 0..db.type_count() as u32 {
        let Some(t) = db.type_at(i) else { continue };
        if !matches!(t.kind(), sigdb::TypeKind::Struct | sigdb::TypeKind::Union)
            || args.get(2).is_some_and(|n| n != t.name())
        {
            continue;
        }
        let members = match t.members() {
            Ok(m) => m,
            Err(e) => {
                eprintln!("members: {e}");
                std::process::exit(1);
            }
        };
        println!("#{i} {} ({} bytes)", t.display(), t.size());
        for m in members {
            match m {
                Ok(m) if m.is_bitfield() => println!(
                    "    @{}:{}/{} {}",
                    m.offset(),
                    m.bit_offset() % 8,
                    m.bit_size(),
                    m.ty().declare(m.name())
                ),
                Ok(m) => println!("    @{} {}", m.offset(), m.ty().declare(m.name())),
                Err(e) => println!("    {e}"),
            }
        }
    }
}
