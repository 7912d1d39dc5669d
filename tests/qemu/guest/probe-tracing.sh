#!/bin/sh
# Guest script (busybox sh): probe what a kernel's tracefs offers to dcg and capture
# function_graph output inside a private instance, with and without fprobe/kretprobe
# exit events. Every section is printed between
#   =====BEGIN <name>=====  and  =====END <name>=====
# Used by tests/qemu/probe-kernel.sh; runs on any kernel (missing features print NOTE:).
T=/sys/kernel/tracing
I=$T/instances/x
cd $T || exit 1
begin() { echo "=====BEGIN $1====="; }
end()   { echo "=====END $1====="; }
has()   { if [ -e "$1" ]; then echo "yes  $1"; else echo "no   $1"; fi; }
note()  { echo "NOTE: $*"; }

begin info
uname -a
cat /proc/cmdline
echo "uptime at script start: $(cut -d' ' -f1 /proc/uptime) s"
echo "nproc: $(grep -c ^processor /proc/cpuinfo)"
end info

begin tracefs-top
echo "### ls $T"; ls $T
echo "### available_tracers"; cat available_tracers
echo "### options"; ls options
echo "### trace_clock"; cat trace_clock
echo "### available_filter_functions: $(grep -c . available_filter_functions) lines"
for f in do_sys_openat2 getname_flags do_filp_open do_file_open path_openat vfs_write ksys_write; do
	if grep -qE "^$f( |\$)" available_filter_functions; then echo "traceable: $f"; else echo "NOT traceable: $f"; fi
done
echo "### /proc/kallsyms vs. KASLR"
grep -E ' (_stext|do_sys_openat2)$' /proc/kallsyms
end tracefs-top

begin features
for p in instances dynamic_events kprobe_events uprobe_events \
	 options/funcgraph-retval options/funcgraph-retval-hex options/funcgraph-args \
	 options/funcgraph-retaddr options/func-args events/ftrace/funcgraph_entry \
	 events/ftrace/funcgraph_exit events/ftrace/fgraph_retaddr_entry; do has $T/$p; done
end features

# ---------------------------------------------------------------- the instance
mkdir $I || { note "mkdir instances/x failed"; exit 1; }
begin instance-files
echo "### ls instances/x"; ls $I
echo "### ls instances/x/options (tracer nop)"; ls $I/options
for p in set_graph_function set_graph_notrace set_ftrace_filter set_ftrace_pid \
	 available_filter_functions available_tracers dynamic_events kprobe_events \
	 current_tracer trace_marker tracing_on buffer_size_kb; do has $I/$p; done
end instance-files

# Pre-open the instance's control files: toggling tracing then needs no openat().
exec 3> $I/tracing_on
exec 4> $I/trace_marker
exec 5> /dev/null
echo 0 >&3
echo 4096 > $I/buffer_size_kb

iopt() { [ -e $I/options/$1 ] && echo $2 > $I/options/$1 || note "instance option $1 missing"; }
up() { cut -d' ' -f1 /proc/uptime; }

# Instances have no set_graph_function (it is global, top level only). The probe checks
# whether the top-level set_graph_function restricts an instance's function_graph.
SGF=$T/set_graph_function
[ -e $I/set_graph_function ] && SGF=$I/set_graph_function

run_graph() {	# $1 = section name; traces "cat /nonexistent" under do_sys_openat2
	echo > $I/trace
	echo do_sys_openat2 > $SGF || note "set_graph_function failed"
	t0=$(up)
	echo function_graph > $I/current_tracer || note "function_graph in instance failed"
	t1=$(up)
	echo 1 >&3
	echo "cmd: cat /nonexistent (expect -ENOENT)" >&4
	cat /nonexistent 2>&5
	echo 0 >&3
	begin $1
	cat $I/trace
	end $1
	echo nop > $I/current_tracer
	echo "(switching to function_graph took $t0 -> $t1 s uptime)"
}

begin instance-graph-setup
echo "### ls instances/x/options (after function_graph)"
echo function_graph > $I/current_tracer && ls $I/options
echo nop > $I/current_tracer
echo "### set_graph_function used: $SGF"
echo "### invalid function in set_graph_function:"
{ echo no_such_function_dcg > $SGF; } 2>&1 && echo "accepted" || echo "rejected (rc=$?)"
echo "### funcgraph formats"
cat events/ftrace/funcgraph_entry/format events/ftrace/funcgraph_exit/format
end instance-graph-setup

# 0) instance function_graph, nothing filtered: count only (TCG prints slowly)
echo > $SGF
echo > $I/trace
echo function_graph > $I/current_tracer
echo 1 >&3
cat /nonexistent 2>&5
echo 0 >&3
begin graph-unfiltered-count
echo "instance function_graph, empty set_graph_function: $(grep -c . $I/trace) lines"
echo "of which do_sys_openat2 lines: $(grep -c do_sys_openat2 $I/trace)"
end graph-unfiltered-count
echo nop > $I/current_tracer

# 1) function_graph rooted at do_sys_openat2 (top-level set_graph_function), instance buffer
run_graph graph-plain
begin top-level-buffer-after-graph
echo "top-level current_tracer: $(cat current_tracer); top-level trace lines: $(grep -vc '^#' trace)"
end top-level-buffer-after-graph
if [ -e $I/options/funcgraph-retval ]; then
	iopt funcgraph-retval 1
	run_graph graph-retval
	iopt funcgraph-retval 0
fi
if [ -e $I/options/funcgraph-args ]; then
	iopt funcgraph-args 1
	run_graph graph-args
	iopt funcgraph-args 0
fi
echo > $SGF

# 1b) per-instance alternative: set_ftrace_filter in the instance (only listed functions)
begin graph-instance-ftrace-filter
echo "do_sys_openat2 getname_flags do_file_open do_filp_open path_openat" | tr ' ' '\n' | while read f; do
	grep -qE "^$f( |\$)" available_filter_functions && echo $f >> $I/set_ftrace_filter
done
echo "### instance set_ftrace_filter:"; cat $I/set_ftrace_filter
echo "### top-level set_ftrace_filter:"; cat set_ftrace_filter
echo > $I/trace
echo function_graph > $I/current_tracer
echo 1 >&3
cat /nonexistent 2>&5
echo 0 >&3
cat $I/trace
echo nop > $I/current_tracer
echo > $I/set_ftrace_filter
end graph-instance-ftrace-filter

# 2) fprobe exit event, defined globally, enabled only in the instance
begin fprobe-define
if [ -e dynamic_events ]; then
	{ echo 'f:dcg/ret_x do_sys_openat2%return $retval' >> dynamic_events; } 2>&1 && echo "defined f:dcg/ret_x" || note "fprobe definition failed"
	{ echo 'f:dcg/ent_x do_sys_openat2 dfd=$arg1 path=+0($arg2):ustring' >> dynamic_events; } 2>&1 && echo "defined f:dcg/ent_x" || note "fprobe entry definition failed"
	echo "### dynamic_events:"; cat dynamic_events
	echo "### error_log:"; cat error_log 2>/dev/null
	for f in events/dcg/*/format; do [ -e $f ] && { echo "### $f"; cat $f; }; done
	echo "### ls instances/x/events/dcg:"; ls $I/events/dcg 2>&1
	echo "### ls instances/x/events/dcg/ret_x:"; ls $I/events/dcg/ret_x 2>&1
else
	note "no dynamic_events"
fi
end fprobe-define
if [ -e $I/events/dcg/ret_x/enable ]; then
	echo 1 > $I/events/dcg/ret_x/enable
	begin fprobe-enable-state
	echo "instance ret_x/enable: $(cat $I/events/dcg/ret_x/enable)"
	echo "top-level ret_x/enable: $(cat events/dcg/ret_x/enable)"
	echo "### removing the event while enabled in the instance:"
	echo > error_log
	{ echo '-:dcg/ret_x' >> dynamic_events; } 2>&1 && echo "removed (unexpected)" || echo "refused (rc=$?)"
	echo "### error_log:"; cat error_log
	end fprobe-enable-state
	echo > trace
	run_graph graph-fprobe
	if [ -e $I/options/funcgraph-retval ]; then
		iopt funcgraph-retval 1
		run_graph graph-fprobe-retval
		iopt funcgraph-retval 0
	fi
	echo 1 > $I/events/dcg/ent_x/enable
	run_graph graph-fprobe-entry-and-exit
	begin fprobe-top-level-buffer
	cat trace
	end fprobe-top-level-buffer
	# the same events under the nop tracer (plain event lines)
	echo > $I/trace
	echo 1 >&3
	cat /nonexistent 2>&5
	echo 0 >&3
	begin fprobe-nop
	cat $I/trace
	end fprobe-nop
	echo 0 > $I/events/dcg/ret_x/enable
	echo 0 > $I/events/dcg/ent_x/enable
fi

# 3) kretprobe exit event via kprobe_events, enabled only in the instance
begin kretprobe-define
if [ -e kprobe_events ]; then
	{ echo 'r:dcg/kret_x do_sys_openat2 $retval' >> kprobe_events; } 2>&1 && echo "defined r:dcg/kret_x" || note "kretprobe definition failed"
	cat kprobe_events
	echo "### error_log:"; cat error_log 2>/dev/null
	[ -e events/dcg/kret_x/format ] && cat events/dcg/kret_x/format
else
	note "no kprobe_events"
fi
end kretprobe-define
if [ -e $I/events/dcg/kret_x/enable ]; then
	echo 1 > $I/events/dcg/kret_x/enable
	run_graph graph-kretprobe
	echo 0 > $I/events/dcg/kret_x/enable
fi

# cleanup must leave no trace: events first, then the instance
begin cleanup
echo nop > $I/current_tracer
echo > $SGF
exec 3>&- 4>&-
[ -e kprobe_events ] && { { echo '-:dcg/kret_x' >> kprobe_events; } 2>&1 || note "kretprobe removal failed"; }
[ -e dynamic_events ] && { { echo > dynamic_events; } 2>&1 || note "dynamic_events clear failed"; }
echo "dynamic_events after clear: [$(cat dynamic_events 2>/dev/null)]"
rmdir $I && echo "rmdir instances/x ok" || note "rmdir instances/x failed"
end cleanup
echo "uptime at script end: $(cut -d' ' -f1 /proc/uptime) s"
