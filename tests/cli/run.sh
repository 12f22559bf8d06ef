#!/usr/bin/env bash
# run.sh SPILLWAY LIBSPILLWAY — `spillway run`: exit status pass-through
# (0, 3, 128+N for signal N, 127, 126), LD_PRELOAD kept with the shim first,
# the spill directory prepared once (stale spillway files removed, nothing
# else), SPILLWAY_PREPARED handed down, the summary drawn from the stats,
# a configured stats file honoured, a bad config stopped with exit 78.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
library=$2
make_scratch
spill="$SCRATCH/spill"
py=/usr/bin/python3
run() { "$spillway" run --dir "$spill" --threshold 1MiB "$@"; }

# Exit status, unchanged.
run -q -- true; expect_status 0 $? "true"
run -q -- sh -c 'exit 3'; expect_status 3 $? "exit 3"
run -q -- sh -c 'kill -TERM $$' 2>/dev/null; expect_status 143 $? "SIGTERM"
run -q -- sh -c 'kill -KILL $$' 2>/dev/null; expect_status 137 $? "SIGKILL"
err=$(run -q -- sh -c 'kill -SEGV $$' 2>&1); expect_status 139 $? "SIGSEGV"
expect_contains "$err" "killed by signal 11 (SIGSEGV)" "SIGSEGV message"
err=$(run -q -- no-such-command-here 2>&1); expect_status 127 $? "missing command"
expect_lines 1 "$err" "missing command"
printf 'data' >"$SCRATCH/not-executable"
run -q -- "$SCRATCH/not-executable" 2>/dev/null; expect_status 126 $? "not executable"

# The shim is preloaded first; the user's own entries are kept, in order.
extra=/lib/x86_64-linux-gnu/libgcc_s.so.1
[ -f "$extra" ] || extra=$(ldconfig -p | awk '/libgcc_s.so.1/ {print $NF; exit}')
out=$(LD_PRELOAD="$extra" run -q -- sh -c 'echo "$LD_PRELOAD"'); expect_status 0 $? "LD_PRELOAD run"
expect_contains "$out" "libspillway.so:$extra" "LD_PRELOAD order"
out=$(LD_PRELOAD="$library $extra" run -q -- sh -c 'echo "$LD_PRELOAD"')
[ "$(printf '%s' "$out" | grep -o libspillway | wc -l)" = 1 ] || fail "libspillway preloaded twice: $out"

# The spill directory is prepared once: stale spillway files go, the rest stays.
mkdir -p "$spill" && chmod 700 "$spill"
touch "$spill/spillway-export-999999999-dead" "$spill/spillway-shm-old" "$spill/.spillway-tmp-abc" "$spill/notes.txt"
ln -s "$SCRATCH/not-executable" "$spill/spillway-export-link"
out=$(run -- sh -c 'echo "prepared by $SPILLWAY_PREPARED"' 2>"$SCRATCH/err"); expect_status 0 $? "prepare"
expect_contains "$out" "prepared by " "SPILLWAY_PREPARED"
expect_contains "$(cat "$SCRATCH/err")" "removed 3 stale spillway file(s)" "prepare message"
for f in spillway-export-999999999-dead spillway-shm-old .spillway-tmp-abc; do
    [ ! -e "$spill/$f" ] || fail "stale $f was not removed"
done
[ -e "$spill/notes.txt" ] || fail "prepare removed a file that is not spillway's"
[ -L "$spill/spillway-export-link" ] || fail "prepare removed a symlink"
rm -f "$spill/spillway-export-link" "$spill/notes.txt"
# Nested in a prepared tree, run does not clear again (a sibling's exports live there).
touch "$spill/spillway-export-2-live"
out=$(SPILLWAY_PREPARED=4242 run -q -- sh -c 'echo "$SPILLWAY_PREPARED"'); expect_status 0 $? "nested run"
[ "$out" = 4242 ] || fail "nested run replaced the outer SPILLWAY_PREPARED: $out"
[ -e "$spill/spillway-export-2-live" ] || fail "a nested run cleared the spill directory again"
rm -f "$spill/spillway-export-2-live"

# The summary comes from the shim's stats: one 8 MiB bytearray on disk.
err=$(run -- "$py" -c 'b = bytearray(8 << 20); b[-1] = 1' 2>&1 >/dev/null); expect_status 0 $? "python under run"
expect_contains "$err" "1 process reported, 1 placed large regions" "summary head"
expect_contains "$err" "disk        1 region" "summary disk line"
expect_contains "$err" "8.00MiB  peak 8.00MiB" "summary bytes and peak"
expect_contains "$err" "fallbacks: none" "summary fallbacks"
# Ranks: one line per process, named by RANK/LOCAL_RANK, after the total.
err=$(run -- sh -c "RANK=1 LOCAL_RANK=1 $py -c 'b = bytearray(6 << 20)' &
    RANK=0 LOCAL_RANK=0 $py -c 'b = bytearray(4 << 20)' & wait" 2>&1 >/dev/null); expect_status 0 $? "two ranks"
# (dash ends with _exit, so the launching shell writes no stats line.)
expect_contains "$err" "2 processes reported, 2 placed large regions" "two ranks: the total"
expect_contains "$err" "disk        2 regions    10.0MiB  peak 6.00MiB" "two ranks: total bytes, largest peak"
ranks=$(printf '%s\n' "$err" | grep -E '^spillway:     (rank|pid) ')
expect_lines 2 "$ranks" "one line per process"
printf '%s\n' "$ranks" | sed -n 1p | grep -qE '^spillway:     rank 0 \(local 0\) pid [0-9]+: 1 region, disk 4.00MiB peak 4.00MiB  \[python3 -c b = bytearray\(4 << 20\)\]$' ||
    fail "rank 0's line: $ranks"
printf '%s\n' "$ranks" | sed -n 2p | grep -qE '^spillway:     rank 1 \(local 1\) pid [0-9]+: 1 region, disk 6.00MiB peak 6.00MiB' ||
    fail "rank 1's line: $ranks"

out=$(run -q -- sh -c 'echo "$SPILLWAY_CONFIG"'); tmpdir=$(dirname "$out")
[ ! -e "$tmpdir" ] || fail "run left its temporary config directory $tmpdir behind"

# --policy anon reaches the shim: the region is anonymous.
err=$(run --policy anon -- "$py" -c 'b = bytearray(8 << 20)' 2>&1 >/dev/null)
expect_contains "$err" "anon        1 region" "--policy anon"

# A configured stats file is used (and only this run's lines are summarised).
printf '[stats]\nfile = "%s/stats.jsonl"\n' "$SCRATCH" >"$SCRATCH/with-stats.toml"
echo '{"pid":1,"regions":{"disk":99}}' >"$SCRATCH/stats.jsonl"
err=$(run -c "$SCRATCH/with-stats.toml" -- "$py" -c 'b = bytearray(4 << 20)' 2>&1 >/dev/null)
expect_contains "$err" "stats in $SCRATCH/stats.jsonl" "configured stats file"
expect_contains "$err" "disk        1 region" "only this run's lines"
[ "$(wc -l <"$SCRATCH/stats.jsonl")" = 2 ] || fail "configured stats file should have 2 lines"
grep -q '^{"pid":[0-9]*,"run":"[0-9a-f]\{32\}",' "$SCRATCH/stats.jsonl" || fail "the run's line carries no run tag: $(tail -1 "$SCRATCH/stats.jsonl")"

# Another job appending to the same stats file while this one runs: its
# line is not this run's (run tags, stats_collect.h). Ordered by files,
# not by timing: job A holds its 4 MiB until job B, started after A, has
# finished and written its 6 MiB line into the shared file.
rm -f "$SCRATCH/a-started" "$SCRATCH/b-done"
run -c "$SCRATCH/with-stats.toml" -- "$py" -c "
import os, time
b = bytearray(4 << 20)
open('$SCRATCH/a-started', 'w').close()
while not os.path.exists('$SCRATCH/b-done'): time.sleep(0.02)" 2>"$SCRATCH/a-err" &
job_a=$!
for _ in $(seq 300); do [ -e "$SCRATCH/a-started" ] && break; sleep 0.05; done
[ -e "$SCRATCH/a-started" ] || fail "job A did not start"
err_b=$(run -c "$SCRATCH/with-stats.toml" -- "$py" -c 'b = bytearray(6 << 20)' 2>&1 >/dev/null)
touch "$SCRATCH/b-done"
wait "$job_a"; expect_status 0 $? "job A"
err_a=$(cat "$SCRATCH/a-err")
expect_contains "$err_a" "1 process reported, 1 placed large regions" "job A: its own process only"
expect_contains "$err_a" "disk        1 region     4.00MiB  peak 4.00MiB" "job A: its own 4 MiB, not B's 6 MiB"
expect_contains "$err_b" "disk        1 region     6.00MiB  peak 6.00MiB" "job B: its own 6 MiB"
[ "$(grep -c '"run":' "$SCRATCH/stats.jsonl")" = 3 ] || fail "the shared file should hold 3 tagged lines: $(cat "$SCRATCH/stats.jsonl")"

# A run inside a run, on the same file: the outer counts the inner job's
# lines as its own (the inner tag extends the outer's).
err=$(run -c "$SCRATCH/with-stats.toml" -- "$spillway" run -q --dir "$spill" --threshold 1MiB \
    -c "$SCRATCH/with-stats.toml" -- "$py" -c 'b = bytearray(2 << 20)' 2>&1 >/dev/null)
expect_contains "$err" "2 processes reported, 1 placed large regions" "nested run: the inner tool and its python"
expect_contains "$err" "disk        1 region     2.00MiB" "nested run: the inner job's region"

# Lines without a tag (a shim older than the tag writes none) and none with
# this run's: counted as before, with a warning saying why.
err=$(run -c "$SCRATCH/with-stats.toml" -- sh -c \
    "echo '{\"pid\":7,\"regions\":{\"disk\":1,\"memory\":0,\"anon\":0},\"bytes\":{\"disk\":1048576}}' >>'$SCRATCH/stats.jsonl'" 2>&1)
expect_status 0 $? "untagged lines"
expect_contains "$err" "1 process reported" "untagged lines: counted"
expect_contains "$err" "warning: no line in $SCRATCH/stats.jsonl carries this run's tag" "untagged lines: said"
err=$(run -c "$SCRATCH/with-stats.toml" -- "$py" -c 'b = bytearray(2 << 20)' 2>&1 >/dev/null)
case "$err" in *warning:*) fail "a tagged run warned: $err" ;; esac

# A bad run tag stops before anything runs, from the config or the variable.
printf '[stats]\nfile = "%s/stats.jsonl"\nrun = "two words"\n' "$SCRATCH" >"$SCRATCH/bad-run.toml"
err=$("$spillway" run -c "$SCRATCH/bad-run.toml" -- touch "$SCRATCH/ran" 2>&1); expect_status 78 $? "bad stats.run"
expect_lines 1 "$err" "bad stats.run"
expect_contains "$err" "bad-run.toml:3: key 'stats.run': expected at most 256 letters" "bad stats.run line"
err=$(SPILLWAY_STATS_RUN='a;b' "$spillway" run -- touch "$SCRATCH/ran" 2>&1); expect_status 78 $? "bad SPILLWAY_STATS_RUN"
expect_lines 1 "$err" "bad SPILLWAY_STATS_RUN"
expect_contains "$err" "environment: SPILLWAY_STATS_RUN: expected at most 256 letters" "bad SPILLWAY_STATS_RUN line"
[ ! -e "$SCRATCH/ran" ] || fail "the command ran despite a bad run tag"

# The user's config travels to the child (threshold from the file, not the flag).
printf 'threshold = "16MiB"\n' >"$SCRATCH/big-threshold.toml"
err=$("$spillway" run --dir "$spill" -c "$SCRATCH/big-threshold.toml" -- "$py" -c 'b = bytearray(8 << 20)' 2>&1 >/dev/null)
expect_contains "$err" "0 placed large regions" "threshold from the config file"

# A bad config stops before anything runs: the shim's line, exit 78.
printf 'threshold = "1KiB"\n' >"$SCRATCH/bad.toml"
err=$("$spillway" run -c "$SCRATCH/bad.toml" -- touch "$SCRATCH/ran" 2>&1); expect_status 78 $? "bad config"
expect_lines 1 "$err" "bad config"
expect_contains "$err" "spillway: config error: $SCRATCH/bad.toml: key 'threshold'" "bad config line"
[ ! -e "$SCRATCH/ran" ] || fail "the command ran despite a bad config"
# ... unless SPILLWAY_ON_ERROR=continue: it runs, unprotected.
err=$(SPILLWAY_ON_ERROR=continue "$spillway" run -c "$SCRATCH/bad.toml" -- touch "$SCRATCH/ran" 2>&1)
expect_status 0 $? "bad config, continue"
[ -e "$SCRATCH/ran" ] || fail "SPILLWAY_ON_ERROR=continue did not run the command"
expect_contains "$err" "running WITHOUT spilling" "continue line"

# An unusable spill directory is a config error too (as in the shim).
touch "$SCRATCH/a-file"
err=$("$spillway" run --dir "$SCRATCH/a-file/spill" -- true 2>&1); expect_status 78 $? "unusable dir"
expect_contains "$err" "key 'spill.dir'" "unusable dir line"

# Library lookup: an explicit SPILLWAY_LIBRARY that does not exist is an error.
err=$(SPILLWAY_LIBRARY=/nonexistent/libspillway.so "$spillway" run -- true 2>&1); expect_status 1 $? "bad SPILLWAY_LIBRARY"
expect_contains "$err" "SPILLWAY_LIBRARY=/nonexistent/libspillway.so is not a file" "bad SPILLWAY_LIBRARY"
out=$(SPILLWAY_LIBRARY="$library" run -q -- sh -c 'echo "$LD_PRELOAD"')
expect_contains "$out" "$(basename "$library")" "SPILLWAY_LIBRARY used"

# SIGTERM sent to `spillway run` reaches the command (docker stop).
"$spillway" run -q --dir "$spill" -- sleep 30 &
runner=$!
for _ in $(seq 100); do pgrep -P "$runner" -x sleep >/dev/null && break; sleep 0.1; done
pgrep -P "$runner" -x sleep >/dev/null || fail "the command under run did not start"
started=$SECONDS
kill -TERM "$runner"
wait "$runner"; expect_status 143 $? "forwarded SIGTERM"
[ $((SECONDS - started)) -lt 10 ] || fail "SIGTERM was not forwarded: run waited for the command to finish"
echo "run: ok"
