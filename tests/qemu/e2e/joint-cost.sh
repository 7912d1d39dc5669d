#!/bin/sh
# The cost of a session tracing both sides (issue 42, bench/joint-cost.sh): the same loop
# (/dcg/joint-loop: a user function making one failing access(2), dcg.calls=N times)
# untraced, its user function traced alone (in process), its system calls traced alone
# (every system call's subtree, BPF), and both in one session (--kernel), dcg.rounds=R
# times in turn (each round's costs over its own untraced run). With /bin/dcg-base (an
# older build, bench/joint-cost.sh's DCG_BENCH_BASELINE, speaking this recorder's plan),
# its joint session too, next to this tree's.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_RECORDER=/dcg/libdcg_recorder.so
N=$(sed -n 's/.*dcg\.calls=\([0-9]*\).*/\1/p' /proc/cmdline)
N=${N:-3000}
# Rounds of the three sessions, interleaved: TCG's speed drifts within a boot.
R=$(sed -n 's/.*dcg\.rounds=\([0-9]*\).*/\1/p' /proc/cmdline)
R=${R:-3}
LOOP="/dcg/joint-loop $N"
run() { # NAME CMD...: the loop's time per call, and what dcg said
	name=$1; shift
	begin "$name"
	"$@" > /tmp/$name.out 2> /tmp/$name.err
	echo "rc=$?"
	grep per_call_ns /tmp/$name.out
	grep -v '^dcg debug' /tmp/$name.err | tail -4
	end "$name"
}
joint() { # NAME BIN OUT: a joint session by BIN, its calls saved in OUT
	run $1 $2 trace --db $DB --show-retvals --json --trace-output $3 \
		--func /dcg/joint-loop:check --kernel -- $LOOP
}
begin settle
settle
end settle
r=1
while [ $r -le $R ]; do
	run untraced$r $LOOP
	run user$r dcg trace --show-retvals --json --trace-output /tmp/u.json \
		--func /dcg/joint-loop:check -- $LOOP
	run kernel$r dcg trace --engine bpf --db $DB --show-retvals --json \
		--trace-output /tmp/k.json --func '__x64_sys_*' -- $LOOP
	if [ -x /bin/dcg-base ]; then
		# An older build's joint session around this one's (ABBA over two rounds).
		if [ $((r % 2)) = 1 ]; then
			joint joint-base$r dcg-base /tmp/jb.json; joint joint$r dcg /tmp/j.json
		else
			joint joint$r dcg /tmp/j.json; joint joint-base$r dcg-base /tmp/jb.json
		fi
	else
		joint joint$r dcg /tmp/j.json
	fi
	r=$((r + 1))
done
# Of the last round.
begin counts
echo "user calls: $(grep -c '"func":"check"' /tmp/u.json)"
echo "kernel calls: $(grep -c '"id"' /tmp/k.json)"
echo "joint calls: $(grep -c '"id"' /tmp/j.json)"
echo "joint kernel calls: $(grep -c '"space":"kernel"' /tmp/j.json)"
end counts
section_after
