//! Lookup and open speed on a 100,000-function database.
//!
//! Targets: `by_addr` ≤ 100 ns, `by_name` ≤ 200 ns, `open` of a 2 MB db ≤ 5 ms, a
//! struct's members from a cold block ≤ 2 µs.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use sigdb::*;
use std::hint::black_box;

const FUNCS: usize = 100_000;

/// A kernel-shaped db: 100k functions with kernel-like names, 0–6 parameters each,
/// a few hundred types, structs of 8 members (one points back at its struct).
fn build(funcs: usize) -> Vec<u8> {
    let mut b = DbBuilder::new(62);
    b.set_flags(DbFlags::KERNEL);
    let m = b.add_module(ModuleDesc {
        name: "vmlinux".into(),
        kind: ModuleKind::Kernel,
        build_id: vec![7; 20],
        base: 0xffff_ffff_8100_0000,
    });
    let int = b.add_type(TypeDesc::base(TypeKind::Int, "int", 4, true));
    let mut types = vec![int];
    for i in 0..300 {
        let s = b.add_type(TypeDesc::aggregate(
            TypeKind::Struct,
            &format!("struct_{i}"),
            64,
        ));
        let ptr = b.add_type(TypeDesc::pointer(s, 8));
        let members = (0..8u64)
            .map(|k| MemberDesc {
                name: format!("field_{k}"),
                ty: if k == 0 { ptr } else { int },
                bit_offset: k * 64,
                bit_size: 0,
            })
            .collect();
        b.set_members(s, members);
        types.push(ptr);
    }
    let words = [
        "do", "sys", "vfs", "read", "write", "page", "alloc", "free", "sched", "net",
    ];
    let mut addr = 0xffff_ffff_8100_0000u64;
    for i in 0..funcs {
        let name = format!(
            "{}_{}_{}_{i}",
            words[i % 10],
            words[(i / 10) % 10],
            words[(i / 100) % 10]
        );
        let params = (0..i % 7)
            .map(|k| ParamDesc {
                name: format!("arg{k}"),
                ty: types[(i * 7 + k) % types.len()],
                loc: Location::Reg(SYSV_INT_ARG_REGS[k % 6]),
            })
            .collect();
        let size = 16 + (i % 500) as u32;
        b.add_function(FunctionDesc {
            module: m,
            addr,
            size,
            name,
            symbol: None,
            ret: types[i % types.len()],
            params,
            flags: FuncFlags::empty(),
        });
        addr += size as u64 + 16;
    }
    b.finish().unwrap()
}

fn bench(c: &mut Criterion) {
    synthetic(c);
    // A real db (e.g. Debian 6.12's vmlinux, built by dwarfscan), when given.
    let Some(real) = std::env::var_os("DCG_BENCH_DB") else {
        eprintln!("set DCG_BENCH_DB=FILE.sigdb to also time a real db");
        return;
    };
    real_db(c, std::path::Path::new(&real));
}

/// Lookups and opens on the kernel-shaped dbs [`build`] makes.
fn synthetic(c: &mut Criterion) {
    let bytes = build(FUNCS);
    let db = Db::from_bytes(bytes.clone()).unwrap();
    let addrs: Vec<u64> = (0..1024)
        .map(|i| db.function(i * 97).unwrap().addr() + 5)
        .collect();
    let names: Vec<String> = (0..1024)
        .map(|i| db.function(i * 97).unwrap().name().to_string())
        .collect();
    eprintln!(
        "db: {} functions, {} bytes",
        db.function_count(),
        bytes.len()
    );

    let mut i = 0;
    c.bench_function("by_addr (100k functions)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(db.by_addr(0, black_box(addrs[i])).map(|f| f.size()))
        })
    });
    let mut j = 0;
    c.bench_function("by_name (100k functions)", |b| {
        b.iter(|| {
            j = (j + 1) & 1023;
            black_box(db.by_name(black_box(&names[j])).next().map(|f| f.addr()))
        })
    });

    // open() of a ~2 MB db from a file (mmap + full validation).
    let small = build(32_000);
    eprintln!("open bench db: {} bytes", small.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.sigdb");
    std::fs::write(&path, &small).unwrap();
    c.bench_function("open (2 MB db, mmap + validate)", |b| {
        b.iter(|| black_box(Db::open(&path).unwrap().function_count()))
    });
    c.bench_function("from_bytes (2 MB db, validate only)", |b| {
        b.iter_batched(
            || small.clone(),
            |v| black_box(Db::from_bytes(v).unwrap().function_count()),
            BatchSize::LargeInput,
        )
    });
}

/// Opens, lookups and first accesses on the real db at `real`.
fn real_db(c: &mut Criterion, real: &std::path::Path) {
    let len = std::fs::metadata(real).unwrap().len();
    c.bench_function(&format!("open (real db, {len} bytes)"), |b| {
        b.iter(|| black_box(Db::open(real).unwrap().function_count()))
    });
    let db = Db::open(real).unwrap();
    let n = db.function_count();
    let mut k = 0usize;
    c.bench_function("open + first params access (real db)", |b| {
        b.iter(|| {
            // A fresh open each time: nothing of the function is cached by the db.
            let db = Db::open(real).unwrap();
            k = (k + 7919) % n;
            let f = db.function(k).unwrap();
            black_box(
                f.params()
                    .map(|p| p.name().len() + p.ty().display().len())
                    .sum::<usize>(),
            )
        })
    });
    // Lookups on the real db: code addresses and names of 1024 spread functions.
    let with_code: Vec<_> = db.functions().filter(|f| f.size() > 0).collect();
    let picks: Vec<_> = (0..1024)
        .map(|i| with_code[i * 7919 % with_code.len()])
        .collect();
    real_lookups(c, &db, &picks);
    cold_params(c, real, n);
    cold_blocks_in_memory(c, real, &db);
    cold_frames(c, real, &db, &picks);
    members(c, real, &db);
    let mut m = 0usize;
    c.bench_function("first params access (real db, open)", |b| {
        b.iter(|| {
            m = (m + 7919) % n;
            let f = db.function(m).unwrap();
            black_box(
                f.params()
                    .map(|p| p.name().len() + p.ty().display().len())
                    .sum::<usize>(),
            )
        })
    });
}

/// Lookups by address, by name and of a function's instances on the open real db.
fn real_lookups(c: &mut Criterion, db: &Db, picks: &[Function<'_>]) {
    let mut i = 0;
    c.bench_function("by_addr (real db)", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            let f = picks[i];
            black_box(
                db.by_addr(f.module_index(), black_box(f.addr() + 1))
                    .map(|f| f.size()),
            )
        })
    });
    let mut j = 0;
    c.bench_function("by_name (real db)", |b| {
        b.iter(|| {
            j = (j + 1) & 1023;
            black_box(
                db.by_name(black_box(picks[j].name()))
                    .next()
                    .map(|f| f.addr()),
            )
        })
    });
    if db.instance_count() > 0 {
        let mut q = 0;
        c.bench_function("instances_in (real db, all of one function)", |b| {
            b.iter(|| {
                q = (q + 1) & 1023;
                black_box(
                    db.instances_in(picks[q].index())
                        .map(|i| i.entry_pc())
                        .sum::<u64>(),
                )
            })
        });
    }
}

/// First accesses to a function's parameters on a freshly opened real db (of `n`
/// functions).
fn cold_params(c: &mut Criterion, real: &std::path::Path, n: usize) {
    // Nothing cached: each access is the first one on a freshly opened db (the open is
    // not timed), so a compressed block would be decompressed in the timed part.
    let mut m_cold = 0usize;
    c.bench_function("first params access (real db, fresh open, cold)", |b| {
        b.iter_batched(
            || {
                m_cold = (m_cold + 7919) % n;
                (Db::open(real).unwrap(), m_cold)
            },
            |(db, m)| {
                let f = db.function(m).unwrap();
                black_box(
                    f.params()
                        .map(|p| p.name().len() + p.ty().display().len())
                        .sum::<usize>(),
                );
                db
            },
            BatchSize::PerIteration,
        )
    });
    // The parameter records alone (location, type size), cold: the first read of an LZ4
    // parameter block and type block, no string frame.
    let mut r_cold = 0usize;
    c.bench_function(
        "first param records (real db, fresh open, cold LZ4 blocks, no names)",
        |b| {
            b.iter_batched(
                || {
                    r_cold = (r_cold + 7919) % n;
                    (Db::open(real).unwrap(), r_cold)
                },
                |(db, m)| {
                    let f = db.function(m).unwrap();
                    black_box(
                        f.params()
                            .map(|p| p.loc().encode().0 as usize + p.ty().size() as usize)
                            .sum::<usize>(),
                    );
                    db
                },
                BatchSize::PerIteration,
            )
        },
    );
}

/// What a cold LZ4 block costs on a db already in memory.
fn cold_blocks_in_memory(c: &mut Criterion, real: &std::path::Path, db: &Db) {
    let n = db.function_count();
    // On a db whose bytes are already in memory (a fresh `Db` over resident bytes: no
    // page faults, as for a db mapped and read before), what a cold LZ4 block costs: the
    // first parameter's record (its location), one parameter block decompressed and
    // checked; then the same with its type's record, a type block more.
    let bytes = std::fs::read(real).unwrap();
    let with_params: Vec<usize> = (0..n)
        .filter(|&m| db.function(m).is_some_and(|f| f.params().len() > 0))
        .collect();
    for typed in [false, true] {
        let mut k = 0usize;
        let name = if typed {
            "first param record + its type (real db in memory, cold LZ4 blocks)"
        } else {
            "first param record (real db in memory, cold LZ4 block)"
        };
        c.bench_function(name, |b| {
            b.iter_batched(
                || {
                    k = (k + 7919) % with_params.len();
                    (Db::from_bytes(bytes.clone()).unwrap(), with_params[k])
                },
                |(db, m)| {
                    let p = db.function(m).unwrap().params().next().unwrap();
                    let ty = if typed { p.ty().size() as usize } else { 0 };
                    black_box(p.loc().encode().0 as usize + ty);
                    db
                },
                BatchSize::PerIteration,
            )
        });
    }
}

/// A struct's members on a db in memory: from a cold member block (offsets and widths,
/// the struct's type record already read), and a member found by name once blocks and
/// strings are warm.
fn members(c: &mut Criterion, real: &std::path::Path, db: &Db) {
    let structs: Vec<u32> = (0..db.type_count() as u32)
        .filter(|&i| {
            db.type_at(i)
                .is_some_and(|t| t.members().is_ok_and(|m| m.count() > 0))
        })
        .collect();
    if structs.is_empty() {
        eprintln!("no struct members in this db");
        return;
    }
    let bytes = std::fs::read(real).unwrap();
    let mut k = 0usize;
    c.bench_function(
        "struct members: offsets and widths (real db in memory, cold LZ4 member block)",
        |b| {
            b.iter_batched(
                || {
                    k = (k + 7919) % structs.len();
                    let db = Db::from_bytes(bytes.clone()).unwrap();
                    black_box(db.type_at(structs[k]).map(|t| t.size()));
                    (db, structs[k])
                },
                |(db, s)| {
                    let t = db.type_at(s).unwrap();
                    black_box(
                        t.members()
                            .unwrap()
                            .map(|m| m.map_or(0, |m| (m.bit_offset() + m.bit_size()) as usize))
                            .sum::<usize>(),
                    );
                    db
                },
                BatchSize::PerIteration,
            )
        },
    );
    let named: Vec<(u32, String)> = structs
        .iter()
        .step_by(7)
        .filter_map(|&s| {
            let last = db.type_at(s)?.members().ok()?.last()?.ok()?;
            Some((s, last.name().to_string()))
        })
        .collect();
    let mut q = 0usize;
    c.bench_function("struct member by name, its last (real db, warm)", |b| {
        b.iter(|| {
            q = (q + 1) % named.len();
            let (s, name) = &named[q];
            let t = db.type_at(*s).unwrap();
            black_box(t.members().unwrap().find(name).unwrap().map(|m| m.offset()))
        })
    });
}

/// What a cold zstd frame costs: a string frame for a lookup by name, an instance frame
/// for a function's instances.
fn cold_frames(c: &mut Criterion, real: &std::path::Path, db: &Db, picks: &[Function<'_>]) {
    // A lookup by name on a fresh open: its first compare decompresses a string frame.
    let mut s_cold = 0usize;
    c.bench_function("by_name (real db, fresh open, cold string frame)", |b| {
        b.iter_batched(
            || {
                s_cold = (s_cold + 1) & 1023;
                (Db::open(real).unwrap(), picks[s_cold].name().to_string())
            },
            |(db, name)| {
                black_box(db.by_name(&name).next().map(|f| f.addr()));
                db
            },
            BatchSize::PerIteration,
        )
    });
    if db.instance_count() > 0 {
        let callers: Vec<u32> = db
            .instances()
            .step_by(997)
            .map(|i| i.caller_index())
            .collect();
        let mut q = 0usize;
        c.bench_function(
            "instances_in (real db, fresh open, cold frame: decompress + check)",
            |b| {
                b.iter_batched(
                    || {
                        q = (q + 1) % callers.len();
                        (Db::open(real).unwrap(), callers[q])
                    },
                    |(db, caller)| {
                        black_box(db.instances_in(caller).map(|i| i.entry_pc()).sum::<u64>());
                        db
                    },
                    BatchSize::PerIteration,
                )
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
