# 03-numpy-reduce.sh — scenario 3: a numpy job building one 768 MiB array
# (3x the limit) and reducing it is OOM-killed without the shim and gets
# exact reductions with it.

scenario_3() {
    local limit=256m size=768
    scenario_begin 3 "numpy builds a 768 MiB array (3x) and reduces it" "256 MiB"

    run_job s3-without --limit $limit -- /usr/bin/python3 /prog/numpy_reduce.py $size
    check "without the shim the job is OOM-killed" job_was_oom_killed
    local without; without=$(job_outcome)

    run_job s3-with --limit $limit --shim -- /usr/bin/python3 /prog/numpy_reduce.py $size
    check "with the shim the job exits 0, no OOM kill" job_clean_exit
    check "sum, min, max and xor equal their closed forms" grep -q '^reductions ok' "$JOB_OUT"
    check "the array is disk-backed" grep -q 'backing=disk' "$JOB_OUT"
    local with wall_with=$JOB_WALL
    with="$(job_outcome); $(grep -q '^reductions ok' "$JOB_OUT" && echo 'reductions exact' || echo 'reductions WRONG'); array on $(grep -o 'backing=[a-z]*' "$JOB_OUT" | cut -d= -f2)"

    run_job s3-free -- /usr/bin/python3 /prog/numpy_reduce.py $size
    check "the unconstrained run gets the same exact reductions" grep -q '^reductions ok' "$JOB_OUT"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
