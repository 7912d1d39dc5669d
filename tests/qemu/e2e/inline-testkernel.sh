#!/bin/sh
# Inline frames on the test kernel (issue 16): the live function_graph engine (binary
# records with funcgraph-retaddr) and a raw function_graph capture of the same workload
# with retaddr, for the host to decode; both must show the same inline frames. Then
# --stack against the stacktrace trigger, with both engines.
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

# --stack (issue 40), BPF engine: the stack of each do_sys_openat2 call of the command,
# with the kernel's own stacktrace trigger on the same function at the same time (it
# sees every task's calls, dcg's own included; the host looks for each of dcg's stacks
# among them), inline frames expanded from the db.
stack_vs_trigger stack do_sys_openat2 --engine bpf --show-retvals -- cat /proc/version
begin stack-text
dcg trace --engine bpf --db $DB --stack --func do_sys_openat2 -- cat /proc/version > /tmp/st.out 2>&1
echo "rc=$?"
head -40 /tmp/st.out
end stack-text
# The distinct stacks of a function reached two ways (a file opened by openat(2) and by
# execve(2)), saved and reported.
begin stack-report
dcg trace --engine bpf --db $DB --stack --show-retvals --output /tmp/s.calls \
	--func do_file_open -- sh -c 'cat /proc/version; cat /nonexistent' > /dev/null 2>&1
echo "trace rc=$?"
dcg report /tmp/s.calls; echo "rc=$?"
end stack-report
begin stack-calls
cat /tmp/s.calls
end stack-calls
# The function_graph engine's stacks (a stacktrace probe in its instance; binary records,
# funcgraph-retval giving the values), and its refusal where it reads text.
stack_vs_trigger stack-fgraph do_sys_openat2 --engine fgraph --show-retvals -- cat /proc/version
begin stack-refused
dcg trace --engine fgraph --db $DB --stack --fgraph-text --func do_sys_openat2 -- true; echo "rc=$?"
end stack-refused

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
