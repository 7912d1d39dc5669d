#!/bin/sh
# User and kernel functions traced in one session (issue 42), on a dynamically linked
# program (/dcg/joint, glibc and the recorder copied into the guest): its own functions in
# process (or with uprobes), do_sys_openat2 and ksys_read with the BPF engine (or
# function_graph), joined into one tree per thread; then the same program traced
# kernel-only with the BPF engine, whose calls the joint trees must hold.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_RECORDER=/dcg/libdcg_recorder.so
USER_FUNCS="--func /dcg/joint:load_config --func /dcg/joint:read_all --func /dcg/joint:worker"
KERNEL_FUNCS="--func do_sys_openat2 --func ksys_read"

# dcg's BPF objects and in-process files the session may leave: programs named dcg_*,
# links, the recorder's plan and rings.
left() {
	leftovers
	echo "dcg programs: $(bpftool prog show 2>/dev/null | grep -c ' name dcg_')"
	echo "links: $(bpftool link show 2>/dev/null | grep -c '^[0-9]*:')"
	echo "recorder files: $(ls /dev/shm /tmp 2>/dev/null | grep -c '^dcg-inproc-')"
}

# Wait (2 minutes at most) until dcg's stderr in FILE says it traces.
wait_tracing() {
	i=0
	while [ $i -lt 1200 ] && ! grep -q '^dcg: tracing' "$1"; do
		sleep 0.1
		i=$((i + 1))
	done
}

section_before

begin joint-json
dcg trace --db $DB --show-retvals --args --json $USER_FUNCS $KERNEL_FUNCS \
	-- /dcg/joint /dcg/lib.sh > /tmp/jj.out 2> /tmp/jj.err
echo "rc=$?"
cat /tmp/jj.out
echo "--- stderr"
cat /tmp/jj.err
end joint-json

begin joint-uprobe
# The same with uprobes on the user side.
dcg trace --engine uprobe --engine bpf --db $DB --show-retvals --args --json $USER_FUNCS \
	$KERNEL_FUNCS -- /dcg/joint /dcg/lib.sh > /tmp/ju.out 2> /tmp/ju.err
echo "rc=$?"
cat /tmp/ju.out
echo "--- stderr"
cat /tmp/ju.err
end joint-uprobe

begin joint-fgraph
# The kernel side with function_graph: read in binary on the mono clock where the kernel
# gives the values itself (the test kernel); refused in one line where they would need
# probe events (Debian's), the user side traced alone.
dcg trace --engine inproc --engine fgraph --db $DB --show-retvals --args --json \
	$USER_FUNCS $KERNEL_FUNCS -- /dcg/joint /dcg/lib.sh > /tmp/jf.out 2> /tmp/jf.err
echo "rc=$?"
cat /tmp/jf.out
echo "--- stderr"
cat /tmp/jf.err
echo "instances left: $(ls /sys/kernel/tracing/instances | grep -c dcg)"
echo "trace_clock: $(cat /sys/kernel/tracing/trace_clock)"
end joint-fgraph

begin joint-pid
# A running process (-p): uprobes on the user side, the BPF engine attached to it; the
# program starts its work once dcg says it traces (the kernel side attaches last).
rm -f /tmp/go
/dcg/joint /dcg/lib.sh wait > /tmp/jp.prog &
P=$!
dcg trace --db $DB --show-retvals --args --json $USER_FUNCS $KERNEL_FUNCS -p $P \
	> /tmp/jp.out 2> /tmp/jp.err &
D=$!
wait_tracing /tmp/jp.err
touch /tmp/go
wait $P
wait $D
echo "rc=$?"
cat /tmp/jp.prog
cat /tmp/jp.out
echo "--- stderr"
cat /tmp/jp.err
end joint-pid

begin joint-killed
# A session killed with SIGKILL while it traces, then the same session again: the second
# removes what the first left (function_graph's instance where the kernel reads the values
# itself, else the BPF engine, whose programs go with the process; the recorder's files).
K=bpf
[ -e /sys/kernel/tracing/options/funcgraph-retval ] && K=fgraph
echo "kernel engine: $K"
rm -f /tmp/go
dcg trace --engine inproc --engine $K --db $DB --show-retvals --json $USER_FUNCS \
	$KERNEL_FUNCS -- /dcg/joint /dcg/lib.sh wait > /tmp/jk.out 2> /tmp/jk.err &
D=$!
wait_tracing /tmp/jk.err
kill -9 $D
wait $D 2>/dev/null
echo "instances after the kill: $(ls /sys/kernel/tracing/instances | grep -c '^dcg-')"
touch /tmp/go
sleep 2
dcg trace --engine inproc --engine $K --db $DB --show-retvals --json $USER_FUNCS \
	$KERNEL_FUNCS -- /dcg/joint /dcg/lib.sh > /tmp/jk2.out 2> /tmp/jk2.err
echo "rc=$?"
grep '^dcg: removed stale' /tmp/jk2.err
echo "kernel calls: $(grep -c '"space":"kernel"' /tmp/jk2.out)"
echo "instances left: $(ls /sys/kernel/tracing/instances | grep -c '^dcg-')"
echo "recorder files left: $(ls /dev/shm /tmp 2>/dev/null | grep -c '^dcg-inproc-')"
end joint-killed

begin joint-text
dcg trace --db $DB --show-retvals --args $USER_FUNCS $KERNEL_FUNCS \
	-- /dcg/joint /dcg/lib.sh > /tmp/jt.out 2> /tmp/jt.err
echo "rc=$?"
# The user calls' lines and the kernel calls right below them.
grep -E 'load_config|read_all|worker|/\* kernel' /tmp/jt.out | grep -v ksys_read
echo "kernel entries: $(grep -c '/\* kernel' /tmp/jt.out)"
end joint-text

begin kernel-only
dcg trace --engine bpf --db $DB --show-retvals --args --json $KERNEL_FUNCS \
	-- /dcg/joint /dcg/lib.sh > /tmp/k.out 2> /tmp/k.err
echo "rc=$?"
cat /tmp/k.out
echo "--- stderr"
cat /tmp/k.err
end kernel-only

begin kernel-flag
# Every system call under the user calls, one level deep.
dcg trace --db $DB --kernel --kernel-depth 1 --show-retvals --args --json \
	--func /dcg/joint:load_config -- /dcg/joint /dcg/lib.sh > /tmp/kf.out 2> /tmp/kf.err
echo "rc=$?"
cat /tmp/kf.out
echo "--- stderr"
cat /tmp/kf.err
end kernel-flag

begin left
left
end left

section_after
