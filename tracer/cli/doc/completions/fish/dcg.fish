# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_dcg_global_optspecs
    string join \n offline h/help V/version
end

function __fish_dcg_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_dcg_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_dcg_using_subcommand
    set -l cmd (__fish_dcg_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c dcg -n "__fish_dcg_needs_command" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_needs_command" -s h -l help -d 'Print help'
complete -c dcg -n "__fish_dcg_needs_command" -s V -l version -d 'Print version'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "sig" -d 'Print functions as C declarations with parameter locations, module, address, flags'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "dump" -d 'Print every function of the db'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "decode" -d 'Rewrite saved ftrace function_graph text with every value decoded by its type'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "report" -d 'Call graph report of saved calls or ftrace text: counts, times, errors, edges; as text, json, dot, folded stacks or Chrome trace JSON'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "trace" -d 'Trace functions live, every value decoded by its type (`--func PATH:PATTERN`: user-space functions with uprobes)'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "load" -d 'Validate a db and install it in the store, matched by build-id; or validate the db a kernel module (`dwarfscan --emit-module`) carries and insert the module'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "list" -d 'List the dbs of loaded modules (/sys/kernel/dcg) and of the store'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "unload" -d 'Remove the db module (no argument), store entries (a build-id), or both (`all`)'
complete -c dcg -n "__fish_dcg_needs_command" -f -a "generate-docs" -d 'Write the man pages and shell completions generated from these definitions into DIR (`man/`, `completions/`): what `tracer/cli/doc/` holds and the package installs'
complete -c dcg -n "__fish_dcg_using_subcommand sig" -l db -d 'Signature db (repeat for module dbs); default: /sys/kernel/dcg, else the store\'s db for the running kernel' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand sig" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand sig" -s h -l help -d 'Print help'
complete -c dcg -n "__fish_dcg_using_subcommand dump" -l db -d 'Signature db (repeat for module dbs); default: /sys/kernel/dcg, else the store\'s db for the running kernel' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand dump" -l json -d 'One JSON object per function per line (schema in README)'
complete -c dcg -n "__fish_dcg_using_subcommand dump" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand dump" -s h -l help -d 'Print help'
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l db -d 'Signature db (repeat for module dbs); default: /sys/kernel/dcg, else the store\'s db for the running kernel' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l output -d 'Also save the decoded calls to FILE (saved-calls JSON lines, for `dcg report`)' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l color -d 'Color error values: auto (on a terminal), always, never' -r -f -a "auto\t'On a terminal'
always\t'Always'
never\t'Never'"
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l formats -d 'The kernel\'s `events/ftrace/*/format` files, one after the other (raw input)' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l kallsyms -d 'The kernel\'s `/proc/kallsyms` or `System.map`: names functions of raw input, and pointers that land on a symbol (`idmap=&nop_mnt_idmap`) in any input' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l cpu -d 'The CPU whose buffer the raw input is (for the CPU column)' -r
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l page-size -d 'Ring-buffer page size of the raw input' -r
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l filter -d 'Only the trees whose top-level call passes EXPR (repeat: all must hold), as `dcg report --filter` takes it; `FUNC: EXPR` keeps the trees where some call of FUNC passes it. The saved-calls file (--output) keeps every call' -r
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l min-duration -d 'Only the calls at least D long (`10us`, `1.5ms`, `2s`) and the calls leading to them' -r
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l json -d 'One JSON object per completed call'
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l errors-only -d 'Only call paths that contain an error return'
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l raw -d 'The input is binary ring-buffer pages (`per_cpu/cpuN/trace_pipe_raw`), not text; needs --formats and --kallsyms'
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l no-inline-frames -d 'Do not show inlined code as frames of the inlined functions. By default, where the trace has return addresses (`funcgraph-retaddr`) and the db inline instances, a call made from a function\'s inlined code is shown under a frame for it'
complete -c dcg -n "__fish_dcg_using_subcommand decode" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand decode" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dcg -n "__fish_dcg_using_subcommand report" -l db -d 'Signature db for ftrace text input (repeat for module dbs); default: /sys/kernel/dcg, else the store\'s db for the running kernel, else values stay raw' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand report" -l format -d 'Output format' -r -f -a "text\t'Tables for people'
json\t'One JSON object with every function and edge'
dot\t'Graphviz DOT of the call graph, call counts on the edges'
folded\t'Folded stacks (`root;child;leaf COUNT`) for flame graph tools'
chrome\t'Chrome trace-event JSON (Perfetto, chrome://tracing): one slice per call'
html\t'One self-contained HTML page (call trees with every value, flame graph, call graph, tables) for a browser; write it with -o FILE'"
complete -c dcg -n "__fish_dcg_using_subcommand report" -l top -d 'Rows per table in the text report' -r
complete -c dcg -n "__fish_dcg_using_subcommand report" -l folded-weight -d 'Weight of a folded stack: the number of calls ending there, or their self time' -r -f -a "calls\t'Calls whose stack it is: the weights add up to the number of calls'
self-ns\t'Self time in ns of those calls (needs durations)'"
complete -c dcg -n "__fish_dcg_using_subcommand report" -l root -d 'Only calls of FUNC (`func` or `func [module]`) and what they call; FUNC\'s calls become the top-level calls' -r
complete -c dcg -n "__fish_dcg_using_subcommand report" -s o -l output -d 'Write the report to FILE instead of standard output' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand report" -l filter -d 'Only the trees whose top-level call passes EXPR (repeat: all must hold), e.g. \'ret == -ENOENT\', \'name ~ "*.conf"\', \'flags & 0x40\', \'duration > 1ms\'; `FUNC: EXPR` keeps the trees where some call of FUNC passes it. Names: the parameters, ret, duration, comm, tid, cpu (saved calls do not know the process id, pid)' -r
complete -c dcg -n "__fish_dcg_using_subcommand report" -l min-duration -d 'Only the calls at least D long (`10us`, `1.5ms`, `2s`) and the calls leading to them' -r
complete -c dcg -n "__fish_dcg_using_subcommand report" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l func -d 'Functions to trace: a glob over function names (`vfs_*`), or `PATH:PATTERN` for the functions of a user-space executable or shared library (`./prog:parse_*`). Both kinds together trace both sides in one tree: each thread\'s kernel calls under the user call that made them' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l depth -d 'Show calls only down to this nesting depth (1: top-level calls only; 0: all)' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l count -d 'Stop after N completed top-level calls (N >= 1); with --filter or --min-duration, after N trees shown' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l filter -d 'Only the trees whose top-level call passes EXPR (repeat: all must hold), as `dcg report --filter` takes it: parameters by name, member paths (`how->flags & 0x40`, `c->in.tag == "x"`), `ret`, `duration`, `comm`, `pid`, `tid`, `cpu` (`ret == -ENOENT`, `name ~ "*.conf"`); `FUNC: EXPR` keeps the trees where some call of FUNC passes it. Checked against the functions\' signatures before tracing; what it reads is captured and shown (as --args, --show-retvals, a member as --fields FUNC:PATH; kernel members need the BPF engine). The saved calls (--output) keep every call' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l min-duration -d 'Only the calls at least D long (`10us`, `1.5ms`, `2s`) and the calls leading to them' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l comm -d 'Kernel: only the tasks named NAME (their `comm`, as `ps` shows it) start trees. The BPF engine checks it when a task enters a root' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l cgroup -d 'Kernel: only the tasks in this cgroup v2 (a directory of the cgroup2 mount, or a path under /sys/fs/cgroup: `system.slice/ssh.service`) start trees, matched by cgroup id in the BPF program' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l notrace -d 'Never trace the functions PATTERN names (repeat for more): not attached, hooked or probed; the calls they make still show, under the nearest traced caller. A glob over names, or `PATH:PATTERN` for a user-space file\'s' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l fields -d 'Show members of the structs a parameter points to at the call\'s entry, with the arguments: `[PATH:]FUNC:` then comma-separated paths from a parameter through `->` and `.` (`./prog:apply:c->port,c->next->name,c->in.a`; without FUNC, every traced function with such a parameter; for the kernel, every --func root). At most 3 pointers followed; scalars, enums, pointers and bit-fields. Kernel functions: 8 members a function at most (`do_sys_openat2:how->flags,how->mode`), read by the BPF program or, with function_graph, by a probe event. Output parameters (pointers to non-const scalars) are read again at the return' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l deref -d 'Show pointer arguments to structs and unions with their members, C initializer style (`c=&conf{port=8080, name="dcg", in={a=7}}`), N levels of pointers deep (1 by default, at most 3; `=` required: `--deref=2`). Implies --args. Kernel functions: each pointer parameter in an argument register, at most 8 reads of 480 bytes a function, copied by the BPF program or, with function_graph, by a probe event. Output parameters (pointers to non-const scalars, in user space structs too) are read again at the return: `/* ret=1 *out=8087 */`' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l kernel -d 'With user functions (`PATH:PATTERN`): under each traced user call, the kernel calls its thread makes, every system call as a frame with the calls below it (BPF engine); `=PATTERN`: only the subtrees of the kernel functions PATTERN matches (`--kernel=do_sys_openat2`). Kernel patterns in --func do the same' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l kernel-depth -d 'With --kernel: kernel calls shown this many levels deep below a user call (1: the system calls alone; 0: all), as uftrace\'s -K' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l deref-bytes -d 'Bytes --deref reads per argument at most; `…` shows where it cut' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l duration -d 'Stop after SECS seconds (fractions allowed; more than 0, at most a year)' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l output -d 'Also save the calls to FILE (saved-calls JSON lines, for `dcg report`)' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand trace" -s o -l trace-output -d 'Write the trace (the calls, their JSON or the report) to FILE instead of standard output, so the traced command\'s own output stays apart from it. FILE appears when the trace ends (a regular file is replaced whole; a device or FIFO written in place)' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l report -d 'Print the call-graph report of the traced calls when the trace ends, instead of the calls (what `dcg report` prints for a saved trace); `--report html -o FILE`: the HTML page (any `dcg report --format`)' -r -f -a "text\t'Tables for people'
json\t'One JSON object with every function and edge'
dot\t'Graphviz DOT of the call graph, call counts on the edges'
folded\t'Folded stacks (`root;child;leaf COUNT`) for flame graph tools'
chrome\t'Chrome trace-event JSON (Perfetto, chrome://tracing): one slice per call'
html\t'One self-contained HTML page (call trees with every value, flame graph, call graph, tables) for a browser; write it with -o FILE'"
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l db -d 'Signature db of the traced code (sigdb file or ELF with `.dcg_sigdb`); default: the store\'s db (by build-id), else one built in memory from the binary\'s DWARF' -r -F
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l color -d 'Color error values: auto (on a terminal), always, never' -r -f -a "auto\t'On a terminal'
always\t'Always'
never\t'Never'"
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l engine -d 'How kernel calls are captured: fgraph (function_graph; values from funcgraph-retval, or probe events where the kernel lacks it), bpf (a BPF kprobe.session program on every traceable function: every value and C strings), or auto: bpf when values are asked for and the kernel lacks funcgraph-retval. User space: inproc (a recorder dcg preloads into the command it starts: compiler hooks of `-pg` and `-fpatchable-function-entry` builds, else patched entries; every value, floats included) or uprobe; auto: inproc for a command dcg starts, uprobe for `-p PID` and static binaries. Tracing both sides: once per side (`--engine inproc --engine fgraph`), a side not named taking its default (the kernel\'s: bpf, function_graph where BPF is unusable)' -r -f -a "auto\t'Chosen by the kernel\'s features'
fgraph\t'function_graph'
bpf\t'BPF kprobe.session'
inproc\t'User space: the in-process recorder'
uprobe\t'User space: uprobes'"
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l irqs -d 'Kernel: calls made in interrupt context (hardirq, softirq, NMI) while a traced task ran: `show` keeps them in its tree, between `==========> irq` and `<==========` marks (as function_graph\'s funcgraph-irqs), with the time they took said at the calls they interrupted; `hide` leaves them out' -r -f -a "show\t'Keep them, marked'
hide\t'Leave them out'"
complete -c dcg -n "__fish_dcg_using_subcommand trace" -s p -l pid -d 'Trace a running process (and its threads) instead of starting a command' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l records-in-memory -d 'Kernel: records (BPF) or pages (function_graph) waiting undecoded beyond this many bytes go to a file in the temporary directory (tests; default 64 MiB)' -r
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l bpf-mode -d 'Kernel, BPF engine: attach by one kprobe.session link or by entry and return links (tests; default: session where the BPF JIT is on)' -r -f -a "session\t'One kprobe.session link'
entry-return\t'An entry link and a return link'"
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l show-retvals -d 'Show return values, decoded by their types'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l args -d 'Show arguments, decoded by their types'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l stack -d 'Print the stack that led to each top-level call above its tree, outermost first (`function+offset [module]`, inlined functions expanded from the db); saved calls keep it innermost first. Kernel: the kernel\'s unwinder (BPF: bpf_get_stack; function_graph: a stacktrace probe, with binary records); user space: both engines (the stack\'s top copied, unwound by dcg)'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l json -d 'One JSON object (a saved-calls record) per completed call instead of text'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l errors-only -d 'Only call paths that contain an error return'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l errno -d 'User space: read returns in -4095..-1 as -errno (`-ENOENT`, `ERR_PTR(-ENOMEM)`) and count them as errors, as for the kernel, whose functions follow that convention (always on there). Off by default: user-space code mostly returns -1, -2 as numbers'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l no-inline-frames -d 'Do not show inlined code as frames of the inlined functions. By default, where the db has inline instances (dwarfscan writes them unless `--no-inline-instances`), calls made from a function\'s inlined code are shown under a frame for it (BPF engine, function_graph with return addresses, user space): `pidfd_create(…) /* inlined in __x64_sys_pidfd_open */ {`'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l no-children -d 'User space (every engine, and the functions the in-process engine leaves to uprobes): do not trace the processes the command forks, nor the programs they exec (by default they are traced, as the command is); its threads are traced'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l fgraph-probes -d 'Kernel, function_graph: every value from exit / entry probe events, as on a kernel without funcgraph-retval and funcgraph-args (tests)'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l fgraph-text -d 'Kernel, function_graph: read the stream as text, never as binary pages (tests)'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand trace" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c dcg -n "__fish_dcg_using_subcommand load" -l build-id -d 'Instead of a file: fetch the db of this build-id (a kernel\'s or a binary\'s) from the debuginfod servers of DEBUGINFOD_URLS (its .dcg_sigdb section, else a db built from its debug file) and install it' -r
complete -c dcg -n "__fish_dcg_using_subcommand load" -l kernel-build-id -d 'Check a kernel db against this build-id instead of the running kernel\'s' -r
complete -c dcg -n "__fish_dcg_using_subcommand load" -l force -d 'Load a kernel db even if its build-id is not the running kernel\'s'
complete -c dcg -n "__fish_dcg_using_subcommand load" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand load" -s h -l help -d 'Print help'
complete -c dcg -n "__fish_dcg_using_subcommand list" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand list" -s h -l help -d 'Print help'
complete -c dcg -n "__fish_dcg_using_subcommand unload" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand unload" -s h -l help -d 'Print help'
complete -c dcg -n "__fish_dcg_using_subcommand generate-docs" -l offline -d 'Never ask a debuginfod server (DEBUGINFOD_URLS) for a db, in any command (an empty DEBUGINFOD_URLS does the same)'
complete -c dcg -n "__fish_dcg_using_subcommand generate-docs" -s h -l help -d 'Print help'
