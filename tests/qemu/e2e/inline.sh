#!/bin/sh
# Inlined functions (issue 16) on a Debian kernel, BPF engine, db with inline instances:
# pidfd_create (inlined into the pidfd_open syscalls) as the trace target, getname
# (inlined into many path syscalls) likewise (on 7.2 a header helper, which the default
# db leaves out: the host expects the explanation there), and inline frames in a tree
# whose target is out of line. Text and JSON for the host to check; no WARNING.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
P=/dcg/inline-calls

begin pidfd
dcg trace --db $DB --show-retvals --func pidfd_create -- $P pidfd; echo "rc=$?"
end pidfd

begin pidfd-json
dcg trace --db $DB --show-retvals --args --json --func pidfd_create -- $P pidfd \
	> /tmp/p.json 2> /tmp/p.err
echo "rc=$?"
cat /tmp/p.err
cat /tmp/p.json
end pidfd-json

begin glob
# A glob matching inlined and out-of-line functions: both are traced.
dcg trace --db $DB --show-retvals --json --func 'pidfd_*' -- $P pidfd > /tmp/gl.json 2> /tmp/gl.err
echo "rc=$?"
cat /tmp/gl.err
grep '"func":"pidfd_' /tmp/gl.json
end glob

begin getname-json
# Its containers include execve, so the command's own exec is traced too: only getname's
# records and those of its callee are printed.
dcg trace --db $DB --show-retvals --args --json --func getname --trace-output /tmp/g.json \
	-- $P paths > /tmp/g.out 2> /tmp/g.err
echo "rc=$?"
cat /tmp/g.out /tmp/g.err
# getname's records and their children's.
awk 'function num(k,  m) { if (match($0, "\"" k "\":[0-9]+")) return substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3); return "" }
	NR == FNR { if ($0 ~ /"func":"getname"/) keep[num("id")] = 1; next }
	$0 ~ /"func":"getname"/ || (num("parent") in keep)' /tmp/g.json /tmp/g.json
end getname-json

begin frames
# Out-of-line target: calls made from inlined code still sit under inline frames.
dcg trace --db $DB --show-retvals --func __x64_sys_chdir -- $P paths; echo "rc=$?"
end frames

begin no-frames
dcg trace --db $DB --show-retvals --no-inline-frames --func __x64_sys_chdir -- $P paths
echo "rc=$?"
end no-frames

begin irqs-calls
# Reads long enough for the timer to fire inside them: interrupts' inline frames (in
# __sysvec_apic_timer_interrupt's inlined code) have their container's context.
dcg trace --db $DB --show-retvals --func ksys_read --output /tmp/irq.calls \
	-- dd if=/dev/zero of=/dev/null bs=32M count=2 > /tmp/irq.txt 2>&1
echo "rc=$?"
cat /tmp/irq.calls
end irqs-calls

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
