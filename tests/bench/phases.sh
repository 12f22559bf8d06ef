#!/usr/bin/env bash
# tests/bench/phases.sh — the phase benchmark of issue 12 (needs root).
#
#   tests/bench/phases.sh [--quick] [--build DIR] [--shim LIB] [--ra "128 8192"]
#                         [--size 4G] [--limit 1G] [--rows 20000] [--batch 1000]
#                         [--rounds 1] [--variants "baseline baseline-random shim"]
#                         [--write-results]
#
# Makes a loop-mounted ext4 spill filesystem (image under /var/tmp, twice the
# data size, loop device with direct I/O), and for each read_ahead_kb setting
# of that loop device (default 128 and 8192; the old value is restored):
#   1. measures the floor of that filesystem (phases floor) right before each
#      run, on a file as large as the data (so far larger than the cgroup's
#      cache, and spread over as many blocks as the data's file): median and
#      p90 latency of a 4 KiB O_DIRECT read at a random offset, one at a time
#      (queue depth 1, as a synchronous fault reads), sequential O_DIRECT
#      read bandwidth; write bandwidth once, when the file is written;
#   2. runs `phases run` (fill -> random gather -> sequential pass -> random
#      gather of a float matrix at 4x the memory limit) in a fresh memory
#      cgroup (v1 memory.limit_in_bytes, or v2 memory.max), once per variant:
#        baseline         a plain fallocated MAP_SHARED file, no advice, no shim
#        baseline-random  the same file under madvise(MADV_RANDOM): the kernel
#                         alone with the advice the shim gives random regions
#        shim             malloc under LD_PRELOAD=libspillway.so, SPILLWAY_DIR
#                         on the loop filesystem, SPILLWAY_THRESHOLD=1MiB
#      rotating which goes first.
# Prints every phase line as it comes and one markdown table at the end.
# Writes nothing into the repository unless --write-results is given (then
# tests/bench/PHASES.md). --quick: 1 GiB of data in a 256 MiB limit.
# Everything it creates (image, mount, loop device, cgroups) is named
# spillway-phasebench-<pid>-* and removed on any exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${SPILLWAY_BENCH_BUILD:-$ROOT/build}
SHIM=""
RAS="128 8192"
SIZE=4G; LIMIT=1G; ROWS=20000; BATCH=1000; ROUNDS=1; MODE=full
VARIANTS="baseline baseline-random shim"
WRITE=0
while [ $# -gt 0 ]; do
    case $1 in
    --quick) MODE=quick; SIZE=1G; LIMIT=256M ;;
    --build) BUILD=$(readlink -f "$2"); shift ;;
    --shim) SHIM=$(readlink -f "$2"); shift ;;
    --ra) RAS=$2; shift ;;
    --size) SIZE=$2; shift ;;
    --limit) LIMIT=$2; shift ;;
    --rows) ROWS=$2; shift ;;
    --batch) BATCH=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --variants) VARIANTS=$2; shift ;;
    --write-results) WRITE=1 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "phases.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "phases.sh: needs root (loop device, mount, cgroups)" >&2; exit 2; }
source "$HERE/phases_lib.sh"
bytes() { numfmt --from=iec "$1"; }
SIZE_B=$(bytes "$SIZE"); LIMIT_B=$(bytes "$LIMIT")

lib_build "$ROOT" "$BUILD" tests/bench/phases
PHASES=$BUILD/tests/bench/phases
[ -n "$SHIM" ] || SHIM=$BUILD/shim/libspillway.so
[ -x "$PHASES" ] && [ -f "$SHIM" ] || { echo "phases.sh: $PHASES or $SHIM missing" >&2; exit 1; }

OUT=$(mktemp -d /tmp/$LIB_TAG.XXXXXX)
trap 'lib_cleanup; rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM
for v in $VARIANTS; do
    case $v in baseline|baseline-random|shim) ;; *) echo "phases.sh: unknown variant $v" >&2; exit 2 ;; esac
done
# the data's file and the floor file, each SIZE, and room for ext4's own
lib_loopfs $((2 * SIZE_B + SIZE_B / 8 + (256 << 20)))
SPILL=$LIB_MNT/spill
mkdir -p "$SPILL"
REC=$OUT/records       # "ra round variant status PHASE ..." and "ra round FLOOR ..."
: > "$REC"
T0=$(date +%s)

# The floor file (as large as the data) is written once (sequential write
# bandwidth) and read again right before every run (random 4 KiB latency,
# sequential read bandwidth): each run's ratio uses the floor measured next
# to it, on a machine whose load changes by the minute. As large as the
# data, so its random reads land as far apart on the device as the gather's
# and no cache below the filesystem (the loop image's host) holds more of it.
FLOOR_FILE=$LIB_MNT/floor
lib_log "writing the floor file ($((SIZE_B >> 20)) MiB)"
created=$("$PHASES" floor --file "$FLOOR_FILE" --size "$SIZE_B" --keep)
echo "$created" >&2
wbw=$(lib_get seq_write_MBps "$created")
for ((round = 1; round <= ROUNDS; round++)); do
    n=0
    for ra in $RAS; do
        lib_set_ra "$ra"
        # rotate the variants: each goes first in turn
        read -r -a vs <<<"$VARIANTS"
        k=$(((round - 1 + n) % ${#vs[@]}))
        order="${vs[*]:k} ${vs[*]:0:k}"
        n=$((n + 1))
        for v in $order; do
            floor=$("$PHASES" floor --file "$FLOOR_FILE" --size "$SIZE_B" --reuse)
            lib_log "round $round, read_ahead_kb=$ra, before $v: $floor"
            echo "$ra $round FLOOR variant=$v ${floor#FLOOR } seq_write_MBps_at_start=$wbw" >> "$REC"
            lat=$(lib_get lat_med_us "$floor"); rbw=$(lib_get seq_read_MBps "$floor")
            lib_log "round $round, read_ahead_kb=$ra: $v ($SIZE in a $LIMIT cgroup)"
            cg=$(lib_cgroup "r$round-ra$ra-$v" "$LIMIT_B")
            args=(run --size "$SIZE_B" --rows "$ROWS" --batch "$BATCH" --label "$v" --dev "$LIB_DEV"
                  --cgroup "$cg" --limit "$LIMIT_B" --lat-us "$lat" --read-MBps "$rbw" --write-MBps "$wbw")
            status=0
            if [ $v = baseline ]; then
                lib_in_cgroup "$cg" "$PHASES" "${args[@]}" --baseline --dir "$SPILL" > "$OUT/run.out" || status=$?
            elif [ $v = baseline-random ]; then
                lib_in_cgroup "$cg" "$PHASES" "${args[@]}" --baseline --advice random --dir "$SPILL" \
                    > "$OUT/run.out" || status=$?
            else
                lib_in_cgroup "$cg" env LD_PRELOAD="$SHIM" SPILLWAY_DIR="$SPILL" SPILLWAY_THRESHOLD=1MiB \
                    "$PHASES" "${args[@]}" > "$OUT/run.out" || status=$?
            fi
            cat "$OUT/run.out" >&2
            [ "$status" = 0 ] || lib_log "$v exited with status $status (137: killed, e.g. by the OOM killer)"
            grep '^PHASE' "$OUT/run.out" | sed "s/^/$ra $round $status /" >> "$REC" || true
            lib_rm_cgroup "$cg"
        done
    done
done
rm -f "$FLOOR_FILE"
lib_set_ra "$LIB_RA_OLD"

# ---------------------------------------------------------------- the table
table() {
    echo "Data $SIZE in a $LIMIT memory cgroup ($(lib_cgroup_fs)), $ROWS random 1 KiB rows per gather in batches of $BATCH;"
    echo "spill filesystem: ext4 on a loop device (direct I/O) over $(df --output=source /var/tmp | tail -1)."
    echo "Kernel $(uname -r), $(nproc) CPUs; shim: $SHIM; $ROUNDS round(s), medians when more than one."
    echo
    echo "Floor, measured right before each run on a file of $((SIZE_B >> 20)) MiB of the spill filesystem (O_DIRECT, one read at a time):"
    echo
    echo "| read_ahead_kb | round | before | 4 KiB random read, median | p90 | sequential read | sequential write (once, at the start) |"
    echo "|---|---|---|---|---|---|---|"
    awk '$3 == "FLOOR" { for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         printf "| %s | %s | %s | %s us | %s us | %s MB/s | %s MB/s |\n", $1, $2, v["variant"], v["lat_med_us"], v["lat_p90_us"], v["seq_read_MBps"], v["seq_write_MBps_at_start"] }' "$REC"
    echo
    echo "| read_ahead_kb | setup | phase | seconds | floor (s) | x floor | major faults | read from spill device | per fault | written to it | dirty at start | time per fault | faulting thread's CPU | other threads' CPU | limit hits | pgpgin (system) |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    awk '
    function med(list,   n, a, i, j, t) { n = split(list, a, " ");
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function mib(b) { return b < 0 ? "?" : sprintf("%.0f MiB", b / 1048576) }
    $4 == "PHASE" {
        for (i = 5; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        k = $1 SUBSEP v["label"] SUBSEP v["phase"]
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        s[k] = s[k] " " v["s"]; f[k] = f[k] " " v["floor_s"]; mf[k] = mf[k] " " v["majflt"]
        dr[k] = dr[k] " " v["dev_read_bytes"]; dw[k] = dw[k] " " v["dev_write_bytes"]
        dd[k] = dd[k] " " v["cg_dirty_start_bytes"]; pg[k] = pg[k] " " v["pgpgin_bytes"]
        uf[k] = uf[k] " " v["us_per_fault"]; mc[k] = mc[k] " " v["main_cpu_s"]
        oc[k] = oc[k] " " v["other_cpu_s"]; fc[k] = fc[k] " " v["cg_failcnt"]
        if ($3 != 0) bad[k] = $3
    }
    END {
        for (x = 1; x <= nk; x++) {
            split(keys[x], p, SUBSEP); k = keys[x]
            sec = med(s[k]); fl = med(f[k]); faults = med(mf[k]); dev = med(dr[k])
            per = faults > 0 && dev >= 0 ? sprintf("%.0f KiB", dev / faults / 1024) : "-"
            ratio = fl > 0 ? sprintf("%.2f", sec / fl) : "-"
            printf "| %s | %s%s | %s | %.2f | %.2f | %s | %d | %s | %s | %s | %s | %.0f us | %.2f s | %.2f s | %d | %s |\n", p[1], p[2],
                   (k in bad) ? " (exit " bad[k] ")" : "", p[3], sec, fl, ratio, faults, mib(dev), per,
                   mib(med(dw[k])), mib(med(dd[k])),
                   med(uf[k]), med(mc[k]), med(oc[k]), med(fc[k]), mib(med(pg[k]))
        }
    }' "$REC"
    echo
    echo "Floors: fill = data / sequential write bandwidth; gather = (1 - limit / data) x the distinct pages of its"
    echo "rows x median 4 KiB latency, no slack term (at most the limit's worth of the data can be resident; every"
    echo "other page is one 4 KiB read at queue depth 1); seq = data / sequential read bandwidth. \"read from spill"
    echo "device\" and \"written to it\" are the loop device's sector counts (exact); dirty at start is the cgroup's"
    echo "dirty page cache as the phase began (what the device may write while the phase reads);"
    echo "time per fault = seconds / major faults; the"
    echo "faulting thread's CPU is its user + system time (fault handling, page cache insertion, direct reclaim);"
    echo "other threads' CPU is the rest of the process (the shim's threads); limit hits = memory.failcnt (v1) or"
    echo "memory.events max (v2); pgpgin is system-wide and counts a loop read twice (loop device and the disk below)."
}
TABLE=$(table)
lib_log "done in $(( $(date +%s) - T0 )) s"
echo
echo "$TABLE"
if [ "$WRITE" = 1 ]; then
    {
        echo "# Phase benchmark (tests/bench/phases.sh$([ "$MODE" = quick ] && echo " --quick"))"
        echo
        echo "Generated $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?'); load at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
        echo
        echo "$TABLE"
    } > "$HERE/PHASES.md"
    lib_log "wrote $HERE/PHASES.md"
fi
