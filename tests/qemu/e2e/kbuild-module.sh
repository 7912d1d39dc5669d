#!/bin/sh
# Issue 27 on the test kernel, which was built with dwarfscan/kbuild/linux-7.2.patch and
# CONFIG_DEBUG_INFO_DCG=m: its installed module tree (/lib/modules/RELEASE, from `make
# modules_install`) has kernel/dcg/dcg_sigdb.ko. `modprobe dcg_sigdb` loads it, and dcg
# finds the db in /sys/kernel/dcg with no --db and nothing in the store.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_STORE=/tmp/empty-store
section_before

begin kb-modprobe
grep dcg_sigdb /lib/modules/$(uname -r)/modules.dep
modprobe dcg_sigdb; echo "rc=$?"
grep '^dcg_sigdb ' /proc/modules | cut -d' ' -f1
ls -l /sys/kernel/dcg/
dcg list
end kb-modprobe

begin kb-trace
LIMIT=240 run_trace kb1 --show-retvals --func do_sys_openat2 -- cat /nonexistent
leftovers
end kb-trace

begin kb-unload
modprobe -r dcg_sigdb; echo "rc=$?"
echo "proc/modules: $(grep -c '^dcg_sigdb ' /proc/modules)"
if [ -e /sys/kernel/dcg/vmlinux ]; then echo "sysfs file: present"; else echo "sysfs file: gone"; fi
end kb-unload

begin kb-dmesg
dmesg | grep -i 'dcg_sigdb\|WARNING\|BUG' | head -20
echo "kernel warnings: $(dmesg | grep -c 'WARNING\|BUG:\|cut here')"
end kb-dmesg

section_after
