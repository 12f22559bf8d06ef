# job.sh — runs one scenario program in a memory-limited container and
# records what happened to it. Every container gets --network none, the
# same memory and memory+swap limit (so no swap), the host's /usr and
# /etc/alternatives read-only, the shim and the programs read-only, its own
# /out and a spill directory read-write, a label for cleanup, and a timeout
# after which it is stopped with `docker kill` (PID 1 ignores SIGTERM).
#
# OOM is detected three ways, any of which counts: exit status 137, Docker's
# State.OOMKilled, and the cgroup's oom_kill counter read from inside the
# container by in-container.sh (a child can be killed while the container
# exits 0).

# job_start NAME [--limit 256m] [--shim] [--config FILE] [--spill DIR]
#           [--env K=V]... [--mount SRC:DST[:ro]]... [--shm-size 2g]
#           [--timeout SECS] -- CMD...
# --shm-size sizes the container's /dev/shm (default: Docker's 64 MiB).
job_start() {
    JOB_NAME=$1
    shift
    local limit="" shim=0 config="" spill="" timeout=120 shm_size="" envs=() mounts=()
    while [ $# -gt 0 ]; do
        case $1 in
            --limit) limit=$2; shift 2 ;;
            --shim) shim=1; shift ;;
            --config) config=$2; shift 2 ;;
            --spill) spill=$2; shift 2 ;;
            --env) envs+=(-e "$2"); shift 2 ;;
            --mount) mounts+=(-v "$2"); shift 2 ;;
            --timeout) timeout=$2; shift 2 ;;
            --shm-size) shm_size=$2; shift 2 ;;
            --) shift; break ;;
            *) die "job_start $JOB_NAME: unknown option $1; see the usage comment in lib/job.sh" ;;
        esac
    done
    [ $# -gt 0 ] || die "job_start $JOB_NAME: no command after --; pass the program to run"
    JOB_DIR="$RESULTS/$JOB_NAME"
    JOB_TIMEOUT=$timeout
    JOB_LIMIT=${limit:-none}
    rm -rf "$JOB_DIR"
    mkdir -p "$JOB_DIR/out"
    if [ -z "$spill" ]; then
        spill="$WORK/spill-$JOB_NAME"
        mkdir -p "$spill"
    fi
    chmod 0700 "$spill"
    JOB_SPILL=$spill

    local args=(run -d --name "spillway-int-$RUN_ID-$JOB_NAME" --label "spillway-int.run=$RUN_ID"
        --network none -w /tmp
        -v /usr:/usr:ro -v /etc/alternatives:/etc/alternatives:ro
        -v "$HERE/lib/in-container.sh:/harness/run-job.sh:ro"
        -v "$SHIM:/opt/spillway/libspillway.so:ro"
        -v "$ENGINE:/opt/spillway/libspillway_engine.so:ro"
        -v "$PROG:/prog:ro"
        -v "$JOB_DIR/out:/out"
        -v "$spill:/spill"
        -e HOME=/tmp -e PYTHONDONTWRITEBYTECODE=1 -e "PYTHONPATH=/prog${HELPER_DIR:+:/helper}")
    [ -n "$HELPER_DIR" ] && args+=(-v "$HELPER_DIR:/helper:ro")
    [ -n "$limit" ] && args+=("--memory=$limit" "--memory-swap=$limit")
    [ -n "$shm_size" ] && args+=("--shm-size=$shm_size")
    if [ "$shim" = 1 ]; then
        if [ -n "$config" ]; then
            cp "$config" "$JOB_DIR/out/spillway.toml"
        else
            printf '# written by lib/job.sh: per-process stats for the assertions\n[stats]\nfile = "/out/stats.jsonl"\n' \
                >"$JOB_DIR/out/spillway.toml"
        fi
        args+=(-e JOB_PRELOAD=/opt/spillway/libspillway.so -e SPILLWAY_DIR=/spill
            -e SPILLWAY_CONFIG=/out/spillway.toml)
    fi
    args+=("${envs[@]}" "${mounts[@]}" "$BASE_IMAGE" /harness/run-job.sh "$@")
    printf '%q ' "$DOCKER" "${args[@]}" >"$JOB_DIR/command"
    JOB_ID=$(dk "${args[@]}") || die "docker run for $JOB_NAME failed; see $JOB_DIR/command and the daemon log"
}

# job_finish: waits for the container started by job_start (docker kill on
# timeout), then sets JOB_RC JOB_OOM_KILLED JOB_OOM_KILLS JOB_PEAK JOB_WALL
# JOB_TIMED_OUT JOB_OUT JOB_ERR and removes the container.
job_finish() {
    JOB_TIMED_OUT=0
    # Waited on in the background: bash runs the INT/TERM trap (and so the
    # cleanup) at once during `wait`, not only after a foreground child ends.
    timeout "$JOB_TIMEOUT" "$DOCKER" wait "$JOB_ID" >/dev/null 2>&1 &
    if ! wait $!; then
        JOB_TIMED_OUT=1
        dk kill "$JOB_ID" >/dev/null 2>&1 || true
        timeout 30 "$DOCKER" wait "$JOB_ID" >/dev/null 2>&1 || true
    fi
    JOB_OUT="$JOB_DIR/stdout"
    JOB_ERR="$JOB_DIR/stderr"
    dk logs "$JOB_ID" >"$JOB_OUT" 2>"$JOB_ERR" || true
    JOB_RC=$(dk inspect -f '{{.State.ExitCode}}' "$JOB_ID" 2>/dev/null || echo "?")
    JOB_OOM_KILLED=$(dk inspect -f '{{.State.OOMKilled}}' "$JOB_ID" 2>/dev/null || echo "?")
    dk rm -f "$JOB_ID" >/dev/null 2>&1 || true
    JOB_OOM_KILLS="?"
    JOB_PEAK="?"
    JOB_WALL="?"
    local meta="$JOB_DIR/out/meta"
    if [ -f "$meta" ]; then
        local k v start="" end=""
        while IFS='=' read -r k v; do
            case $k in
                rc) JOB_RC=$v ;;
                oom_kill) JOB_OOM_KILLS=$v ;;
                peak) JOB_PEAK=$v ;;
                start) start=$v ;;
                end) end=$v ;;
            esac
        done <"$meta"
        [ -n "$start" ] && [ -n "$end" ] && JOB_WALL=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    fi
    printf 'name=%s limit=%s rc=%s oom_killed=%s oom_kills=%s peak=%s wall=%s timed_out=%s\n' \
        "$JOB_NAME" "$JOB_LIMIT" "$JOB_RC" "$JOB_OOM_KILLED" "$JOB_OOM_KILLS" "$JOB_PEAK" "$JOB_WALL" \
        "$JOB_TIMED_OUT" >"$JOB_DIR/summary"
    say "  $(cat "$JOB_DIR/summary")"
}

run_job() {
    job_start "$@"
    job_finish
}

# job_was_oom_killed: 0 when any OOM signal fired for the last job.
job_was_oom_killed() {
    [ "$JOB_TIMED_OUT" = 1 ] && return 1
    [ "$JOB_RC" = 137 ] || [ "$JOB_OOM_KILLED" = true ] || { [ "$JOB_OOM_KILLS" != "?" ] && [ "$JOB_OOM_KILLS" -gt 0 ]; }
}

# job_clean_exit: 0 when the last job exited 0 with no OOM signal and no timeout.
job_clean_exit() {
    [ "$JOB_TIMED_OUT" = 0 ] && [ "$JOB_RC" = 0 ] && ! job_was_oom_killed
}

# job_died_of_sigbus: 0 when the last job exited 135 (SIGBUS) with no OOM
# signal and no timeout.
job_died_of_sigbus() {
    [ "$JOB_TIMED_OUT" = 0 ] && [ "$JOB_RC" = 135 ] && ! job_was_oom_killed
}

# job_outcome: a short text for the results table.
job_outcome() {
    if [ "$JOB_TIMED_OUT" = 1 ]; then echo "timed out after ${JOB_TIMEOUT}s"
    elif job_was_oom_killed; then echo "OOM-killed (exit $JOB_RC, OOMKilled=$JOB_OOM_KILLED, oom_kill=$JOB_OOM_KILLS)"
    elif [ "$JOB_RC" = 0 ]; then echo "completes"
    elif [ "$JOB_RC" = 135 ]; then echo "SIGBUS (exit 135)"
    else echo "exit $JOB_RC"
    fi
}

# remove_containers: removes every container of this run (normally none is
# left: job_finish removes each; this is for interruptions).
remove_containers() {
    [ -n "${RUN_ID:-}" ] || return 0
    local ids
    ids=$(dk ps -aq --filter "label=spillway-int.run=$RUN_ID" 2>/dev/null) || return 0
    [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
}
