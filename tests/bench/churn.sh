#!/bin/bash
# churn.sh — large allocate / first-touch / free cycles (churn.c) and numpy
# temporaries in a loop (churn_numpy.py): bare mimalloc against one or two
# builds of the shim, interleaved round by round, without a memory limit and
# inside a 1 GiB memory cgroup; the disk's floor on the spill filesystem is
# measured in the same run. Prints CSV rows prefixed with round and limit,
# then a summary of medians and ratios to bare.
#
# usage: churn.sh CHURN_BINARY SHIM.so [BASELINE_SHIM.so] [ROUNDS]
# env: SPILL_BASE (default /var/tmp): where the spill directory is made.
# Needs root for the cgroup (v1 or v2); without it the limited runs are skipped.
set -u
CHURN=$1; SHIM=$2; BASE_SHIM=${3:-}; ROUNDS=${4:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
MIMALLOC=$(ls /usr/lib/*/libmimalloc.so.2 2>/dev/null | head -1)
PY=/usr/bin/python3
TAG=spillway-churn-$$
SPILL=${SPILL_BASE:-/var/tmp}/$TAG.spill
CG=""
OUT=$(mktemp /tmp/$TAG.XXXXXX.csv)
mkdir -m 0700 "$SPILL"

cleanup() {
    if [ -n "$CG" ] && [ -d "$CG" ]; then
        while read -r pid; do echo "$pid" > "$(dirname "$CG")/cgroup.procs" 2>/dev/null; done < "$CG/cgroup.procs"
        rmdir "$CG" 2>/dev/null
    fi
    rm -rf "$SPILL" "$OUT"
}
trap cleanup EXIT

make_cgroup() { # a 1 GiB memory cgroup, no swap
    if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
        CG=/sys/fs/cgroup/$TAG
        mkdir "$CG" && echo $((1 << 30)) > "$CG/memory.max" || return 1
        [ -f "$CG/memory.swap.max" ] && echo 0 > "$CG/memory.swap.max"
    else
        CG=/sys/fs/cgroup/memory/$TAG
        mkdir "$CG" && echo $((1 << 30)) > "$CG/memory.limit_in_bytes" || return 1
        [ -f "$CG/memory.memsw.limit_in_bytes" ] && echo $((1 << 30)) > "$CG/memory.memsw.limit_in_bytes"
    fi
    return 0
}

# run LIMIT ROUND VARIANT PRELOAD THRESHOLD -- COMMAND...: one process,
# in the cgroup when LIMIT is 1GiB; its rows get ROUND and LIMIT in front.
run() {
    local limit=$1 round=$2 variant=$3 preload=$4 threshold=$5
    shift 6
    local cg_procs=/dev/null
    [ "$limit" = 1GiB ] && cg_procs=$CG/cgroup.procs
    env LD_PRELOAD="$preload" SPILLWAY_DIR="$SPILL" ${threshold:+SPILLWAY_THRESHOLD=$threshold} \
        sh -c 'echo $$ > "$0"; exec "$@"' "$cg_procs" "$@" "$variant" 2>&1 |
        sed "s/^/$round,$limit,/" | tee -a "$OUT"
}

"$CHURN" --floor "${SPILL_BASE:-/var/tmp}" | sed 's/^/0,none,/' | tee -a "$OUT"
variants=("bare:$MIMALLOC" "shim:$SHIM")
[ -n "$BASE_SHIM" ] && variants=("bare:$MIMALLOC" "before:$BASE_SHIM" "shim:$SHIM")
limits=(none)
if make_cgroup; then limits+=(1GiB); else echo "# no cgroup (not root?): limited runs skipped" >&2; fi
# Warm-up: the VM hands idle memory back to the host.
LD_PRELOAD=$MIMALLOC "$CHURN" 512M 2 memset warmup > /dev/null
for limit in "${limits[@]}"; do
    for round in $(seq "$ROUNDS"); do
        for v in "${variants[@]}"; do
            name=${v%%:*}; lib=${v#*:}
            run "$limit" "$round" "$name" "$lib" 1MiB -- "$CHURN" 16M 50 memset
            run "$limit" "$round" "$name" "$lib" "" -- "$CHURN" 128M 10 memset
            run "$limit" "$round" "$name" "$lib" 1MiB -- "$PY" "$HERE/churn_numpy.py" 16 50
            run "$limit" "$round" "$name" "$lib" "" -- "$PY" "$HERE/churn_numpy.py" 128 10
        done
    done
done

echo "# medians over rounds (ms per cycle); ratio to bare in the same rounds"
"$PY" - "$OUT" <<'PYEOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    if len(f) != 8 or f[3] == "floor":
        if len(f) == 8: print("floor: %s = %s %s" % (f[5], f[6], f[7]))
        continue
    rnd, limit, bench, variant, param, metric, value, unit = f
    if metric in ("median_cycle", "median_iter"):
        rows[(limit, bench, param, variant)].append(float(value))
keys = sorted({k[:3] for k in rows})
for limit, bench, param in keys:
    bare = rows.get((limit, bench, param, "bare"))
    parts = []
    for v in ("bare", "before", "shim"):
        vals = rows.get((limit, bench, param, v))
        if not vals: continue
        m = statistics.median(vals)
        ratio = " (%.2fx)" % (m / statistics.median(bare)) if bare and v != "bare" else ""
        parts.append("%s %.3g%s" % (v, m, ratio))
    print("%-5s %-12s %-14s %s" % (limit, bench, param, "  ".join(parts)))
PYEOF
