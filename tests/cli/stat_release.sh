#!/usr/bin/env bash
# stat_release.sh SPILLWAY SPILL_HOLDER — `spillway stat` and `spillway
# release` on real spill files exported through the shim: an unmapped one
# is listed with its size, reservation and residency and is released (its
# page cache measured to drop); a mapped one is listed with its mapper and
# the release is refused, naming the process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
holder=$2
make_scratch
spill="$SCRATCH/spill"
run() { "$spillway" run -q --dir "$spill" --threshold 1MiB -- "$@"; }

# An exported 16 MiB region, left behind unmapped by a process that exited.
dropped=$(run "$holder" drop 16) || fail "spill_holder drop failed"
[ -f "$dropped" ] || fail "spill_holder did not leave $dropped"
name=$(basename "$dropped")
out=$("$spillway" stat "$spill" 2>/dev/null); expect_status 0 $? "stat"
line=$(printf '%s\n' "$out" | grep "$name") || fail "stat does not list $name: $out"
read -r size reserved resident mapper _ <<<"$line"
[ "$size" = "16.0MiB" ] || fail "stat size $size, expected 16.0MiB: $line"
[ "$reserved" = "16.0MiB" ] || fail "stat reserved $reserved, expected 16.0MiB (fallocate): $line"
[ "$resident" != "0B" ] || fail "a just-written file should be resident: $line"
[ "$mapper" = "-" ] || fail "nobody maps $name, stat says $mapper"
expect_contains "$out" "total: 1 file, 16.0MiB size, 16.0MiB reserved" "stat totals"

out=$("$spillway" release "$dropped" 2>/dev/null); expect_status 0 $? "release unmapped"
expect_contains "$out" "released: resident" "release report"
expect_contains "$out" "-> 0B" "release measured to zero"
line=$("$spillway" stat "$spill" 2>/dev/null | grep "$name")
read -r _ _ resident _ <<<"$line"
[ "$resident" = "0B" ] || fail "after release stat shows $resident resident: $line"
cmp -s <(head -c 16777216 "$dropped" | tr -d 'Z') /dev/null || fail "release changed the file's contents"

# A mapped one: held by a live process until its stdin closes.
exec 3> >(run "$holder" hold 8 >"$SCRATCH/held")
for _ in $(seq 100); do [ -s "$SCRATCH/held" ] && break; sleep 0.1; done
held=$(cat "$SCRATCH/held"); [ -f "$held" ] || fail "spill_holder hold did not export a file"
pid=$(basename "$held" | cut -d- -f3)
out=$("$spillway" stat "$spill" 2>/dev/null)
line=$(printf '%s\n' "$out" | grep "$(basename "$held")") || fail "stat does not list the held file"
expect_contains "$line" "$pid (spill_holder)" "stat names the mapper"
expect_contains "$out" "(unnamed: pid $pid" "stat finds the holder's unnamed spill files"
err=$("$spillway" release "$held" "$dropped" 2>&1 >/dev/null); expect_status 1 $? "release of a mapped file"
expect_contains "$err" "$held: refused: mapped by $pid (spill_holder)" "refusal names the process"
expect_contains "$err" "spillway_release_page_cache" "refusal says what to do"
exec 3>&-
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
"$spillway" release "$held" >/dev/null 2>&1; expect_status 0 $? "release once the holder exited"

# Errors: a missing directory, a missing file, a directory.
err=$("$spillway" stat "$SCRATCH/none" 2>&1); expect_status 1 $? "stat of a missing dir"
expect_lines 1 "$err" "stat of a missing dir"
err=$("$spillway" release "$SCRATCH/none" 2>&1 >/dev/null); expect_status 1 $? "release of a missing file"
err=$("$spillway" release "$spill" 2>&1 >/dev/null); expect_status 1 $? "release of a directory"
expect_contains "$err" "not a regular file" "release of a directory"

# stat without DIR uses the configured spill directory.
out=$(SPILLWAY_DIR="$spill" "$spillway" stat 2>/dev/null); expect_status 0 $? "stat from SPILLWAY_DIR"
expect_contains "$out" "spill directory $spill " "stat default dir"
echo "stat_release: ok"
