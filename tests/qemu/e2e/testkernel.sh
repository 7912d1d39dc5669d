#!/bin/sh
# Kernel e2e scenarios 2-5 on the test kernel (tests/kernels/testkernel) (funcgraph-retval, funcgraph-args).
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_KTRACE_DEBUG=1
section_before

begin s2-retvals
run_trace s2 --db $DB --show-retvals --func do_sys_openat2 -- cat /nonexistent
end s2-retvals

begin s2-report
# The same workload with --report: the call-graph report instead of the tree.
dcg trace --db $DB --show-retvals --report --func do_sys_openat2 -- cat /nonexistent; echo "rc=$?"
end s2-report

begin s2-filter
# --filter with the function_graph engine (issue 40): only the failing opens' trees, and
# --count over the trees shown.
OPENS='cat /nonexistent; cat /proc/version > /dev/null; cat /nonexistent2'
dcg trace --db $DB --show-retvals --json --func do_sys_openat2 --filter 'ret == -ENOENT' \
	-- sh -c "$OPENS" > /tmp/s2f.json 2> /tmp/s2f.err
echo "rc=$?"
echo "kept: $(grep '"parent":null' /tmp/s2f.json | grep -c '"ret":"-ENOENT"')"
echo "others: $(grep '"parent":null' /tmp/s2f.json | grep -vc '"ret":"-ENOENT"')"
dcg trace --db $DB --show-retvals --json --func do_sys_openat2 --filter 'ret == -ENOENT' \
	--count 1 -- sh -c "$OPENS" > /tmp/s2c.json 2> /tmp/s2c.err
echo "count rc=$?"
echo "counted: $(grep -c '"parent":null' /tmp/s2c.json)"
echo "counted enoent: $(grep '"parent":null' /tmp/s2c.json | grep -c '"ret":"-ENOENT"')"
end s2-filter

begin s2-notrace
# --notrace with function_graph (set_ftrace_notrace in the instance): *getname* left out,
# their callees under do_sys_openat2.
dcg trace --db $DB --json --func do_sys_openat2 --notrace '*getname*' -- cat /nonexistent \
	> /tmp/s2n.json 2> /tmp/s2n.err
echo "rc=$?"
cat /tmp/s2n.err
end s2-notrace
begin s2-notrace-json
cat /tmp/s2n.json
end s2-notrace-json

begin s3-inlined
dcg trace --db $DB --show-retvals --func pidfd_create -- true; echo "rc=$?"
end s3-inlined
begin s3-unknown
dcg trace --db $DB --func no_such_function_dcg -- true; echo "rc=$?"
end s3-unknown

begin s4-concurrent
# Two sessions, each starts its command stopped-until-go; set_graph_function holds both
# roots, so each instance's graph has both kinds of trees.
rm -f /tmp/go
dcg trace --db $DB --show-retvals --func do_sys_openat2 -- sh -c \
	'while [ ! -e /tmp/go ]; do sleep 0.1; done; cat /nonexistent; head -1 /proc/version' \
	> /tmp/s4a.out 2> /tmp/s4a.err &
a=$!
dcg trace --db $DB --show-retvals --func vfs_read -- sh -c \
	'while [ ! -e /tmp/go ]; do sleep 0.1; done; cat /nonexistent; head -1 /proc/version' \
	> /tmp/s4b.out 2> /tmp/s4b.err &
b=$!
wait_for /tmp/s4a.err 'dcg: tracing' 240
wait_for /tmp/s4b.err 'dcg: tracing' 240
echo "set_graph_function while both run: $(grep -v '^#' $T/set_graph_function | tr '\n' ' ')"
echo "registry while both run: $(ls /run/dcg/graph | grep -c '^[0-9]*$') sessions"
touch /tmp/go
wait $a; echo "a rc=$?"
wait $b; echo "b rc=$?"
echo "--- a: do_sys_openat2 session"; cat /tmp/s4a.out; cat /tmp/s4a.err
echo "--- b: vfs_read session"; cat /tmp/s4b.out; cat /tmp/s4b.err
echo "a sees vfs_read: $(grep -c 'vfs_read' /tmp/s4a.out)"
echo "a sees do_sys_openat2: $(grep -c 'do_sys_openat2' /tmp/s4a.out)"
echo "b sees do_sys_openat2: $(grep -c 'do_sys_openat2' /tmp/s4b.out)"
echo "b sees vfs_read: $(grep -c 'vfs_read' /tmp/s4b.out)"
echo "--- after"
leftovers
end s4-concurrent

begin probes-retvals-args
# The exit/entry-probe path (as on Debian kernels) on this kernel: no /proc/kcore here, so
# callees get probes when first seen; the second open shows their values.
LIMIT=60 run_trace s1p --fgraph-probes --db $DB --show-retvals --args --func do_sys_openat2 -- \
	sh -c 'cat /nonexistent; cat /nonexistent'
leftovers
end probes-retvals-args

begin fields-fgraph
# --fields with the function_graph engine (issue 41): a probe event reads the members at
# the entry; the program prints the flags and mode it passed (the kernel adds O_LARGEFILE).
dcg trace --db $DB --engine fgraph --json --func do_sys_openat2 --fields 'how->flags,how->mode' \
	-- /dcg/syscall-loop open /tmp/dcg-fgraph 0x241 0640
echo "rc=$?"
leftovers
end fields-fgraph

begin deref-fgraph
# --deref with the function_graph engine (issue 41): a probe event copies the structs
# behind the pointer parameters at each traced function's entry.
dcg trace --db $DB --engine fgraph --json --deref --func do_sys_openat2 \
	-- /dcg/syscall-loop open /tmp/dcg-deref-fg 0x242 0600
echo "rc=$?"
leftovers
end deref-fgraph

begin outputs-fgraph
# Output parameters with the function_graph engine (issue 41): an exit probe event reads
# do_pipe2's fildes through the entry's argument; the program prints the read end.
dcg trace --db $DB --engine fgraph --json --deref --func do_pipe2 -- /dcg/syscall-loop pipe
echo "rc=$?"
leftovers
end outputs-fgraph

begin s5-sigint
kill_mid_trace s5i INT --db $DB --show-retvals --func do_sys_openat2 -- \
	sh -c 'while :; do cat /nonexistent 2>/dev/null; sleep 0.05; done'
end s5-sigint

begin s5-sigterm-probes
# --fgraph-probes: exit and entry probes as on kernels without funcgraph-retval.
kill_mid_trace s5t TERM --fgraph-probes --db $DB --show-retvals --args \
	--func do_sys_openat2 -- sh -c 'while :; do cat /nonexistent 2>/dev/null; sleep 0.05; done'
end s5-sigterm-probes

section_after
