#!/bin/sh
# The BPF engine (issue 14) on a Debian kernel without funcgraph-retval: every call of a
# few syscalls' trees with its value, as JSON for the host to check against the db; C
# strings; the text tree; no WARNING.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

begin values
# (Debug output: the program's own path, read from the loaded program and the kernel text.)
DCG_KTRACE_DEBUG=1 dcg trace --engine bpf --db $DB --show-retvals --args --json \
	--func do_sys_openat2 \
	-- sh -c 'cat /nonexistent; head -c 8 /proc/version; echo; cat /proc/version > /dev/null' \
	> /tmp/v.json 2> /tmp/v.err
echo "rc=$?"
cat /tmp/v.err
end values
begin values-json
cat /tmp/v.json
end values-json

begin tree
# The default engine: BPF, since the kernel lacks funcgraph-retval.
dcg trace --db $DB --show-retvals --args --func do_sys_openat2 -- cat /nonexistent; echo "rc=$?"
end tree

begin stack
# do_mmap's last three parameters are passed on the stack.
dcg trace --db $DB --show-retvals --args --func do_mmap -- /dcg/syscall-loop mmap; echo "rc=$?"
end stack

begin pairs
# Creating a file stamps it: struct timespec64 (16 bytes) passed and returned in register
# pairs (inode_set_ctime_current, timestamp_truncate, ...).
dcg trace --db $DB --show-retvals --args --func do_sys_openat2 -- touch /tmp/dcg-new-file; echo "rc=$?"
end pairs

begin module
# A module function (binfmt_misc, loaded from the debug package by the initramfs): its
# arguments and values, a registration that works and one that fails.
if grep -q '^binfmt_misc ' /proc/modules; then
	mount -t binfmt_misc none /proc/sys/fs/binfmt_misc
	dcg trace --db $DB --show-retvals --args --func bm_register_write -- sh -c \
		"echo ':dcgtest:E::dcgx::/bin/true:' > /proc/sys/fs/binfmt_misc/register; echo bogus > /proc/sys/fs/binfmt_misc/register"
	echo "rc=$?"
else
	echo "binfmt_misc not loaded"
fi
end module

begin irqs
# Reads long enough for the timer to fire inside them: the interrupts' calls marked in
# the text, their context in the saved calls; hidden with --irqs hide.
dcg trace --db $DB --show-retvals --func ksys_read --output /tmp/irq.calls \
	-- dd if=/dev/zero of=/dev/null bs=32M count=2 > /tmp/irq.txt 2> /tmp/irq.err
echo "rc=$?"
echo "marks: $(grep -c '==========> |' /tmp/irq.txt)"
echo "ends: $(grep -c '<========== |' /tmp/irq.txt)"
echo "irq time said: $(grep -c '\*/ /\* irqs [0-9.]* us \*/' /tmp/irq.txt)"
echo "interrupt records: $(grep -cE '"ctx":"(irq|softirq|nmi)"' /tmp/irq.calls)"
echo "task records: $(grep -c '"ctx":"task"' /tmp/irq.calls)"
echo "--- first interrupt"
grep -m1 -B2 -A6 '==========> |' /tmp/irq.txt
echo "--- its record"
grep -m1 -E '"ctx":"(irq|softirq)"' /tmp/irq.calls | cut -c1-300
dcg trace --db $DB --irqs hide --show-retvals --func ksys_read \
	-- dd if=/dev/zero of=/dev/null bs=32M count=2 > /tmp/irq-hidden.txt 2>&1
echo "hidden rc=$?"
echo "hidden marks: $(grep -c '==========> |' /tmp/irq-hidden.txt)"
echo "hidden reads: $(grep -c 'ksys_read' /tmp/irq-hidden.txt)"
end irqs

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
