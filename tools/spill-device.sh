#!/usr/bin/env bash
# spill-device.sh — runs a command with the test suites' spill and scratch
# directories (SPILLWAY_TEST_TMP, tests/meson.build) on a fresh filesystem
# (ext4 unless --fs says xfs or btrfs) on a loop device whose read_ahead_kb
# you choose. Read-ahead decides what a
# fault on a spilled page reads (DESIGN.md): the suites must pass at the 128
# KiB of a fresh VM's disk as at the 8 MiB of another. The loop device reads
# its image with direct I/O, so the image file's own page cache and
# read-ahead play no part.
#
# A user's /var/tmp is not always ext4 (XFS on RHEL's lineage, btrfs on
# SUSE's and Fedora's): the suites must pass on each.
#
# Usage: tools/spill-device.sh [--size GIB] [--fs ext4|xfs|btrfs] READ_AHEAD_KB COMMAND [ARG...]
#   tools/spill-device.sh 128 bash tools/test-all.sh
#   tools/spill-device.sh --fs xfs 8192 meson test -C build --suite control
# A build configured earlier keeps the spill root it was configured with:
# give a fresh build directory (test-all.sh on a clean clone configures one).
# Needs root. The image (sparse, default 16 GiB) is made under /var/tmp;
# mount, loop device and image are removed when the command ends, also when
# it fails or is interrupted. Exit status: the command's.
set -euo pipefail
size_gib=16 fs=ext4
usage="usage: tools/spill-device.sh [--size GIB] [--fs ext4|xfs|btrfs] READ_AHEAD_KB COMMAND [ARG...]"
while :; do
    case ${1:-} in
    --size) size_gib=${2:?$usage}; shift 2 ;;
    --fs) fs=${2:?$usage}; shift 2 ;;
    *) break ;;
    esac
done
case $fs in ext4|xfs|btrfs) ;; *) echo "spill-device.sh: --fs must be ext4, xfs or btrfs, got '$fs'" >&2; exit 2 ;; esac
declare -A fs_package=([ext4]=e2fsprogs [xfs]=xfsprogs [btrfs]=btrfs-progs)
command -v "mkfs.$fs" >/dev/null || { echo "spill-device.sh: mkfs.$fs not found; apt-get install ${fs_package[$fs]}" >&2; exit 2; }
ra_kb=${1:?$usage}
shift
[ $# -gt 0 ] || { echo "spill-device.sh: no command given; e.g. tools/spill-device.sh 128 bash tools/test-all.sh" >&2; exit 2; }
case $ra_kb in ''|*[!0-9]*) echo "spill-device.sh: READ_AHEAD_KB must be a number of KiB, e.g. 128 or 8192" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "spill-device.sh: needs root (loop device, mount)" >&2; exit 2; }

work=$(mktemp -d /var/tmp/spillway-spill-device.XXXXXX)
loop=
cleanup() {
    if mountpoint -q "$work/mnt"; then umount "$work/mnt" || umount -l "$work/mnt"; fi
    if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
truncate -s "${size_gib}G" "$work/spill.img"
loop=$(losetup --find --show --direct-io=on "$work/spill.img")
case $fs in
ext4) mkfs.ext4 -q -F -m 0 -E nodiscard,lazy_itable_init=1 "$loop" ;;
xfs) mkfs.xfs -q -f -K "$loop" ;;
btrfs) mkfs.btrfs -q -f -K "$loop" >/dev/null ;;
esac
mkdir "$work/mnt"
mount "$loop" "$work/mnt"
# As /var/tmp is: other users' tests (nobody's, in hardening/security and
# faults) must reach it, and a sticky 1777 root is what they are written for.
chmod 755 "$work"
chmod 1777 "$work/mnt"
echo "$ra_kb" >"/sys/block/$(basename "$loop")/queue/read_ahead_kb"
echo "spill-device.sh: SPILLWAY_TEST_TMP=$work/mnt: $fs on $loop (direct I/O to $work/spill.img," \
     "${size_gib} GiB), read_ahead_kb $(cat "/sys/block/$(basename "$loop")/queue/read_ahead_kb")" >&2
status=0
SPILLWAY_TEST_TMP=$work/mnt "$@" || status=$?
echo "spill-device.sh: '$*' exited with $status (read_ahead_kb $ra_kb)" >&2
exit "$status"
