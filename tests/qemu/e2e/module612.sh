#!/bin/sh
# Issue 18 on Debian's 6.12 cloud kernel: the db as a module. `dcg load` inserts
# dcg_sigdb.ko (built from a db of this kernel's vmlinux), /sys/kernel/dcg/vmlinux must be
# the db byte for byte, `dcg sig` and `dcg trace` find it without --db, `dcg unload`
# removes module and file; a module carrying a corrupted db is refused by dcg before the
# kernel sees it; `dcg unload all` removes a loaded module too.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_KTRACE_DEBUG=1
export DCG_STORE=/tmp/empty-store
gone() { if [ -e "$1" ]; then echo "$2: present"; else echo "$2: gone"; fi; }
section_before

begin mod-load
dcg load /dcg/dcg_sigdb.ko; echo "rc=$?"
ls -l /sys/kernel/dcg/
if cmp /sys/kernel/dcg/vmlinux /dcg/k.sigdb; then echo "sysfs identical: yes"; fi
grep '^dcg_sigdb ' /proc/modules | cut -d' ' -f1
dcg list
end mod-load

begin mod-sig
dcg sig do_sys_openat2; echo "rc=$?"
end mod-sig

begin mod-trace
# The default engine on 6.12 (no funcgraph-retval): BPF, db from /sys/kernel/dcg.
LIMIT=120 run_trace m1 --show-retvals --func do_sys_openat2 -- cat /nonexistent
leftovers
end mod-trace

begin mod-twice
dcg load /dcg/dcg_sigdb.ko; echo "rc=$?"
end mod-twice

begin mod-unload
dcg unload; echo "rc=$?"
gone /sys/kernel/dcg/vmlinux "sysfs file"
gone /sys/kernel/dcg "sysfs dir"
gone /sys/module/dcg_sigdb "module"
echo "proc/modules: $(grep -c '^dcg_sigdb ' /proc/modules)"
dcg sig do_sys_openat2 >/dev/null 2>&1; echo "sig without db rc=$?"
dcg unload; echo "unload again rc=$?"
end mod-unload

begin mod-corrupt
dcg load /dcg/bad/dcg_sigdb.ko; echo "rc=$?"
gone /sys/module/dcg_sigdb "module"
end mod-corrupt

begin mod-unload-all
dcg load /dcg/dcg_sigdb.ko >/dev/null; echo "load rc=$?"
dcg unload all; echo "rc=$?"
gone /sys/module/dcg_sigdb "module"
gone /sys/kernel/dcg "sysfs dir"
end mod-unload-all

begin mod-dmesg
dmesg | grep -i 'dcg_sigdb\|WARNING\|BUG' | head -20
echo "kernel warnings: $(dmesg | grep -c 'WARNING\|BUG:\|cut here')"
end mod-dmesg

section_after
