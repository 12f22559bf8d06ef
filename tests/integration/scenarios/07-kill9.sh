# 07-kill9.sh — scenario 7: `kill -9` of a job in the middle of spilling
# leaves the spill directory empty, and the disk space the spill files held
# is given back (counted on a dedicated loop-mounted ext4, so the blocks of
# unnamed files are visible even though their names never are).

# wait_for_output PATTERN SECS: polls the running job's output until PATTERN
# appears; 1 if the job ends or SECS pass first.
wait_for_output() {
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt $deadline ]; do
        dk logs "$JOB_ID" 2>/dev/null | grep -q "$1" && return 0
        [ "$(dk inspect -f '{{.State.Running}}' "$JOB_ID" 2>/dev/null)" = true ] || return 1
        sleep 0.2
    done
    return 1
}

# wait_fs_used_at_most DIR KIB SECS: polls until DIR's filesystem uses at
# most KIB (freed blocks of a deleted inode are returned at journal commit).
wait_fs_used_at_most() {
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        [ "$(fs_used_kib "$1")" -le "$2" ] && return 0
        sleep 0.5
    done
    return 1
}

scenario_7() {
    local limit=256m
    scenario_begin 7 "kill -9 in the middle of a spilling run" "256 MiB"
    make_loop_fs s7 1536
    local spill="$LOOP_MNT/spill" base during after
    base=$(fs_used_kib "$spill")

    # 16 x 64 MiB with a pause after each chunk, so the kill lands mid-run.
    job_start s7-with --limit $limit --shim --spill "$spill" --timeout 120 -- /prog/seq_writer 1024 64 400
    local killed=0 pid
    if wait_for_output '^filled 4/16' 60; then
        during=$(fs_used_kib "$spill")
        pid=$(dk top "$JOB_ID" -eo pid,comm | awk '$2 == "seq_writer" { print $1 }')
        if [ -n "$pid" ] && kill -9 "$pid"; then killed=1; fi
    fi
    job_finish
    after=$(fs_used_kib "$spill")
    check "the job was killed with SIGKILL mid-run (after 4 of 16 chunks)" test "$killed" = 1
    check "it died of that signal (exit 137), not of OOM" test "$JOB_RC" = 137 -a "$JOB_OOM_KILLS" = 0
    check "it was spilling: >= 3 chunks (192 MiB) in use on the spill filesystem before the kill (measured $(((${during:-0} - base) / 1024)) MiB)" \
        test "$((${during:-0} - base))" -ge $((192 * 1024))
    check "the spill directory is empty afterwards" dir_is_empty "$spill"
    wait_fs_used_at_most "$spill" $((base + 1024)) 30
    after=$(fs_used_kib "$spill")
    check "the spill filesystem's space is given back (within 1 MiB of before; now +$(((after - base) / 1024)) MiB)" \
        test "$after" -le $((base + 1024))

    local with="killed after $(grep -c '^filled' "$JOB_OUT") of 16 chunks with $(((${during:-0} - base) / 1024)) MiB spilled; spill dir empty: $(dir_is_empty "$spill" && echo yes || echo NO), space back: $([ "$after" -le $((base + 1024)) ] && echo yes || echo NO)"
    scenario_end "n/a (spill files exist only with the shim)" "$with" "n/a" "n/a"
}
