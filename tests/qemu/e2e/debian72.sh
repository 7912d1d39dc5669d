#!/bin/sh
# Kernel e2e scenarios 1 and 3 on Debian's 7.2 cloud kernel (no funcgraph-retval: return
# values from fprobe exit events). The db goes through the store (`dcg load`, matched by
# the running kernel's build-id), so `dcg trace` runs without --db.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export DCG_KTRACE_DEBUG=1
section_before

# fprobe exit events next to function_graph make this kernel log a WARNING: the
# function_graph engine refuses to read values that way, the BPF engine reads them.
begin s1-fgraph-refused
dcg trace --db $DB --engine fgraph --show-retvals --func do_sys_openat2 -- cat /nonexistent
echo "rc=$?"
end s1-fgraph-refused
S1_ENGINE=bpf
debian_scenarios

section_after
