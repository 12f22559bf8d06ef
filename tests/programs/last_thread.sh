#!/usr/bin/env bash
# last_thread.sh LIB PROGRAM — a process ends when the program's own threads
# have (last_thread.c), with the shim's threads running: on disk regions
# (the detector, the read-ahead worker, the reaper) and on memory regions
# (the tiering controller, the reaper). Each run must exit 0 within 30 s;
# a hang is killed (SIGKILL: the shim's threads block every other signal).
set -euo pipefail
lib=$1 prog=$2
fail() { echo "last_thread.sh: FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-last.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for policy in disk memory; do
  for mode in main-exit main-waits fork-thread; do
    status=0
    timeout -s KILL 30 env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB \
        SPILLWAY_POLICY=$policy "$prog" "$mode" >"$dir/out" 2>&1 || status=$?
    [ "$status" = 0 ] || { cat "$dir/out" >&2; fail "$mode ($policy regions): status $status (137: still running after 30 s, killed)"; }
    case $mode in
      main-waits) [ "$(tail -1 "$dir/out")" = "worker done" ] || fail "$mode ($policy): the process ended before its worker: $(tr '\n' '|' < "$dir/out")" ;;
      fork-thread) grep -q 'child exited 0' "$dir/out" || fail "$mode ($policy): $(tr '\n' '|' < "$dir/out")" ;;
    esac
    echo "$mode ($policy regions): exit 0"
  done
done
left=$(find "$dir" -mindepth 1 -not -name out | head -5)
[ -z "$left" ] || fail "spill files left behind: $left"
echo "last_thread: ok"
