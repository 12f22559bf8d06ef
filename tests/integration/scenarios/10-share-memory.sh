# 10-share-memory.sh — scenario 10: tensor.share_memory_() of a 256 MiB
# tensor in a container with Docker's default 64 MiB /dev/shm. Without the
# shim PyTorch's copy into /dev/shm/torch_* runs past the end of the 64 MiB
# tmpfs and the job dies of SIGBUS (exit 135). With it the segment is
# redirected to a reserved spill file (logged), /dev/shm stays empty, the
# copy is exact, and a forked torch.multiprocessing child sees the data and
# adds 1 to every element, which the parent sees. Reference: the same job
# without the shim and without a limit, /dev/shm raised to 1 GiB (so the
# program itself is right and only the size of /dev/shm bites).

# shared_segment FILE: where the job's "shared: ... segment=PATH" line says
# the shared tensor lives: "spill file", "/dev/shm" or "none".
shared_segment() {
    local seg
    seg=$(sed -n 's/^shared: .*segment=//p' "$1")
    case $seg in
        /spill/spillway-shm-torch_*) echo "spill file" ;;
        /dev/shm/torch_*) echo "/dev/shm" ;;
        *) echo "none" ;;
    esac
}

scenario_10() {
    local limit=1g size=256
    scenario_begin 10 "share_memory_() of a 256 MiB tensor, default 64 MiB /dev/shm; a forked child writes, the parent sees" "1 GiB"

    run_job s10-without --limit $limit -- /usr/bin/python3 /prog/torch_share.py $size --child
    check "the container's /dev/shm is Docker's default 64 MiB" grep -q '^/dev/shm size: 64 MiB' "$JOB_OUT"
    check "without the shim the job dies of SIGBUS (exit 135), not of OOM" job_died_of_sigbus
    check "... inside share_memory_() (no \"shared:\" line)" not grep -q '^shared:' "$JOB_OUT"
    local without; without=$(job_outcome)
    grep -q Traceback "$JOB_ERR" || without="$without in share_memory_(), no traceback"

    run_job s10-with --limit $limit --shim --env SPILLWAY_LOG=info -- /usr/bin/python3 /prog/torch_share.py $size --child
    check "with the shim the job exits 0, no OOM kill" job_clean_exit
    check "the shared segment is a spill file (/spill/spillway-shm-torch_*)" test "$(shared_segment "$JOB_OUT")" = "spill file"
    check "the shim logged the redirect" \
        grep -q 'shared-memory segment /dev/shm/torch_[0-9_]* (268435456 bytes) redirected to /spill/spillway-shm-torch_' "$JOB_ERR"
    check "/dev/shm holds nothing while the tensor is shared" grep -q '^/dev/shm used while shared: 0 MiB' "$JOB_OUT"
    check "the copy is exact (sum over 64 Mi elements)" grep -q '^copy ok' "$JOB_OUT"
    check "the forked child sees the data" grep -q '^child [0-9]* saw the data' "$JOB_OUT"
    check "the child's writes (every element +1) reach the parent" grep -q '^child writes seen by parent' "$JOB_OUT"
    check "the spill directory is empty afterwards" dir_is_empty "$JOB_SPILL"
    local with wall_with=$JOB_WALL
    with="$(job_outcome); segment in a $(shared_segment "$JOB_OUT"), /dev/shm used $(sed -n 's/^\/dev\/shm used while shared: //p' "$JOB_OUT"); $(grep -q '^copy ok' "$JOB_OUT" && echo 'copy exact' || echo 'copy WRONG'); $(grep -q '^child writes seen by parent' "$JOB_OUT" && echo "the child's writes seen by the parent" || echo "the child's writes NOT seen")"

    run_job s10-free --shm-size 1g -- /usr/bin/python3 /prog/torch_share.py $size --child
    check "reference (no limit, 1 GiB /dev/shm, no shim): completes" job_clean_exit
    check "reference: the segment is in /dev/shm" test "$(shared_segment "$JOB_OUT")" = "/dev/shm"
    check "reference: the child's writes reach the parent" grep -q '^child writes seen by parent' "$JOB_OUT"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
