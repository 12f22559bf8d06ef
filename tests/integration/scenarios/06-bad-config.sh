# 06-bad-config.sh — scenario 6: a bad config (each file in configs/, plus a
# bad environment override) stops the job at start-up with exactly one
# line "spillway: config error: ..." naming the file and the key or line,
# exit status 78 (EX_CONFIG), the job never runs, and nothing is left in
# the spill directory or created where the config pointed logs and stats.

# one_config_error_line FILE EXPECT: 0 when FILE is exactly one line, that
# line starts with the documented prefix and contains EXPECT.
one_config_error_line() {
    [ "$(wc -l <"$1")" = 1 ] && grep -q '^spillway: config error: ' "$1" && grep -qF -- "$2" "$1"
}

scenario_6() {
    local limit=256m cfg name expect runs=0 good=0
    scenario_begin 6 "bad config: one line, exit 78, no files left" "256 MiB"

    run_job s6-without --limit $limit -- /prog/seq_writer 64 8
    check "without the shim the same job simply runs (exit 0)" job_clean_exit
    local without="job runs unprotected (exit $JOB_RC)"

    for cfg in "$HERE"/configs/*.toml; do
        name=$(basename "$cfg" .toml)
        expect=$(sed -n 's/^# expect: //p' "$cfg")
        run_job "s6-$name" --limit $limit --shim --config "$cfg" -- /prog/seq_writer 64 8
        runs=$((runs + 1))
        local before=${#SCENARIO_FAILURES[@]}
        check "$name: exit status 78" test "$JOB_RC" = 78
        check "$name: exactly one stderr line naming '$expect'" one_config_error_line "$JOB_ERR" "$expect"
        check "$name: the job never ran (no stdout)" test ! -s "$JOB_OUT"
        check "$name: spill dir empty" dir_is_empty "$JOB_SPILL"
        check "$name: no log or stats file created" test -z "$(find "$JOB_DIR/out" -name 'should-not-exist*' -o -name 'stats.jsonl')"
        [ ${#SCENARIO_FAILURES[@]} = "$before" ] && good=$((good + 1))
    done

    run_job s6-env --limit $limit --shim --env SPILLWAY_THRESHOLD=lots -- /prog/seq_writer 64 8
    runs=$((runs + 1))
    local before=${#SCENARIO_FAILURES[@]}
    check "SPILLWAY_THRESHOLD=lots: exit status 78" test "$JOB_RC" = 78
    check "SPILLWAY_THRESHOLD=lots: exactly one stderr line naming it" one_config_error_line "$JOB_ERR" "SPILLWAY_THRESHOLD"
    check "SPILLWAY_THRESHOLD=lots: spill dir empty" dir_is_empty "$JOB_SPILL"
    [ ${#SCENARIO_FAILURES[@]} = "$before" ] && good=$((good + 1))

    scenario_end "$without" "$good of $runs bad configs: one line, exit 78, spill dir empty" "n/a" "n/a"
}
