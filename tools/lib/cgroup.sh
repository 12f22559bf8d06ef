# cgroup.sh — run a command in a fresh memory cgroup with a hard limit, on
# cgroup v1 or v2 (sourced by tools/demo.sh and tests).
#   cgroup_run LIMIT_BYTES OUTVAR COMMAND...   runs COMMAND, sets OUTVAR to
#   "status peak_bytes oom_kills" and removes the cgroup afterwards.
# LIMIT_BYTES 0 means no limit (the cgroup only measures the peak).
# CGROUP_TAG, when set, goes into the cgroup's name (spillway-TAG-PID-N), so
# a cgroup left by a killed run says who made it.

cgroup_root() {
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo v2; else echo v1; fi
}

cgroup_run() {
    local limit=$1 outvar=$2; shift 2
    local name="spillway-${CGROUP_TAG:+$CGROUP_TAG-}$$-$RANDOM" dir status=0 peak oom
    if [ "$(cgroup_root)" = v2 ]; then
        dir=/sys/fs/cgroup/$name
        mkdir "$dir"
        if [ "$limit" != 0 ]; then
            echo "$limit" > "$dir/memory.max"
            echo 0 > "$dir/memory.swap.max" 2>/dev/null || true
        fi
        ( echo $BASHPID > "$dir/cgroup.procs"; exec "$@" ) || status=$?
        peak=$(cat "$dir/memory.peak" 2>/dev/null || echo 0)
        oom=$(awk '/^oom_kill /{print $2}' "$dir/memory.events" 2>/dev/null || echo 0)
    else
        dir=/sys/fs/cgroup/memory/$name
        mkdir "$dir"
        if [ "$limit" != 0 ]; then
            echo "$limit" > "$dir/memory.limit_in_bytes"
            echo "$limit" > "$dir/memory.memsw.limit_in_bytes" 2>/dev/null || true
        fi
        ( echo $BASHPID > "$dir/cgroup.procs"; exec "$@" ) || status=$?
        peak=$(cat "$dir/memory.max_usage_in_bytes")
        oom=$(awk '/^oom_kill /{print $2}' "$dir/memory.oom_control" 2>/dev/null || echo 0)
    fi
    rmdir "$dir" 2>/dev/null || { sleep 0.5; rmdir "$dir" 2>/dev/null || true; }
    printf -v "$outvar" '%s %s %s' "$status" "$peak" "${oom:-0}"
}
