#!/bin/sh
# in-container.sh — PID 1 of every scenario container. It runs the job as a
# child, so that an OOM kill of the job (or of any grandchild) cannot take
# the record with it, and writes to /out/meta: the job's exit status, start
# and end times, and the container cgroup's oom_kill counter and peak usage
# (cgroup v2 memory.events / memory.peak, or v1 memory.oom_control /
# memory.max_usage_in_bytes). JOB_PRELOAD, when set, is preloaded into the
# job only, not into this shell.
start=$(date +%s.%N)
if [ -n "$JOB_PRELOAD" ]; then
    LD_PRELOAD=$JOB_PRELOAD "$@"
else
    "$@"
fi
rc=$?
end=$(date +%s.%N)

# counter FILE KEY: the value on the line "KEY N" of FILE, or "?".
counter() {
    [ -r "$1" ] || { echo "?"; return; }
    while read -r k v; do
        [ "$k" = "$2" ] && { echo "$v"; return; }
    done <"$1"
    echo "?"
}

if [ -r /sys/fs/cgroup/memory.events ]; then
    oom_kill=$(counter /sys/fs/cgroup/memory.events oom_kill)
    peak=$(cat /sys/fs/cgroup/memory.peak 2>/dev/null || echo "?")
else
    oom_kill=$(counter /sys/fs/cgroup/memory/memory.oom_control oom_kill)
    peak=$(cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null || echo "?")
fi
printf 'rc=%s\nstart=%s\nend=%s\noom_kill=%s\npeak=%s\n' "$rc" "$start" "$end" "$oom_kill" "$peak" >/out/meta
exit "$rc"
