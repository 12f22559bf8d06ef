#!/usr/bin/env bash
# lazy_start.sh LIB PROGRAM SPILLWAY — when the engine starts (shim/front/engine_loader.h,
# shim/front/start_verdict.h):
#  * the front needs nothing but libc and libmimalloc.so.2 (no libstdc++);
#  * a process that allocates nothing large never maps the engine or
#    libstdc++: with no setting, with the variables set (the front judges
#    them), with a config file this user's jobs ran before (its verdict is
#    cached); a config file not seen before (or edited, or judged by another
#    engine) is judged by the engine before main, then cached;
#  * a bad setting still stops the job at start-up: exit 78, one line, and
#    the program never ran, also when the config was edited into a bad one
#    at the same size and time as a good one the cache knows;
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
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-lazy.XXXXXX)
trap 'rm -rf "$dir"' EXIT

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
[ "$needed" = "libc.so.6 libmimalloc.so.2 " ] || fail "the front needs: $needed(want libc.so.6 libmimalloc.so.2 only)"
echo "front NEEDED: $needed"
# Its imports bind at their first call (shim/meson.build), but the small
# path's mimalloc calls at load: a -z now or a -fno-plt reaching the front
# would bind all of them in every process at exec.
readelf -d "$lib" | grep -qE '\(BIND_NOW\)|FLAGS.* NOW' && fail "the front is linked with -z now: its imports bind at exec"
slots=$(readelf -rW "$lib" | grep -cE 'R_[A-Z0-9_]+_JUMP_SLOT' || true)
[ "$slots" -ge 20 ] || fail "the front has $slots lazily bound imports (built with -fno-plt?): want its cold imports bound at first call"
readelf -rW "$lib" | grep -E 'R_[A-Z0-9_]+_GLOB_DAT' | grep -q ' mi_malloc' || fail "mi_malloc is not called through the GOT (abi/small_alloc.h's noplt)"
echo "front binds lazily: $slots imports at first call, the small path's at load"

LD_PRELOAD="$lib" "$prog" idle absent || fail "no setting: the engine was loaded before its first use"
LD_PRELOAD="$lib" SPILLWAY_DIR="$dir/spill" SPILLWAY_THRESHOLD=2MiB SPILLWAY_POLICY=disk SPILLWAY_LOG=error \
    SPILLWAY_STATS="$dir/stats-%p" "$prog" idle absent || fail "the variables set: the engine was loaded before its first use"
[ "$(stat -c %a "$dir/spill")" = 700 ] || fail "SPILLWAY_DIR: not made 0700 before main"
grep -q '"regions":{"disk":0' "$dir"/stats-* || fail "SPILLWAY_STATS: no line from a process whose engine never started"
# Its command as started (kept before main: getopt may permute argv later).
grep -qF "\"cmd\":\"$prog idle absent\"" "$dir"/stats-* || fail "SPILLWAY_STATS: the line's cmd is not '$prog idle absent': $(cat "$dir"/stats-*)"
echo "engine: not loaded without settings, nor with the variables (judged by the front)"

# The run tag (stats_run.h) in a line the front writes: from the variable,
# and from a config judged before (its verdict keeps the tag).
LD_PRELOAD="$lib" SPILLWAY_STATS="$dir/tagged-%p" SPILLWAY_STATS_RUN=job/42 "$prog" idle absent ||
    fail "SPILLWAY_STATS_RUN set: the engine was loaded before its first use"
grep -q '^{"pid":[0-9]*,"run":"job/42","cmd":' "$dir"/tagged-* || fail "SPILLWAY_STATS_RUN: the front's line lacks the tag: $(cat "$dir"/tagged-*)"
tagged_cfg=$dir/tagged.toml
printf '# %s\n[stats]\nfile = "%s"\nrun = "from-config"\n' "$dir" "$dir/cfgtag-%p" >"$tagged_cfg"
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$tagged_cfg" "$prog" idle present || fail "a new config with stats.run: the engine did not judge it"
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$tagged_cfg" "$prog" idle absent || fail "a config with stats.run judged before: the engine was loaded"
[ "$(cat "$dir"/cfgtag-* | grep -c '"run":"from-config"')" = 2 ] ||
    fail "stats.run: not in both lines (the engine's, then the front's from the cached verdict): $(cat "$dir"/cfgtag-*)"
echo "run tag: in the front's lines, from the variable and from a cached config"

# A config file: judged by the engine the first time (then cached), not loaded after.
cfg=$dir/job.toml
printf '# %s\nthreshold = "2MiB"\n' "$dir" >"$cfg"
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$cfg" "$prog" idle present || fail "a new config: the engine did not judge it before main"
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$cfg" "$prog" idle absent || fail "a config judged before: the engine was loaded before its first use"
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$cfg" SPILLWAY_THRESHOLD=4MiB "$prog" idle absent ||
    fail "a config judged before, with a variable: the engine was loaded before its first use"
# Edited at the same size and modification time: judged again (the cache compares the bytes).
cp -p "$cfg" "$dir/ref"
printf '# %s\nthreshold = "3MiB"\n' "$dir" >"$cfg"
touch -r "$dir/ref" "$cfg"
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$cfg" "$prog" idle present || fail "an edited config (same size and time) was not judged again"
printf '# %s\nthreshold = "3KiB"\n' "$dir" >"$cfg"
touch -r "$dir/ref" "$cfg"
status=0
LD_PRELOAD="$lib" SPILLWAY_CONFIG="$cfg" "$prog" idle present 2>"$dir/err" || status=$?
[ "$status" -eq 78 ] && grep -q "at least" "$dir/err" ||
    fail "a config edited into a bad one (same size and time as a cached good one): exit $status, $(cat "$dir/err")"
# Another engine (a copy elsewhere): its own verdict.
mkdir "$dir/copy"
cp "$lib" "$dir/copy/"
cp "$(dirname "$(readlink -f "$lib")")/libspillway_engine.so" "$dir/copy/"
printf '# %s\nthreshold = "2MiB"\n' "$dir" >"$cfg"
LD_PRELOAD="$dir/copy/$(basename "$lib")" SPILLWAY_CONFIG="$cfg" "$prog" idle present ||
    fail "another engine trusted this one's verdict"
echo "config: judged by the engine once, then by its cached verdict; an edit or another engine judged again"

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
status=0
"$spillway" run -q --dir "$dir" -- env SPILLWAY_THRESHOLD=1KiB "$prog" idle present 2>/dev/null || status=$?
[ "$status" -eq 78 ] || fail "under spillway run, a setting changed into a bad one: exit $status, want 78"
# A changed good setting: the run's own config (its stats file names the run's temporary
# directory, so its text is new to the cache) is judged by the engine in the first process
# that has it, and by its cached verdict in the next.
"$spillway" run -q --dir "$dir" -- env SPILLWAY_THRESHOLD=2MiB "$prog" idle present ||
    fail "under spillway run, a changed (good) setting: the engine did not judge the run's new config before main"
"$spillway" run -q --dir "$dir" -- env SPILLWAY_THRESHOLD=2MiB sh -c '"$0" idle absent' "$prog" ||
    fail "under spillway run, a changed (good) setting judged once: the engine was loaded before its first use"
"$spillway" run -q --dir "$dir" -- "$prog" first-use 4 || fail "under spillway run: first use"
err=$("$spillway" run --dir "$dir" -- "$prog" idle absent 2>&1 >/dev/null)
grep -q "1 process reported, 0 placed large regions" <<<"$err" ||
    fail "under spillway run, a process that never started the engine is missing from the summary: $err"
status=0
SPILLWAY_CHECKED="67108864:1:0123456789abcdef" SPILLWAY_THRESHOLD=bogus LD_PRELOAD="$lib" "$prog" idle present 2>/dev/null || status=$?
[ "$status" -eq 78 ] || fail "a forged SPILLWAY_CHECKED let a bad setting through (exit $status)"
echo "spillway run: engine at first use, a changed setting judged at start-up, summary counts the process, a forged marker is ignored"
