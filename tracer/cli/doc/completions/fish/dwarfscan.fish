complete -c dwarfscan -s o -l output -d 'Output database' -r -F
complete -c dwarfscan -s j -l jobs -d 'Worker threads (default: all cores)' -r
complete -c dwarfscan -l emit-object -d 'Also write an ELF relocatable object carrying the db in section `.dcg_sigdb` (symbols `dcg_sigdb_start`/`dcg_sigdb_end`), to link into a module or program' -r -F
complete -c dwarfscan -l emit-module -d 'Also write a Kbuild module directory: `dcg_sigdb.ko` (`make -C KDIR M=DIR`) carries the db and exposes it as /sys/kernel/dcg/vmlinux (`modules` for a db of kernel modules alone); insert it with `dcg load DIR/dcg_sigdb.ko`' -r -F
complete -c dwarfscan -l base-build-id -d 'For a db of kernel modules alone: the build-id of the kernel they belong to (hex)' -r
complete -c dwarfscan -l base -d 'For a db of kernel modules alone: the kernel\'s vmlinux (or its db), whose build-id keys this db' -r -F
complete -c dwarfscan -l stats -d 'Print counters and timings to stderr'
complete -c dwarfscan -s q -l quiet -d 'No progress bar'
complete -c dwarfscan -l inline-only-edges -d 'Keep only inline edges whose callee has no out-of-line copy'
complete -c dwarfscan -l no-inline-instances -d 'Leave out the inlined copies of functions (their code ranges, entry pc, call site and where their parameters are there): a smaller db, but inlined functions cannot be traced and trees show no inline frames'
complete -c dwarfscan -l all-inline-instances -d 'Record the inlined copies of header `inline` functions too (`test_bit`, `spin_lock`, `kmalloc`): about eight times as many copies in a kernel. By default only the copies of functions worth tracing are recorded: those not declared `inline` in a header file'
complete -c dwarfscan -l inline-instances -d 'Record the inlined copies of functions worth tracing (the default; kept for scripts)'
complete -c dwarfscan -s h -l help -d 'Print help'
complete -c dwarfscan -s V -l version -d 'Print version'
