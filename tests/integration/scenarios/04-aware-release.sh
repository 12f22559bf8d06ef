# 04-aware-release.sh — scenario 4: aware code (C through dlsym, Python
# through the helper module) that calls release_page_cache after writing
# each buffer keeps the container's memory usage, read from inside its
# cgroup, under a stated bound while it holds 2x the limit in live buffers.
# Controls: without the shim the same C program is OOM-killed (the call is a
# no-op), and with the shim but no release calls the bound is exceeded (so
# the bound is not met for free).

S4_CHUNKS=16 S4_CHUNK_MIB=64
# The stated bound: right after each release, usage is within half a buffer
# of the job's own baseline, however many buffers are live (released
# buffers leave nothing behind; a residue per buffer would add up past it).
S4_BOUND_MIB=$((S4_CHUNK_MIB / 2))

# usage_rise FILE: MiB of max_after_release above baseline, from the job's
# "usage baseline=B max_after_release=M" line; "?" when absent.
usage_rise() {
    local line
    line=$(grep -o 'baseline=[0-9]* max_after_release=[0-9]*' "$1") || { echo "?"; return; }
    local b=${line#baseline=} m=${line#*max_after_release=}
    b=${b%% *}
    echo $(((m - b) / 1048576))
}

under_bound() { [ "$1" != "?" ] && [ "$1" -le "$S4_BOUND_MIB" ]; }
over_bound() { [ "$1" != "?" ] && [ "$1" -gt "$S4_BOUND_MIB" ]; }

scenario_4() {
    local limit=512m args="$S4_CHUNKS $S4_CHUNK_MIB"
    scenario_begin 4 "aware code releases page cache: 1 GiB of live buffers (2x), usage bound ${S4_BOUND_MIB} MiB over baseline" "512 MiB"

    run_job s4-c-without --limit $limit -- /prog/aware_release $args
    check "C, without the shim: OOM-killed (release is a no-op)" job_was_oom_killed
    local without; without="C: $(job_outcome)"

    run_job s4-c-with --limit $limit --shim -- /prog/aware_release $args
    local rise_c; rise_c=$(usage_rise "$JOB_OUT")
    check "C, with the shim: exits 0, no OOM kill" job_clean_exit
    check "C: spillway_release_page_cache found by dlsym" grep -q '^control API found' "$JOB_OUT"
    check "C: checksum correct after release and refault" grep -q '^checksum ok' "$JOB_OUT"
    check "C: usage after every release <= baseline + ${S4_BOUND_MIB} MiB (measured +${rise_c} MiB)" under_bound "$rise_c"
    local wall_with=$JOB_WALL with
    with="C: $(job_outcome), usage +${rise_c} MiB"

    run_job s4-c-norelease --limit $limit --shim -- /prog/aware_release $args --no-release
    local rise_nr; rise_nr=$(usage_rise "$JOB_OUT")
    check "control, shim without release calls: completes" job_clean_exit
    check "control: without release the bound is exceeded (measured +${rise_nr} MiB)" over_bound "$rise_nr"
    without="$without; shim but no release: usage +${rise_nr} MiB"

    if [ -n "$HELPER_DIR" ]; then
        run_job s4-py-without --limit $limit -- /usr/bin/python3 /prog/aware_release.py $args
        check "Python, without the shim: OOM-killed (helper calls are no-ops)" job_was_oom_killed
        without="$without; Python: $(job_outcome)"
        run_job s4-py-with --limit $limit --shim -- /usr/bin/python3 /prog/aware_release.py $args
        local rise_py; rise_py=$(usage_rise "$JOB_OUT")
        check "Python, with the shim: exits 0, no OOM kill" job_clean_exit
        check "Python: the helper reports every buffer disk-backed" grep -q "^helper: disk-backed $S4_CHUNKS of $S4_CHUNKS" "$JOB_OUT"
        check "Python: checksum correct" grep -q '^checksum ok' "$JOB_OUT"
        check "Python: usage after every release <= baseline + ${S4_BOUND_MIB} MiB (measured +${rise_py} MiB)" under_bound "$rise_py"
        with="$with; Python: $(job_outcome), usage +${rise_py} MiB"
    else
        fail "Python part: the helper tools/python/spillway/__init__.py does not exist, so it could not run"
        with="$with; Python: NOT RUN (helper missing)"
    fi

    run_job s4-free -- /prog/aware_release $args
    check "unconstrained C run completes" job_clean_exit

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
