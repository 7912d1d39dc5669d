//! Real kernels: the test kernel (built by `tests/kernels/testkernel/build.sh`) runs when it
//! is in the cache or with `DCG_KERNEL_TESTS=1`, which builds it; Debian's 6.12 cloud kernel
//! runs with `DCG_KERNEL_TESTS=1` (`.ci/run`).

mod common;

use std::path::PathBuf;

/// The test kernel's cache directory, or None (with a note) when it is not built and the
/// kernel tests are off.
fn testkernel() -> Option<PathBuf> {
    let built = common::cache_dir()
        .join("testkernel")
        .join(".recipe")
        .exists();
    if !built && !common::kernel_tests_enabled() {
        eprintln!("skipped: no test kernel in the cache; set DCG_KERNEL_TESTS=1 to build it");
        return None;
    }
    Some(common::kernel_script("testkernel/build.sh", &[]))
}

fn sig(db: &sigdb::Db, name: &str) -> Vec<String> {
    db.by_name(name)
        .map(|f| dwarfscan::render::render_function(&f))
        .collect()
}

#[test]
fn testkernel_vmlinux_and_modules() {
    let Some(dir) = testkernel() else { return };
    let vmlinux = dir.join("vmlinux");
    let inputs = vec![vmlinux.clone(), dir.join("dbg-modules")];
    let (db, stats) = common::scan_to_db(&inputs);
    eprint!("{}", stats.report());
    assert!(db.flags().contains(sigdb::DbFlags::KERNEL));
    assert_eq!(db.module(0).unwrap().name(), "vmlinux");
    assert!(db.module_by_name("binfmt_misc").is_some());
    assert_eq!(
        sig(&db, "do_sys_openat2"),
        vec!["[static] do_sys_openat2 -> int (int dfd@rdi, const char *filename@rsi, struct open_how *how@rdx)"]
    );
    assert_eq!(
        sig(&db, "bm_status_write"),
        vec!["[static] bm_status_write -> ssize_t (struct file *file@rdi, const char *buffer@rsi, size_t count@rdx, loff_t *ppos@rcx)"]
    );
    let f = db.by_name("bm_status_write").next().unwrap();
    assert_eq!(f.module().unwrap().name(), "binfmt_misc");
    assert_eq!(
        f.addr(),
        0xe50,
        "module functions are laid out with .text at 0"
    );

    let btf = common::btf_funcs_of(&vmlinux);
    let a = common::btf::compare(&btf, &db);
    eprint!("{}", a.report());
    assert!(a.percent() >= 99.0, "{}", a.report());
}

/// The db is the same bytes on every run and for any number of threads (a kernel build
/// runs dwarfscan, and kernels are built reproducibly): units scanned while others are
/// merged skip only the structs of units merged a fixed distance before them.
#[test]
fn testkernel_db_is_the_same_for_any_thread_count() {
    let Some(dir) = testkernel() else { return };
    let inputs = [
        dwarfscan::Input::new(dir.join("vmlinux")),
        dwarfscan::Input::new(dir.join("dbg-modules")),
    ];
    let scan = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut r = dwarfscan::scan(&inputs, &dwarfscan::Options::default()).expect("scan");
            r.to_bytes().expect("serialize")
        })
    };
    let one = scan(1);
    for threads in [2, 4, 2, 8] {
        assert!(
            scan(threads) == one,
            "{threads} threads: another db than 1 thread's"
        );
    }
}

#[test]
fn debian_612_cloud() {
    if !common::kernel_tests_enabled() {
        eprintln!("skipped: set DCG_KERNEL_TESTS=1");
        return;
    }
    let dir = common::kernel_script("fetch-debian-kernel.sh", &["6.12-cloud"]);
    let vmlinux = dir.join("vmlinux");
    let inputs = vec![vmlinux.clone(), dir.join("dbg-modules")];
    let (db, stats) = common::scan_to_db(&inputs);
    eprint!("{}", stats.report());
    let with_code = db
        .functions()
        .filter(|f| !f.flags().contains(sigdb::FuncFlags::INLINE_ONLY))
        .count();
    assert!(with_code >= 50_000, "{with_code} functions with code");
    let btf = common::btf_funcs_of(&vmlinux);
    let a = common::btf::compare(&btf, &db);
    eprint!("{}", a.report());
    assert!(a.percent() >= 99.0, "{}", a.report());
}

/// Scan a Debian vmlinux (`fetch-debian-kernel.sh` flavor) and compare its structs' and
/// unions' members with its `.BTF`: the agreement found.
fn debian_members(flavor: &str) -> common::btf::MemberAgreement {
    let dir = common::kernel_script("fetch-debian-kernel.sh", &[flavor]);
    let vmlinux = dir.join("vmlinux");
    let (db, stats) = common::scan_to_db(std::slice::from_ref(&vmlinux));
    eprint!("{}", stats.report());
    let btf = common::btf_of(&vmlinux);
    let a = common::btf::compare_members(&btf.aggregates(), &common::btf::db_aggregates(&db));
    eprint!("{flavor}: {}", a.report());
    a
}

/// Every struct and union of Debian's 6.12 and 7.2 vmlinux BTF that the db has with the
/// same name and size has the same members (names, bit offsets, bit-field widths). The db
/// holds the structs the functions' types reach, through members too: about 70 % of
/// BTF's (6.12: 5,846 of 8,465); those it lacks no signature reaches (the types of
/// global variables: `pcpu_hot`, `pv_cpu_ops`). Two names are two different structs
/// in the kernel (`elf_thread_core_info`, `pci_root_info`, 7.2's `quirk_entry`): BTF
/// and the db each keep another one, of another size, which is not compared. One
/// exception, in 7.2: the db keeps `struct firmware` as the kernel's Rust bindings
/// describe it, the first unit of the vmlinux to define it, where bindgen renamed its
/// member `priv` (a Rust keyword) to `priv_`; BTF has the C units' spelling.
#[test]
fn debian_members_agree_with_btf() {
    if !common::kernel_tests_enabled() {
        eprintln!("skipped: set DCG_KERNEL_TESTS=1");
        return;
    }
    for flavor in ["6.12-cloud", "7.2-cloud"] {
        let a = debian_members(flavor);
        assert!(a.compared * 100 >= a.btf * 65, "{flavor}: {}", a.report());
        let renamed = a.classes.get("member names differ").map_or(0, |(n, _)| *n);
        assert!(renamed <= 1, "{flavor}: {}", a.report());
        assert_eq!(
            a.identical + renamed,
            a.compared,
            "{flavor}: {}",
            a.report()
        );
    }
}
