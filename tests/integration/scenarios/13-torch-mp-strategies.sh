# 13-torch-mp-strategies.sh — scenario 13: torch.multiprocessing with both
# sharing strategies (file_descriptor, file_system) passes a 256 MiB tensor
# both ways between spawned processes (parent -> child as a Process
# argument, the child's writes seen by the parent; child -> parent through a
# Queue) in a container with Docker's default 64 MiB /dev/shm. Without the
# shim each strategy dies of SIGBUS at the first segment (the parent's copy
# into /dev/shm runs past its end); with it every segment, on both sides,
# is a spill file, every value is exact and nothing is left in the spill
# directory (file_system segments keep their names while shared: their
# shm_unlink, by the last process to free them, removes the spill file too).
# Reference: no shim, no limit, /dev/shm raised to 1 GiB.

# mp_segments_in_spill FILE: 0 when all three segment lines of the job name
# a spill file.
mp_segments_in_spill() {
    [ "$(grep -c ' segment (.*): /spill/spillway-shm-torch_' "$1")" = 3 ]
}

scenario_13() {
    local limit=1g size=256 strategy short without="" with="" walls="" wallu=""
    scenario_begin 13 "torch.multiprocessing, both sharing strategies, a 256 MiB tensor both ways, default 64 MiB /dev/shm" "1 GiB"

    for strategy in file_descriptor file_system; do
        short=fd
        [ "$strategy" = file_system ] && short=fs
        run_job "s13-$short-without" --limit $limit -- /usr/bin/python3 /prog/torch_mp.py $strategy $size
        check "$strategy, without the shim: the parent dies of SIGBUS (exit 135), not of OOM" job_died_of_sigbus
        check "$strategy, without the shim: at the first segment (no tensor reached the child)" \
            not grep -q '^parent -> child segment' "$JOB_OUT"
        without="$without${without:+; }$strategy: $(job_outcome)"

        run_job "s13-$short-with" --limit $limit --shim --env SPILLWAY_LOG=info \
            -- /usr/bin/python3 /prog/torch_mp.py $strategy $size
        check "$strategy, with the shim: exits 0, no OOM kill" job_clean_exit
        check "$strategy: both ways exact, the child's writes seen by the parent" \
            grep -q "^strategy $strategy: both ways ok" "$JOB_OUT"
        check "$strategy: every segment, on both sides, is a spill file" mp_segments_in_spill "$JOB_OUT"
        check "$strategy: the spill directory is empty afterwards" dir_is_empty "$JOB_SPILL"
        with="$with${with:+; }$strategy: $(job_outcome), $(grep -q "^strategy $strategy: both ways ok" "$JOB_OUT" && echo 'both ways exact' || echo 'WRONG'), $(grep -c ' segment (.*): /spill/spillway-shm-torch_' "$JOB_OUT")/3 segments in spill files"
        walls="$walls${walls:+ / }$(seconds "$JOB_WALL")"

        run_job "s13-$short-free" --shm-size 1g -- /usr/bin/python3 /prog/torch_mp.py $strategy $size
        check "$strategy, reference (no limit, 1 GiB /dev/shm, no shim): both ways exact" \
            grep -q "^strategy $strategy: both ways ok" "$JOB_OUT"
        wallu="$wallu${wallu:+ / }$(seconds "$JOB_WALL")"
    done

    scenario_end "$without" "$with" "$walls" "$wallu"
}
