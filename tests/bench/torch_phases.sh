#!/usr/bin/env bash
# tests/bench/torch_phases.sh — the PyTorch job of issue 12 (needs root):
# a 4 GiB float dataset tensor, 50 SGD steps on random minibatches, one
# sequential evaluation pass (torch_phases.py), run
#   shim          under LD_PRELOAD=libspillway.so (default configuration,
#                 SPILLWAY_DIR on a loop-mounted ext4 filesystem) in a memory
#                 cgroup of --limit (default 1 GiB)
#   unconstrained without the shim, in a cgroup with no limit
# alternating which goes first every round. Prints per phase seconds, major
# faults, bytes read from the spill device and the ratio shim/unconstrained
# (issue 12's target: the whole job at most 1.15x), as one markdown table.
#
#   tests/bench/torch_phases.sh [--quick] [--rounds 2] [--ra "8192"] [--steps 50]
#                               [--dataset-mib 4096] [--limit 1G] [--build DIR] [--shim LIB]
#                               [--timeout SECONDS]
# --timeout: each run is stopped after SECONDS (SIGTERM); the phase it was in
# is then reported as a lower bound with the share of it done, and the
# whole job as "> seconds".
# --quick: a 2 GiB dataset. --ra: the loop device's read_ahead_kb settings to
# run (each a separate set of rounds; the old value is restored). Writes
# nothing into the repository; everything it creates is named
# spillway-phasebench-<pid>-* and removed on any exit.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${SPILLWAY_BENCH_BUILD:-$ROOT/build}
SHIM=""
PYTHON=/usr/bin/python3
DATASET_MIB=4096; LIMIT=1G; ROUNDS=2; RAS="8192"; STEPS=50; TIMEOUT=0
while [ $# -gt 0 ]; do
    case $1 in
    --quick) DATASET_MIB=2048 ;;
    --dataset-mib) DATASET_MIB=$2; shift ;;
    --limit) LIMIT=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --ra) RAS=$2; shift ;;
    --steps) STEPS=$2; shift ;;
    --timeout) TIMEOUT=$2; shift ;;
    --build) BUILD=$(readlink -f "$2"); shift ;;
    --shim) SHIM=$(readlink -f "$2"); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "torch_phases.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "torch_phases.sh: needs root (loop device, mount, cgroups)" >&2; exit 2; }
source "$HERE/phases_lib.sh"
LIMIT_B=$(numfmt --from=iec "$LIMIT")
if [ -z "$SHIM" ]; then
    lib_build "$ROOT" "$BUILD"
    SHIM=$BUILD/shim/libspillway.so
fi
[ -f "$SHIM" ] || { echo "torch_phases.sh: $SHIM missing" >&2; exit 1; }

OUT=$(mktemp -d /tmp/$LIB_TAG.XXXXXX)
trap 'lib_cleanup; rm -rf "$OUT"' EXIT
trap 'exit 130' INT TERM
lib_loopfs $(((2 * DATASET_MIB + 512) << 20))
SPILL=$LIB_MNT/spill
mkdir -p "$SPILL"
REC=$OUT/records
: > "$REC"
T0=$(date +%s)
for ra in $RAS; do
    lib_set_ra "$ra"
    for ((round = 1; round <= ROUNDS; round++)); do
        order="shim unconstrained"; [ $((round % 2)) = 0 ] && order="unconstrained shim"
        for v in $order; do
            lib_log "read_ahead_kb=$ra round $round/$ROUNDS: $v (${DATASET_MIB} MiB dataset)"
            lim=0; envs=()
            [ $v = shim ] && { lim=$LIMIT_B; envs=(LD_PRELOAD="$SHIM" SPILLWAY_DIR="$SPILL"); }
            cg=$(lib_cgroup "torch-ra$ra-r$round-$v" "$lim")
            status=0
            tmo=(); [ "$TIMEOUT" != 0 ] && tmo=(timeout -s TERM -k 30 "$TIMEOUT")
            (cd "$OUT" && lib_in_cgroup "$cg" "${tmo[@]}" env "${envs[@]}" "$PYTHON" "$HERE/torch_phases.py" \
                "$DATASET_MIB" --steps "$STEPS" --dev "$LIB_DEV" --label "$v") > "$OUT/run.out" || status=$?
            cat "$OUT/run.out" >&2
            [ "$status" = 0 ] || lib_log "$v exited with status $status (124: stopped by --timeout; 137: killed, e.g. by the OOM killer)"
            grep '^TPHASE' "$OUT/run.out" | sed "s/^/$ra $round $status /" >> "$REC" || true
            grep '^RESULT' "$OUT/run.out" | sed "s/^/$ra $round $v /" >> "$OUT/results" || true
            lib_rm_cgroup "$cg"
        done
    done
done
lib_set_ra "$LIB_RA_OLD"
lib_log "done in $(( $(date +%s) - T0 )) s"

same=$(awk '{ $1 = $2 = $3 = ""; print }' "$OUT/results" 2>/dev/null | sort -u | wc -l)
printed=$(wc -l < "$OUT/results" 2>/dev/null || echo 0)
runs=$(awk '$4 == "TPHASE" && $0 ~ /phase=fill/' "$REC" | wc -l)
echo
echo "PyTorch job: ${DATASET_MIB} MiB dataset, $STEPS SGD steps (random minibatches of 512 rows), one"
echo "evaluation pass; shim in a $LIMIT cgroup vs unconstrained without the shim; $ROUNDS round(s)"
echo "per setting, alternating order, medians. $printed of $runs runs printed a RESULT; identical: $([ "$same" = 1 ] && echo yes || echo "NO ($same distinct)")."
echo
echo "| read_ahead_kb | phase | unconstrained (s) | shim (s) | shim / unconstrained | shim major faults | shim read from spill device | per fault |"
echo "|---|---|---|---|---|---|---|---|"
awk '
function med(list,   n, a, i, j, t) { n = split(list, a, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
$4 == "TPHASE" {
    for (i = 5; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    if ($3 != 0 && $3 != 124) failed[$1 " " v["label"]] = $3
    if (v["done"] + 0 < 1) { partial[$1 SUBSEP v["phase"] SUBSEP v["label"]] = v["done"]; cut[$1, $2, v["label"]] = 1 }
    k = $1 SUBSEP v["phase"]
    if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
    s[k, v["label"]] = s[k, v["label"]] " " v["s"]
    tot[$1, $2, v["label"]] += v["s"]; rounds[$1, $2] = 1
    if (v["label"] == "shim") { mf[k] = mf[k] " " v["majflt"]; dr[k] = dr[k] " " v["dev_read_bytes"] }
}
END {
    for (x = 1; x <= nk; x++) {
        k = keys[x]; split(k, p, SUBSEP)
        u = med(s[k, "unconstrained"]); w = med(s[k, "shim"]); f = med(mf[k]); d = med(dr[k])
        if (s[k, "shim"] == "") { printf "| %s | %s | %.2f | not reached | | | | |\n", p[1], p[2], u; continue }
        mark = ""; pk = p[1] SUBSEP p[2] SUBSEP "shim"
        if (pk in partial) mark = sprintf(" (stopped, %.0f%% done)", 100 * partial[pk])
        printf "| %s | %s | %.2f | %s%.2f%s | %s%.2fx | %d | %.0f MiB | %s |\n", p[1], p[2], u,
               (mark != "" ? "> " : ""), w, mark, (mark != "" ? "> " : ""),
               (u > 0 ? w / u : 0), f, d / 1048576, (f > 0 ? sprintf("%.0f KiB", d / f / 1024) : "-")
    }
    for (rr in rounds) { split(rr, q, SUBSEP); ra[q[1]] = 1
        tu[q[1]] = tu[q[1]] " " tot[q[1], q[2], "unconstrained"]; ts[q[1]] = ts[q[1]] " " tot[q[1], q[2], "shim"] }
    for (rr in cut) { split(rr, q, SUBSEP); lower[q[1]] = 1 }
    for (r in ra) { u = med(tu[r]); w = med(ts[r]); g = (r in lower) ? "> " : ""
        printf "| %s | **whole job** | %.2f | %s%.2f | **%s%.2fx** | | | |\n", r, u, g, w, g, (u > 0 ? w / u : 0) }
    for (f in failed) printf "\nFAILED: %s exited with status %s in some round\n", f, failed[f]
}' "$REC"
