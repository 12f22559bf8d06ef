#!/usr/bin/env bash
# Configures (once) and builds spillway into ./build.
#   --except-sanitizers  everything but the sanitizer builds of the unit
#                        tests (tests/hardening: minutes of compile on two
#                        cores), which test-all.sh builds niced beside the
#                        first suites; `ninja -C build` builds them later
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
if [ "${1:-}" = --except-sanitizers ]; then
    # What `ninja` builds by default (meson's "all", which holds every
    # test's programs), less the two sanitizer binaries; ninja's own query.
    mapfile -t targets < <(for t in all meson-test-prereq meson-benchmark-prereq; do ninja -C build -t query "$t"; done |
        awk '/^  input:/ {inputs = 1; next} /^  outputs:/ {inputs = 0} inputs && /^    / {print $1}' |
        grep -vxE 'meson-(test|benchmark)-prereq|tests/hardening/unit_tests_(ubsan|tsan)' | sort -u)
    ninja -C build "${targets[@]}"
else
    ninja -C build
fi
