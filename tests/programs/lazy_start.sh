#!/usr/bin/env bash
# lazy_start.sh LIB PROGRAM SPILLWAY — when the engine starts (shim/front/engine_loader.h):
#  * the front needs nothing but libc and libmimalloc.so.2 (no libstdc++);
#  * with no setting given, a process that allocates nothing large never
#    maps the engine or libstdc++; with one given, it is started (and the
#    setting judged) before main;
#  * a bad setting still stops the job at start-up: exit 78, one line, and
#    the program never ran;
#  * the first large allocations, made by many threads at once, are all
#    regions, and a fork child after that gets regions of its own;
#  * a /dev/shm segment that is the first thing a process sizes is moved;
#  * under `spillway run` (settings judged by the runner, SPILLWAY_CHECKED)
#    the engine starts at first use too, unless a process changed a
#    setting; a process that never started it still reports to the summary.
set -euo pipefail
lib=$1 prog=$2 spillway=$3
for v in CONFIG DIR THRESHOLD POLICY LOG STATS ON_ERROR; do unset "SPILLWAY_$v"; done
fail() { echo "lazy_start.sh: FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d /var/tmp/spillway-lazy.XXXXXX)
trap 'rm -rf "$dir"' EXIT

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
[ "$needed" = "libc.so.6 libmimalloc.so.2 " ] || fail "the front needs: $needed(want libc.so.6 libmimalloc.so.2 only)"
echo "front NEEDED: $needed"

LD_PRELOAD="$lib" "$prog" idle absent || fail "no setting: the engine was loaded before its first use"
LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" "$prog" idle present || fail "SPILLWAY_DIR given: the engine did not start before main"
echo "engine: not loaded without settings, loaded at start-up with one"

status=0
out=$(LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=bogus "$prog" idle present 2>"$dir/err") || status=$?
[ "$status" -eq 78 ] || fail "bad SPILLWAY_THRESHOLD: exit $status, want 78"
[ -z "$out" ] && [ "$(wc -l <"$dir/err")" -eq 1 ] && grep -q "SPILLWAY_THRESHOLD" "$dir/err" ||
    fail "bad SPILLWAY_THRESHOLD: want one line naming it and no output, got: $(cat "$dir/err") / $out"
echo "bad setting: exit 78 at start-up: $(cat "$dir/err")"

for i in 1 2 3 4 5; do
    LD_PRELOAD="$lib" "$prog" first-use 8 || fail "first use by 8 threads, run $i"
done
echo "first use by 8 threads at once, 5 runs: every allocation a region, fork child too"

LD_PRELOAD="$lib" "$prog" shm || fail "a /dev/shm segment sized before the engine started stayed in /dev/shm"
echo "/dev/shm segment as the first use: moved to the spill directory"

export SPILLWAY_LIBRARY=$lib
"$spillway" run -q --dir "$dir" -- "$prog" idle absent || fail "under spillway run: the engine was loaded before its first use"
"$spillway" run -q --dir "$dir" -- env SPILLWAY_THRESHOLD=2MiB "$prog" idle present ||
    fail "under spillway run, a changed setting: the engine did not judge it at start-up"
"$spillway" run -q --dir "$dir" -- "$prog" first-use 4 || fail "under spillway run: first use"
err=$("$spillway" run --dir "$dir" -- "$prog" idle absent 2>&1 >/dev/null)
grep -q "1 process reported, 0 placed large regions" <<<"$err" ||
    fail "under spillway run, a process that never started the engine is missing from the summary: $err"
status=0
SPILLWAY_CHECKED="67108864:1:0123456789abcdef" SPILLWAY_THRESHOLD=bogus LD_PRELOAD="$lib" "$prog" idle present 2>/dev/null || status=$?
[ "$status" -eq 78 ] || fail "a forged SPILLWAY_CHECKED let a bad setting through (exit $status)"
echo "spillway run: engine at first use, a changed setting judged at start-up, summary counts the process, a forged marker is ignored"
