#!/bin/sh
# Kernel e2e scenarios 1 and 3 on Debian's 6.12 cloud kernel (no funcgraph-retval, no
# funcgraph-args: return values from fprobe exit events, on rethook in 6.12; arguments
# from fprobe entry events). The db goes through the store (`dcg load`, matched by the
# running kernel's build-id), so `dcg trace` runs without --db.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_KTRACE_DEBUG=1
begin before
global_state > /tmp/global.before; cat /tmp/global.before
leftovers
end before

begin load
dcg load $DB; echo "rc=$?"
dcg list
end load

begin s1-exit-probes
LIMIT=120 run_trace s1 --show-retvals --func do_sys_openat2 -- cat /nonexistent
echo "--- after"
leftovers
echo "--- kernel log (warnings)"
dmesg | grep -B2 -A25 -m2 'cut here\|WARNING\|BUG' | head -60
end s1-exit-probes

begin s1-args
# No funcgraph-args either: entry fprobes, which 6.12 prints after the call's `{`.
LIMIT=120 run_trace s1a --show-retvals --args --func do_sys_openat2 -- cat /nonexistent
echo "--- after"
leftovers
end s1-args

begin s3-inlined
dcg trace --show-retvals --func pidfd_create -- true; echo "rc=$?"
end s3-inlined

begin after
global_state > /tmp/global.after; cat /tmp/global.after
if cmp -s /tmp/global.before /tmp/global.after; then echo "global state unchanged: yes"; else echo "global state unchanged: NO"; fi
leftovers
end after
