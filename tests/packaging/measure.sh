#!/bin/sh
# measure.sh COMMAND... — runs COMMAND inside a container and appends one
# line to stderr: "measure: status=N peak=BYTES oom_kills=N seconds=S", from
# the container's own memory cgroup (v1 or v2). POSIX sh: a Debian minbase
# root has no bash-isms to spare.
start=$(date +%s.%N)
"$@"
status=$?
end=$(date +%s.%N)
if [ -f /sys/fs/cgroup/memory.peak ]; then
    peak=$(cat /sys/fs/cgroup/memory.peak)
    oom=$(awk '$1 == "oom_kill" {print $2}' /sys/fs/cgroup/memory.events)
else
    peak=$(cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes)
    oom=$(awk '$1 == "oom_kill" {print $2}' /sys/fs/cgroup/memory/memory.oom_control)
fi
seconds=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
echo "measure: status=$status peak=$peak oom_kills=${oom:-0} seconds=$seconds" >&2
exit "$status"
