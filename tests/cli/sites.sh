#!/usr/bin/env bash
# sites.sh SPILLWAY SAMPLE_PROFILE — `spillway sites` prints a learned
# profile as a table (read with the shim's own parser), and fails in one
# line for a missing or corrupt profile.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
profile=$2
make_scratch

out=$("$spillway" sites "$profile"); expect_status 0 $? "sites"
expect_contains "$out" "SITE" "table header"
expect_contains "$out" "3fa9c1d2e4b50617  random      memory       4  libgraph.so+0x1a2b scatter_edges(Graph&, Span)" "random site row"
expect_contains "$out" "00000000deadbeef  sequential  disk         1  libc10.so+0x5a1e0" "sequential site row"
expect_contains "$out" "evidence: 912 of 1024" "evidence"
expect_contains "$out" "... (1 more)" "frames cut at 3"
expect_contains "$out" "5b0c1e7a9d2f4c33  unknown     anon         2  sklearn/utils/extmath.py:randomized_range_finder:265" "short-lived site row"
expect_contains "$out" "lifetime: short (17 of 17 freed, after at most 412 ms)" "lifetime"
expect_contains "$out" "3 sites in $profile" "count"
out=$("$spillway" sites --frames 0 "$profile")
expect_contains "$out" "__libc_start_call_main" "--frames 0 shows all"

err=$("$spillway" sites "$SCRATCH/none.toml" 2>&1); expect_status 1 $? "missing profile"
expect_lines 1 "$err" "missing profile"
printf 'site = [\n' >"$SCRATCH/corrupt.toml"
err=$("$spillway" sites "$SCRATCH/corrupt.toml" 2>&1); expect_status 1 $? "corrupt profile"
expect_lines 1 "$err" "corrupt profile"
expect_contains "$err" "delete it to start learning afresh" "corrupt profile advice"
printf '# nothing yet\n' >"$SCRATCH/empty.toml"
out=$("$spillway" sites "$SCRATCH/empty.toml"); expect_status 0 $? "empty profile"
expect_contains "$out" "no call sites learned yet" "empty profile"
# Without PROFILE: profile.file of the config.
printf '[profile]\nfile = "%s"\n' "$profile" >"$SCRATCH/with-profile.toml"
out=$(SPILLWAY_CONFIG="$SCRATCH/with-profile.toml" "$spillway" sites); expect_status 0 $? "sites from config"
expect_contains "$out" "3 sites" "sites from config"
err=$(SPILLWAY_CONFIG= "$spillway" sites 2>&1); expect_status 1 $? "sites without any profile"
expect_contains "$err" "profile.file is not set" "sites without any profile"
echo "sites: ok"
