#!/usr/bin/env bash
# cgroup_namespace.sh SPILLWAY LIBSPILLWAY — `spillway top` for a job whose
# memory cgroup lies outside what the tool sees: the tool in a cgroup
# namespace of its own (group a), the job in a sibling group (b, with a
# limit of its own). The job's group is shown "?" with why, never the
# figures of another group (before: those of the mount's root, the whole
# machine); once the job mounts its own namespace's hierarchy, its group's
# figures are read through /proc/PID/root. cgroup v1 (the memory
# hierarchy) or v2. Needs root and unshare(1): skipped (77) otherwise. The
# groups it makes (spillway-cgns-PID under the hierarchy's root) and the
# job's mount point are removed at exit.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
library=$2
[ "$(id -u)" = 0 ] || { echo "cgroup_namespace: skipped, needs root"; exit 77; }
command -v unshare >/dev/null || { echo "cgroup_namespace: skipped, no unshare(1)"; exit 77; }
make_scratch
py=/usr/bin/python3

v1_mount=$(awk '$0 ~ / - cgroup cgroup / && $NF ~ /(^|,)memory(,|$)/ && $4 == "/" {print $5; exit}' /proc/self/mountinfo)
v2_mount=$(awk '$0 ~ / - cgroup2 cgroup2 / && $4 == "/" {print $5; exit}' /proc/self/mountinfo)
if [ -n "$v1_mount" ]; then
    version=1 base=$v1_mount limit_file=memory.limit_in_bytes mount_args="-t cgroup -o memory"
elif [ -n "$v2_mount" ] && grep -qw memory "$v2_mount/cgroup.controllers" 2>/dev/null; then
    version=2 base=$v2_mount limit_file=memory.max mount_args="-t cgroup2"
else
    echo "cgroup_namespace: skipped, no memory cgroup hierarchy mounted at its root"; exit 77
fi
group=$base/spillway-cgns-$$
job_mount=$SCRATCH/job-cgroup
cleanup() {
    touch "$SCRATCH/stop"
    for p in $(cat "$group"/*/cgroup.procs 2>/dev/null); do kill "$p" 2>/dev/null; done
    wait
    for _ in $(seq 50); do rmdir "$group/a" "$group/b" 2>/dev/null; rmdir "$group" 2>/dev/null && break; sleep 0.1; done
    [ ! -d "$group" ] || echo "cgroup_namespace: could not remove $group" >&2
    rm -rf "$SCRATCH"
}
trap cleanup EXIT
mkdir "$group" || { echo "cgroup_namespace: skipped, cannot create $group"; exit 77; }
[ "$version" = 1 ] || echo +memory >"$group/cgroup.subtree_control" || fail "cannot enable the memory controller in $group"
mkdir "$group/a" "$group/b" || fail "cannot create $group/a and b"
echo $((300 << 20)) >"$group/b/$limit_file" || fail "cannot set b's limit"
mkdir "$job_mount"

# The job: a 16 MiB disk region under the shim, until told to stop.
write_region_job "$SCRATCH/job.py"
job_env="LD_PRELOAD=$library SPILLWAY_DIR=$SCRATCH/spill SPILLWAY_THRESHOLD=1MiB"
wait_pid() { for _ in $(seq 100); do [ -s "$1" ] && break; sleep 0.1; done; [ -s "$1" ] || fail "the job did not start"; cat "$1"; }
# `spillway top --once` from group a, in a cgroup namespace rooted there.
top_from_a() {
    sh -c 'echo $$ >"$1/a/cgroup.procs" && exec unshare --cgroup "$2" top --once --pid "$3"' sh "$group" "$spillway" "$1"
}
cgroup_line() { printf '%s\n' "$1" | grep '^cgroup '; }

# 1. The job in group b, no namespace of its own: "/../b" from a, which
# no mount the tool sees shows (its mount's root is above its namespace).
sh -c 'echo $$ >"$1/b/cgroup.procs" && exec env $2 "$3" "$4" "$5" "$6"' sh "$group" "$job_env" "$py" \
    "$SCRATCH/job.py" "$SCRATCH/pid1" "$SCRATCH/stop" &
pid=$(wait_pid "$SCRATCH/pid1")
out=$(top_from_a "$pid"); expect_status 0 $? "top from a"
line=$(cgroup_line "$out")
expect_lines 1 "$line" "one cgroup line"
expect_contains "$line" "cgroup /../b (v$version): ? (outside what this tool sees of the" "b unknown from a"
case "$line" in *" used"* | *" of "*MiB*) fail "b shown with figures that are not b's: $line" ;; esac
echo "outside the tool's view: $line"

# 2. The job in b in a cgroup and mount namespace of its own, with the
# hierarchy mounted there (as a container does): found through
# /proc/PID/root, b's own limit.
sh -c 'echo $$ >"$1/b/cgroup.procs" && exec unshare --cgroup --mount --propagation private sh -c \
    "mount $2 cgroup $3 && exec env $4 $5 $6 $7 $8"' sh "$group" "$mount_args" "$job_mount" "$job_env" "$py" \
    "$SCRATCH/job.py" "$SCRATCH/pid2" "$SCRATCH/stop" &
pid=$(wait_pid "$SCRATCH/pid2")
out=$(top_from_a "$pid"); expect_status 0 $? "top from a, the job's own mount"
line=$(cgroup_line "$out")
expect_lines 1 "$line" "one cgroup line"
expect_contains "$line" "cgroup /../b (v$version): " "b by its name"
expect_contains "$line" " of 300MiB (" "b's own limit, through /proc/$pid/root"
echo "through the job's root: $line"
echo "cgroup_namespace: ok"
