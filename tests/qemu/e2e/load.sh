#!/bin/sh
# Load on one traced root (issue 14): a loop of failing access(2) calls
# (/dcg/syscall-loop) run untraced, and for each dcg engine: under raw function_graph
# with the graph filter on do_faccessat, under the engine with the same root, and under
# raw function_graph again, in one boot. Prints per-call
# times, session start/stop times, what dcg recorded (roots with their value, records per
# function without a value) and what it reported lost.
#
# Kernel command line: dcg.engines=bpf,fgraph (default: bpf; bpf@base: the same engine run
# by /bin/dcg-base; bpf/user: the engine asked as a user asks, `--show-retvals --output
# F`, the text tree on stdout into a file, instead of the benchmark's `--json
# --trace-output F`; bpf/stack: with --stack; bpf/filter: with a --filter no call passes,
# each rejected at entry), dcg.calls=N (default 3000).
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
ROOT=do_faccessat
N=3000
ENGINES=bpf
for a in $(cat /proc/cmdline); do
	case $a in
	dcg.engines=*) ENGINES=$(echo "${a#dcg.engines=}" | tr , ' ') ;;
	dcg.calls=*) N=${a#dcg.calls=} ;;
	esac
done
LOOP=/dcg/syscall-loop
now() { $LOOP now; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# The loop line's per_call_ns, start and end.
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$2" | head -1; }

begin untraced
$LOOP 200 > /dev/null
$LOOP $N | tee /tmp/untraced.loop
end untraced

# raw_fgraph NAME: the loop under raw function_graph with the graph filter, in section
# raw-NAME (run before and after each engine: the mean of both is its baseline, since
# TCG's speed drifts during a boot).
raw_fgraph() {
	begin "raw-$1"
	echo $ROOT > $T/set_graph_function
	t0=$(now)
	echo function_graph > $T/current_tracer
	t1=$(now)
	$LOOP $N
	t2=$(now)
	echo nop > $T/current_tracer
	t3=$(now)
	echo > $T/set_graph_function
	echo "start_ms=$(ms $t0 $t1) stop_ms=$(ms $t2 $t3)"
	end "raw-$1"
}

for e in $ENGINES; do
	# ENGINE@base: the same engine run by /bin/dcg-base, an older build (the benchmark's
	# before/after in one boot).
	bin=dcg
	db=$DB
	case $e in *@base*) bin=dcg-base; [ -e /dcg/k-base.sigdb ] && db=/dcg/k-base.sigdb ;; esac
	eng=${e%%/*}
	eng=${eng%@base}
	f=$(echo "$e" | tr '/@' '__')
	raw_fgraph "$e-before"
	begin "dcg-$e"
	t0=$(now)
	case $e in
	*/user*)
		# The loop's line and the text tree share stdout (the tree comes at the end).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT \
			--output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	*/stack*)
		# Each top-level call's kernel stack too (issue 40).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT --json \
			--stack --trace-output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	*/filter*)
		# A condition on the root's arguments no call meets (the loop's mode is F_OK, 0):
		# every call rejected at its entry, in the program (issue 40).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT --json \
			--filter 'mode == 12345' --trace-output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	*)
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT --json \
			--trace-output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	esac
	echo "rc=$?"
	t3=$(now)
	grep 'per_call_ns=' /tmp/$f.loop
	echo "text lines: $(wc -l < /tmp/$f.loop)"
	start=$(field start /tmp/$f.loop)
	stop=$(field end /tmp/$f.loop)
	[ -n "$start" ] && echo "start_ms=$(ms $t0 $start) stop_ms=$(ms $stop $t3)"
	echo "--- stderr"
	cat /tmp/$f.err
	echo "--- records: $(grep -c '^{"id"' /tmp/$f.json)"
	echo "roots: $(grep -c "\"func\":\"$ROOT\".*\"depth\":0," /tmp/$f.json)"
	echo "roots ENOENT: $(grep "\"func\":\"$ROOT\".*\"depth\":0," /tmp/$f.json | grep -c '"ret":"-ENOENT"')"
	# Per function: records, and records without a value (void functions have none).
	echo "--- no value by function"
	grep '^{"id"' /tmp/$f.json |
		awk -F'"func":"' '{ split($2, a, "\""); f = a[1]; n[f]++; if ($0 ~ /"ret":null/) z[f]++ }
		END { for (f in n) print "novalue " f " " n[f] " " z[f] + 0 }' | sort
	end "dcg-$e"
	raw_fgraph "$e-after"
done

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
