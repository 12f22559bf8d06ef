# 05-full-spill-fs.sh — scenario 5: the spill directory is on a small ext4
# filesystem (loop-mounted, 64 MiB) that the job fills to the last block.
# With the shim: no SIGBUS, the region reserved before the fill is written
# in full, later regions fall back to memory with a logged "could not
# reserve", and the job completes with correct data. Control without the
# shim: a sparse (ftruncate-only) file mapping on the same full filesystem
# dies of SIGBUS, which is the crash reservation exists to prevent.

# fs_was_full FILE: 0 when the job's "filesystem filled: ..., N KiB left"
# line reports under 1 MiB left.
fs_was_full() {
    local left
    left=$(sed -n 's/^filesystem filled: .*, \([0-9]*\) KiB left$/\1/p' "$1")
    [ -n "$left" ] && [ "$left" -lt 1024 ]
}

scenario_5() {
    local limit=256m region=16 count=4
    scenario_begin 5 "spill dir on a 64 MiB ext4 that fills up" "256 MiB"

    make_loop_fs s5-naive 64
    run_job s5-naive --limit $limit --spill "$LOOP_MNT/spill" -- /prog/fill_spill /spill $region $count --naive
    check "control: a sparse file mapping on the full filesystem dies of SIGBUS (exit 135)" test "$JOB_RC" = 135
    local without="sparse-file mapping (no shim): $(job_outcome)"

    make_loop_fs s5-with 64
    run_job s5-with --limit $limit --shim --spill "$LOOP_MNT/spill" --env SPILLWAY_THRESHOLD=1MiB \
        -- /prog/fill_spill /spill $region $count
    check "with the shim: no SIGBUS" test "$JOB_RC" != 135
    check "with the shim: exits 0, no OOM kill (completes in memory)" job_clean_exit
    check "the filesystem was filled (under 1 MiB left, less than one region)" fs_was_full "$JOB_OUT"
    check "region 1, reserved before the fill, is on disk and written in full" \
        grep -q '^region 1 written in full' "$JOB_OUT"
    check "later regions fell back to memory (regions: disk=1 anon=3)" grep -q '^regions: disk=1 memory=0 anon=3' "$JOB_OUT"
    check "the fallback is logged (\"could not reserve\")" grep -q 'could not reserve' "$JOB_ERR"
    check "stats: fallbacks.no_space >= 1" test "$(json_field "$JOB_DIR/out/stats.jsonl" fallbacks.no_space)" -ge 1
    check "checksum correct in every region" grep -q '^checksum ok' "$JOB_OUT"
    local with wall_with=$JOB_WALL
    with="$(job_outcome); $(grep -o '^regions: .*' "$JOB_OUT" | sed 's/ none=[0-9]*//'); $(grep -c 'could not reserve' "$JOB_ERR") \"could not reserve\" warnings"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "n/a"
}
