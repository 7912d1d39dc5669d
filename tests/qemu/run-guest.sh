#!/usr/bin/env bash
# Boot a kernel with an initramfs from mkinitramfs.sh under qemu (TCG) and return the
# exit code of the guest script.
#
#   run-guest.sh --kernel BZIMAGE --initrd INITRD [--timeout SECS] [--smp N] [--mem MB]
#                [--append 'EXTRA KERNEL ARGS'] [--log FILE] [-- EXTRA QEMU ARGS...]
#
#   --timeout SECS  wall-clock limit for the whole qemu run (default 300); qemu is
#                   killed when it expires (TERM, then KILL 5 s later)
#   --smp N         vCPUs (default 1). TCG always runs single-threaded (thread=single):
#                   multi-threaded TCG crashed ("Oops: int3") while ftrace patched live code
#   --mem MB        guest memory (default 1024)
#   --append ARGS   appended to "console=ttyS0 quiet panic=-1 oops=panic"; e.g.
#                   dcg.timeout=SECS (guest script limit), dcg.printk=N (console loglevel)
#   --log FILE      also keep the console output (CR stripped) in FILE
#
# The serial console is streamed to stdout (CR and SeaBIOS' terminal escapes stripped). stdin is never read (qemu gets
# /dev/null), so this works in CI and does not put a terminal into raw mode.
# Exit status: the guest script's, parsed from the last "DCG-GUEST-EXIT=<rc>" line;
# 124 when the wall timeout hit; 125 when the marker is missing (panic, crash, bad init);
# 2 on usage errors. No KVM: the reference says KVM fails on newer kernels on these hosts.
# Env: DCG_QEMU  qemu binary (default qemu-system-x86_64)
set -euo pipefail
shopt -s extglob

die() { echo "run-guest: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2; }

kernel=""; initrd=""; timeout=300; smp=1; mem=1024; extra=""; log=""; qargs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) [ $# -ge 2 ] || die "--kernel needs a file"; kernel=$2; shift 2 ;;
    --initrd) [ $# -ge 2 ] || die "--initrd needs a file"; initrd=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; timeout=$2; shift 2 ;;
    --smp) [ $# -ge 2 ] || die "--smp needs a number"; smp=$2; shift 2 ;;
    --mem) [ $# -ge 2 ] || die "--mem needs MB"; mem=$2; shift 2 ;;
    --append) [ $# -ge 2 ] || die "--append needs a string"; extra=$2; shift 2 ;;
    --log) [ $# -ge 2 ] || die "--log needs a file"; log=$2; shift 2 ;;
    --) shift; qargs=("$@"); break ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$kernel" ] || die "--kernel is required"
[ -n "$initrd" ] || die "--initrd is required"
[ -r "$kernel" ] || die "kernel not readable: $kernel"
[ -r "$initrd" ] || die "initrd not readable: $initrd"
[[ "$timeout" =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] || die "--timeout must be a positive integer"
[[ "$smp" =~ ^[0-9]+$ ]] && [ "$smp" -gt 0 ] || die "--smp must be a positive integer"
[[ "$mem" =~ ^[0-9]+$ ]] || die "--mem must be an integer (MB)"
qemu=${DCG_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || die "$qemu not found (apt-get install qemu-system-x86)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dcg-guest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
console=$tmp/console.log

# -nographic without a default monitor/serial on stdio: the console goes to a stdio
# chardev with signal=off (Ctrl-C is not a qemu command), stdin is /dev/null.
# shellcheck disable=SC2054  # the commas are qemu option syntax
cmd=("$qemu" -accel tcg,thread=single -cpu max -smp "$smp" -m "$mem"
     -nographic -no-reboot -vga none -nic none -monitor none
     -chardev stdio,id=con,signal=off -serial chardev:con
     -kernel "$kernel" -initrd "$initrd"
     -append "console=ttyS0 quiet panic=-1 oops=panic${extra:+ $extra}"
     "${qargs[@]}")

# Stream the console line by line: to stdout and the log (CR stripped), watch for the
# marker, and enforce the wall timeout. Once the marker is out, qemu gets 10 s to exit
# (the guest reboots with -no-reboot, i.e. qemu quits) before it is killed.
mkfifo "$tmp/fifo"
"${cmd[@]}" </dev/null >"$tmp/fifo" 2>"$tmp/qemu.err" &
qpid=$!
: > "$console"
t0r=$EPOCHREALTIME; deadline=$((SECONDS + timeout)); timed_out=0; marker_at=""
exec 3<"$tmp/fifo"
while :; do
  left=$((deadline - SECONDS))
  if [ "$left" -le 0 ]; then [ -n "$marker_at" ] || timed_out=1; break; fi
  if IFS= read -r -t "$left" line <&3; then
    line=${line%$'\r'}
    # Terminal escapes (SeaBIOS's, a spinner's) stripped by sed: linear on long lines,
    # where bash's own pattern substitution is not.
    case $line in *$'\e'*) line=$(printf '%s' "$line" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g') ;; esac
    printf '%s\n' "$line"; printf '%s\n' "$line" >> "$console"
    case "$line" in
      *DCG-GUEST-EXIT=*) marker_at=$EPOCHREALTIME
        [ $((SECONDS + 10)) -ge "$deadline" ] || deadline=$((SECONDS + 10)) ;;
    esac
  else
    r=$?
    if [ "$r" -gt 128 ]; then continue; fi   # read timed out: loop re-checks the deadline
    [ -z "$line" ] || { printf '%s\n' "${line%$'\r'}"; printf '%s\n' "${line%$'\r'}" >> "$console"; }
    break                                     # EOF: qemu closed its stdout
  fi
done
exec 3<&-
if kill -0 "$qpid" 2>/dev/null; then
  kill -TERM "$qpid" 2>/dev/null || true
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL "$qpid" 2>/dev/null || true
fi
wait "$qpid" 2>/dev/null && qst=0 || qst=$?
el() { awk -v a="$t0r" -v b="$1" 'BEGIN{printf "%.1f", b-a}'; }
secs=$(el "$EPOCHREALTIME")
[ -z "$log" ] || cp "$console" "$log"
if [ -s "$tmp/qemu.err" ]; then grep -v 'terminating on signal' "$tmp/qemu.err" | sed 's/^/qemu: /' >&2 || true; fi

if [ "$timed_out" = 1 ]; then
  echo "run-guest: timeout after ${timeout}s, qemu killed" >&2
  exit 124
fi
rc=$(sed -n 's/^.*DCG-GUEST-EXIT=\([0-9][0-9]*\)$/\1/p' "$console" | tail -1)
if [ -z "$rc" ]; then
  echo "run-guest: no DCG-GUEST-EXIT marker (qemu status $qst, ${secs}s): guest crashed or init failed" >&2
  exit 125
fi
echo "run-guest: guest exit $rc, marker after $(el "$marker_at")s, qemu gone after ${secs}s" >&2
exit "$rc"
