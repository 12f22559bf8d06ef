#!/usr/bin/env bash
# tests/bench/writeback.sh — does dirty-page writeback stall a job that
# writes more than its memory limit? (issue 12 part 3; needs root)
#
#   tests/bench/writeback.sh [--quick] [--size 4G] [--limit 1G] [--rounds 2]
#                            [--build DIR] [--shim LIB] [--shim-b LIB]
#                            [--spill-dir DIR] [--ra "128 8192"]
# wbjob writes SIZE bytes front to back, timing every page's first write,
# and samples the cgroup's dirty and writeback bytes every 100 ms. Variants,
# alternating order every round:
#   shim-limited       malloc under the shim in a LIMIT memory cgroup
#   shim-unlimited     the same without a limit (what writing costs anyway)
#   baseline-limited   a fallocated MAP_SHARED file, no shim, in LIMIT
#   shimB-limited      with --shim-b LIB: a second shim library (before/after)
# The spill filesystem is a loop-mounted ext4 image under /var/tmp (direct
# I/O), unless --spill-dir names a directory on a disk. Prints one markdown
# table per read_ahead_kb of the loop device (--ra: a list; a new loop device
# inherits its backing disk's setting, 8192 here, so both are set
# explicitly; with --spill-dir the disk's own setting is used, never
# changed). --quick: 1 GiB in 256 MiB. Writes nothing into the repository.
# cgroup v2's memory.high cannot be set on a v1 machine: this measures
# memory.max (v2) or memory.limit_in_bytes (v1) only.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${SPILLWAY_BENCH_BUILD:-$ROOT/build}
SHIM=""; SHIM_B=""; SPILL=""
SIZE=4G; LIMIT=1G; ROUNDS=2; RAS="128 8192"
while [ $# -gt 0 ]; do
    case $1 in
    --quick) SIZE=1G; LIMIT=256M ;;
    --size) SIZE=$2; shift ;;
    --limit) LIMIT=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --shim) SHIM=$(readlink -f "$2"); shift ;;
    --shim-b) SHIM_B=$(readlink -f "$2"); shift ;;
    --spill-dir) SPILL=$2; shift ;;
    --ra) RAS=$2; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "writeback.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "writeback.sh: needs root (loop device, mount, cgroups)" >&2; exit 2; }
source "$HERE/phases_lib.sh"
SIZE_B=$(numfmt --from=iec "$SIZE"); LIMIT_B=$(numfmt --from=iec "$LIMIT")
lib_build "$ROOT" "$BUILD" tests/bench/wbjob
WBJOB=$BUILD/tests/bench/wbjob
[ -n "$SHIM" ] || SHIM=$BUILD/shim/libspillway.so

OUT=$(mktemp -d /tmp/$LIB_TAG.XXXXXX)
trap 'lib_cleanup; rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM
if [ -z "$SPILL" ]; then
    lib_loopfs $((2 * SIZE_B + (256 << 20)))
    SPILL=$LIB_MNT/spill
else
    RAS=host # a real disk's setting is the host's
fi
mkdir -p "$SPILL"
for ra in $RAS; do
[ "$ra" = host ] || lib_set_ra "$ra"
VARIANTS=(shim-limited shim-unlimited baseline-limited)
[ -n "$SHIM_B" ] && VARIANTS+=(shimB-limited)
REC=$OUT/records
: > "$REC"
for ((round = 1; round <= ROUNDS; round++)); do
    n=${#VARIANTS[@]}
    for ((i = 0; i < n; i++)); do
        v=${VARIANTS[$(((i + round - 1) % n))]}
        lim=0; [[ $v == *-limited ]] && lim=$LIMIT_B
        cg=$(lib_cgroup "wb-ra$ra-r$round-$v" "$lim")
        cmd=("$WBJOB" "$SIZE_B" --cgroup "$cg" --series "$OUT/series-ra$ra-$v-r$round.csv")
        case $v in
        shim-*) cmd=(env LD_PRELOAD="$SHIM" SPILLWAY_DIR="$SPILL" "${cmd[@]}") ;;
        shimB-*) cmd=(env LD_PRELOAD="$SHIM_B" SPILLWAY_DIR="$SPILL" "${cmd[@]}") ;;
        baseline-*) cmd+=(--baseline --dir "$SPILL") ;;
        esac
        lib_log "read_ahead_kb $ra, round $round/$ROUNDS: $v ($SIZE, limit $([ $lim = 0 ] && echo none || echo "$LIMIT"))"
        sync -f "$SPILL" # no earlier run's dirty pages
        status=0
        line=$(lib_in_cgroup "$cg" "${cmd[@]}") || status=$?
        echo "$line" >&2
        oom=$(awk '/oom_kill /{print $2}' "$cg/memory.oom_control" 2>/dev/null || awk '/oom_kill /{print $2}' "$cg/memory.events" 2>/dev/null || echo ?)
        echo "$v $round $status oom=$oom $line" >> "$REC"
        lib_rm_cgroup "$cg"
    done
done

echo
echo "wbjob: $SIZE written once, front to back, page by page; $ROUNDS round(s), alternating order, medians; read_ahead_kb $ra."
echo "Spill filesystem: $SPILL ($(df --output=source "$SPILL" | tail -1)); cgroup $(lib_cgroup_fs); kernel $(uname -r)."
echo "dirty_background_bytes/ratio: $(cat /proc/sys/vm/dirty_background_bytes)/$(cat /proc/sys/vm/dirty_background_ratio), dirty_bytes/ratio: $(cat /proc/sys/vm/dirty_bytes)/$(cat /proc/sys/vm/dirty_ratio)."
echo
echo "| variant | seconds | MB/s | blocked (s) | blocked per 64 MiB, max / p99 | 64 MiB chunk, median / max | pages > 10 ms | slowest page | dirty max / mean | writeback max / mean | OOM kills |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
awk '
function med(list,   n, a, i, j, t) { n = split(list, a, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{
    v = $1; if (!(v in seen)) { seen[v] = 1; keys[++nk] = v }
    if ($3 != 0) fail[v] = $3
    split($4, o, "="); ooms[v] += o[2]
    for (i = 6; i <= NF; i++) { split($i, kv, "="); val[v, kv[1]] = val[v, kv[1]] " " kv[2] }
}
END {
    for (x = 1; x <= nk; x++) { v = keys[x]
        printf "| %s%s | %.2f | %.0f | %.2f | %.3f / %.3f | %.3f / %.3f | %d | %.0f ms | %.0f / %.0f MiB | %.0f / %.0f MiB | %d |\n",
            v, (v in fail) ? " (exit " fail[v] ")" : "", med(val[v, "s"]), med(val[v, "MBps"]), med(val[v, "blocked_s"]),
            med(val[v, "blocked_chunk_max_s"]), med(val[v, "blocked_chunk_p99_s"]), med(val[v, "chunk_med_s"]),
            med(val[v, "chunk_max_s"]), med(val[v, "slow_10ms"]), med(val[v, "max_page_ms"]),
            med(val[v, "dirty_max_MiB"]), med(val[v, "dirty_mean_MiB"]), med(val[v, "writeback_max_MiB"]),
            med(val[v, "writeback_mean_MiB"]), ooms[v]
    }
}' "$REC"
done
echo
echo "blocked = time the writing thread slept (wall - on CPU - waiting for a CPU): reclaim, writeback and dirty"
echo "throttling waits. Pages > 10 ms also count preemption on a loaded machine."
