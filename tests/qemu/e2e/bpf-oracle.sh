#!/bin/sh
# The BPF engine against funcgraph-retval (issue 14), on the test kernel: one workload
# traced by both engines at once (two sessions on one waiting process), as JSON records,
# printed for the host to compare call by call. Then the engine on its own: strings,
# --errors-only, cleanup after SIGINT and SIGKILL, calls lost to interrupts reported.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
ROOTS="--func do_sys_openat2 --func do_faccessat"
WORK='cat /nonexistent; head -c 8 /proc/version; echo; test -r /nonexistent; test -r /proc/version; cat /tmp; sleep 1'

begin oracle
rm -f /tmp/go
sh -c "while [ ! -e /tmp/go ]; do sleep 0.1; done; $WORK" > /tmp/work.out 2>&1 &
w=$!
# (Debug output: the list of functions the engine does not attach to.)
DCG_KTRACE_DEBUG=1 dcg trace --engine bpf --db $DB --show-retvals --json $ROOTS -p $w > /tmp/bpf.json 2> /tmp/bpf.err &
b=$!
# function_graph without interrupts (the comparison leaves them out): on this kernel every
# function an interrupt runs also runs the interpreted BPF program, which function_graph
# records call by call: with funcgraph-irqs its reader did not catch up in 10 minutes.
DCG_KTRACE_DEBUG=1 dcg trace --engine fgraph --irqs hide --db $DB --show-retvals --json $ROOTS -p $w > /tmp/fg.json 2> /tmp/fg.err &
f=$!
wait_for /tmp/bpf.err 'dcg: tracing' 240
wait_for /tmp/fg.err 'dcg: tracing' 240
up() { cut -d' ' -f1 /proc/uptime; }
echo "oracle: both tracing at $(up) s"
touch /tmp/go
wait $w
echo "oracle: workload done at $(up) s"
# The outputs are files: both sessions only copy their records out until they stop,
# then decode them (function_graph's are many: it also records every run of the BPF
# program, interpreted here).
sleep 2
echo "oracle: SIGINT at $(up) s"
kill -INT $b $f
# A session that does not end within 300 s of SIGINT is said and killed (the host sees
# which one, and what it did last, instead of the guest's timeout).
watchdog() { # PID NAME
	sleep 300
	kill -0 $1 2>/dev/null && { echo "$2 session still running 300 s after SIGINT"; kill -KILL $1; }
}
watchdog $b bpf & wb=$!
watchdog $f fgraph & wf=$!
wait $b; echo "bpf rc=$? at $(up) s"
wait $f; echo "fgraph rc=$? at $(up) s"
kill $wb $wf 2>/dev/null
cat /tmp/bpf.err /tmp/fg.err
end oracle
begin oracle-bpf
cat /tmp/bpf.json
end oracle-bpf
begin oracle-fgraph
cat /tmp/fg.json
end oracle-fgraph

begin strings
dcg trace --engine bpf --db $DB --show-retvals --args --func do_sys_openat2 -- cat /nonexistent; echo "rc=$?"
end strings

begin cleanup
dcg trace --engine bpf --db $DB --func do_sys_openat2 -- sh -c 'while true; do cat /proc/version > /dev/null; done' > /tmp/c.out 2> /tmp/c.err &
c=$!
wait_for /tmp/c.err 'dcg: tracing' 240
kill -INT $c; wait $c; echo "after SIGINT rc=$?"
# (What it wrote, and any OOM kill: a session that ends must not grow without bound.)
echo "output after SIGINT: $(wc -c < /tmp/c.out) bytes, $(wc -l < /tmp/c.out) lines, deepest nesting $(awk '{ i = index($0, "|"); if (i) { s = substr($0, i + 1); match(s, /^ */); if (RLENGTH > m) m = RLENGTH } } END { print int(m / 2) }' /tmp/c.out)"
dmesg | grep -iE 'out of memory|killed process|oom-kill' | head -3
rm -f /tmp/c.err # (the next wait_for must not see this session's line)
dcg trace --engine bpf --db $DB --func do_sys_openat2 -- sh -c 'while true; do cat /proc/version > /dev/null; done' > /tmp/c.out 2> /tmp/c.err &
c=$!
wait_for /tmp/c.err 'dcg: tracing' 240
kill -KILL $c; wait $c 2>/dev/null
sleep 1
pkill -f 'while true' 2>/dev/null
echo "bpf objects held by dcg processes: $(for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null; done | grep -c 'bpf-\(link\|prog\|map\)')"
end cleanup

begin losses
# Interrupts arriving while the program records a call (most of the traced task's time
# goes to the interpreted program here, so the timer fires in records): what they run is
# skipped by the kernel, counted, and the trees that lost calls say so.
dcg trace --engine bpf --db $DB --show-retvals --json --func ksys_read -- \
	dd if=/dev/zero of=/dev/null bs=1M count=24 > /tmp/l.json 2> /tmp/l.err
echo "rc=$?"
cat /tmp/l.err
end losses
begin losses-json
cat /tmp/l.json
end losses-json

begin dmesg
dmesg | grep -E 'WARNING:|BUG:' | head -5
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
