# 09-memfd-region.sh — scenario 9: a 256 MiB region under
# SPILLWAY_POLICY=memory works in a container with Docker's default 64 MiB
# /dev/shm, because the shim uses a memfd, not /dev/shm. Control: the same
# 256 MiB written to a /dev/shm file stops with ENOSPC at 64 MiB.

scenario_9() {
    local limit=512m size=256
    scenario_begin 9 "256 MiB memory-policy region, default 64 MiB /dev/shm" "512 MiB"

    run_job s9-devshm --limit $limit -- /prog/memfd_region $size --devshm
    check "the container's /dev/shm is Docker's default 64 MiB" grep -q '^/dev/shm size: 64 MiB' "$JOB_OUT"
    check "control: 256 MiB in a /dev/shm file fails with ENOSPC" grep -q '^devshm: ENOSPC' "$JOB_OUT"
    local without; without="/dev/shm file: $(grep -o 'ENOSPC after [0-9]* MiB' "$JOB_OUT" || echo "no ENOSPC (exit $JOB_RC)")"

    run_job s9-with --limit $limit --shim --env SPILLWAY_POLICY=memory -- /prog/memfd_region $size
    check "with the shim the job exits 0, no OOM kill" job_clean_exit
    check "the region's backing is memory" grep -q '^backing=memory' "$JOB_OUT"
    check "it is mapped from a memfd, not from /dev/shm" grep -q '^mapping: .*/memfd:' "$JOB_OUT"
    check "checksum correct over 256 MiB" grep -q '^checksum ok' "$JOB_OUT"
    check "stats: one memory region, no fallback" test "$(json_field "$JOB_DIR/out/stats.jsonl" regions.memory)" = 1 -a \
        "$(json_field "$JOB_DIR/out/stats.jsonl" fallbacks.memfd_failed)" = 0
    local with wall_with=$JOB_WALL
    with="$(job_outcome); backing $(grep -o '^backing=[a-z]*' "$JOB_OUT" | cut -d= -f2); $(grep -q '/memfd:' "$JOB_OUT" && echo 'memfd mapping' || echo 'NOT a memfd'); $(grep -o '^checksum [a-zA-Z]*' "$JOB_OUT" || echo 'no checksum')"

    run_job s9-free -- /prog/memfd_region $size
    check "the unconstrained run completes" job_clean_exit

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
