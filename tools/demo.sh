#!/usr/bin/env bash
# demo.sh — the main demo, from a fresh Debian 12 machine (as root): an
# UNMODIFIED numpy job whose dataset is twice its memory limit is OOM-killed
# in a memory cgroup, then completes under spillway with the same result.
# Usage: bash tools/demo.sh [LIMIT_MIB]   (default 768)
set -euo pipefail
cd "$(dirname "$0")/.."
limit_mib=${1:-768}
bash tools/setup-deps.sh
bash tools/build.sh >/dev/null
source tools/lib/cgroup.sh
spill=$(mktemp -d /var/tmp/spillway-demo.XXXXXX)
trap 'rm -rf "$spill"' EXIT

job=$(mktemp /tmp/spillway-demo-job.XXXXXX.py)
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
echo "== an unmodified numpy job with a $((2 * limit_mib)) MiB dataset, memory limit ${limit_mib} MiB"

echo "-- unconstrained, for the reference result"
reference=$(/usr/bin/python3 "$job" "$rows")
echo "   $reference"

echo "-- without spillway"
t0=$(date +%s.%N)
cgroup_run "$limit" without /usr/bin/python3 "$job" "$rows" || true
read -r status peak oom <<<"$without"
printf '   exit status %s, OOM kills %s, peak %d MiB, %.1f s\n' "$status" "$oom" $((peak >> 20)) "$(awk -v a="$(date +%s.%N)" -v b="$t0" "BEGIN{print a-b}")"

echo "-- with spillway (LD_PRELOAD=build/shim/libspillway.so, spill dir $spill)"
t0=$(date +%s.%N)
cgroup_run "$limit" with env LD_PRELOAD="$PWD/build/shim/libspillway.so" SPILLWAY_DIR="$spill" \
    SPILLWAY_LOG=info /usr/bin/python3 "$job" "$rows" > "$spill.out" || true
cat "$spill.out"
result=$(cat "$spill.out"); rm -f "$spill.out"
read -r status peak oom <<<"$with"
printf '   exit status %s, OOM kills %s, peak %d MiB, %.1f s\n' "$status" "$oom" $((peak >> 20)) "$(awk -v a="$(date +%s.%N)" -v b="$t0" "BEGIN{print a-b}")"
rm -f "$job"
[ "${without%% *}" != 0 ] && [ "${with%% *}" = 0 ] && [ "$result" = "$reference" ] && echo "== the job survived its memory limit because of spillway, with the reference result" && exit 0
echo "== demo did not show the expected outcome (without: $without, with: $with)"
exit 1
