# 15-torch-ddp.sh — scenario 15: a two-rank DDP job (CPU, gloo, env://
# rendezvous on loopback, started as torchrun would: programs/torch_ddp.py)
# in one memory-limited container, each rank holding a 768 MiB dataset
# shard (together 1.5x the limit). Without the shim the job is OOM-killed;
# under `spillway run` (the tool itself, mounted from the build tree) it
# completes with the same allreduced weights as an unconstrained run, the
# summary names both ranks, and `--record` sampled both.

# ddp_tool: the `spillway` tool of the build tree the shim comes from (built
# if only the shim was).
ddp_tool() {
    local build
    build=$(cd "$(dirname "$SHIM")/.." && pwd)
    if [ ! -x "$build/tools/cli/spillway" ] && [ -f "$build/build.ninja" ]; then
        meson compile -C "$build" tools/cli/spillway >"$WORK/build-tool.log" 2>&1 || true
    fi
    [ -x "$build/tools/cli/spillway" ] && echo "$build/tools/cli/spillway"
}

# ddp_ranks_summarised FILE: both ranks have their line in run's summary,
# each with a disk region.
ddp_ranks_summarised() {
    grep -qE '^spillway:     rank 0 \(local 0\) pid [0-9]+: [1-9][0-9]* regions?, disk ' "$1" &&
        grep -qE '^spillway:     rank 1 \(local 1\) pid [0-9]+: [1-9][0-9]* regions?, disk ' "$1"
}

# ddp_recorded FILE: the recording parses and shows both ranks with a region.
ddp_recorded() {
    /usr/bin/python3 - "$1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ranks = {p["rank"] for l in lines if "t" in l for p in l["processes"] if p["regions"]}
sys.exit(0 if {"0", "1"} <= ranks and "exit" in lines[-1] else 1)
PY
}

scenario_15() {
    local limit=1g shard=768 steps=8 tool with_out wall_with without with
    scenario_begin 15 "two-rank DDP (gloo, env:// on loopback), a 768 MiB shard per rank (1.5x), $steps steps + eval" "1 GiB"
    local job=(/usr/bin/python3 /prog/torch_ddp.py launch 2 $shard $steps)

    run_job s15-without --limit $limit --timeout 300 -- "${job[@]}"
    check "without the shim the job is OOM-killed" job_was_oom_killed
    without=$(job_outcome)

    tool=$(ddp_tool) || tool=""
    check "the spillway tool is built next to the shim" test -n "$tool"
    if [ -n "$tool" ]; then
        run_job s15-with --limit $limit --timeout 600 --mount "$tool:/opt/spillway/spillway:ro" \
            --env SPILLWAY_LIBRARY=/opt/spillway/libspillway.so \
            -- /opt/spillway/spillway run --dir /spill --record /out/record.jsonl -- "${job[@]}"
        check "under spillway run the job exits 0, no OOM kill" job_clean_exit
        check "the summary has one line per rank, each with a disk region" ddp_ranks_summarised "$JOB_ERR"
        check "--record sampled both ranks" ddp_recorded "$JOB_DIR/out/record.jsonl"
        with_out=$JOB_OUT wall_with=$JOB_WALL
        with=$(job_outcome)
    else
        with="not run: no spillway tool" wall_with="?" with_out=/dev/null
    fi

    run_job s15-free --timeout 600 -- "${job[@]}"
    check "the unconstrained run completes" job_clean_exit
    check "every rank holds the same weights (unconstrained run)" grep -q '"ranks_agree": true' "$JOB_OUT"
    check "eval loss and weights equal the unconstrained run's" same_result "$with_out" "$JOB_OUT"
    same_result "$with_out" "$JOB_OUT" && with="$with; result identical to unconstrained"

    scenario_end "$without" "$with" "$(seconds "$wall_with")" "$(seconds "$JOB_WALL")"
}
