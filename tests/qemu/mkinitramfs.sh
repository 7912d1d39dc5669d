#!/usr/bin/env bash
# Build a busybox-static initramfs that runs one guest script and then ends the VM.
#
#   mkinitramfs.sh OUT.cpio.gz [--init SCRIPT | --run 'SHELL CMD'] [--timeout SECS]
#                  [--add HOSTPATH[:GUESTPATH]]... [--module FILE.ko]...
#
#   --init SCRIPT   guest script (run with busybox sh as /dcg/guest.sh); default: print uname
#   --run CMD       same, the script being the one line CMD
#   --timeout SECS  guest-side limit for the script (default 600); the kernel command line
#                   can override it with dcg.timeout=SECS. On expiry the script gets
#                   SIGTERM, then SIGKILL 2 s later, and the exit code is 124.
#   --add H[:G]     copy host file or directory H to guest path G (default: same path).
#                   Dynamically linked ELF files get their shared libraries (ldd) and
#                   their ELF interpreter copied too; libraries loaded with dlopen are not.
#   --module KO     copy a kernel module to /lib/modules/ and insmod it (in the order given)
#                   before the script runs; a failing insmod is reported but not fatal.
#                   .ko.xz/.ko.zst/.ko.gz are decompressed on the host first.
#
# OUT ending in .cpio is written uncompressed, anything else is gzip'd (every kernel can
# unpack gzip). The guest /init mounts proc, sysfs, devtmpfs, tmpfs (/tmp, /run), tracefs
# (/sys/kernel/tracing) and debugfs (/sys/kernel/debug; where configured), runs the script
# with stdout/stderr on the console, then prints
#   DCG-GUEST-START             before the script
#   DCG-GUEST-EXIT=<rc>         after it (rc 124: guest timeout)
# each on a line of its own, and reboots (reboot -f: with qemu's -no-reboot that ends qemu;
# poweroff needs ACPI, which the tinyconfig test kernel lacks). run-guest.sh reads the marker.
# Guest environment: PATH=/bin:/sbin:/usr/bin:/usr/sbin, HOME=/root, cwd /, T=tracefs path,
# LD_LIBRARY_PATH = the directories the copied shared libraries came from.
set -euo pipefail

die() { echo "mkinitramfs: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0" >&2; exit 2; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; -*) die "first argument must be the output file" ;; esac
out=$1; shift
script=""; run_cmd=""; timeout=600
adds=(); modules=()
while [ $# -gt 0 ]; do
  case "$1" in
    --init) [ $# -ge 2 ] || die "--init needs a file"; script=$2; shift 2 ;;
    --run) [ $# -ge 2 ] || die "--run needs a command"; run_cmd=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || die "--timeout needs seconds"; timeout=$2; shift 2 ;;
    --add) [ $# -ge 2 ] || die "--add needs HOSTPATH[:GUESTPATH]"; adds+=("$2"); shift 2 ;;
    --module) [ $# -ge 2 ] || die "--module needs a .ko file"; modules+=("$2"); shift 2 ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$timeout" =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] || die "--timeout must be a positive integer"
[ -z "$script" ] || [ -z "$run_cmd" ] || die "--init and --run are exclusive"
[ -z "$script" ] || [ -f "$script" ] || die "guest script not found: $script"

command -v cpio >/dev/null || die "cpio not found (apt-get install cpio)"
command -v readelf >/dev/null || die "readelf not found (apt-get install binutils)"
busybox=""
for b in /bin/busybox /usr/bin/busybox; do
  [ -x "$b" ] || continue
  hdr=$(readelf -l "$b" 2>/dev/null || true)
  if [[ "$hdr" != *"program interpreter"* ]]; then busybox=$b; break; fi
done
[ -n "$busybox" ] || die "no statically linked busybox (apt-get install busybox-static)"

stage=$(mktemp -d "${TMPDIR:-/tmp}/dcg-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,root,etc,dcg,lib/modules,mnt}
chmod 755 "$stage"; chmod 1777 "$stage/tmp"

# busybox and one symlink per applet (the --list-full paths: bin/sh, usr/bin/timeout, ...)
cp "$busybox" "$stage/bin/busybox"
while read -r applet; do
  [ -n "$applet" ] && [ ! -e "$stage/$applet" ] || continue
  mkdir -p "$stage/$(dirname "$applet")"
  ln -s /bin/busybox "$stage/$applet"
done < <("$busybox" --list-full)
[ -e "$stage/bin/sh" ] || ln -s busybox "$stage/bin/sh"

# device nodes for the first moments before devtmpfs is mounted (root only)
if [ "$(id -u)" = 0 ]; then
  mknod -m 600 "$stage/dev/console" c 5 1
  mknod -m 666 "$stage/dev/null" c 1 3
fi

printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$stage/etc/group"

libdirs=""
copy_libs() { # ELF -> copy its interpreter and ldd-resolved libraries to the same paths
  local f=$1 interp line lib
  interp=$(readelf -l "$f" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
  [ -n "$interp" ] || return 0
  [ -e "$stage$interp" ] || { mkdir -p "$stage$(dirname "$interp")"; cp -L "$interp" "$stage$interp"; }
  while read -r line; do
    case "$line" in
      *"=> not found"*) die "$f: shared library not found on the host: ${line%% *}" ;;
      *"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
      /*) lib=${line%% (*} ;;
      *) continue ;;
    esac
    if [ ! -e "$stage$lib" ]; then
      mkdir -p "$stage$(dirname "$lib")"
      cp -L "$lib" "$stage$lib"
    fi
    case ":$libdirs:" in *":$(dirname "$lib"):"*) ;; *) libdirs=${libdirs:+$libdirs:}$(dirname "$lib") ;; esac
  done < <(ldd "$f" 2>/dev/null || true)
}
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

for a in "${adds[@]}"; do
  host=${a%%:*}; guest=${a#*:}
  [ "$guest" != "$a" ] || guest=$host
  [ -e "$host" ] || die "--add: not found: $host"
  case "$guest" in /*) ;; *) die "--add: guest path must be absolute: $guest" ;; esac
  mkdir -p "$stage$(dirname "$guest")"
  cp -a -L "$host" "$stage$guest"
  while IFS= read -r -d '' f; do
    if is_elf "$f"; then copy_libs "$f"; fi
  done < <(find "$stage$guest" -type f -perm -u+x -print0)
done

: > "$stage/dcg/modules"
for m in "${modules[@]}"; do
  [ -f "$m" ] || die "--module: not found: $m"
  b=$(basename "$m")
  case "$b" in  # Debian ships modules compressed; busybox insmod wants them plain
    *.ko.xz)  xz -dc "$m" > "$stage/lib/modules/${b%.xz}" || die "--module: cannot unxz $m"; b=${b%.xz} ;;
    *.ko.zst) zstd -qdc "$m" > "$stage/lib/modules/${b%.zst}" || die "--module: cannot unzstd $m"; b=${b%.zst} ;;
    *.ko.gz)  gzip -dc "$m" > "$stage/lib/modules/${b%.gz}" || die "--module: cannot gunzip $m"; b=${b%.gz} ;;
    *) cp "$m" "$stage/lib/modules/$b" ;;
  esac
  echo "/lib/modules/$b" >> "$stage/dcg/modules"
done

if [ -n "$script" ]; then cp "$script" "$stage/dcg/guest.sh"
elif [ -n "$run_cmd" ]; then printf '#!/bin/sh\n%s\n' "$run_cmd" > "$stage/dcg/guest.sh"
else printf '#!/bin/sh\nuname -a\n' > "$stage/dcg/guest.sh"
fi
chmod 755 "$stage/dcg/guest.sh"
printf '%s\n' "$timeout" > "$stage/dcg/timeout"
printf '%s\n' "$libdirs" > "$stage/dcg/libdirs"

cat > "$stage/init" <<'EOF'
#!/bin/sh
# dcg guest init (generated by tests/qemu/mkinitramfs.sh)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t devtmpfs dev /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "dcg-init: no tracefs"
mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
# the ldd directories of copied binaries
LD_LIBRARY_PATH=$(cat /dcg/libdirs)
[ -n "$LD_LIBRARY_PATH" ] && export LD_LIBRARY_PATH || unset LD_LIBRARY_PATH
export T=/sys/kernel/tracing
timeout=$(cat /dcg/timeout)
for w in $(cat /proc/cmdline); do
  case "$w" in
    dcg.timeout=*) timeout=${w#dcg.timeout=} ;;
    dcg.printk=*) echo "${w#dcg.printk=}" > /proc/sys/kernel/printk ;;
  esac
done
while read -r m; do
  [ -n "$m" ] || continue
  insmod "$m" || echo "dcg-init: insmod $m failed"
done < /dcg/modules
cd /
echo  # SeaBIOS leaves the cursor mid-line: start the marker on a line of its own
echo "DCG-GUEST-START"
/bin/sh /dcg/guest.sh &
pid=$!
( sleep "$timeout"
  if kill -0 $pid 2>/dev/null; then
    echo "dcg-init: guest script timed out after ${timeout}s"
    : > /run/dcg-timeout
    kill -TERM $pid; sleep 2; kill -KILL $pid 2>/dev/null
  fi ) </dev/null &
wd=$!
wait $pid
rc=$?
kill $wd 2>/dev/null
[ -e /run/dcg-timeout ] && rc=124
sync
echo "DCG-GUEST-EXIT=$rc"
# let the UART drain before the machine goes away; qemu runs with -no-reboot, so a
# reboot ends it (poweroff needs ACPI, which the tinyconfig test kernel cannot use)
sleep 0.2
reboot -f
poweroff -f
EOF
chmod 755 "$stage/init"

mkdir -p "$(dirname "$out")"
tmp_out="$out.tmp.$$"
case "$out" in
  *.cpio) (cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) > "$tmp_out" ;;
  *)      (cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) | gzip -6 -n > "$tmp_out" ;;
esac
mv -f "$tmp_out" "$out"
echo "$out"
