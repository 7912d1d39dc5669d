#!/bin/sh
# The guest half of examples/run.sh, inside the test kernel under qemu: its module tree
# (/lib/modules/RELEASE, from the kernel build's `make modules_install`) has the db module
# the build made. Each command is echoed before it runs.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
show() { echo; echo "guest\$ $*"; "$@"; }

show modprobe dcg_sigdb || exit 1
show dcg list || exit 1
# Without --db, dcg trace finds the db in /sys/kernel/dcg (the module's), matched by
# the running kernel's build-id.
# pidfd_create is inlined into the pidfd_open syscall: dcg traces the syscall and shows
# the inlined code as a frame of its own. The program opens a pidfd on itself (works),
# on a pid that does not exist (-ESRCH) and with bad flags (-EINVAL).
show dcg trace --show-retvals --func pidfd_create --trace-output /tmp/pidfd -- \
	/dcg/inline-calls pidfd
rc=$?
echo; echo "--- the calls under pidfd_create's container (dcg exit $rc):"
cat /tmp/pidfd || exit 1
[ $rc = 0 ] || exit 1
# The command's own output goes to the console; the tree to /tmp/tree, printed after it.
show dcg trace --show-retvals --args --func do_sys_openat2 --trace-output /tmp/tree \
	-- cat /proc/sys/kernel/ostype /nonexistent
rc=$?
echo; echo "--- the call tree under do_sys_openat2 (dcg exit $rc):"
cat /tmp/tree || exit 1
show modprobe -r dcg_sigdb || exit 1
echo
if dmesg | grep -q 'WARNING:\|BUG:'; then
	echo "kernel log has a WARNING/BUG:"; dmesg | grep -A20 'WARNING:\|BUG:' | head -40
	exit 1
fi
echo "kernel log: no WARNING or BUG"
[ $rc = 0 ]
