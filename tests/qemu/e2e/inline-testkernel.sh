#!/bin/sh
# Inline frames on the test kernel (issue 16): the live function_graph engine (binary
# records with funcgraph-retaddr) and a raw function_graph capture of the same workload
# with retaddr, for the host to decode; both must show the same inline frames.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

begin live
dcg trace --engine fgraph --db $DB --show-retvals --args --json --func do_sys_openat2 \
	-- cat /proc/version > /tmp/l.json 2> /tmp/l.err
echo "rc=$?"
cat /tmp/l.err
grep '^{' /tmp/l.json
end live

begin capture
echo do_sys_openat2 > $T/set_graph_function
for o in funcgraph-retval funcgraph-args funcgraph-retaddr; do echo 1 > $T/options/$o; done
echo function_graph > $T/current_tracer
cat /proc/version > /dev/null
# Read before switching back: a tracer change empties the buffer.
echo 0 > $T/tracing_on
cat $T/trace
echo nop > $T/current_tracer
echo 1 > $T/tracing_on
for o in funcgraph-retval funcgraph-args funcgraph-retaddr; do echo 0 > $T/options/$o; done
echo > $T/set_graph_function
end capture

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
