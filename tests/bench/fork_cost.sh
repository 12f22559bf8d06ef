#!/usr/bin/env bash
# fork_cost.sh — what a fork costs a process with large buffers under the
# shim against the same program bare, per phase (fork_cost.c says which).
# Figures, printed, never asserted.
#
#   tests/bench/fork_cost.sh BUILD_DIR [ROUNDS] [REGIONS] [MIB_EACH] [FORKS]
#
# Each round runs bare, then under the shim (disk regions), then the shim
# again, then bare (A B B A), so neither side is always the first toucher
# after a pause. Prints the median of each phase per side and shim/bare.
set -euo pipefail
build=$(realpath "${1:?usage: fork_cost.sh BUILD_DIR [ROUNDS] [REGIONS] [MIB_EACH] [FORKS]}")
rounds=${2:-3} regions=${3:-16} mib=${4:-64} forks=${5:-20}
prog=$build/tests/bench/fork_cost
lib=$build/shim/libspillway.so
[ -x "$prog" ] || { echo "fork_cost.sh: $prog missing; ninja -C $build tests/bench/fork_cost" >&2; exit 2; }
dir=$(mktemp -d /var/tmp/spillway-fork-cost.XXXXXX)
out=$(mktemp -d /tmp/spillway-fork-cost.XXXXXX)
trap 'rm -rf "$dir" "$out"' EXIT
run() { # side
    if [ "$1" = bare ]; then "$prog" "$regions" "$mib" "$forks"
    else env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB SPILLWAY_POLICY=disk \
             "$prog" "$regions" "$mib" "$forks"; fi >> "$out/$1"
}
for _ in $(seq "$rounds"); do run bare; run shim; run shim; run bare; done
echo "fork_cost: $regions regions of $mib MiB, $forks fork+exec, $((rounds * 2)) runs a side (median seconds)"
/usr/bin/python3 - "$out/bare" "$out/shim" <<'EOF'
import statistics, sys
def load(path):
    phases = {}
    for line in open(path):
        _, name, secs = line.split()
        phases.setdefault(name, []).append(float(secs))
    return phases
bare, shim = load(sys.argv[1]), load(sys.argv[2])
print(f"{'phase':<14}{'bare':>12}{'shim':>12}{'shim/bare':>12}")
for name in bare:
    b, s = statistics.median(bare[name]), statistics.median(shim[name])
    ratio = f"{s / b:.2f}" if b > 0 else "-"
    print(f"{name:<14}{b:>12.6f}{s:>12.6f}{ratio:>12}")
EOF
