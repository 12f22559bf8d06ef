# 11-shm-dataloader.sh — scenario 11: a PyTorch DataLoader with two forked
# workers (num_workers=2) whose default collate stacks 128 MiB batches
# straight into shared-memory segments, in a container with Docker's default
# 64 MiB /dev/shm. Without the shim a worker dies of SIGBUS and PyTorch
# reports the bus error and insufficient shared memory; with it every
# segment is redirected to a reserved spill file and every batch arrives
# exact, from both workers, and nothing is left in the spill directory.
# Reference: no shim, no limit, /dev/shm raised to 1 GiB.

S11_BATCH_MIB=128 S11_BATCHES=6

# loader_segments FILE: the job's "batch segments: [...]" list.
loader_segments() { sed -n 's/^batch segments: //p' "$1"; }

# shm_error_reported FILE: 0 when a worker's "Unexpected bus error ...
# insufficient shared memory (shm)" message is in FILE (stderr holds a NUL:
# grep -a).
shm_error_reported() { grep -aq 'Unexpected bus error encountered in worker.*insufficient shared memory' "$1"; }

# raised_error FILE: the last line of the job's traceback (the exception the
# parent raised), cut to 90 characters.
raised_error() { grep -a '^[A-Za-z.]*Error: ' "$1" | tail -n 1 | cut -c1-90; }

scenario_11() {
    local limit=1g args="$S11_BATCH_MIB $S11_BATCHES"
    scenario_begin 11 "DataLoader, num_workers=2, $S11_BATCHES batches of $S11_BATCH_MIB MiB collated into shared memory, default 64 MiB /dev/shm" "1 GiB"

    run_job s11-without --limit $limit -- /usr/bin/python3 /prog/torch_shm_loader.py $args
    check "the container's /dev/shm is Docker's default 64 MiB" grep -q '^/dev/shm size: 64 MiB' "$JOB_OUT"
    check "without the shim the job fails (non-zero exit, no timeout)" \
        test "$JOB_RC" != 0 -a "$JOB_RC" != "?" -a "$JOB_TIMED_OUT" = 0
    check "... not OOM-killed (it is /dev/shm that bites)" not job_was_oom_killed
    check "... no batch was delivered as correct" not grep -q '^batches ok' "$JOB_OUT"
    check "a worker reports \"Unexpected bus error ... insufficient shared memory (shm)\"" shm_error_reported "$JOB_ERR"
    local without; without=$(job_outcome)
    shm_error_reported "$JOB_ERR" && without="$without; a worker: \"Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)\""
    without="$without; raised: \`$(raised_error "$JOB_ERR")\`"

    run_job s11-with --limit $limit --shim --env SPILLWAY_LOG=info -- /usr/bin/python3 /prog/torch_shm_loader.py $args
    check "with the shim the job exits 0, no OOM kill (workers included)" job_clean_exit
    check "every batch exact: batches ok: $S11_BATCHES of $S11_BATCHES" grep -q "^batches ok: $S11_BATCHES of $S11_BATCHES\$" "$JOB_OUT"
    check "batches came from two forked workers" grep -q '^worker pids: \[[0-9]*, [0-9]*\]' "$JOB_OUT"
    check "every batch the parent received lives in a spill file" \
        test "$(loader_segments "$JOB_OUT")" = "['/spill/spillway-shm-torch_N_N_N (deleted)']"
    local redirects; redirects=$(grep -c "shared-memory segment /dev/shm/torch_[0-9_]* ($((S11_BATCH_MIB << 20)) bytes) redirected to /spill/" "$JOB_ERR")
    check "the shim logged a redirect for every batch (>= $S11_BATCHES; counted $redirects)" test "$redirects" -ge "$S11_BATCHES"
    check "the spill directory is empty afterwards" dir_is_empty "$JOB_SPILL"
    local with wall_with=$JOB_WALL
    with="$(job_outcome); $(grep -o '^batches ok: [0-9]* of [0-9]*' "$JOB_OUT" || echo 'batches WRONG'); $redirects segments redirected to spill files"

    run_job s11-free --shm-size 1g -- /usr/bin/python3 /prog/torch_shm_loader.py $args
    check "reference (no limit, 1 GiB /dev/shm, no shim): every batch exact" \
        grep -q "^batches ok: $S11_BATCHES of $S11_BATCHES\$" "$JOB_OUT"
    check "reference: the batches live in /dev/shm" \
        test "$(loader_segments "$JOB_OUT")" = "['/dev/shm/torch_N_N_N (deleted)']"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
