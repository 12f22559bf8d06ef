#!/usr/bin/env bash
# gather_probe.sh LIB READ_AHEAD_KB LIMIT [gather_probe args...] — runs
# gather_probe under LIB (LIB "none": without the shim, for a baseline) in a
# fresh memory cgroup of LIMIT bytes, with its spill directory on a
# loop-mounted ext4 image (losetup --direct-io=on, so reads reach the real
# disk) whose read_ahead_kb is set to READ_AHEAD_KB. Removes the mount, the
# loop device, the image and the cgroup on any exit. Needs root.
# Environment: PROBE (path of the gather_probe binary), NAME (tag, default
# "detector"), IMAGE_GB (default 6), EXTRA_ENV (more NAME=VALUE for the run).
set -euo pipefail
lib=$1 ra=$2 limit=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
probe=${PROBE:-$here/gather_probe}
name=${NAME:-detector}
work=$(mktemp -d "/var/tmp/spillway-$name-probe.XXXXXX")
cg=""
loop=""
cleanup() {
  set +e
  if [ -n "$cg" ] && [ -d "$cg" ]; then
    if [ -f "$cg/cgroup.procs" ]; then
      for p in $(cat "$cg/cgroup.procs"); do kill -9 "$p" 2>/dev/null; done
    fi
    sleep 0.2
    rmdir "$cg" 2>/dev/null
  fi
  mountpoint -q "$work/mnt" && umount "$work/mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s "${IMAGE_GB:-6}G" "$work/image"
loop=$(losetup --find --show --direct-io=on "$work/image")
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
mkdir "$work/mnt"
mount "$loop" "$work/mnt"
echo "$ra" > "/sys/block/$(basename "$loop")/queue/read_ahead_kb"
mkdir "$work/mnt/spill"
if [ -d /sys/fs/cgroup/memory ]; then
  cg=/sys/fs/cgroup/memory/spillway-$name-probe-$$
  mkdir "$cg"
  echo "$limit" > "$cg/memory.limit_in_bytes"
  [ -f "$cg/memory.memsw.limit_in_bytes" ] && echo "$limit" > "$cg/memory.memsw.limit_in_bytes"
else
  cg=/sys/fs/cgroup/spillway-$name-probe-$$
  mkdir "$cg"
  echo "$limit" > "$cg/memory.max"
  echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
fi
echo "# read_ahead_kb=$ra limit=$limit lib=$lib loop=$loop"
preload=()
[ "$lib" != none ] && preload=(LD_PRELOAD="$lib")
# The child joins the cgroup before exec, so every page it touches is charged.
sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
  env "${preload[@]}" SPILLWAY_DIR="$work/mnt/spill" SPILLWAY_THRESHOLD=1MiB ${EXTRA_ENV:-} \
  "$probe" "$@"
