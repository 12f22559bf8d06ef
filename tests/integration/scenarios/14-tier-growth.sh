# 14-tier-growth.sh — scenario 14: adaptive tiering's demotion. A 600 MiB
# random-access region is placed in memory while the 1 GiB container has
# headroom; then the job's other memory (small mallocs) grows by 640 MiB at
# 300 MiB/s, past the limit. With tiering (the default) the region moves to
# disk in place before the OOM killer acts: the job ends, checksum correct.
# Control: the same job under the shim with [tiering] enabled = false is
# OOM-killed.

scenario_14() {
    local limit=1g
    scenario_begin 14 "600 MiB memory region, then 640 MiB of small mallocs past the limit" "1 GiB"

    local off; off=$(mktemp /tmp/spillway-int-tiering-off.XXXXXX.toml)
    printf '[stats]\nfile = "/out/stats.jsonl"\n[tiering]\nenabled = false\n' >"$off"
    run_job s14-off --limit $limit --shim --config "$off" -- /prog/tier_growth 600 640 300
    rm -f "$off"
    check "control (tiering off): the region was placed in memory" grep -q '^placed=memory' "$JOB_OUT"
    check "control (tiering off): the job is OOM-killed" job_was_oom_killed
    local without; without="tiering off: $(job_outcome)"

    run_job s14-with --limit $limit --shim --env SPILLWAY_LOG=info -- /prog/tier_growth 600 640 300
    check "with tiering the job exits 0, no OOM kill" job_clean_exit
    check "the region was placed in memory" grep -q '^placed=memory' "$JOB_OUT"
    check "after the growth it is on disk (moved in place)" grep -q '^after_growth=disk' "$JOB_OUT"
    check "checksum correct over 600 MiB" grep -q '^checksum ok' "$JOB_OUT"
    check "stats: one demotion" test "$(json_field "$JOB_DIR/out/stats.jsonl" tiering.demotions)" = 1
    local with wall_with=$JOB_WALL
    with="$(job_outcome); $(grep -o '^after_growth=[a-z]*' "$JOB_OUT" || echo 'no backing'); $(grep -o '^checksum [a-zA-Z]*' "$JOB_OUT" || echo 'no checksum')"

    # No limit: nothing moves, so no waiting for a move (it waited 60 s).
    run_job s14-free -- /prog/tier_growth 600 640 300 0
    check "the unconstrained run completes" job_clean_exit

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
