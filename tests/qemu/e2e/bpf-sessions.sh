#!/bin/sh
# The BPF engine's sessions (issue 14) on a Debian kernel: two concurrent sessions over
# all tasks with different roots each see only their own trees; after SIGINT, SIGTERM and
# SIGKILL nothing of dcg stays attached (bpftool: no dcg program or link), and a rerun
# after SIGKILL works.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

# dcg's BPF objects the kernel still holds: programs named dcg_*, and links (nothing
# else in this guest creates any).
bpf_left() {
	echo "dcg programs: $(bpftool prog show 2>/dev/null | grep -c ' name dcg_')"
	echo "links: $(bpftool link show 2>/dev/null | grep -c '^[0-9]*:')"
}

begin concurrent
dcg trace --engine bpf --db $DB --show-retvals --func do_faccessat --json --duration 25 \
	> /tmp/a.json 2> /tmp/a.err &
a=$!
dcg trace --engine bpf --db $DB --show-retvals --func do_sys_openat2 --json --duration 25 \
	> /tmp/b.json 2> /tmp/b.err &
b=$!
wait_for /tmp/a.err 'dcg: tracing' 240
wait_for /tmp/b.err 'dcg: tracing' 240
/dcg/syscall-loop 5
cat /nonexistent 2>/dev/null
head -c 4 /proc/version > /dev/null
wait $a; echo "a rc=$?"
wait $b; echo "b rc=$?"
cat /tmp/a.err /tmp/b.err
echo "a roots: $(grep -c '"parent":null' /tmp/a.json)"
echo "a foreign roots: $(grep '"parent":null' /tmp/a.json | grep -vc '"func":"do_faccessat"')"
echo "a access roots: $(grep '"parent":null,"func":"do_faccessat"' /tmp/a.json | grep -c '"ret":"-ENOENT"')"
echo "b roots: $(grep -c '"parent":null' /tmp/b.json)"
echo "b foreign roots: $(grep '"parent":null' /tmp/b.json | grep -vc '"func":"do_sys_openat2"')"
echo "b nonexistent: $(grep '"parent":null,"func":"do_sys_openat2"' /tmp/b.json | grep -c '"ret":"-ENOENT"')"
bpf_left
end concurrent

for sig in INT TERM KILL; do
	begin "kill-$sig"
	rm -f /tmp/k.out /tmp/k.err # (wait_for must see this session's lines)
	dcg trace --engine bpf --db $DB --show-retvals --func do_sys_openat2 -- \
		sh -c 'while :; do cat /proc/version > /dev/null; done' > /tmp/k.out 2> /tmp/k.err &
	k=$!
	wait_for /tmp/k.err 'dcg: tracing' 240
	sleep 3 # (the output is a file: nothing is decoded before the end)
	echo "while tracing: $(bpftool prog show 2>/dev/null | grep -c ' name dcg_') dcg programs"
	kill -$sig $k
	wait $k 2>/dev/null
	echo "rc=$?"
	# What was recorded until the signal, decoded after it (not after SIGKILL).
	echo "trees after the signal: $(grep -c '} /\* do_sys_openat2 ret=' /tmp/k.out)"
	# After SIGKILL dcg's command is not ended by dcg.
	pkill -f 'while :' 2>/dev/null
	# The kernel frees the objects when their last fd closes (for a link, after the
	# detach completes): give it a moment.
	n=0
	while [ "$(bpftool prog show 2>/dev/null | grep -c ' name dcg_')" != 0 ] && [ $n -lt 100 ]; do
		sleep 0.2; n=$((n + 1))
	done
	bpf_left
	end "kill-$sig"
done

# Long steps on a terminal: stderr on the console (a tty), so dcg draws its spinner
# while the programs attach and its count while the records kept during the command are
# decoded (the trace goes to a file: they are kept). Elsewhere (the files above) nothing.
begin progress
dcg trace --engine bpf --db $DB --show-retvals --func do_faccessat --trace-output /tmp/p.txt \
	-- /dcg/syscall-loop 3000 > /tmp/p.loop 2> /dev/console
echo "progress rc=$?"
echo "progress trace lines: $(wc -l < /tmp/p.txt)"
end progress

begin policy
# The output is a file: nothing is decoded while the command runs. Past the memory bound
# (64 KiB here) the records wait in a file: the same trees come out.
DCG_KTRACE_DEBUG=1 dcg trace --engine bpf --db $DB --show-retvals --func do_faccessat \
	--records-in-memory 65536 --output /tmp/sp.calls -- /dcg/syscall-loop 2000 \
	> /tmp/sp.txt 2> /tmp/sp.err
echo "spool rc=$?"
sed -n 's/.*kept in the temporary directory while the command ran: \([0-9]*\) bytes.*/spooled: \1/p' /tmp/sp.err
echo "spool roots: $(grep -c '"parent":null,"func":"do_faccessat"' /tmp/sp.calls)"
echo "spool text roots: $(grep -c '} /\* do_faccessat ret=-ENOENT' /tmp/sp.txt)"
# The function_graph engine's binary pages the same way (no values asked: nothing but
# its records).
DCG_KTRACE_DEBUG=1 dcg trace --engine fgraph --db $DB --func do_faccessat \
	--records-in-memory 65536 --output /tmp/fsp.calls -- /dcg/syscall-loop 500 \
	> /tmp/fsp.txt 2> /tmp/fsp.err
echo "fgraph spool rc=$?"
sed -n 's/.*pages kept in the temporary directory while the command ran: \([0-9]*\) bytes.*/fgraph spooled: \1/p' /tmp/fsp.err
echo "fgraph spool roots: $(grep -c '"parent":null,"func":"do_faccessat"' /tmp/fsp.calls)"
echo "fgraph spool stopped: $(sed -n 's/^dcg: stopped ([^)]*), \([0-9]* calls\).*/\1/p' /tmp/fsp.err)"
# --count decided while nothing is decoded (the program counts whole trees): exactly that
# many trees, the loop cut short.
dcg trace --engine bpf --db $DB --show-retvals --func do_faccessat --count 7 \
	--output /tmp/cn.calls -- /dcg/syscall-loop 1000000 > /tmp/cn.txt 2> /tmp/cn.err
echo "count rc=$?"
echo "count roots: $(grep -c '"parent":null,"func":"do_faccessat"' /tmp/cn.calls)"
echo "count text roots: $(grep -c '} /\* do_faccessat ret=-ENOENT' /tmp/cn.txt)"
echo "count loop finished: $(grep -c 'per_call_ns=' /tmp/cn.txt)"
grep -o 'stopped ([^)]*)' /tmp/cn.err
end policy

begin rerun
dcg trace --engine bpf --db $DB --show-retvals --func do_sys_openat2 -- cat /nonexistent; echo "rc=$?"
bpf_left
end rerun

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
