# 02-torch-train.sh — scenario 2: an unmodified PyTorch training job (dataset
# tensor 2.5x the limit, a few SGD steps on random minibatches, one
# evaluation pass) is killed without the shim, completes with it, and
# produces the same result as an unconstrained run.

# same_result FILE_A FILE_B: 0 when both RESULT lines exist and agree
# (floats within 1e-9 relative).
same_result() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, math, sys

def result(path):
    for line in open(path):
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.exit(f"no RESULT line in {path}")

a, b = result(sys.argv[1]), result(sys.argv[2])
def close(x, y):
    if isinstance(x, list):
        return len(x) == len(y) and all(close(p, q) for p, q in zip(x, y))
    return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
sys.exit(0 if a.keys() == b.keys() and all(close(a[k], b[k]) for k in a) else 1)
PY
}

scenario_2() {
    local limit=512m dataset=1280 steps=8
    scenario_begin 2 "PyTorch training job, 1.25 GiB dataset tensor (2.5x), $steps SGD steps + eval" "512 MiB"

    run_job s2-without --limit $limit --timeout 180 -- /usr/bin/python3 /prog/torch_train.py $dataset $steps
    check "without the shim the job is OOM-killed" job_was_oom_killed
    local without; without=$(job_outcome)

    run_job s2-with --limit $limit --shim --timeout 300 -- /usr/bin/python3 /prog/torch_train.py $dataset $steps
    check "with the shim the job exits 0, no OOM kill" job_clean_exit
    check "the dataset tensor was spilled (stats: >= 1 disk region)" \
        test "$(json_field "$JOB_DIR/out/stats.jsonl" regions.disk)" -ge 1
    local with_out=$JOB_OUT wall_with=$JOB_WALL with
    with=$(job_outcome)

    run_job s2-free --timeout 300 -- /usr/bin/python3 /prog/torch_train.py $dataset $steps
    check "the unconstrained run completes" job_clean_exit
    check "eval loss and weights equal the unconstrained run's" same_result "$with_out" "$JOB_OUT"
    same_result "$with_out" "$JOB_OUT" && with="$with; result identical to unconstrained"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
