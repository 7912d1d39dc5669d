//! The examples that end `dcg --help`, each subcommand's `--help`, and the EXAMPLES
//! section of their man pages (`dcg-clidoc`).

use dcg_clidoc::Example;

const fn ex(what: &'static str, cmd: &'static str) -> Example {
    Example { what, cmd }
}

const DCG: &[Example] = &[
    ex(
        "Trace a kernel function and everything it calls, with typed return values",
        "dcg trace --show-retvals --func pidfd_create -- ./prog",
    ),
    ex(
        "Trace a program's own functions in process, arguments included",
        "dcg trace --args --func './prog:parse_*' -- ./prog input.txt",
    ),
    ex(
        "Build a db from a binary's DWARF and print one function's signature",
        "dwarfscan ./prog -o prog.db && dcg sig --db prog.db parse_line",
    ),
    ex(
        "Decode a saved function_graph trace with the running kernel's db",
        "dcg decode trace.txt --errors-only",
    ),
];

const TRACE: &[Example] = &[
    ex(
        "The kernel under one system call, return values decoded",
        "dcg trace --show-retvals --func do_sys_openat2 -- cat /etc/hostname",
    ),
    ex(
        "Only the failing calls, with their arguments",
        "dcg trace --args --errors-only --func 'vfs_*' -- ls /nonexistent",
    ),
    ex(
        "libc's strlen in a running process, for ten seconds",
        "dcg trace --args --func libc.so.6:strlen -p 1234 --duration 10",
    ),
    ex(
        "Save the calls and make an HTML report of them",
        "dcg trace --func './prog:*' --output calls.jsonl -- ./prog && dcg report calls.jsonl --format html -o report.html",
    ),
];

const DECODE: &[Example] = &[
    ex(
        "Decode a function_graph trace saved from tracefs",
        "dcg decode --db vmlinux.db trace.txt",
    ),
    ex(
        "Keep only the trees with an error, as JSON lines",
        "dcg decode trace.txt --errors-only --json",
    ),
    ex(
        "Only the opens that failed with ENOENT, cut to the calls of 10 us or more",
        "dcg decode trace.txt --filter 'ret == -ENOENT' --min-duration 10us",
    ),
];

const REPORT: &[Example] = &[
    ex(
        "The call graph of saved calls, as text",
        "dcg report calls.jsonl",
    ),
    ex(
        "A flame graph's folded stacks",
        "dcg report calls.jsonl --format folded | flamegraph.pl > calls.svg",
    ),
    ex(
        "A page to open in a browser",
        "dcg report calls.jsonl --format html -o report.html",
    ),
    ex(
        "Only the trees where a .conf file was opened",
        "dcg report calls.jsonl --filter 'do_sys_openat2: filename ~ \"*.conf\"'",
    ),
];

const SIG: &[Example] = &[
    ex(
        "A kernel function as a C declaration, with where each parameter is",
        "dcg sig do_sys_openat2",
    ),
    ex("Whatever is at an address", "dcg sig 0xffffffff81234560"),
];

const DUMP: &[Example] = &[ex(
    "Every function of a db as JSON, one per line",
    "dcg dump --db prog.db --json",
)];

const LOAD: &[Example] = &[
    ex(
        "Install a kernel's db, matched by build-id",
        "dcg load vmlinux.db",
    ),
    ex(
        "Insert the db module a kernel build made",
        "dcg load /lib/modules/$(uname -r)/kernel/dcg/dcg_sigdb.ko",
    ),
    ex(
        "Fetch a binary's db from debuginfod by build-id",
        "dcg load --build-id 8a55a05d35a15fe072cfd7e22593672daae112af",
    ),
];

const LIST: &[Example] = &[ex("What is loaded", "dcg list")];

const UNLOAD: &[Example] = &[ex(
    "Remove the db module and every db of the store",
    "dcg unload all",
)];

/// The examples of `dcg` (`"dcg"`) or of one of its subcommands.
pub fn of(command: &str) -> &'static [Example] {
    match command {
        "dcg" => DCG,
        "trace" => TRACE,
        "decode" => DECODE,
        "report" => REPORT,
        "sig" => SIG,
        "dump" => DUMP,
        "load" => LOAD,
        "list" => LIST,
        "unload" => UNLOAD,
        _ => &[],
    }
}

/// The `--help` ending of `command`.
pub fn help(command: &str) -> String {
    dcg_clidoc::help_text(of(command))
}
