#!/usr/bin/env bash
# Take the captures in this directory again, on the test kernel as build.sh makes it now:
# a busybox-static initramfs whose /init is guest-init.sh (every applet in /bin, the four
# modules in /lib/modules), booted under qemu TCG (-cpu max -smp 2, 1 GiB), the console cut
# into files by split-captures.py, plus c-symbols.map. Afterwards: the build-id in
# README.md, and the goldens (DCG_BLESS=1 cargo test -p dcg-tests --test decode --test
# report --test sig_dump).
#
#   take.sh [OUTDIR]        default: this directory (root; ~3 min)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${1:-$here}
die() { echo "take.sh: $*" >&2; exit 1; }
kernel=$(bash "$repo/tests/kernels/testkernel/build.sh")
busybox=/bin/busybox
readelf -l "$busybox" | grep -q "program interpreter" && die "$busybox is not static (busybox-static)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
mkdir -p "$stage"/{bin,dev,proc,sys,tmp,mnt,etc,lib/modules}
cp "$busybox" "$stage/bin/busybox"
for a in $("$busybox" --list); do [ -e "$stage/bin/$a" ] || ln -s busybox "$stage/bin/$a"; done
mknod -m 600 "$stage/dev/console" c 5 1
mknod -m 666 "$stage/dev/null" c 1 3
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$stage/etc/group"
cp "$kernel"/dbg-modules/*.ko "$stage/lib/modules/"
install -m 755 "$here/guest-init.sh" "$stage/init"
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -9) > "$tmp/initrd.gz"

rc=0
bash "$repo/tests/qemu/run-guest.sh" --kernel "$kernel/vmlinuz" --initrd "$tmp/initrd.gz" \
  --smp 2 --timeout 900 --log "$tmp/console.log" > /dev/null || rc=$?
grep -q '=====ALL DONE=====' "$tmp/console.log" ||
  die "the guest did not finish (run-guest.sh exit $rc); console: $(tail -5 "$tmp/console.log")"
mkdir -p "$out"
python3 "$here/split-captures.py" "$tmp/console.log" "$out"
rm -f "$out"/*-base64.txt
# c-symbols.map: the System.map lines whose addresses appear in c.txt (pointer names).
python3 - "$out/c.txt" "$kernel/System.map" > "$out/c-symbols.map" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
addrs = {int(a, 16) for a in re.findall(r'\b(?:0x)?(ffffffff8[0-9a-f]{7})\b', text)}
for line in open(sys.argv[2]):
    if int(line.split()[0], 16) in addrs:
        print(line.rstrip())
PY
echo "captures in $out (kernel build-id $(cat "$kernel/build-id"))"
