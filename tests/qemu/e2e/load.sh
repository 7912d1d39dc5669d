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
# each rejected at entry; bpf/filter1: a loop of dcg.calls1=N1 calls (default 100000)
# where every 100th asks R_OK, --filter 'mode == 4' keeping those, 1 %),
# bpf/stackret: --stack with --filter 'ret == -ENOENT', which every call meets;
# bpf/args and bpf/deref: --args, and --deref (every struct behind a pointer parameter
# of every call read at its entry, issue 41), each with --show-retvals; bpf/deref64: the
# same reads cut at 64 bytes an argument (--deref-bytes 64: what the cost owes to bytes);
# retsnoop/stack and retsnoop/T: the peer, /bin/retsnoop, on the same root and the
# functions function_graph shows under it, in its default stack mode and with -T),
# dcg.calls=N (default 3000).
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
ROOT=do_faccessat
N=3000
N1=100000
ENGINES=bpf
for a in $(cat /proc/cmdline); do
	case $a in
	dcg.engines=*) ENGINES=$(echo "${a#dcg.engines=}" | tr , ' ') ;;
	dcg.calls=*) N=${a#dcg.calls=} ;;
	dcg.calls1=*) N1=${a#dcg.calls1=} ;;
	esac
done
LOOP=/dcg/syscall-loop
now() { $LOOP now; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# The loop line's per_call_ns, start and end.
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$2" | head -1; }

begin untraced
settle
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

# The functions function_graph shows under the root (a few calls of the loop), one a
# line in /tmp/callees: what retsnoop is told to attach (-a) beside its entry (-e).
callees_of_root() {
	[ -s /tmp/callees ] && return
	echo $ROOT > $T/set_graph_function
	echo function_graph > $T/current_tracer
	$LOOP 20 > /dev/null
	# Read before switching back: a tracer change empties the buffer.
	echo 0 > $T/tracing_on
	cat $T/trace > /tmp/fg-callees.txt
	echo nop > $T/current_tracer
	echo 1 > $T/tracing_on
	echo > $T/set_graph_function
	sed -n 's/.*| *\([A-Za-z0-9_.]*\)() {$/\1/p; s/.*| *\([A-Za-z0-9_.]*\)();$/\1/p' \
		/tmp/fg-callees.txt | grep -vx "$ROOT" | sort -u > /tmp/callees
	echo "callees of $ROOT for retsnoop: $(wc -l < /tmp/callees)"
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
	retsnoop/*)
		# The peer: attached before the loop starts (it says when), limited to the loop's
		# name, stopped with SIGINT after the loop ends and a moment to read its ring.
		callees_of_root > /tmp/$f.err
		mode=
		[ "$e" = retsnoop/T ] && mode=-T
		retsnoop -e $ROOT $(sed 's/^/-a /' /tmp/callees) -n syscall-loop -sn $mode \
			> /tmp/$f.rs 2>&1 &
		rs=$!
		wait_for /tmp/$f.rs "Receiving data" 600 >> /tmp/$f.err
		$LOOP $N > /tmp/$f.loop
		sleep 2
		kill -INT $rs
		wait $rs ;;
	*/stackret*)
		# --stack, and a condition on the return value every call meets: every tree
		# recorded with its stack (issue 40's comparison with retsnoop's stack mode).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT --json \
			--stack --filter 'ret == -ENOENT' --trace-output /tmp/$f.json -- $LOOP $N \
			> /tmp/$f.loop 2> /tmp/$f.err ;;
	*/args* | */deref*)
		# Every argument, or every argument and the structs behind the pointers (issue 41).
		what=--args
		case $e in
		*/deref64*) what="--deref --deref-bytes 64" ;;
		*/deref*) what=--deref ;;
		esac
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals $what --func $ROOT \
			--json --trace-output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	*/user*)
		# The loop's line and the text tree share stdout (the tree comes at the end).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT \
			--output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	*/stack*)
		# Each top-level call's kernel stack too (issue 40).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --func $ROOT --json \
			--stack --trace-output /tmp/$f.json -- $LOOP $N > /tmp/$f.loop 2> /tmp/$f.err ;;
	*/filter1*)
		# 1 % of the calls pass a condition on the root's arguments (issue 40): the
		# loop's every 100th call asks R_OK (4), the rest F_OK (0).
		DCG_KTRACE_DEBUG=1 $bin trace --engine $eng --db $db --show-retvals --args --func $ROOT \
			--json --filter 'mode == 4' --trace-output /tmp/$f.json -- $LOOP $N1 - 100 \
			> /tmp/$f.loop 2> /tmp/$f.err ;;
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
	case $e in
	retsnoop/*)
		: > /tmp/$f.json
		tail -4 /tmp/$f.rs >> /tmp/$f.err
		echo "sessions: $(grep -c 'TID/PID' /tmp/$f.rs)" ;;
	*/deref*)
		echo "deref records: $(grep -c '\*)0x[0-9a-f]*{' /tmp/$f.json) calls with a struct shown of $(grep -c '^{"id"' /tmp/$f.json)" ;;
	*/filter1*)
		echo "kept: $(grep "\"func\":\"$ROOT\".*\"depth\":0," /tmp/$f.json |
			grep -c '"name":"mode","value":"4"') with mode 4 of $N1 calls" ;;
	esac
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
	echo "saved calls: $(wc -c < /tmp/$f.json) bytes"
	end "dcg-$e"
	# The saved calls are counted: gone before the next session (they live in the
	# guest's memory, and two --deref sessions' did not fit in it together, as the
	# benchmark's ENGINE@base rows made them).
	rm -f /tmp/$f.json
	raw_fgraph "$e-after"
done

# The untraced loop again, after every session: the same machine as at the start.
begin untraced-after
$LOOP $N
end untraced-after

begin dmesg
dmesg | grep -E -A20 'WARNING:|BUG:' | head -30
echo "warnings: $(dmesg | grep -cE 'WARNING:|BUG:')"
end dmesg
