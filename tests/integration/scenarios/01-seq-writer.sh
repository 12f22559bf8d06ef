# 01-seq-writer.sh — scenario 1: a C program writing 4x the container limit
# sequentially through large mallocs is OOM-killed without the shim, and
# completes with it: checksum correct, every chunk on disk.

scenario_1() {
    local limit=256m total=1024 chunk=64
    scenario_begin 1 "C program writes 4x the limit sequentially (16 x 64 MiB mallocs)" "256 MiB"

    run_job s1-without --limit $limit -- /prog/seq_writer $total $chunk
    check "without the shim the job is OOM-killed" job_was_oom_killed
    local without; without=$(job_outcome)

    run_job s1-with --limit $limit --shim -- /prog/seq_writer $total $chunk
    check "with the shim the job exits 0, no OOM kill" job_clean_exit
    check "checksum correct over 1 GiB" grep -q '^checksum ok' "$JOB_OUT"
    check "all 16 chunks disk-backed (spillway_backing)" grep -q '^chunks: disk=16 ' "$JOB_OUT"
    check "stats file: 16 disk regions" test "$(json_field "$JOB_DIR/out/stats.jsonl" regions.disk)" = 16
    local with wall_with=$JOB_WALL
    with="$(job_outcome); $(grep -o '^checksum [a-zA-Z]*' "$JOB_OUT" || echo 'no checksum'); $(sed -n 's/^chunks: disk=\([0-9]*\) .*/\1/p' "$JOB_OUT")/16 chunks on disk"

    run_job s1-free -- /prog/seq_writer $total $chunk
    check "unconstrained run completes with the same checksum" grep -q '^checksum ok' "$JOB_OUT"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
