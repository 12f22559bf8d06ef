#!/usr/bin/env bash
# tests/bench/jobs.sh — issue 26's set of jobs (needs root): real libraries'
# jobs, unmodified, each run four ways in one script:
#   unconstrained  no memory limit (a cgroup only to read its peak)
#   swap           under the job's limit, a swap file on the spill
#                  filesystem switched on for this run only, the cgroup
#                  allowed to swap (v1: memory.memsw.limit_in_bytes left
#                  unlimited; v2: memory.swap.max = max)
#   shim           under the limit, LD_PRELOAD=libspillway.so (default
#                  configuration, SPILLWAY_DIR on the spill filesystem), no swap
#   bare           under the limit, no shim, no swap (expected: OOM-killed)
# Odd rounds run the four in this order, even rounds in the reverse one. The
# jobs (tests/bench/jobs/):
#   pandas       merge + groupby + sort of a sales table (pandas_job.py)
#   xgboost      DMatrix + `hist` boosting + predict (xgboost_job.py)
#   sklearn      StandardScaler + PCA + k-means on a dense matrix (sklearn_job.py)
#   torchvision  resnet18 from a shuffling DataLoader over an in-memory
#                image tensor (torchvision_job.py)
#   scipy        COO -> CSR of a random edge list, PageRank steps (scipy_job.py)
#   graph        2 GiB of edges streamed, hashed increments into a 512 MiB
#                table, in 1 GiB (graph_scatter.c)
#   live         8 GiB of live 64 MiB buffers written then read back, in
#                1 GiB (seqjob.c)
#   epochs       PyTorch: a 768 MiB table updated in place by the parent while
#                a DataLoader's workers, forked every epoch, live (epochs_job.py;
#                run it again with --shim-env SPILLWAY_CONFIG=FILE holding
#                "[fork] snapshot = false" to see what the fork snapshot costs)
#   pylist       pure Python: 30M ints from numpy's tolist() (CPython's object
#                arenas), a pass over them, the list dropped (pylist_job.py)
# Each job prints its phases (JOBPHASE lines: seconds, faults, bytes read and
# written) and a JOBRESULT that must match across the four ways.
#
#   tests/bench/jobs.sh [--only JOB,...] [--variants unconstrained,swap,shim,bare]
#                       [--rounds 2] [--limit SIZE] [--ra 128] [--device loop|zram]
#                       [--timeout 300] [--build DIR]
#                       [--shim LIB] [--shim-env 'NAME=VALUE ...'] [--logs DIR]
#                       [--record] [--discard] [--out FILE | --append FILE] [--write-results]
# --limit: one memory limit (e.g. 448M) for every job instead of its own
# (job_limit below), to find the lowest limit a job survives under the shim.
# --ra: read_ahead_kb of the spill filesystem's loop device ("keep": as the
# kernel made it). --device: what holds the spill filesystem (and the swap
# file): "loop" (default), an image on the machine's disk through a loop
# device with direct I/O; "zram", compressed RAM outside the job's cgroup:
# no I/O wait, but compressing runs on the machine's own CPUs (on 2 cores
# pandas under the shim took 27 s there against 20 s on the loop device),
# so it separates what depends on the device's latency from what depends
# on the bytes moved, not the shim's cost from the disk's (always mounted
# with discard, which zram needs). --shim-env: more settings for the shim runs (e.g.
# SPILLWAY_LOG=debug). --logs: keep every run's output, shim log and
# SPILLWAY_STATS line there. --record (for diagnosis, with --logs): the shim
# runs go through `spillway run --record` (every 0.5 s: regions by backing
# and residency, faults, cgroup memory by kind) and `spillway report`'s
# summary is kept beside them. --discard: mount the spill filesystem with
# online discard (default nodiscard, ext4's own default: with discard, the
# loop device turns a freed spill file's discard into a hole punch that
# reads wait behind; measured 60 s of one job's 72).
# --out/--append: the markdown report into FILE
# (--write-results: tests/bench/JOBS.md, replacing its generated report and
# keeping what follows its "<!-- notes written by hand" line); it is always printed.
#
# Makes a loop-mounted ext4 spill filesystem under /var/tmp (phases_lib.sh)
# holding the spill directory and the swap file, so swap and spill files
# share one device and one read_ahead_kb; measures that filesystem's floor
# (random 4 KiB O_DIRECT reads, sequential read; phases floor) every round.
# Swap is on only during a swap run; an EXIT trap turns it off and removes
# the swap file, the cgroups, the mount and the image on any exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${SPILLWAY_BENCH_BUILD:-$ROOT/build}
PYTHON=/usr/bin/python3
ALL_JOBS="pandas xgboost sklearn torchvision scipy graph live epochs pylist"
ALL_VARIANTS="unconstrained swap shim bare"
JOBS=$ALL_JOBS VARIANTS=$ALL_VARIANTS ROUNDS=2 RA=128 TIMEOUT=300
SHIM="" SHIM_ENV="" LIMIT="" LOGS="" REPORT="" APPEND=0 RECORD=0 MOUNT=nodiscard DEVICE=loop
while [ $# -gt 0 ]; do
    case $1 in
    --only) JOBS=${2//,/ }; shift ;;
    --variants) VARIANTS=${2//,/ }; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --limit) LIMIT=$2; shift ;;
    --ra) RA=$2; shift ;;
    --device) DEVICE=$2; shift
        [[ $DEVICE == @(loop|zram) ]] || { echo "jobs.sh: --device is loop or zram, not $DEVICE" >&2; exit 2; } ;;
    --timeout) TIMEOUT=$2; shift ;;
    --build) BUILD=$(readlink -f "$2"); shift ;;
    --shim) SHIM=$(readlink -f "$2"); shift ;;
    --shim-env) SHIM_ENV=$2; shift ;;
    --logs) LOGS=$(mkdir -p "$2" && readlink -f "$2"); shift ;;
    --record) RECORD=1 ;;
    --discard) MOUNT=discard ;;
    --out) REPORT=$(readlink -f "$2"); APPEND=0; shift ;;
    --append) REPORT=$(readlink -f "$2"); APPEND=1; shift ;;
    --write-results) REPORT=$HERE/JOBS.md; APPEND=0 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
    *) echo "jobs.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "jobs.sh: needs root (loop device, mount, cgroups, swapon)" >&2; exit 2; }
source "$HERE/phases_lib.sh"
bytes() { numfmt --from=iec "$1"; }

# ---------------------------------------------------------------- the jobs
# job_limit JOB: the memory limit, a third to a half of the job's
# unconstrained peak (the cgroup's, measured here; the report prints both).
job_limit() {
    if [ -n "$LIMIT" ]; then echo "$LIMIT"; return; fi
    case $1 in
    pandas) echo 640M ;; xgboost) echo 384M ;; sklearn) echo 512M ;; torchvision) echo 1G ;;
    scipy) echo 768M ;; graph) echo 1G ;; live) echo 1G ;; epochs) echo 640M ;; pylist) echo 768M ;;
    *) echo "jobs.sh: unknown job $1 (jobs: $ALL_JOBS)" >&2; return 2 ;;
    esac
}
# job_cmd JOB: the command line (Python jobs import only jobphase.py from here)
job_cmd() {
    case $1 in
    pandas) echo "$PYTHON $HERE/jobs/pandas_job.py" ;;
    xgboost) echo "$PYTHON $HERE/jobs/xgboost_job.py" ;;
    sklearn) echo "$PYTHON $HERE/jobs/sklearn_job.py" ;;
    torchvision) echo "$PYTHON $HERE/jobs/torchvision_job.py" ;;
    scipy) echo "$PYTHON $HERE/jobs/scipy_job.py" ;;
    epochs) echo "$PYTHON $HERE/jobs/epochs_job.py" ;;
    pylist) echo "$PYTHON $HERE/jobs/pylist_job.py" ;;
    graph) echo "$BIN/graph_scatter 2048 512" ;;
    live) echo "$BIN/seqjob 8G 64M" ;;
    esac
}
for j in $JOBS; do job_limit "$j" >/dev/null; done
for v in $VARIANTS; do
    [[ " $ALL_VARIANTS " == *" $v "* ]] || { echo "jobs.sh: unknown variant $v ($ALL_VARIANTS)" >&2; exit 2; }
done
# The swap file holds what the largest job keeps beyond its limit.
SWAP_B=$(bytes 8G)

# ---------------------------------------------------------------- libraries
# The Python jobs' libraries (pandas, XGBoost, scikit-learn, torchvision,
# scipy): Debian's, for /usr/bin/python3, installed if missing. Without
# them every run of those jobs would fail at its first import.
if [[ " $JOBS " == *" "@(pandas|xgboost|sklearn|torchvision|scipy|epochs|pylist)" "* ]]; then
    deps_log=$(mktemp /var/tmp/spillway-jobs-apt.XXXXXX.log)
    bash "$ROOT/tools/setup-deps.sh" --bench --log "$deps_log" ||
        { echo "jobs.sh: the jobs' Python libraries could not be installed (apt's output: $deps_log); install python3-pandas python3-xgboost python3-sklearn python3-torchvision python3-scipy, or run the C jobs alone (--only graph,live)" >&2; exit 1; }
    rm -f "$deps_log"
fi

# ---------------------------------------------------------------- build
# The C jobs are meson targets when tests are configured; otherwise (a build
# dir set up with -Dtests=false) they are compiled here with the same flags.
C_JOBS="phases seqjob graph_scatter"
if [ -f "$BUILD/build.ninja" ] && grep -q '^build tests/bench/graph_scatter:' "$BUILD/build.ninja"; then
    targets=(shim/libspillway_engine.so tools/cli/spillway); for p in $C_JOBS; do targets+=("tests/bench/$p"); done
    lib_build "$ROOT" "$BUILD" "${targets[@]}"
    BIN=$BUILD/tests/bench
else
    lib_build "$ROOT" "$BUILD" shim/libspillway_engine.so tools/cli/spillway
    BIN=$BUILD/bench-bin
    mkdir -p "$BIN"
    for p in $C_JOBS; do
        src=$HERE/$p.c; [ -f "$src" ] || src=$HERE/jobs/$p.c
        gcc -std=gnu11 -O2 -Wall -Wextra -Wno-unused-function -pthread -o "$BIN/$p" "$src" -ldl
    done
fi
[ -n "$SHIM" ] || SHIM=$BUILD/shim/libspillway.so
[ -f "$SHIM" ] || { echo "jobs.sh: $SHIM missing" >&2; exit 1; }
# numpy, scipy and torch link libblas.so.3; Debian's default is the
# reference BLAS, far slower than the OpenBLAS a pip install brings. When
# libopenblas0-pthread is installed the Python jobs use it (the system-wide
# choice stays as it is).
OPENBLAS=/usr/lib/x86_64-linux-gnu/openblas-pthread
BLAS_ENV=(); BLAS=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)
[ -f "$OPENBLAS/libblas.so.3" ] && { BLAS_ENV=(LD_LIBRARY_PATH="$OPENBLAS"); BLAS=$OPENBLAS/libblas.so.3; }

# ---------------------------------------------------------------- spill filesystem, swap file
OUT=$(mktemp -d /tmp/$LIB_TAG.XXXXXX)
SWAPFILE=""
swap_off() { [ -n "$SWAPFILE" ] && grep -q "^$SWAPFILE " /proc/swaps && swapoff "$SWAPFILE"; return 0; }
swap_cleanup() {
    swap_off || lib_log "swapoff $SWAPFILE failed: turn it off by hand (swapoff $SWAPFILE)"
    [ -n "$SWAPFILE" ] && rm -f "$SWAPFILE"
    return 0
}
trap 'swap_cleanup; lib_cleanup; rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM
max_live=$(bytes 8G)
if [ "$DEVICE" = zram ]; then
    lib_zramfs $((SWAP_B + max_live + (3 << 30))) || exit 1
    MOUNT=discard
else
    lib_loopfs $((SWAP_B + max_live + (3 << 30))) "$MOUNT"
fi
[ "$RA" = keep ] || lib_set_ra "$RA"
SPILL=$LIB_MNT/spill
mkdir -p "$SPILL"
SWAPFILE=$LIB_MNT/swapfile
fallocate -l "$SWAP_B" "$SWAPFILE"
chmod 0600 "$SWAPFILE"
mkswap -q "$SWAPFILE"
REC=$OUT/records
: > "$REC"
backing_dev=$(basename "$(readlink -f "$(df --output=source /var/tmp | tail -1)")")
{
    echo "META date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "META commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')"
    echo "META kernel=$(uname -r) cpus=$(nproc) mem_gib=$(awk '/MemTotal/{printf "%.1f", $2/1048576}' /proc/meminfo)"
    echo "META cgroup=$(lib_cgroup_fs) thp=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled)"
    if [ "$DEVICE" = zram ]; then
        echo "META spill=ext4 ($MOUNT) on /dev/$LIB_DEV (zram: compressed RAM outside the job's cgroup, $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$LIB_DEV/comp_algorithm"); no disk) read_ahead_kb=$(cat /sys/block/$LIB_DEV/queue/read_ahead_kb)"
    else
        echo "META spill=ext4 ($MOUNT) on $LIB_LOOP (direct I/O to an image on $backing_dev) read_ahead_kb=$(cat /sys/block/$LIB_DEV/queue/read_ahead_kb) ($backing_dev: $(cat /sys/block/$backing_dev/queue/read_ahead_kb 2>/dev/null || echo ?))"
    fi
    echo "META swap=$((SWAP_B >> 30)) GiB file on the spill filesystem, vm.page-cluster=$(cat /proc/sys/vm/page-cluster), vm.swappiness=$(cat /proc/sys/vm/swappiness)"
    echo "META shim=$SHIM blas=$BLAS"
    echo "META load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >> "$REC"
T0=$(date +%s)

# ---------------------------------------------------------------- one run
cg_read() { # FILE [KEY]: a cgroup figure (v1 or v2 name given by the caller)
    if [ $# = 1 ]; then cat "$CG/$1" 2>/dev/null || echo -1
    else awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print -1 }' "$CG/$1" 2>/dev/null; fi
}
dev_mib() { awk -v f="$1" '{ printf "%.1f", $f * 512 / 1048576 }' "/sys/block/$LIB_DEV/stat"; }

run_one() { # JOB VARIANT ROUND
    local job=$1 v=$2 round=$3 lim=0 swap="" envs=() status=0
    [ "$v" = unconstrained ] || lim=$(bytes "$(job_limit "$job")")
    [ "$v" = swap ] && swap=swap
    local tag=$job-$v-r$round
    CG=$(lib_cgroup "$tag" "$lim" $swap)
    envs=(JOB_DEV="$LIB_DEV")
    [[ $(job_cmd "$job") == "$PYTHON "* ]] && envs+=("${BLAS_ENV[@]}")
    if [ "$v" = shim ]; then
        envs+=(LD_PRELOAD="$SHIM" SPILLWAY_DIR="$SPILL" SPILLWAY_LOG=info SPILLWAY_STATS="$OUT/$tag.stats")
        [ -n "$SHIM_ENV" ] && read -r -a extra <<<"$SHIM_ENV" && envs+=("${extra[@]}")
    fi
    [ "$v" = swap ] && swapon "$SWAPFILE"
    local r0 w0 t0 t1 load0
    r0=$(dev_mib 3); w0=$(dev_mib 7); load0=$(cut -d' ' -f1 /proc/loadavg)
    lib_log "round $round: $job, $v$([ "$lim" = 0 ] || echo " (limit $(job_limit "$job"))")"
    t0=$(date +%s.%N)
    local runner=()
    if [ "$v" = shim ] && [ "$RECORD" = 1 ]; then
        envs=("${envs[@]/#LD_PRELOAD=*/SPILLWAY_LIBRARY=$SHIM}")
        runner=("$BUILD/tools/cli/spillway" run -q --record "$OUT/$tag.record" --record-interval 0.5 --)
    fi
    # shellcheck disable=SC2046
    (cd "$OUT" && lib_in_cgroup "$CG" timeout -k 10 "$TIMEOUT" env "${envs[@]}" "${runner[@]}" $(job_cmd "$job")) \
        > "$OUT/$tag.out" 2> "$OUT/$tag.err" || status=$?
    [ -f "$OUT/$tag.record" ] && "$BUILD/tools/cli/spillway" report "$OUT/$tag.record" > "$OUT/$tag.report" 2>&1
    t1=$(date +%s.%N)
    swap_off
    local peak memsw oom majflt
    if [ "$(lib_cgroup_fs)" = v2 ]; then
        peak=$(cg_read memory.peak); memsw=-1; oom=$(cg_read memory.events oom_kill)
        majflt=$(cg_read memory.stat pgmajfault)
    else
        peak=$(cg_read memory.max_usage_in_bytes); memsw=$(cg_read memory.memsw.max_usage_in_bytes)
        oom=$(cg_read memory.oom_control oom_kill); majflt=$(cg_read memory.stat total_pgmajfault)
    fi
    lib_rm_cgroup "$CG"
    local result; result=$(sed -n 's/^JOBRESULT job=[^ ]* value=//p' "$OUT/$tag.out" | tail -1)
    echo "RUN job=$job variant=$v round=$round status=$status wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
         "limit=$(bytes "$(job_limit "$job")")" \
         "peak_mib=$((peak >> 20)) memsw_peak_mib=$((memsw >> 20)) oom_kills=$oom cg_majflt=$majflt" \
         "dev_read_mib=$(awk -v a="$r0" -v b="$(dev_mib 3)" 'BEGIN { printf "%.1f", b - a }')" \
         "dev_write_mib=$(awk -v a="$w0" -v b="$(dev_mib 7)" 'BEGIN { printf "%.1f", b - a }')" \
         "load=$load0-$(cut -d' ' -f1 /proc/loadavg) result=${result:-none}" >> "$REC"
    grep '^RUN' "$REC" | tail -1 >&2
    grep '^JOBPHASE' "$OUT/$tag.out" | sed "s/^JOBPHASE job=[^ ]* /PHASE job=$job variant=$v round=$round /" >> "$REC" || true
    [ "$status" = 0 ] || lib_log "$job $v exited with status $status (124: timeout; 137: killed, e.g. by the OOM killer)"
    if [ -n "$LOGS" ]; then cp "$OUT/$tag".* "$LOGS/" 2>/dev/null || true; fi
}

# ---------------------------------------------------------------- rounds
FLOOR_FILE=$LIB_MNT/floor
lib_log "writing the floor file (1 GiB)"
floor=$("$BIN/phases" floor --file "$FLOOR_FILE" --size 1G --keep)
echo "FLOOR round=0 ${floor#FLOOR }" >> "$REC"
for ((round = 1; round <= ROUNDS; round++)); do
    floor=$("$BIN/phases" floor --file "$FLOOR_FILE" --size 1G --reuse)
    echo "FLOOR round=$round ${floor#FLOOR }" >> "$REC"
    lib_log "round $round floor: $floor"
    order=$VARIANTS
    [ $((round % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$VARIANTS" | tac | tr '\n' ' ')
    for job in $JOBS; do
        for v in $order; do run_one "$job" "$v" "$round"; done
    done
done
rm -f "$FLOOR_FILE"
echo "META load_end=$(cut -d' ' -f1-3 /proc/loadavg) elapsed_s=$(( $(date +%s) - T0 ))" >> "$REC"
[ -n "$LOGS" ] && cp "$REC" "$LOGS/records"
lib_log "done in $(( $(date +%s) - T0 )) s"

TABLE=$("$PYTHON" "$HERE/jobs_report.py" "$REC")
NOTES_MARKER="<!-- notes written by hand"
echo
echo "$TABLE"
if [ -n "$REPORT" ]; then
    if [ "$APPEND" = 1 ] && [ -s "$REPORT" ]; then { echo; echo "$TABLE"; } >> "$REPORT"
    else
        # The notes a person wrote below the marker line (JOBS.md's diagnoses)
        # outlive a rerun; only the generated report above it is replaced.
        NOTES=""
        [ -f "$REPORT" ] && NOTES=$(sed -n "/^$NOTES_MARKER/,\$p" "$REPORT")
        {
            echo "# Real libraries' jobs: unconstrained, swap, shim (tests/bench/jobs.sh)"; echo; echo "$TABLE"
            if [ -n "$NOTES" ]; then echo; echo "$NOTES"; fi
        } > "$REPORT.tmp"
        mv "$REPORT.tmp" "$REPORT"
    fi
    lib_log "wrote $REPORT"
fi
