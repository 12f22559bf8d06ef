#!/usr/bin/env bash
# run.sh — spillway's Docker integration suite (issue 5), its one entry point.
# Proves, with unmodified jobs in memory-limited containers, that the limit
# bites without libspillway.so and that the jobs complete correctly with it
# (scenarios/NN-*.sh), then writes RESULTS.md from what it
# measured. Works from a fresh Debian 12 machine: installs what is missing,
# starts dockerd if none answers, builds its base image locally (never pulls).
#
# Usage: tests/integration/run.sh [PATH/TO/libspillway.so]
#   SPILLWAY_SHIM=PATH          the shim (default: built with meson in build-integration/)
#   SPILLWAY_INT_ONLY="1 4"     run only these scenarios (RESULTS.md is then left alone)
#   SPILLWAY_INT_KEEP_DAEMON=1  leave running a dockerd this script started
# Logs of the last run: tests/integration/results/<job>/ (stdout, stderr, out/).
# Exit status: 0 all scenarios passed, 1 some failed, 2 setup error.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
for lib in common deps daemon image build job loopfs results; do
    # shellcheck source=/dev/null
    source "$HERE/lib/$lib.sh"
done
for scenario in "$HERE"/scenarios/[0-9]*.sh; do
    # shellcheck source=/dev/null
    source "$scenario"
done

[ "$(id -u)" = 0 ] || die "the suite needs root (apt, dockerd, loop mounts); run it as root"
suite_start=$SECONDS
install_cleanup_trap
make_workdir
RUN_ID=$(basename "$WORK" | tr -cd 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
RESULTS="$HERE/results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

ensure_packages
resolve_shim "${1:-}"
build_programs
ensure_docker_daemon
build_base_image
results_init
say "shim: $SHIM"
[ -n "$HELPER_DIR" ] && say "Python helper: $HELPER_DIR" || say "Python helper: missing (scenario 4's Python part will fail)"

# Every scenarios/NN-*.sh, in number order.
all_scenarios=$(cd "$HERE/scenarios" && ls [0-9]*.sh | sed 's/-.*//; s/^0*//' | sort -n | tr '\n' ' ')
scenarios=${SPILLWAY_INT_ONLY:-$all_scenarios}
for id in $scenarios; do
    declare -F "scenario_$id" >/dev/null || die "no scenario '$id'; choose among: $all_scenarios"
    rows_before=$(grep -c . "$ROWS_FILE" || true)
    # A scenario script that breaks part-way is a failed scenario, never a
    # missing row.
    "scenario_$id" || true
    if [ "$(grep -c . "$ROWS_FILE" || true)" = "$rows_before" ]; then
        fail "the scenario script stopped before recording its result"
        scenario_end "?" "?" "n/a" "n/a"
    fi
done

took=$((SECONDS - suite_start))
print_summary
if [ -z "${SPILLWAY_INT_ONLY:-}" ]; then
    write_results_md "$HERE/RESULTS.md" "$took"
    say "wrote $HERE/RESULTS.md"
fi
say "suite took ${took} s"
grep -q $'\tFAIL\t' "$ROWS_FILE" && exit 1
exit 0
