#!/usr/bin/env bash
# demo.sh — the first run, from a fresh Debian 12 machine (as root): an
# UNMODIFIED numpy job whose dataset is twice its memory limit is run three
# times: without a limit (the reference result), under the limit without
# spillway (OOM-killed), and under the limit through `spillway run` (it
# completes with the reference result). Ends with a table of the three.
#
# It installs only what it needs (tools/lib/packages.sh, DEMO_PACKAGES) and
# builds only the shim and the tool, into build-demo/ (-Dtests=false).
# One line per step on the terminal; apt's and the build's output go to a
# log file, whose path a failure prints.
#
# Usage: bash tools/demo.sh [LIMIT_MIB]   (default 768)
set -uo pipefail
cd "$(dirname "$0")/.."
limit_mib=${1:-768}
[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (it installs Debian packages and makes a memory cgroup)"; exit 1; }
log=$(mktemp /var/tmp/spillway-demo.XXXXXX.log)
build=build-demo
demo_start=$(date +%s.%N)

elapsed() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.0f", a - b }'; }

# step LABEL COMMAND...: one line, "LABEL... done, N s"; the command's output
# goes to the log; a failure stops the demo and names the log.
step() {
    local label=$1 t0; shift
    t0=$(date +%s.%N)
    printf '%s... ' "$label"
    echo "== $label: $*" >>"$log"
    if "$@" >>"$log" 2>&1; then
        echo "done, $(elapsed "$t0") s"
    else
        echo "FAILED after $(elapsed "$t0") s; the output is in $log"
        exit 1
    fi
}

build_demo() {
    [ -f "$build/build.ninja" ] || meson setup "$build" --buildtype=release -Dtests=false || return 1
    ninja -C "$build"
}

step "installing build tools, libraries and numpy (apt)" bash tools/setup-deps.sh --demo
step "building the shim and the spillway tool (meson, $build/)" build_demo
spillway=$PWD/$build/tools/cli/spillway

source tools/lib/cgroup.sh
export CGROUP_TAG=demo
job=$(mktemp /tmp/spillway-demo-job.XXXXXX.py)
out=$(mktemp /tmp/spillway-demo-out.XXXXXX)
trap 'rm -f "$job" "$out"' EXIT
cat > "$job" <<'PY'
# An ordinary numpy job: build a dataset in chunks, normalise it, reduce it.
import numpy as np, sys
rows, cols = int(sys.argv[1]), 1024
data = np.empty((rows, cols), dtype=np.float32)          # the big buffer
for start in range(0, rows, 8192):                         # filled in order
    stop = min(rows, start + 8192)
    data[start:stop] = np.arange(start, stop, dtype=np.float32)[:, None] % 97
means = data.mean(axis=0, dtype=np.float64)
print(f"rows={rows} checksum={float(means.sum()):.6f}")
PY
limit=$((limit_mib << 20))
rows=$(( (2 * limit) / 4096 ))   # a dataset of twice the limit
echo "the job: numpy fills a $((2 * limit_mib)) MiB array and reduces it; memory limit ${limit_mib} MiB"

# run_job NAME LIMIT COMMAND...: runs the job in a fresh memory cgroup and
# leaves "status peak_bytes oom_kills seconds result" in the variable NAME.
run_job() {
    local name=$1 lim=$2 t0 figures result; shift 2
    t0=$(date +%s.%N)
    echo "== $name: $*" >>"$log"
    cgroup_run "$lim" figures "$@" >"$out" 2>>"$log"
    local seconds; seconds=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
    read -r status peak oom <<<"$figures"
    result=$(grep -o 'checksum=[0-9.]*' "$out" | tail -1)
    cat "$out" >>"$log"
    if [ "$oom" -gt 0 ] || [ "$status" = 137 ]; then result="killed (OOM)"; fi
    printf -v "$name" '%s|%s|%s|%s|%s' "$status" "$((peak >> 20)) MiB" "$seconds s" "${result:-no result}" "$oom"
}

run_step() { # LABEL NAME LIMIT COMMAND...
    local label=$1; shift
    printf '%s... ' "$label"
    run_job "$@"
    local -n fig=$1
    IFS='|' read -r status _ seconds result _ <<<"$fig"
    echo "exit status $status, $seconds, $result"
}

run_step "running it without a limit" unconstrained 0 /usr/bin/python3 "$job" "$rows"
run_step "running it under the limit without spillway" without "$limit" /usr/bin/python3 "$job" "$rows"
run_step "running it under the limit with spillway run" with "$limit" "$spillway" run -- /usr/bin/python3 "$job" "$rows"

echo
printf '%-36s %-12s %-12s %-8s %s\n' "run (limit ${limit_mib} MiB)" "exit status" "peak memory" "time" "result"
for name in unconstrained without with; do
    case $name in
    unconstrained) label="unconstrained (no limit)" ;;
    without) label="without the shim, under the limit" ;;
    with) label="with the shim, under the limit" ;;
    esac
    IFS='|' read -r status peak seconds result _ <<<"${!name}"
    printf '%-36s %-12s %-12s %-8s %s\n' "$label" "$status" "$peak" "$seconds" "$result"
done
echo

IFS='|' read -r ref_status _ _ reference _ <<<"$unconstrained"
IFS='|' read -r bare_status _ _ bare_result _ <<<"$without"
IFS='|' read -r shim_status _ _ shim_result _ <<<"$with"
total=$(elapsed "$demo_start")
if [ "$ref_status" = 0 ] && [ "$bare_result" = "killed (OOM)" ] && [ "$shim_status" = 0 ] &&
   [ "$shim_result" = "$reference" ]; then
    echo "the job survived its memory limit because of spillway, with the reference result ($total s in all; log: $log)"
    exit 0
fi
echo "the demo did not show the expected outcome (the log is $log)"
exit 1
