#!/usr/bin/env bash
# tests/bench/live_phases.sh — issue 26's "8 GiB live in 1 GiB" job
# (seqjob.c: TOTAL of live CHUNK buffers written, then read back in order)
# per phase, the shim against the unconstrained run, with the disk's floor
# measured in the same run (needs root):
#   floor, unconstrained, shim, floor, shim, unconstrained, floor   (A B B A)
# and with --pairs 2 that twice. Every floor is a fresh 1 GiB O_DIRECT write
# (fdatasync included) and one O_DIRECT sequential read of it, on the spill
# filesystem's own device (phases floor). Each phase prints its wall time,
# the job's CPU and run-queue wait (schedstat), the shim threads' CPU, the
# machine's busy fraction, the 1-minute load at its start and end, and the
# bytes the device read and wrote (/sys/block/loopN/stat: only the spill
# filesystem is on it). live_report.py turns the records into the tables
# and the floor: the bytes that must go to the disk and come back given the
# limit (TOTAL - LIMIT each way: what stays cached need not), over the
# measured bandwidths, beside the unconstrained compute.
#
#   tests/bench/live_phases.sh [--pairs 1] [--total 8G] [--chunk 64M] [--limit 1G]
#                              [--ra 128] [--build DIR] [--shim LIB]
#                              [--shim-env 'NAME=VALUE ...'] [--baseline LIB]
#                              [--logs DIR] [--out FILE]
# --shim-env: more settings for the shim runs. --baseline: another build of
# the shim (e.g. main's, before a change) run beside it, each round then
#   floor, unconstrained, shim, baseline, floor, baseline, shim, unconstrained, floor. --logs: keep every run's
# output, log and SPILLWAY_STATS line. --out: the markdown report into FILE
# (it is always printed).
# The loop-mounted ext4 under /var/tmp, its cgroups (named with
# SPILLWAY_BENCH_TAG when set) and the image are removed on any exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${SPILLWAY_BENCH_BUILD:-$ROOT/build}
PAIRS=1 TOTAL=8G CHUNK=64M LIMIT=1G RA=128 SHIM="" SHIM_ENV="" LOGS="" REPORT="" BASELINE=""
while [ $# -gt 0 ]; do
    case $1 in
    --pairs) PAIRS=$2; shift ;;
    --total) TOTAL=$2; shift ;;
    --chunk) CHUNK=$2; shift ;;
    --limit) LIMIT=$2; shift ;;
    --ra) RA=$2; shift ;;
    --build) BUILD=$(readlink -f "$2"); shift ;;
    --shim) SHIM=$(readlink -f "$2"); shift ;;
    --shim-env) SHIM_ENV=$2; shift ;;
    --baseline) BASELINE=$(readlink -f "$2"); shift ;;
    --logs) LOGS=$(mkdir -p "$2" && readlink -f "$2"); shift ;;
    --out) REPORT=$(readlink -f "$2"); shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
    *) echo "live_phases.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "live_phases.sh: needs root (loop device, mount, cgroups)" >&2; exit 2; }
source "$HERE/phases_lib.sh"
bytes() { numfmt --from=iec "$1"; }

lib_build "$ROOT" "$BUILD" shim/libspillway_engine.so tests/bench/seqjob tests/bench/phases
BIN=$BUILD/tests/bench
[ -n "$SHIM" ] || SHIM=$BUILD/shim/libspillway.so
[ -f "$SHIM" ] || { echo "live_phases.sh: $SHIM missing" >&2; exit 1; }

OUT=$(mktemp -d /tmp/$LIB_TAG.XXXXXX)
trap 'lib_cleanup; rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM
lib_loopfs $(( $(bytes "$TOTAL") + (3 << 30) )) nodiscard
[ "$RA" = keep ] || lib_set_ra "$RA"
SPILL=$LIB_MNT/spill
mkdir -p "$SPILL"
REC=$OUT/records
backing_dev=$(basename "$(readlink -f "$(df --output=source /var/tmp | tail -1)")")
{
    echo "META date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')"
    echo "META kernel=$(uname -r) cpus=$(nproc) cgroup=$(lib_cgroup_fs)"
    echo "META spill=ext4 on $LIB_LOOP (direct I/O to an image on $backing_dev) read_ahead_kb=$(cat /sys/block/$LIB_DEV/queue/read_ahead_kb)"
    echo "META job=seqjob total=$TOTAL chunk=$CHUNK limit=$LIMIT shim_env=${SHIM_ENV:-none}"
    echo "META shim=$SHIM baseline=${BASELINE:-none}"
    echo "CONF total=$(bytes "$TOTAL") limit=$(bytes "$LIMIT")"
} > "$REC"

floor() { # N
    local f
    f=$("$BIN/phases" floor --file "$LIB_MNT/floor" --size 1G --reads 200)
    echo "FLOOR n=$1 ${f#FLOOR }" >> "$REC"
    lib_log "floor $1: $f"
}

dev_mib() { awk -v f="$1" '{ printf "%.1f", $f * 512 / 1048576 }' "/sys/block/$LIB_DEV/stat"; }
run=0
run_one() { # VARIANT
    local v=$1 lim=0 envs=(JOB_DEV="$LIB_DEV") status=0 t0 t1 r0 w0 load0
    run=$((run + 1))
    [ "$v" = unconstrained ] || lim=$(bytes "$LIMIT")
    local tag=$run-$v
    local cg; cg=$(lib_cgroup "$tag" "$lim")
    if [ "$v" != unconstrained ]; then
        local lib=$SHIM; [ "$v" = baseline ] && lib=$BASELINE
        envs+=(LD_PRELOAD="$lib" SPILLWAY_DIR="$SPILL" SPILLWAY_LOG=info SPILLWAY_STATS="$OUT/$tag.stats")
        [ -n "$SHIM_ENV" ] && read -r -a extra <<<"$SHIM_ENV" && envs+=("${extra[@]}")
    fi
    r0=$(dev_mib 3); w0=$(dev_mib 7); load0=$(cut -d' ' -f1 /proc/loadavg)
    lib_log "run $run: $v"
    t0=$(date +%s.%N)
    (cd "$OUT" && lib_in_cgroup "$cg" env "${envs[@]}" "$BIN/seqjob" "$TOTAL" "$CHUNK") \
        > "$OUT/$tag.out" 2> "$OUT/$tag.err" || status=$?
    t1=$(date +%s.%N)
    local peak; peak=$(cat "$cg/memory.max_usage_in_bytes" 2>/dev/null || cat "$cg/memory.peak" 2>/dev/null || echo 0)
    lib_rm_cgroup "$cg"
    echo "RUN n=$run variant=$v status=$status wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
         "peak_mib=$((peak >> 20)) dev_read_mib=$(awk -v a="$r0" -v b="$(dev_mib 3)" 'BEGIN { printf "%.1f", b - a }')" \
         "dev_write_mib=$(awk -v a="$w0" -v b="$(dev_mib 7)" 'BEGIN { printf "%.1f", b - a }')" \
         "load=$load0-$(cut -d' ' -f1 /proc/loadavg)" >> "$REC"
    grep '^JOBPHASE' "$OUT/$tag.out" | sed "s/^JOBPHASE job=[^ ]* /PHASE n=$run variant=$v /" >> "$REC" || true
    [ -f "$OUT/$tag.stats" ] && echo "STATS n=$run $(tr '\n' ' ' < "$OUT/$tag.stats")" >> "$REC"
    grep '^RUN' "$REC" | tail -1 >&2
    [ "$status" = 0 ] || lib_log "$v exited with status $status"
    if [ -n "$LOGS" ]; then cp "$OUT/$tag".* "$LOGS/" 2>/dev/null || true; fi
}

floor 0
for ((p = 1; p <= PAIRS; p++)); do
    run_one unconstrained; run_one shim; [ -n "$BASELINE" ] && run_one baseline; floor $((2 * p - 1))
    [ -n "$BASELINE" ] && run_one baseline; run_one shim; run_one unconstrained; floor $((2 * p))
done
rm -f "$LIB_MNT/floor"
[ -n "$LOGS" ] && cp "$REC" "$LOGS/records"
TABLE=$(/usr/bin/python3 "$HERE/live_report.py" "$REC")
echo "$TABLE"
if [ -n "$REPORT" ]; then echo "$TABLE" > "$REPORT"; lib_log "wrote $REPORT"; fi
