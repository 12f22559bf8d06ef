# 12-share-memory-limit.sh — scenario 12: share_memory_() of a 1 GiB tensor
# under a 1.5 GiB limit (1.5x the tensor). /dev/shm is raised to 2 GiB in
# every run, so it is the two copies that meet the limit, not the size of
# /dev/shm (scenario 10 covers that). Without the shim the anonymous tensor
# and its /dev/shm copy are both unreclaimable: expected OOM-killed. With it
# the tensor is spilled and the segment redirected to a reserved spill file,
# both page cache: it survives with an exact copy. The cgroup's peak usage
# (max usage as the kernel recorded it) is reported for all three runs; the
# reference (no limit, no shim) shows what two copies cost.
#
# The "without" expectation is reported, not asserted: if that run does not
# die, the row says so and the scenario still passes on the shim's part
# (the shim cannot make an unprotected job survive).

# peak_mib: the last job's peak cgroup usage in MiB, or "?".
peak_mib() { [ "$JOB_PEAK" = "?" ] && echo "?" || mib "$JOB_PEAK"; }

# split_after_copy FILE: "anon=A MiB shmem=S MiB file=F MiB" from the job's
# "cgroup after the copy" line, or "not reached".
split_after_copy() {
    sed -n 's/^cgroup after the copy: usage=[0-9]* MiB //p' "$1" | grep . || echo "not reached"
}

# unreclaimable_after_copy FILE: anon + shmem in MiB from the job's "cgroup
# after the copy" line (what no reclaim can free without swap), or "?".
unreclaimable_after_copy() {
    local line anon shmem
    line=$(grep '^cgroup after the copy: ' "$1") || { echo "?"; return; }
    anon=$(sed -n 's/.* anon=\([0-9]*\) MiB.*/\1/p' <<<"$line")
    shmem=$(sed -n 's/.* shmem=\([0-9]*\) MiB.*/\1/p' <<<"$line")
    [ -n "$anon" ] && [ -n "$shmem" ] && echo $((anon + shmem)) || echo "?"
}

below() { [ "$1" != "?" ] && [ "$1" -lt "$2" ]; }

scenario_12() {
    local limit=1536m size=1024 shm=2g
    scenario_begin 12 "share_memory_() of a 1 GiB tensor under 1.5x its size (/dev/shm 2 GiB)" "1.5 GiB"

    run_job s12-without --limit $limit --shm-size $shm --timeout 180 -- /usr/bin/python3 /prog/torch_share.py $size
    local without; without="$(job_outcome), peak $(peak_mib) MiB"
    if job_was_oom_killed; then
        check "without the shim the job is OOM-killed (the two copies)" true
    else
        note "without the shim the job was NOT OOM-killed ($(job_outcome)); the limit did not bite"
        without="NOT OOM-killed: $without"
    fi
    grep -q '^copy ok' "$JOB_OUT" && without="$without; the copy completed"

    run_job s12-with --limit $limit --shm-size $shm --shim --env SPILLWAY_LOG=info --timeout 300 \
        -- /usr/bin/python3 /prog/torch_share.py $size
    check "with the shim the job exits 0, no OOM kill" job_clean_exit
    check "the tensor is disk-backed before the copy" grep -q '^tensor: 1024 MiB, backing=disk' "$JOB_OUT"
    check "the shared segment is a spill file (/spill/spillway-shm-torch_*)" \
        grep -q '^shared: is_shared=True segment=/spill/spillway-shm-torch_' "$JOB_OUT"
    check "the shim logged the redirect" \
        grep -q 'shared-memory segment /dev/shm/torch_[0-9_]* (1073741824 bytes) redirected to /spill/' "$JOB_ERR"
    check "the copy is exact (sum over 256 Mi elements)" grep -q '^copy ok' "$JOB_OUT"
    local unrecl; unrecl=$(unreclaimable_after_copy "$JOB_OUT")
    check "after the copy, anon + shmem is below one tensor (1024 MiB): no unreclaimable copy (measured $unrecl MiB)" \
        below "$unrecl" 1024
    check "the spill directory is empty afterwards" dir_is_empty "$JOB_SPILL"
    note "peak usage with the shim: $(peak_mib) MiB of the 1536 MiB limit (page cache is charged until reclaimed)"
    local with wall_with=$JOB_WALL
    with="$(job_outcome), peak $(peak_mib) MiB; $(grep -q '^copy ok' "$JOB_OUT" && echo 'copy exact' || echo 'copy WRONG'); after the copy $(split_after_copy "$JOB_OUT")"

    run_job s12-free --shm-size $shm --timeout 180 -- /usr/bin/python3 /prog/torch_share.py $size
    check "reference (no limit, no shim): completes" job_clean_exit
    check "reference: the copy is exact" grep -q '^copy ok' "$JOB_OUT"
    without="$without; no limit: peak $(peak_mib) MiB, after the copy $(split_after_copy "$JOB_OUT")"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
