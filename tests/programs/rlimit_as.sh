#!/usr/bin/env bash
# rlimit_as.sh LIB PROG — runs PROG (rlimit_as.cpp) bare and under the shim
# (default threshold, then 1 MiB) and requires the same results: lowering
# RLIMIT_AS after start-up must not break threads or allocations. Also
# checks that start-up reserves little address space (VmSize).
set -euo pipefail
lib=$1 prog=$2
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-rlimit.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "rlimit_as: $*"; exit 1; }

bare=$("$prog") || fail "bare run failed: $bare"
for threshold in 64MiB 1MiB; do
  shim=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=$threshold "$prog") \
    || fail "under the shim (threshold $threshold) failed: $shim"
  [ "$bare" = "$shim" ] || fail "results differ at threshold $threshold:
--- bare
$bare
--- shim
$shim"
done
echo "$bare"

# Address space reserved at start-up: a few hundred MiB at most, not terabytes.
vm=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" /bin/grep VmSize /proc/self/status | awk '{print $2}')
[ "$vm" -lt $((1024 * 1024)) ] || fail "VmSize at start is $vm kB under the shim"
echo "VmSize at start under the shim: $vm kB"
