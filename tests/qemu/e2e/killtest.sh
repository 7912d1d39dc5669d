#!/bin/sh
# Kill test of the kernel tracer (issue 9) on the test kernel (tests/kernels/testkernel): RUNS live traces of a
# command that never ends, each interrupted after a random delay by SIGINT, SIGTERM or
# SIGKILL (in turn); every other pair of runs uses exit/entry probes (--fgraph-probes)
# so probe removal is exercised too. After SIGINT/SIGTERM nothing of the session may
# remain (instance, events, graph registry entry, traced command); after SIGKILL the next
# dcg run must remove the stale instance/events and say so. At the end the global tracing
# state must equal the state before the first run.
#
# Kernel command line: dcg.kill_runs=N (default 50), dcg.kill_seed=S (default 12345),
# dcg.kill_max_ms=MS (upper bound of the random delay, default 9000; one run in four
# uses 0-300 ms).
# Every failed check prints a line starting with "FAIL"; the last section prints a
# "kill-summary:" line with the counts.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
RUNS=50; SEED=12345; MAXMS=9000
for w in $(cat /proc/cmdline); do
	case "$w" in
	dcg.kill_runs=*) RUNS=${w#dcg.kill_runs=} ;;
	dcg.kill_seed=*) SEED=${w#dcg.kill_seed=} ;;
	dcg.kill_max_ms=*) MAXMS=${w#dcg.kill_max_ms=} ;;
	esac
done

# rand N: R = a pseudo-random number in 0..N-1 (LCG; reproducible from SEED).
rand() {
	SEED=$(( (SEED * 1103515245 + 12345) % 2147483648 ))
	R=$(( (SEED / 65536) % $1 ))
}

# What session PID left: its instance, its events, its registry entry.
left_of() {
	l=""
	[ -d $T/instances/dcg-$1 ] && l="$l instance"
	n=$(cat $T/dynamic_events $T/kprobe_events 2>/dev/null | grep -c "dcg_$1/")
	[ "$n" -gt 0 ] && l="$l events:$n"
	[ -e /run/dcg/graph/$1 ] && l="$l registry"
	echo "$l"
}

# Pids of traced commands still running (the loop below, in any state).
orphans() { ps | grep '[k]ill-test-loop' | awk '{print $1}' | tr '\n' ' '; }

# wait_gone PID SECS: until PID has exited (0) or SECS passed (1).
wait_gone() {
	n=0
	while kill -0 $1 2>/dev/null; do
		n=$((n + 1)); [ $n -ge $(( $2 * 10 )) ] && return 1
		sleep 0.1
	done
	return 0
}

# wait_caught PID: until PID catches SIGINT (SigCgt bit 2), for at most 30 s.
wait_caught() {
	n=0
	while [ $n -lt 300 ]; do
		c=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$1/status 2>/dev/null)
		[ -z "$c" ] && return 1
		[ $(( 0x$c & 2 )) != 0 ] && return 0
		n=$((n + 1)); sleep 0.1
	done
	return 1
}

fails=0
fail() { echo "FAIL run $i: $*"; fails=$((fails + 1)); }

section_before

begin kill-runs
echo "runs=$RUNS seed=$SEED max_ms=$MAXMS"
pending=""       # SIGKILLed sessions whose remains are not removed yet
stale_removed=0; traced=0; killed_early=0; nint=0; nterm=0; nkill=0
t0=$(date +%s)
i=0
while [ $i -lt $RUNS ]; do
	case $((i % 3)) in 0) sig=INT ;; 1) sig=TERM ;; 2) sig=KILL ;; esac
	probes=$(( (i / 3) % 2 ))
	# One run in four is interrupted within 300 ms (while dcg starts up), the others at
	# any moment up to MAXMS (setup, switching the tracer on, tracing).
	rand 4; if [ $R = 0 ]; then rand 300; else rand $MAXMS; fi; ms=$R
	if [ $probes = 1 ]; then pf=--fgraph-probes; else pf=; fi
	dcg trace $pf --db $DB --show-retvals --args --func do_sys_openat2 -- \
		sh -c ': kill-test-loop; while :; do cat /nonexistent 2>/dev/null; sleep 0.05; done' \
		> /tmp/k.out 2> /tmp/k.err &
	pid=$!
	usleep $((ms * 1000))
	# This shell starts background jobs with SIGINT ignored (POSIX, no job control): until
	# dcg's main() sets its handler, a SIGINT is dropped by the kernel whatever dcg does. So
	# a SIGINT goes out once dcg catches it (from its first instruction on; at a terminal,
	# SIGINT is not ignored and simply ends a dcg that has not started).
	[ $sig = INT ] && wait_caught $pid
	was_tracing=0; grep -q 'dcg: tracing' /tmp/k.err && was_tracing=1
	kill -$sig $pid
	if ! wait_gone $pid 120; then
		fail "dcg $pid still runs 120 s after SIG$sig; stderr:"; cat /tmp/k.err
		kill -KILL $pid
		wait_gone $pid 10
	fi
	wait $pid; rc=$?
	calls=$(grep -c 'do_sys_openat2' /tmp/k.out)
	[ $was_tracing = 1 ] && traced=$((traced + 1))
	o=$(orphans)
	[ -n "$o" ] && kill -KILL $o 2>/dev/null
	left=$(left_of $pid)
	echo "run $i: SIG$sig probes=$probes after ${ms} ms: rc=$rc tracing=$was_tracing calls=$calls left=[${left# }] orphans=[${o% }]"
	# Stale sessions of earlier SIGKILLs: this run removes them at its start (unless it was
	# killed before it got there) and must say so.
	still=""
	for s in $pending; do
		if grep -q "removed stale instance dcg-$s\$\|removed stale event dcg_$s/" /tmp/k.err; then
			sl=$(left_of $s)
			case "$sl" in *instance*|*events*) fail "stale session $s reported removed but left:$sl" ;; esac
			echo "  stale dcg-$s removed and reported"
			stale_removed=$((stale_removed + 1))
		else
			still="$still $s"
		fi
	done
	pending=$still
	case $sig in
	KILL)
		nkill=$((nkill + 1))
		# A registry entry alone (killed between removing the instance and unregistering)
		# is dropped silently by the next registration; the final check sees it gone.
		case "$left" in *instance*|*events*) pending="$pending $pid" ;; esac
		;;
	*)
		[ $sig = INT ] && nint=$((nint + 1)) || nterm=$((nterm + 1))
		[ -n "$left" ] && fail "SIG$sig left:$left"
		[ -n "$o" ] && fail "SIG$sig: the traced command outlived dcg: $o"
		# A clean stop is exit 0; the signal's default action (130/143) only before dcg
		# installed its handlers, when nothing existed yet.
		case $rc in 0|130|143) ;; *) fail "SIG$sig: exit status $rc"; cat /tmp/k.err ;; esac
		[ $rc != 0 ] && killed_early=$((killed_early + 1))
		if grep -q 'cleanup:\|LOST\|panicked' /tmp/k.err; then fail "stderr:"; cat /tmp/k.err; fi
		;;
	esac
	i=$((i + 1))
done
if [ -n "$pending" ]; then
	# The last SIGKILLed sessions: one more short session removes them.
	dcg trace --db $DB --count 1 --func do_sys_openat2 -- cat /nonexistent > /tmp/k.out 2> /tmp/k.err
	echo "final cleanup run: rc=$?"
	for s in $pending; do
		if grep -q "removed stale instance dcg-$s\$\|removed stale event dcg_$s/" /tmp/k.err; then
			stale_removed=$((stale_removed + 1)); echo "  stale dcg-$s removed and reported"
		else
			fail "stale session $s not reported removed by the final run:"; cat /tmp/k.err
		fi
	done
fi
echo "kill-summary: runs=$RUNS SIGINT=$nint SIGTERM=$nterm SIGKILL=$nkill traced=$traced killed_before_handlers=$killed_early stale_removed=$stale_removed failures=$fails seconds=$(( $(date +%s) - t0 ))"
end kill-runs

section_after
