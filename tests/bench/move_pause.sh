#!/usr/bin/env bash
# move_pause.sh — what moving a live region costs the threads using it,
# before and after tracked moves (shim/engine/tiering/move_tracked.h), every
# scheme side by side. Figures, printed, never asserted.
#
#   tests/bench/move_pause.sh BUILD_DIR [ROUNDS] [BASELINE_BUILD_DIR]
#
# Variants, interleaved in every round (A B C D A B C D ...):
#   before     BASELINE_BUILD_DIR's shim (read-only chunks), if given
#   tracked    this build, userfaultfd taking kernel faults (needs root or
#              CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)
#   narrowed   this build, userfaultfd for user faults only (a seccomp
#              filter refuses it otherwise: tests/hardening/seccomp_fail)
#   read-only  this build, no userfaultfd (seccomp refuses it)
# Two jobs per variant and round:
#   spill      move_pause 4 256 memory writer: four spills of a 256 MiB
#              memfd region to disk while a paced writer stores into it and
#              a thread preads 1 MiB into its last MiB (see move_pause.c)
#   promotion  tiering_job want-promotion-io 128 4: a 128 MiB disk region
#              promoted into memory while a thread preads into it; its move
#              time and pause are the shim's log line's
# Each runs at nice -20 so that other jobs on a shared machine stay out of
# the figures; the floor columns (the same threads, no move) say what is
# left of them. Prints, per variant: spills, median and max of the longest
# store and the longest pread per spill (each beside its floor), the move's
# MiB/s, EFAULT and short totals; per promotion, move ms and pause.
set -euo pipefail
build=$(realpath "${1:?usage: move_pause.sh BUILD_DIR [ROUNDS] [BASELINE_BUILD_DIR]}")
rounds=${2:-5}
baseline=${3:+$(realpath "$3")}
bench=$build/tests/bench/move_pause
job=$build/tests/control/tiering_job
seccomp=$build/tests/hardening/seccomp_fail
for f in "$bench" "$job" "$seccomp"; do
    [ -x "$f" ] || { echo "move_pause.sh: $f missing; ninja -C $build tests/bench/move_pause tests/control/tiering_job tests/hardening/seccomp_fail" >&2; exit 2; }
done
spill=$(mktemp -d /var/tmp/spillway-move-pause.XXXXXX)
out=$(mktemp -d /tmp/spillway-move-pause.XXXXXX)
trap 'rm -rf "$spill" "$out"' EXIT

variants=()
[ -n "$baseline" ] && variants+=(before)
variants+=(tracked narrowed read-only)

# run VARIANT NAME CMD...: stdout and stderr appended to $out/VARIANT.NAME
run() {
    local v=$1 name=$2; shift 2
    local lib=$build/shim wrap=()
    case $v in
    before) lib=$baseline/shim ;;
    narrowed) wrap=("$seccomp" userfaultfd-kernel=EPERM --) ;;
    read-only) wrap=("$seccomp" userfaultfd=EPERM --) ;;
    esac
    rm -rf "${spill:?}"/*
    env SPILLWAY_DIR="$spill" SPILLWAY_THRESHOLD=1MiB SPILLWAY_LOG=info LD_LIBRARY_PATH="$lib" \
        LD_PRELOAD="$lib/libspillway.so" nice -n -20 "${wrap[@]}" "$@" >>"$out/$v.$name" 2>&1 || true
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; kernel $(uname -r)"
for r in $(seq "$rounds"); do
    for v in "${variants[@]}"; do
        run "$v" spill "$bench" 4 256 memory writer
        run "$v" promotion "$job" want-promotion-io 128 4
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$out" "${variants[@]}" <<'EOF'
import re, statistics, sys
out, variants = sys.argv[1], sys.argv[2:]
def med(xs): return statistics.median(xs) if xs else float("nan")
print(f"{'variant':10} {'spills':>6} {'store max ms':>22} {'pread max ms':>22} {'MiB/s':>6} {'EFAULT':>7} {'short':>6}")
print(f"{'':10} {'':>6} {'median (floor) / max':>22} {'median (floor) / max':>22} {'median':>6}")
for v in variants:
    rows = []
    for line in open(f"{out}/{v}.spill", errors="replace"):
        if line.startswith("spill="):
            rows.append({k: float(x) for k, x in re.findall(r"(\w+)=([\d.]+)", line)})
    if not rows:
        print(f"{v:10} no spill ran; see the job's output"); continue
    col = lambda k: [r[k] for r in rows]
    print(f"{v:10} {len(rows):6d} {med(col('store_max_ms')):7.3f} ({med(col('floor_store_max_ms')):5.3f}) / {max(col('store_max_ms')):6.2f}"
          f" {med(col('pread_max_ms')):7.3f} ({med(col('floor_pread_max_ms')):5.3f}) / {max(col('pread_max_ms')):6.2f}"
          f" {med(col('mib_s')):6.0f} {int(sum(col('efault'))):7d} {int(sum(col('short'))):6d}")
print()
print(f"{'variant':10} {'promotions':>10} {'move ms':>16} {'MiB/s':>6} {'pause ms':>18} {'EFAULT':>7} {'short':>6}")
print(f"{'':10} {'':>10} {'median / max':>16} {'median':>6} {'median / max':>18}")
for v in variants:
    text = open(f"{out}/{v}.promotion", errors="replace").read()
    moves = [float(x) for x in re.findall(r"tiering: promoted 128 MiB.*?moved in (\d+) ms", text)]
    pauses = [float(x) for x in re.findall(r"tiering: promoted.*?(?:writers|accesses) paused at most ([\d.]+) ms", text)]
    ef = sum(int(x) for x in re.findall(r"io_efault=(\d+)", text))
    sh = sum(int(x) for x in re.findall(r"io_short=(\d+)", text))
    if not moves:
        print(f"{v:10} no promotion happened; see the job's output"); continue
    print(f"{v:10} {len(moves):10d} {med(moves):7.0f} / {max(moves):6.0f} {128 / (med(moves) / 1000):6.0f}"
          f" {med(pauses):8.2f} / {max(pauses):7.2f} {ef:7d} {sh:6d}")
EOF
