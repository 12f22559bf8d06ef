#!/usr/bin/env bash
# exit_allocations.sh LIB PROGRAM — large allocations made after the shim's
# static destructors ran (exit_allocations.c), with the settings that make
# the engine name call sites (a stats file, an info log) and a threshold
# under the exit stats line's size: the program exits 0, its destructor ran,
# the stats file holds its line with every call site, the spill directory
# is empty again.
set -euo pipefail
lib=$1 prog=$2
fail() { echo "exit_allocations.sh: FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-exit.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -m 0700 "$dir/spill"
status=0
env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir/spill" SPILLWAY_THRESHOLD=64KiB SPILLWAY_LOG=info \
    SPILLWAY_STATS="$dir/stats.json" "$prog" >"$dir/out" 2>"$dir/err" || status=$?
[ "$status" = 0 ] || { tail -5 "$dir/err" >&2; fail "the program exited with status $status (139: SIGSEGV at exit)"; }
grep -q 'main done' "$dir/out" || fail "main did not finish"
grep -q 'destructor done' "$dir/err" || fail "the program's destructor did not finish"
line=$(grep -F "\"cmd\":\"$prog\"" "$dir/stats.json" || true)
[ -n "$line" ] || fail "no stats line for $prog in the stats file"
bytes=${#line}
[ "$bytes" -gt 65536 ] || fail "the stats line is $bytes bytes, not above the 64 KiB threshold: the case tests nothing"
sites=$(grep -o '"id":"' <<<"$line" | wc -l)
[ "$sites" -ge 201 ] || fail "the stats line names $sites call sites, want at least 201"
left=$(find "$dir/spill" -mindepth 1 | head -5)
[ -z "$left" ] || fail "spill files left behind: $left"
echo "exit_allocations: ok (stats line of $bytes bytes, $sites call sites)"
