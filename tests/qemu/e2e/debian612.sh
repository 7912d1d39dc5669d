#!/bin/sh
# Kernel e2e scenarios 1 and 3 on Debian's 6.12 cloud kernel (no funcgraph-retval, no
# funcgraph-args: return values from fprobe exit events, on rethook in 6.12; arguments
# from fprobe entry events). The db goes through the store (`dcg load`, matched by the
# running kernel's build-id), so `dcg trace` runs without --db.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_KTRACE_DEBUG=1
section_before

debian_scenarios

begin s1-args
# No funcgraph-args either: entry fprobes, which 6.12 prints after the call's `{`.
LIMIT=120 run_trace s1a --engine fgraph --show-retvals --args --func do_sys_openat2 -- cat /nonexistent
echo "--- after"
leftovers
end s1-args

section_after
