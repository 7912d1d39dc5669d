# Shared helpers of the kernel e2e guest scripts (busybox sh; sourced as /dcg/lib.sh).
# Sections are printed between =====BEGIN name===== and =====END name=====.
T=/sys/kernel/tracing
DB=/dcg/k.sigdb
begin() { echo "=====BEGIN $1====="; }
end()   { echo "=====END $1====="; }

# Global tracing state that dcg must leave as it found it.
global_state() {
	echo "current_tracer=$(cat $T/current_tracer)"
	echo "tracing_on=$(cat $T/tracing_on)"
	echo "set_graph_function=$(grep -v '^#' $T/set_graph_function | tr '\n' ' ')"
	echo "set_ftrace_filter=$(grep -v '^#' $T/set_ftrace_filter | head -5 | tr '\n' ' ')"
	# function_graph's options: kernel-wide on kernels that share a tracer's flags between
	# instances (6.12), so a session that changes them in its instance must restore them.
	for o in $T/options/funcgraph-*; do [ -e "$o" ] && echo "${o##*/}=$(cat "$o")"; done
}

# What dcg sessions leave behind: instances, probes, registry entries.
leftovers() {
	echo "dcg instances: $(ls $T/instances | grep -c '^dcg-')"
	echo "dcg events: $(cat $T/dynamic_events $T/kprobe_events 2>/dev/null | grep -c 'dcg_')"
	echo "registry: $(ls /run/dcg/graph 2>/dev/null | grep -v '^lock$' | tr '\n' ' ')"
}

# settle: wait until the boot's own work is done, for timings (prints the seconds). Debian's
# crypto self-tests and kworkers go on for seconds after init starts, on the same CPUs:
# measured then, an untraced loop of access(2) calls took 12-16 us a call on Debian 7.2
# with one vCPU, and 3.3-3.4 us from 12 s on. Done: a second with at most 2 ticks of work
# (30 s at most).
settle() {
	busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
	i=0
	while [ $i -lt 30 ]; do
		a=$(busy)
		sleep 1
		[ $(($(busy) - a)) -le 2 ] && break
		i=$((i + 1))
	done
	echo "settled after ${i} s"
}

# wait_for FILE TEXT [SECS]: until FILE contains TEXT.
wait_for() {
	n=0; lim=$(( ${3:-120} * 5 ))
	while ! grep -q "$2" "$1" 2>/dev/null; do
		n=$((n + 1)); [ $n -ge $lim ] && { echo "TIMEOUT waiting for '$2' in $1"; return 1; }
		sleep 0.2
	done
}

# run_trace NAME ARGS...: dcg trace ARGS, output in /tmp/NAME.out/.err, printed. After
# $LIMIT seconds (default 240) it is sent SIGTERM, and what it printed so far is shown
# with the kernel log.
run_trace() {
	name=$1; shift
	dcg trace "$@" > /tmp/$name.out 2> /tmp/$name.err &
	pid=$!
	n=0
	while kill -0 $pid 2>/dev/null; do
		n=$((n + 1))
		if [ $n -ge $(( ${LIMIT:-240} * 5 )) ]; then
			echo "TIMEOUT: dcg still running after ${LIMIT:-240} s; stderr so far:"
			cat /tmp/$name.err; echo "--- stdout lines: $(wc -l < /tmp/$name.out)"
			echo "--- kernel log"; dmesg | grep -B2 -A25 -m2 'cut here\|WARNING\|BUG' | head -60
			kill -TERM $pid
			break
		fi
		sleep 0.2
	done
	wait $pid
	echo "rc=$?"
	echo "--- stdout"; cat /tmp/$name.out
	echo "--- stderr"; cat /tmp/$name.err
}

# kill_mid_trace NAME SIGNAL ARGS...: start dcg trace ARGS in the background, send SIGNAL
# once it traces, then report what is left behind and what it printed.
kill_mid_trace() {
	name=$1; sig=$2; shift 2
	# A file left by an earlier session must not satisfy wait_for before this one starts.
	rm -f /tmp/$name.out /tmp/$name.err
	dcg trace "$@" > /tmp/$name.out 2> /tmp/$name.err &
	pid=$!
	wait_for /tmp/$name.err 'dcg: tracing' 240
	# The output is a file: decoding waits for the end, nothing is in it yet. The loop
	# runs under the trace a moment.
	sleep 3
	kill -$sig $pid
	wait $pid
	echo "rc=$?"
	echo "--- stdout (head)"; head -${HEAD:-5} /tmp/$name.out
	echo "--- stderr"; cat /tmp/$name.err
	echo "--- after $sig"
	leftovers
	echo "traced command left: $(ps | grep -c '[w]hile :')"
}

# section_before / section_after: the global tracing state and dcg's leftovers at the
# start and the end of a guest script; `after` says whether the global state is unchanged
# and how many kernel warnings were logged.
section_before() {
	begin before
	global_state > /tmp/global.before; cat /tmp/global.before
	leftovers
	end before
}
section_after() {
	begin after
	global_state > /tmp/global.after; cat /tmp/global.after
	if cmp -s /tmp/global.before /tmp/global.after; then echo "global state unchanged: yes"; else echo "global state unchanged: NO"; fi
	leftovers
	dmesg | grep -E -A20 'cut here|WARNING:|BUG:' | head -40
	echo "kernel warnings: $(dmesg | grep -cE 'cut here|WARNING:|BUG:')"
	end after
}

# debian_scenarios: what every Debian kernel runs: `dcg load` into the store, scenario 1
# without --db (values from exit probes with the function_graph engine, or from the
# engine named by S1_ENGINE), scenario 3 (inlined pidfd_create).
debian_scenarios() {
	begin load
	dcg load $DB; echo "rc=$?"
	dcg list
	end load

	begin s1-exit-probes
	LIMIT=120 run_trace s1 --engine "${S1_ENGINE:-fgraph}" --show-retvals --func do_sys_openat2 -- cat /nonexistent
	echo "--- after"
	leftovers
	echo "--- kernel log (warnings)"
	dmesg | grep -B2 -A25 -m2 'cut here\|WARNING\|BUG' | head -60
	end s1-exit-probes

	begin s3-inlined
	dcg trace --show-retvals --func pidfd_create -- true; echo "rc=$?"
	end s3-inlined
}

# stack_vs_trigger NAME FUNC DCG-ARGS...: `dcg trace --stack --json --func FUNC DCG-ARGS`
# while the kernel's own stacktrace trigger is on FUNC (issue 40): section NAME (its rc,
# stderr and top-level records), then NAME-kernel (the trace: the trigger's stacks).
stack_vs_trigger() {
	name=$1; func=$2; shift 2
	begin $name
	echo "$func:stacktrace" > $T/set_ftrace_filter
	echo > $T/trace
	dcg trace --db $DB --stack --json --func $func "$@" > /tmp/$name.json 2> /tmp/$name.err
	echo "rc=$?"
	echo "!$func:stacktrace" >> $T/set_ftrace_filter
	cat /tmp/$name.err
	grep '"parent":null' /tmp/$name.json
	end $name
	begin $name-kernel
	cat $T/trace
	echo > $T/trace
	end $name-kernel
}
