#!/usr/bin/env bash
# test-all.sh — from a fresh Debian 12 machine (as root): installs what is
# needed, builds, and runs every suite: the meson suites (unit, programs,
# control, python, cli), the packaging suite (tests/packaging/run.sh: builds
# the .deb and the wheel and tests them installed) and the Docker
# integration suite. Ends with one line "N passed, N failed" and a non-zero
# status if anything failed.
# Usage: bash tools/test-all.sh [--no-integration] [--no-packaging]
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-deps.sh || { echo "test-all: installing dependencies failed"; exit 2; }
bash tools/build.sh >/dev/null || { bash tools/build.sh; echo "test-all: the build failed"; exit 2; }

passed=0 failed=0
log=$(mktemp /tmp/spillway-test.XXXXXX)
# One at a time: several tests fill memory, mount filesystems or time things.
meson test -C build --num-processes 1 --print-errorlogs 2>&1 | tee "$log"
ok=$(awk '/^Ok:/{print $2}' "$log"); bad=$(awk '/^Fail:/{print $2}' "$log")
timeouts=$(awk '/^Timeout:/{print $2}' "$log")
passed=$((passed + ${ok:-0})); failed=$((failed + ${bad:-0} + ${timeouts:-0}))
[ -n "$ok" ] || { echo "test-all: meson test did not run"; failed=$((failed + 1)); }

case " $* " in *" --no-packaging "*) ;; *)
    status=0
    bash tests/packaging/run.sh 2>&1 | tee "$log" || status=$?
    # Its closing line: "packaging: N passed, M failed (S s)".
    summary=$(grep -oE '^packaging: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    pkg_ok=$(awk '{print $2}' <<<"$summary"); pkg_bad=$(awk '{print $4}' <<<"$summary")
    passed=$((passed + ${pkg_ok:-0})); failed=$((failed + ${pkg_bad:-0}))
    if [ -z "$summary" ] || { [ "$status" -ne 0 ] && [ "${pkg_bad:-0}" -eq 0 ]; }; then failed=$((failed + 1)); fi
    ;;
esac

case " $* " in *" --no-integration "*) ;; *)
    status=0
    bash tests/integration/run.sh "$PWD/build/shim/libspillway.so" 2>&1 | tee "$log" || status=$?
    # Its closing line: "spillway integration suite: N scenarios, M failed".
    summary=$(grep -oE 'integration suite: [0-9]+ scenarios, [0-9]+ failed' "$log" | tail -1)
    scen_all=$(awk '{print $3}' <<<"$summary"); scen_bad=$(awk '{print $5}' <<<"$summary")
    scen_all=${scen_all:-0}; scen_bad=${scen_bad:-0}
    passed=$((passed + scen_all - scen_bad)); failed=$((failed + scen_bad))
    if [ "$status" -ne 0 ] && [ "$scen_bad" -eq 0 ]; then failed=$((failed + 1)); fi
    ;;
esac
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
