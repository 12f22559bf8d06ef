# 08-torch-dataloader.sh — scenario 8: a PyTorch DataLoader with two forked
# workers (num_workers=2) over a spilled 768 MiB dataset (1.5x the limit):
# killed without the shim; with it every batch is correct, the batches come
# from two forked workers, and the workers' writes never reach the parent.

scenario_8() {
    local limit=512m size=768
    scenario_begin 8 "PyTorch DataLoader, 2 forked workers, 768 MiB spilled dataset (1.5x)" "512 MiB"

    run_job s8-without --limit $limit --timeout 180 -- /usr/bin/python3 /prog/torch_loader.py $size
    check "without the shim the job is OOM-killed" job_was_oom_killed
    local without; without=$(job_outcome)

    run_job s8-with --limit $limit --shim --timeout 300 -- /usr/bin/python3 /prog/torch_loader.py $size
    check "with the shim the job exits 0, no OOM kill (workers included)" job_clean_exit
    check "the dataset is disk-backed" grep -q 'backing=disk' "$JOB_OUT"
    check "every batch correct and every batch seen" grep -q '^batches ok' "$JOB_OUT"
    check "batches came from two forked workers" grep -q '^worker pids: \[[0-9]*, [0-9]*\]' "$JOB_OUT"
    check "the parent's data is unchanged after the workers wrote their views" grep -q '^parent data unchanged' "$JOB_OUT"
    local with wall_with=$JOB_WALL
    with="$(job_outcome); $(grep -o '^batches ok: [0-9]* of [0-9]*' "$JOB_OUT" || echo 'batches WRONG'); parent data $(grep -q '^parent data unchanged' "$JOB_OUT" && echo unchanged || echo 'CHANGED or unchecked')"

    run_job s8-free --timeout 300 -- /usr/bin/python3 /prog/torch_loader.py $size
    check "the unconstrained run completes" job_clean_exit

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
