# 09-memfd-region.sh — scenario 9: a 256 MiB region under
# SPILLWAY_POLICY=memory works in a container with Docker's default 64 MiB
# /dev/shm, because the shim uses a memfd, not /dev/shm. Control: the same
# 256 MiB written to a /dev/shm file stops with ENOSPC at 64 MiB.
# Every byte of it must be the memfd, not only its first page, and it must
# stay there: the region fits with room to spare. It is written once as
# fast as it goes and once at 400 MiB/s, as a slower machine writes it (a
# fresh VM: the tiering forecast took the fill for growth without end and
# moved the region to disk mid-fill, issue 25).

scenario_9() {
    local limit=512m size=256
    scenario_begin 9 "256 MiB memory-policy region, default 64 MiB /dev/shm" "512 MiB"

    run_job s9-devshm --limit $limit -- /prog/memfd_region $size --devshm
    check "the container's /dev/shm is Docker's default 64 MiB" grep -q '^/dev/shm size: 64 MiB' "$JOB_OUT"
    check "control: 256 MiB in a /dev/shm file fails with ENOSPC" grep -q '^devshm: ENOSPC' "$JOB_OUT"
    local without; without="/dev/shm file: $(grep -o 'ENOSPC after [0-9]* MiB' "$JOB_OUT" || echo "no ENOSPC (exit $JOB_RC)")"

    local with wall_with paced
    for paced in "" 400; do
        run_job "s9-with${paced:+-$paced}" --limit $limit --shim --env SPILLWAY_POLICY=memory -- \
            /prog/memfd_region $size ${paced:+--fill-mib-s $paced}
        local how=${paced:+" (written at $paced MiB/s)"}
        check "with the shim the job exits 0, no OOM kill$how" job_clean_exit
        check "the region's backing is memory$how" grep -q '^backing=memory' "$JOB_OUT"
        check "it is mapped from a memfd, not from /dev/shm$how" grep -q '^mapping: .*/memfd:' "$JOB_OUT"
        check "every byte of it is the memfd, first to last$how" grep -q '^range: all memfd' "$JOB_OUT"
        check "checksum correct over 256 MiB$how" grep -q '^checksum ok' "$JOB_OUT"
        check "stats: one memory region, no fallback, never moved$how" test \
            "$(json_field "$JOB_DIR/out/stats.jsonl" regions.memory)" = 1 -a \
            "$(json_field "$JOB_DIR/out/stats.jsonl" fallbacks.memfd_failed)" = 0 -a \
            "$(json_field "$JOB_DIR/out/stats.jsonl" tiering.demotions)" = 0
        [ -n "$paced" ] && continue
        wall_with=$JOB_WALL
        with="$(job_outcome); backing $(grep -o '^backing=[a-z]*' "$JOB_OUT" | cut -d= -f2); $(grep -q '^range: all memfd' "$JOB_OUT" && echo 'memfd mapping' || echo 'NOT a memfd'); $(grep -o '^checksum [a-zA-Z]*' "$JOB_OUT" || echo 'no checksum')"
    done

    run_job s9-free -- /prog/memfd_region $size
    check "the unconstrained run completes" job_clean_exit

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
