#!/bin/sh
# Issue 18: a dcg_sigdb.ko built for Debian's 6.12 kernel, on another kernel (7.2). dcg
# refuses it because its db's build-id is not the running kernel's; with --force the
# kernel refuses it and dcg explains the kernel's error. Nothing is left loaded.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
gone() { if [ -e "$1" ]; then echo "$2: present"; else echo "$2: gone"; fi; }
begin foreign
dcg load /dcg/dcg_sigdb.ko; echo "rc=$?"
dcg load --force /dcg/dcg_sigdb.ko; echo "rc=$?"
gone /sys/module/dcg_sigdb "module"
gone /sys/kernel/dcg "sysfs dir"
dmesg | grep dcg_sigdb | head -5
echo "kernel warnings: $(dmesg | grep -c 'cut here\|BUG:')"
end foreign
