#!/usr/bin/env bash
# two_readers.sh LIB [MIB LIMIT LAG_MIB PASSES WORK] — two threads reading one
# buffer at once (two_readers.c), in a fresh memory cgroup of LIMIT, with
# the buffer a spill file under LIB or, as the baseline, a plain fallocated
# file mapped MAP_SHARED (the kernel alone), both on one loop-mounted ext4
# (losetup --direct-io=on) at read_ahead_kb 128. For each mode (same: both
# threads the whole buffer, one LAG_MIB behind; halves: each its half; one:
# a single reader) it runs plain, shim, shim, plain and prints each run's
# mean over passes 2..PASSES (the first follows the fill) of the seconds
# and the MiB read from storage, then shim / plain per mode.
# Defaults: 1024 MiB in 512M, lag 64 MiB, 4 passes, WORK 40. Needs root.
# Removes the cgroup, the mount, the loop device and the image on any exit.
set -euo pipefail
lib=$(readlink -f "$1")
mib=${2:-1024} limit=${3:-512M} lag=${4:-64} passes=${5:-4} work=${6:-40}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d /var/tmp/spillway-two-readers.XXXXXX)
loop=""
cleanup() {
  set +e
  # (run_one runs in a subshell: its cgroup is found by name, not by $cg)
  for cg in /sys/fs/cgroup/memory/spillway-two-readers-$$ /sys/fs/cgroup/spillway-two-readers-$$; do
    [ -d "$cg" ] || continue
    for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    sleep 0.2
    rmdir "$cg" 2>/dev/null
  done
  mountpoint -q "$bin/mnt" && umount "$bin/mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$bin"
}
trap cleanup EXIT
cc -O2 -pthread -o "$bin/two_readers" "$here/two_readers.c"
truncate -s "$((mib * 3 / 1024 + 2))G" "$bin/image"
loop=$(losetup --find --show --direct-io=on "$bin/image")
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
mkdir "$bin/mnt"
mount "$loop" "$bin/mnt"
echo 128 > "/sys/block/$(basename "$loop")/queue/read_ahead_kb"
mkdir "$bin/mnt/spill"

# run_one plain|shim MODE: one run in a fresh cgroup; prints "S MIB" (means).
run_one() {
  local how=$1 mode=$2 out
  if [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/spillway-two-readers-$$
    mkdir "$cg"
    echo "$limit" > "$cg/memory.limit_in_bytes"
  else
    cg=/sys/fs/cgroup/spillway-two-readers-$$
    mkdir "$cg"
    echo "$limit" > "$cg/memory.max"
    echo 0 > "$cg/memory.swap.max" 2>/dev/null || true
  fi
  sync
  echo 3 > /proc/sys/vm/drop_caches
  local env=(PLAIN="$bin/mnt/plain")
  [ "$how" = shim ] && env=(LD_PRELOAD="$lib" SPILLWAY_DIR="$bin/mnt/spill" SPILLWAY_THRESHOLD=1MiB)
  out=$(sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
    env "${env[@]}" "$bin/two_readers" "$mib" "$mode" "$lag" "$passes" "$work")
  rmdir "$cg"
  cg=""
  rm -f "$bin/mnt/plain"
  awk '/^TWOREADERS/ && !/pass=0 / { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         s += v["s"]; r += v["read_mib"]; n++ }
       END { if (n) printf "%.3f %.0f\n", s / n, r / n; else print "- -" }' <<< "$out"
}

echo "# two_readers: $mib MiB in $limit, lag $lag MiB, $passes passes, work $work; spill on ext4 (loop, read_ahead_kb 128); lib $lib"
echo "| mode | run | plain s | plain MiB read | shim s | shim MiB read |"
echo "|---|---|---|---|---|---|"
for mode in same halves one; do
  read -r p1s p1r < <(run_one plain "$mode")
  read -r s1s s1r < <(run_one shim "$mode")
  read -r s2s s2r < <(run_one shim "$mode")
  read -r p2s p2r < <(run_one plain "$mode")
  echo "| $mode | 1 | $p1s | $p1r | $s1s | $s1r |"
  echo "| $mode | 2 | $p2s | $p2r | $s2s | $s2r |"
  awk -v m="$mode" -v ps="$p1s $p2s" -v ss="$s1s $s2s" -v pr="$p1r $p2r" -v sr="$s1r $s2r" 'BEGIN {
    split(ps, a); split(ss, b); split(pr, c); split(sr, d)
    printf "| %s | shim / plain | time %.2fx | | bytes %.2fx | |\n", m, (b[1] + b[2]) / (a[1] + a[2]), (d[1] + d[2]) / (c[1] + c[2]) }'
done
