#!/bin/sh
# Issue 28: the db the host fetched from debuginfod by the kernel's build-id (the guest has
# no network), loaded into the guest's store and used by a trace with no --db.
. /dcg/lib.sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
section_before

begin fetched
dcg load $DB; echo "rc=$?"
LIMIT=180 run_trace fetched --show-retvals --func do_sys_openat2 -- cat /nonexistent
end fetched

section_after
