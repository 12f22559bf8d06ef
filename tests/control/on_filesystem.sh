#!/usr/bin/env bash
# on_filesystem.sh FS COMMAND... — runs COMMAND with SPILLWAY_DIR on a fresh
# 320 MiB filesystem of type FS, mounted with online discard, and removes it
# afterwards (also when COMMAND fails or the script is interrupted):
#   xfs, btrfs, ext4  made on a loop device
#   overlay           an overlayfs whose upper layer is on a loop-device ext4,
#                     as a container's writable layer is
# 320 MiB: XFS's smallest (mkfs.xfs refuses less than 300 MB). Needs root
# and mkfs.xfs (xfsprogs), mkfs.btrfs (btrfs-progs), strace: tools/setup-deps.sh
# installs them. Sets SPILLWAY_FS_SCRATCH to a directory on the real disk
# for the test's own files.
set -euo pipefail
fs=${1:?usage: on_filesystem.sh xfs|btrfs|ext4|overlay COMMAND...}
shift
die() { echo "on_filesystem.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (loop devices and mounts); run the suite as root"
for tool in losetup mkfs.ext4 mkfs.xfs mkfs.btrfs strace; do
    command -v "$tool" >/dev/null || die "$tool is missing; run tools/setup-deps.sh (xfsprogs, btrfs-progs, strace)"
done
work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}/spillway-fs-$fs.XXXXXX")
loop=
cleanup() {
    local m
    for m in "$work/merged" "$work/mnt"; do
        if mountpoint -q "$m"; then umount "$m" || umount -l "$m"; fi
    done
    if [ -n "$loop" ]; then losetup -d "$loop" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
truncate -s 320M "$work/fs.img"
# An explicit loop device, so that cleanup detaches it even when mkfs or
# mount fails.
loop=$(losetup --find --show "$work/fs.img")
mkdir "$work/mnt" "$work/scratch"
case $fs in
    xfs)
        mkfs.xfs -q -f "$loop"
        mount -o discard "$loop" "$work/mnt"
        spill=$work/mnt/spill ;;
    btrfs)
        mkfs.btrfs -q -f "$loop" >/dev/null
        mount -o discard=sync "$loop" "$work/mnt"
        spill=$work/mnt/spill ;;
    ext4)
        mkfs.ext4 -q -F -m 0 "$loop"
        mount -o discard "$loop" "$work/mnt"
        spill=$work/mnt/spill ;;
    overlay)
        mkfs.ext4 -q -F -m 0 "$loop"
        mount -o discard "$loop" "$work/mnt"
        mkdir "$work/mnt/lower" "$work/mnt/upper" "$work/mnt/work" "$work/merged"
        echo "from the image" >"$work/mnt/lower/layer-file"
        mount -t overlay overlay \
            -o "lowerdir=$work/mnt/lower,upperdir=$work/mnt/upper,workdir=$work/mnt/work" "$work/merged"
        spill=$work/merged/spill ;;
    *) die "unknown filesystem '$fs'; choose xfs, btrfs, ext4 or overlay" ;;
esac
mkdir -m 0700 "$spill"
fstype=$(findmnt -n -o FSTYPE -T "$spill")
echo "on_filesystem.sh: spill directory $spill on $fstype ($(losetup -n -O NAME "$loop"), $(cat "/sys/block/$(basename "$loop")/queue/read_ahead_kb") KiB read-ahead)"
status=0
SPILLWAY_DIR=$spill SPILLWAY_FS_SCRATCH=$work/scratch "$@" || status=$?
if [ -n "$(ls -A "$spill")" ]; then
    echo "on_filesystem.sh: the spill directory is not empty afterwards: $(ls -A "$spill" | head -5 | tr '\n' ' ')" >&2
    [ "$status" -ne 0 ] || status=1
fi
exit "$status"
