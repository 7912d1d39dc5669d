#!/bin/sh
# The test kernel's configuration, run inside the unpacked linux-source-7.2 tree:
# tinyconfig, then what dcg needs (function_graph with return values, return addresses
# and arguments; kprobe/fprobe/uprobe events; BPF; DWARF 5 and BTF; modules), booting under
# qemu with a busybox initramfs and a serial console; the db module (CONFIG_DEBUG_INFO_DCG,
# dwarfscan/kbuild: needs $DWARFSCAN, which build.sh sets).
set -e
make -s DWARFSCAN="$DWARFSCAN" tinyconfig
on="64BIT EXPERT PRINTK TTY SERIAL_8250 SERIAL_8250_CONSOLE BLK_DEV_INITRD RD_GZIP
    PROC_FS SYSFS DEVTMPFS TMPFS BINFMT_ELF BINFMT_SCRIPT MULTIUSER FUTEX EPOLL
    FILE_LOCKING POSIX_TIMERS SHMEM MODULES MODULE_UNLOAD KALLSYMS KALLSYMS_ALL
    CC_OPTIMIZE_FOR_PERFORMANCE
    FTRACE FUNCTION_TRACER DYNAMIC_FTRACE FUNCTION_GRAPH_TRACER FUNCTION_GRAPH_RETVAL
    FUNCTION_GRAPH_RETADDR FUNCTION_TRACE_ARGS KPROBES KRETPROBES KPROBE_EVENTS
    FPROBE FPROBE_EVENTS UPROBES UPROBE_EVENTS PERF_EVENTS BPF BPF_SYSCALL
    PROBE_EVENTS_BTF_ARGS DYNAMIC_EVENTS
    DEBUG_KERNEL DEBUG_INFO DEBUG_INFO_DWARF5 DEBUG_INFO_COMPRESSED_NONE DEBUG_INFO_BTF
    DEBUG_INFO_BTF_MODULES SAMPLES
    IKCONFIG IKCONFIG_PROC MAGIC_SYSRQ SMP ACPI"
# ACPI only for the MADT (SeaBIOS's MP table shows one CPU); not its device drivers.
off="CC_OPTIMIZE_FOR_SIZE DEBUG_INFO_NONE DEBUG_INFO_REDUCED DEBUG_INFO_SPLIT
     DEBUG_INFO_DWARF4 DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT
     ACPI_AC ACPI_BATTERY ACPI_FAN ACPI_THERMAL ACPI_DEBUG ACPI_TABLE_UPGRADE
     ACPI_PLATFORM_PROFILE X86_AMD_PSTATE"
mod="BINFMT_MISC SAMPLE_KPROBES SAMPLE_KRETPROBES SAMPLE_TRACE_EVENTS DEBUG_INFO_DCG"
set_all() {
  for o in $on; do scripts/config --enable "$o"; done
  for o in $off; do scripts/config --disable "$o"; done
  for o in $mod; do scripts/config --module "$o"; done
}
# Some options only appear once an earlier pass enabled what they depend on.
for pass in 1 2 3 4; do
  set_all
  make -s DWARFSCAN="$DWARFSCAN" olddefconfig
done
